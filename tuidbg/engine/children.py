"""Child processes in one session: gdb keeps the program's children (``--children``).

With ``--children=python`` (the default of ``tuidbg run``) or ``all``, gdb keeps every child the
program forks under the debugger (its multi-inferior support: ``detach-on-fork off``,
``schedule-multiple on``, ``follow-exec-mode same``). When a child becomes another program (gdb says
"process N is executing new program: PATH"):

- ``python``: a child that execs something other than a Python interpreter is detached untouched
  (a compiler, ``git``, a shell: not what the user debugs); Python children stay, with the agent
  in them (``tuidbg.agent`` reconnects in a forked child and loads at start-up in an exec'd one),
  so Python breakpoints are in force in every process;
- ``all``: every child stays;
- ``none``: gdb's default, children are detached at the fork.

A child is let go while it is stopped at its exec (``python``: an internal ``catch exec``; the session goes
on from that stop unseen). Detached as it ran on, it raced gdb: a shell forks at once, and gdb 13, asked to
detach a process whose fork it was still following, now and then kept the new child as a process of its own
(shown let go, with no reason) or failed an internal check and exited (code 1), ending the session.

gdb runs all-stop: a stop in any process stops every process, and ``continue`` resumes them all,
so the job waits as one while the user looks at one rank or worker, and no other process runs on
and times out meanwhile. A stop selects its process. A child's exit stops everything too (gdb's
rule): that stop is handled here unseen (the state is marked transient) and the processes go on.

gdb 13 loses track of exits when processes end together (the program and the helpers it leaves, a
forkserver and a resource tracker): it may keep a process that ended as alive (continue then fails,
or waits for nothing), or print the exit and never say ``*stopped``. Before each continue, the
processes gdb holds that ``/proc`` says have ended are let go of (``forget_ended``: gdb's "kill"
reaps them; its "detach" fails an assertion on them); an exit with no ``*stopped`` after
``UNSAID_STOP_WAIT`` is taken as said when gdb says every thread is stopped.

The signals a job's own shutdown sends its processes (``PASSED_SIGNALS``: SIGTERM from a Pool's
terminate(), a DataLoader's or torchrun's end; SIGHUP to the helpers as the program ends) reach them
without a stop, as SIGCHLD does: gdb's ``handle SIG nostop noprint pass``, set before the user's ``-ex``
and ``-x`` commands. Whether a signal stops is that per-signal setting (``handle SIGTERM stop``, in the
console or as ``-ex``), which the help screen shows (``RunControl.signal_handling``). gdb 13 left to pass
SIGTERM by itself hangs now and then when two processes die of it at once, so an internal catchpoint
stops at it all the same and the session goes on from that stop unseen, one death at a time; when gdb's
setting says stop, that stop is shown as gdb's own signal stop.

The agent's stop function traps by itself in such a session (``agent._stub``): gdb makes an
address breakpoint in every process, and one whose address is not mapped (a child that exec'd)
stops gdb from resuming at all.

What the Processes pane shows of each process (its parent, command line, executable, the
``RANK``/``LOCAL_RANK``/``WORLD_SIZE`` it was started with) is read from ``/proc`` as the
process appears (``Inferior.ppid``, ``cmdline``, ``executable``, ``role_env``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal as signal_module
from dataclasses import replace

from tuidbg.engine import mi, rescue
from tuidbg.engine.errors import EngineError, GdbExited, MIError, Timeout
from tuidbg.engine.extensions import Extension
from tuidbg.engine.state import DebuggerState, ProcessState, mark_internal
from tuidbg.gdbext.pythonexe import is_python_program
from tuidbg.procread.proc import cmdline_of, parent_of, role_env

log = logging.getLogger("tuidbg.engine")

POLICIES = ("python", "all", "none")
# Passed to the program without a stop in a session of several processes (gdb's "handle SIG nostop noprint
# pass"; SIGCHLD is so already): SIGTERM, which a multiprocessing Pool's terminate(), a DataLoader's
# shutdown and torchrun's end of a job send their workers; SIGHUP, which the children still there (a
# forkserver, a resource tracker) get as the program, which leads the session of tuidbg's terminal, ends.
PASSED_SIGNALS = ("SIGTERM", "SIGHUP")
# Of those, the ones gdb stops at all the same, the session going on from the stop unseen (``_catch_signals``):
# SIGTERM, which a job sends several processes at once. (SIGHUP comes as the program ends, with its exit: a
# stop for it there makes gdb 13 lose the program's exit.)
CAUGHT_SIGNALS = ("SIGTERM",)
UNSAID_STOP_WAIT = 0.5  # seconds after a process's exit with no *stopped (it follows in < 1 ms) before gdb is asked
HELPERS_END_WAIT = 30.0  # seconds the program's helpers are watched for an end gdb does not see, after the program's
_EXEC = re.compile(r"^process (\d+) is executing new program: (.+?)\n?$")


# multiprocessing's own processes started anew (``python -c CODE``): what CODE starts with, and what they are
MP_PROCESSES = (
    ("from multiprocessing.spawn import spawn_main", "spawn worker"),
    ("from multiprocessing.forkserver import main", "forkserver"),
    ("from multiprocessing.resource_tracker import main", "resource tracker"),
)
# those that serve the program and end once it has (its pipe to them closes)
MP_HELPERS = ("forkserver", "resource tracker")


def mp_process(cmdline: tuple[str, ...]) -> str | None:
    """What a process started by multiprocessing as a new Python is ("spawn worker", "forkserver",
    "resource tracker"), from its command line; None for anything else."""
    code = cmdline[cmdline.index("-c") + 1] if "-c" in cmdline[:-1] else ""
    return next((name for start, name in MP_PROCESSES if code.startswith(start)), None)


def _dies_of(pid: int, signo: int) -> bool:
    """Whether process ``pid`` neither catches nor ignores signal ``signo`` (/proc's SigCgt and SigIgn)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            masks = {k: int(v, 16) for k, _, v in (line.partition(":") for line in f) if k in ("SigCgt", "SigIgn")}
    except (OSError, ValueError):
        return False
    bit = 1 << (signo - 1)
    return len(masks) == 2 and not (masks["SigCgt"] | masks["SigIgn"]) & bit


def _running(st: DebuggerState) -> bool:
    return any(inf.process is ProcessState.RUNNING for inf in st.inferiors)


class ChildProcesses(Extension):
    """Session extension: keeps the program's children under gdb, per ``config.children``."""

    def __init__(self, config) -> None:
        self.config = config
        self.policy = getattr(config, "children", "none") or "none"
        self.session = None
        self._described: dict[str, tuple] = {}  # inferior -> what it was when last read from /proc
        self._bg: set[asyncio.Task] = set()
        self._going_on = 0  # children's exits being gone on from
        self._shown_signal: tuple[str, int, str] | None = None  # a child's signal stop shown (_signal_stops)
        self._exited: frozenset[str] = frozenset()  # the processes known to have exited
        self._stops = 0  # *stopped records so far
        self._catch: str | None = None  # the catchpoint of CAUGHT_SIGNALS
        self._catch_times = 0  # its hits so far
        self._catch_gen = -1  # the generation of the stop it made last
        self._catch_pending = False
        self._exec_catch: str | None = None  # the catchpoint of a child's exec (policy python)
        self._exec_times = 0  # its hits so far

    @property
    def active(self) -> bool:
        return self.policy in ("python", "all") and self.config.mode in ("run", "attach")

    async def on_gdb_ready(self, session) -> None:
        if not self.active:
            return
        # The signals a job's own shutdown sends its processes go to them without a stop (as SIGCHLD does),
        # before the user's -ex and -x commands, whose "handle SIG stop" wins:
        for sig in PASSED_SIGNALS:
            await session.cmd(f"-interpreter-exec console {mi.quote(f'handle {sig} nostop noprint pass')}", check=False)

    async def _catch_signals(self) -> None:
        """gdb stops at each of CAUGHT_SIGNALS all the same (an internal catchpoint), and the session goes on
        from that stop unseen (``_pass_signal``): each process then dies of it while the others are held,
        one after the other. gdb 13 left to pass them by itself hangs, now and then, when two processes die
        of them at once (a Pool's terminate() signals every worker at once): it reports neither death and
        answers nothing more."""
        s = self.session
        await s.cmd(f"-interpreter-exec console {mi.quote('catch signal ' + ' '.join(CAUGHT_SIGNALS))}")
        mine = [b for b in s.state.breakpoints if b.type == "catchpoint" and set(CAUGHT_SIGNALS) <= set((b.what or "").split())]
        if mine:
            bp = max(mine, key=lambda b: int(b.number) if b.number.isdigit() else 0)
            self._catch, self._catch_times = bp.number, bp.times
            s.set_state(mark_internal(s.state, bp.number))

    async def on_configure(self, session) -> None:
        self.session = session
        session.on_state(self._on_state)
        if not self.active:
            return
        for setting in ("detach-on-fork off", "schedule-multiple on", "follow-exec-mode same"):
            await session.cmd(f"-gdb-set {setting}")
        session.on_console(self._on_console, replay=False)
        session.stop_hooks.append(self._stop_hook)
        if not self.config.remote:
            await self._catch_signals()
            if self.policy == "python":
                await self._catch_execs()

    async def _catch_execs(self) -> None:
        """gdb stops at each exec (an internal catchpoint): a child that became another program is let go
        while it is stopped there (``_after_exec``), before it can fork or exit."""
        s = self.session
        if not s.gdbext_loaded:  # (its condition is gdbext's: without it, a child is let go as it runs)
            return
        res = await s.cmd(f"-interpreter-exec console {mi.quote('catch exec')}", check=False)
        m = re.search(r"Catchpoint (\d+) \(exec\)", res.console_text() if res.cls == "done" else "")
        if m is None:
            log.info("gdb cannot catch exec (%s): children are let go as they run", res.get("msg"))
            return
        # Only a child that is no longer Python stops: gdb 13 resuming a Python child (multiprocessing's
        # spawn, a vfork's child) from a stop at its exec crashed it now and then (SIGSEGV in ld.so).
        cond = await s.cmd(f"-break-condition {m.group(1)} $_tuidbg_exec_lets_go()", check=False)
        if cond.cls != "done":
            await s.cmd(f"-break-delete {m.group(1)}", check=False)
            log.info("cannot make the exec catchpoint conditional (%s): children are let go as they run", cond.get("msg"))
            return
        self._exec_catch, self._exec_times = m.group(1), 0
        s.set_state(mark_internal(s.state, m.group(1)))

    # -- what each process is ------------------------------------------------------------------

    def _on_state(self, st: DebuggerState) -> None:
        if self._catch is not None and st.breakpoint(self._catch) is None and not self._catch_pending:
            self._catch_pending = True  # someone deleted it (gdb's "delete"): made again
            self._spawn(self._catch_again())
        exited = frozenset(inf.id for inf in st.inferiors if inf.process is ProcessState.EXITED)
        if self.active and exited - self._exited and _running(st):
            self._spawn(self._exit_unsaid(self._stops))
        self._exited = exited
        for inf in st.inferiors:
            # as it appears, and again as it loads libraries: gdb starts the program through a shell,
            # which the program replaces after gdb has announced the process
            key = (inf.id, inf.pid, len(inf.libraries))
            if inf.pid and self._described.get(inf.id) != key:
                self._described[inf.id] = key
                self._describe(inf.id, inf.pid)

    def _describe(self, iid: str, pid: int) -> None:
        s = self.session
        facts = dict(
            os_pid=pid,
            ppid=parent_of(pid),
            cmdline=tuple(cmdline_of(pid)),
            role_env=tuple(role_env(pid).items()),
        )
        try:
            facts["executable"] = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            pass

        def apply() -> None:
            inf = s.state.find(iid)
            if inf is not None and inf.pid == pid and inf.ppid is not None:
                facts["ppid"] = inf.ppid  # (the parent it had: once that exits, /proc says init or a subreaper)
            if inf is not None and inf.pid == pid and any(getattr(inf, k) != v for k, v in facts.items()):
                s.set_state(s.state.with_inferior(iid, **facts))

        try:
            asyncio.get_running_loop().call_soon(apply)
        except RuntimeError:  # (no loop: a reducer test)
            pass

    # -- a child's exec or exit ----------------------------------------------------------------

    def _on_console(self, rec) -> None:
        m = _EXEC.match(getattr(rec, "text", "") or "")
        if m is None:
            return
        pid, program = int(m.group(1)), m.group(2)
        st = self.session.state
        inf = next((x for x in st.inferiors if x.pid == pid), None)
        if inf is None:
            return
        if self._lets_go(st, inf.id, program):
            if self._exec_catch is not None and st.breakpoint(self._exec_catch) is not None:
                # (the exec's stop follows: _after_exec lets it go there, stopped)
                self.session.set_state(st.with_inferior(inf.id, executable=program))
            else:
                self._spawn(self._let_go(inf.id, program))
        else:
            self.session.set_state(st.with_inferior(inf.id, executable=program, cmdline=tuple(cmdline_of(pid))))

    def _lets_go(self, st: DebuggerState, iid: str, program: str) -> bool:
        """A child that became ``program`` is let go (policy python: it is not Python)."""
        return self.policy == "python" and iid != st.inferiors[0].id and not is_python_program(program)

    def _exec_stop(self, st: DebuggerState) -> bool:
        """This stop is a process's exec, at the internal catchpoint."""
        inf = st.find(st.stopped_inferior)
        stop = inf.stop if inf is not None else None
        return (self._exec_catch is not None and stop is not None and stop.reason == "exec"
                and (stop.bkptno or "") == self._exec_catch)

    async def _after_exec(self, iid: str, generation: int, program: str) -> None:
        """At a process's exec: a child that is no longer Python is let go, stopped as it is; then every
        process goes on (the stop is not the user's)."""
        s = self.session
        try:
            await asyncio.sleep(0)  # (the stop's state is set once the hooks have run)
            st = s.state
            inf = st.find(iid)
            if inf is None or inf.generation != generation or st.stopped_inferior != iid:
                if self._going_on == 1 and st.python.transient and not (self._unseen(st) or self._caught(st)):
                    s.set_state(st.with_python(transient=False))  # (something else came since: to be seen)
                return
            if program and self._lets_go(st, iid, program):
                await self._let_go(iid, program)
            st = s.state
            stopped = [x for x in st.live_inferiors() if x.process is ProcessState.STOPPED]
            if not stopped:
                if st.python.transient and self._going_on == 1:
                    s.set_state(st.with_python(transient=False))
                return
            if st.selected_inferior not in {x.id for x in stopped}:
                s.set_state(replace(st, selected_inferior=stopped[0].id).with_python(transient=True))
            try:
                await s.cont()
            except (MIError, EngineError, Timeout) as exc:
                log.info("going on after a child's exec: %s", exc)
                s.set_state(s.state.with_python(transient=False))
            except GdbExited:
                pass
        finally:
            self._going_on -= 1

    async def _let_go(self, iid: str, program: str) -> None:
        """Detach a child that became a program other than Python (stopped at its exec; without the exec's
        catchpoint, gdb detaches it running)."""
        s = self.session
        try:
            await s.cmd(f"-target-detach {iid}")
        except (MIError, EngineError, Timeout) as exc:
            log.info("cannot let %s go: %s", iid, exc)
            return
        except GdbExited:
            return
        s.set_state(s.state.with_inferior(
            iid, left=f"not Python ({os.path.basename(program)}): left to run untraced",
            process=ProcessState.DETACHED, threads=(), frames=(), locals=(), executable=program))

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._bg.add(task)
        task.add_done_callback(self._bg.discard)

    def _unseen(self, st: DebuggerState) -> bool:
        """This stop is a child's exit, while other processes live on: the user need not see it (also when it
        was the process shown: the user had let it run, and it ended; the first process is shown then). The
        program's own exit, when only multiprocessing's helpers live on (a resource tracker, a forkserver,
        which end once the program has), is not seen either: the session ends as the last of them does."""
        inf = st.find(st.stopped_inferior)
        live = st.live_inferiors()
        helpers_only = bool(live) and all(mp_process(x.cmdline) in MP_HELPERS for x in live)
        return (inf is not None and inf.stop is not None and inf.process is ProcessState.EXITED
                and (inf.id != st.inferiors[0].id or helpers_only) and st.is_stopped and bool(live)
                # (an agent request under way goes on by itself; the transient mark of another child's exit
                # that is being gone on from is this one's too: two workers end together)
                and (not st.python.transient or self._going_on > 0))

    async def _exit_unsaid(self, stops: int, helpers_for: float = 0.0) -> None:
        """A process has exited while the others ran: gdb stops them all and says so with ``*stopped``. Now and
        then gdb 13 does not say it (its handling of the exit failed on the way: "Cannot find user-level
        thread for LWP N"), and waits. When no stop has come after a while, and gdb says every thread is
        stopped or every process has ended, the exit's stop is taken as said. ``helpers_for``: the program
        has ended, and only its helpers run on (a resource tracker): gdb 13 may not see them end at all
        (both threads of one a zombie, gdb waiting on), so for that long /proc is looked at again and again."""
        s = self.session
        loop = asyncio.get_running_loop()
        until = loop.time() + helpers_for
        while True:
            await asyncio.sleep(UNSAID_STOP_WAIT)
            if self._stops != stops or not _running(s.state):
                return
            ended = not s.config.remote and all(rescue.has_ended(inf.os_pid or inf.pid)
                                                for inf in s.state.live_inferiors() if inf.os_pid or inf.pid)
            if ended or loop.time() >= until:
                break
        try:
            res = await s.cmd("-thread-info", check=False)
        except (EngineError, Timeout, GdbExited):
            return
        threads = res.get("threads") if res.cls == "done" else None
        stopped = isinstance(threads, list) and all(isinstance(t, dict) and t.get("state") == "stopped" for t in threads)
        if self._stops != stops or not _running(s.state) or not (stopped or ended):
            return
        inf = s.state.find(s.state.exited_last)
        code = inf.exit_code if inf is not None else None
        log.info("gdb did not report the stop after %s's exit", s.state.exited_last)
        s.stopped_unannounced({"reason": "exited-normally"} if code == 0 else
                              {"reason": "exited", **({"exit-code": f"{code:o}"} if code is not None else {})})

    async def _catch_again(self) -> None:
        try:
            await self._catch_signals()
        except (MIError, EngineError, Timeout, GdbExited) as exc:
            log.info("cannot catch the signals again: %s", exc)
        finally:
            self._catch_pending = False

    def _caught(self, st: DebuggerState) -> bool:
        """This stop is the catchpoint's (a process got one of CAUGHT_SIGNALS)."""
        inf = st.find(st.stopped_inferior)
        return inf is not None and inf.generation == self._catch_gen

    def _stop_hook(self, st: DebuggerState) -> DebuggerState:
        self._stops += 1
        if self._exec_stop(st) and (not st.python.transient or self._going_on):
            inf = st.find(st.stopped_inferior)
            if inf is not None and inf.process is ProcessState.STOPPED:
                self._going_on += 1
                self._spawn(self._after_exec(inf.id, inf.generation, str(inf.stop.payload.get("new-exec") or "")))
                return st.with_python(transient=True)
        bp = st.breakpoint(self._catch) if self._catch is not None else None
        if bp is not None and bp.times > self._catch_times:
            self._catch_times = bp.times
            inf = st.find(st.stopped_inferior)
            if inf is not None and inf.process is ProcessState.STOPPED and (not st.python.transient or self._going_on):
                self._catch_gen = inf.generation
                self._going_on += 1
                self._spawn(self._go_on(inf.id, inf.generation, signal=True))
                return st.with_python(transient=True)
        inf = st.find(st.stopped_inferior)
        if (inf is not None and inf.process is ProcessState.STOPPED and inf.stop is not None
                and inf.stop.reason == "signal-received" and inf.stop.signal_name == "SIGSTOP"):
            # (gdb 13 now and then reports one of its own SIGSTOPs, sent to stop a process with the others, as
            # the program's signal: one whose sender is gdb goes on unseen)
            self._going_on += 1
            self._spawn(self._go_on(inf.id, inf.generation, own_stop=True))
            return st.with_python(transient=True)
        if not self._unseen(st):
            if (inf is not None and inf.process is ProcessState.EXITED and st.live_inferiors()
                    and not st.python.transient):
                # (the others that ended meanwhile, which gdb 13 may not report, show as ended before the
                # user continues)
                self._spawn(self._forget_ended_now())
            return st
        inf = st.find(st.stopped_inferior)
        self._going_on += 1
        self._spawn(self._go_on(inf.id, inf.generation))
        return st.with_python(transient=True)

    async def _forget_ended_now(self) -> None:
        await asyncio.sleep(0)  # (the stop's state is set once the hooks have run)
        try:
            await self.session.forget_ended()
        except (MIError, EngineError, Timeout, GdbExited) as exc:
            log.info("reading which processes ended: %s", exc)

    async def _go_on(self, iid: str, generation: int, signal: bool = False, own_stop: bool = False) -> None:
        """After a child's exit: continue every process (from a thread that lives: gdb's current one was
        the exited process's), unless something else happened meanwhile. ``signal``: the stop is a process's
        catch of one of CAUGHT_SIGNALS, which it gets as the program goes on (unless gdb's setting for that
        signal is now to stop: then the stop is shown, as gdb's own stop at that signal)."""
        try:
            if own_stop:
                if not await self._sent_by_gdb(iid, generation):
                    st = self.session.state  # (the program's SIGSTOP: shown)
                    if st.python.transient and self._going_on == 1:
                        self.session.set_state(st.with_python(transient=False))
                    return
                await self._go_on_now(iid, generation, drop_sigstop=True)
                return
            if signal:
                if await self._signal_stops(iid, generation):
                    return
                await self._let_go_signalled(iid, generation, signal_module.SIGTERM)
            await self._go_on_now(iid, generation, signal)
        finally:
            self._going_on -= 1

    async def _let_go_signalled(self, iid: str, generation: int, signo: int) -> None:
        """A child that got SIGTERM is let go with it (gdb detaches it, the signal delivered as it goes): it
        ends untraced, and its parent reaps it. gdb 13 following such deaths to their end loses track of
        one now and then when two come close together (a Pool's terminate() signals every worker at once):
        it reports neither, holds the other processes stopped and answers as if they ran; or it fails an
        internal check as the process's last thread goes (``linux-nat.c: resume: Assertion `lp != NULL'
        failed``) and exits. The program itself is followed to its end, as is a process with a handler of
        its own for the signal."""
        s = self.session
        st = s.state
        inf = st.find(iid)
        if inf is None or inf.generation != generation or iid == st.inferiors[0].id or s.config.remote:
            return
        if not _dies_of(inf.pid or 0, signo):
            return  # (it handles the signal: its handler runs, followed as any code is)
        try:
            await s.cmd(f"-target-detach {iid}")
        except (MIError, EngineError, Timeout) as exc:
            log.info("cannot let %s go with its signal: %s", iid, exc)
            return
        name = signal_module.Signals(signo).name
        cur = s.state.with_inferior(
            iid, left=f"got {name}: let go to end untraced", process=ProcessState.DETACHED, threads=(), frames=(),
            locals=())
        live = cur.live_inferiors()
        if cur.selected_inferior == iid and live:
            # (the one shown: another is, a stopped one first; else gdb's ^running of the continue would be
            # taken for the process let go, its current thread the one the state last had)
            cur = cur.showing(next((x for x in live if x.process is ProcessState.STOPPED), live[0]).id)
        s.set_state(cur)

    async def before_continue(self, session) -> None:
        """The user continues from a child's stop at a signal that gdb was told to stop at (``handle SIGTERM
        stop``), shown: if gdb passes it on and the child dies of it, the child is let go with it first, as
        at a stop not shown (gdb 13, following that death, failed an internal check and exited: seen in a
        Pool's shutdown under load)."""
        shown, self._shown_signal = self._shown_signal, None
        if shown is None:
            return
        iid, generation, name = shown
        inf = session.state.find(iid)
        if (inf is None or inf.generation != generation or inf.process is not ProcessState.STOPPED
                or inf.stop is None or inf.stop.signal_name != name):
            return
        if (await session.signal_handling((name,))).get(name, (True, True, True))[2]:
            await self._let_go_signalled(iid, generation, signal_module.Signals[name])

    async def _cont_without_sigstop(self) -> None:
        """Continue, the SIGSTOP of the stop not passed to the program (gdb's setting for it is to pass it;
        passed, gdb's own SIGSTOP would stop the process for good once gdb resumed it)."""
        s = self.session
        passes = (await s.signal_handling(("SIGSTOP",))).get("SIGSTOP", (True, True, True))[2]
        if passes:
            await s.cmd(f"-interpreter-exec console {mi.quote('handle SIGSTOP nopass')}")
        try:
            await s.cont()
        finally:
            if passes:
                await s.cmd(f"-interpreter-exec console {mi.quote('handle SIGSTOP pass')}", check=False)

    async def _siginfo(self, iid: str, generation: int, field: str) -> int | None:
        """A field of the signal information of this stop's thread (``$_siginfo``), or None when the stop is
        no longer the one asked about, or gdb cannot say."""
        s = self.session
        await asyncio.sleep(0)
        inf = s.state.find(iid)
        if inf is None or inf.generation != generation or inf.stop is None:
            return None
        tid = inf.stop.thread_id
        try:
            res = await s.cmd(f"-data-evaluate-expression {f'--thread {tid} ' if tid else ''}$_siginfo.{field}",
                              check=False)
        except (EngineError, Timeout, GdbExited):
            return None
        return mi.to_int(res.get("value"))

    async def _sent_by_gdb(self, iid: str, generation: int) -> bool:
        """The signal of this stop was sent by gdb itself (its sender's PID, in the signal's information)."""
        gdb = self.session.gdb_pid()
        if not gdb or await self._siginfo(iid, generation, "_sifields._kill.si_pid") != gdb:
            return False
        log.info("a SIGSTOP of gdb's own in %s, reported as the program's: gone on from", iid)
        return True

    async def _signal_stops(self, iid: str, generation: int) -> bool:
        """Whether the signal of this catch stop is one gdb is told to stop at (``handle SIGTERM stop``): the
        stop is then the user's, said as gdb says a signal's stop."""
        s = self.session
        try:
            name = signal_module.Signals(await self._siginfo(iid, generation, "si_signo") or 0).name
        except ValueError:
            return False
        stops, _, _ = (await s.signal_handling((name,))).get(name, (False, False, True))
        st = s.state
        inf = st.find(iid)
        if not stops or inf is None or inf.generation != generation:
            return False
        meaning = signal_module.strsignal(signal_module.Signals[name]) or ""
        stop = replace(inf.stop, reason="signal-received", signal_name=name, signal_meaning=meaning.split(":")[0])
        s.set_state(st.with_inferior(iid, stop=stop).with_python(transient=False))
        self._shown_signal = (iid, s.state.find(iid).generation, name)
        return True

    async def _go_on_now(self, iid: str, generation: int, signal: bool = False, drop_sigstop: bool = False) -> None:
        s = self.session
        await asyncio.sleep(0)  # (the stop's state is set once the hooks have run)
        st = s.state
        inf = st.find(iid)
        # (still stopped: the process shown may have ended meanwhile, gdb telling only its thread group's exit,
        # while the others wait to go on)
        stopped = [x for x in st.live_inferiors() if x.process is ProcessState.STOPPED]
        if inf is None or inf.generation != generation or st.stopped_inferior != iid or not stopped:
            # Something came since. Another child's exit goes on by itself; anything else is to be seen.
            sel = st.find(st.selected_inferior)
            live = st.live_inferiors()
            if sel is not None and sel.process is ProcessState.EXITED and live and sel.id == iid:
                st = replace(st, selected_inferior=live[0].id)  # (not left showing the process that ended)
                s.set_state(st)
            if self._going_on == 1 and st.python.transient and not (self._unseen(st) or self._caught(st)):
                s.set_state(st.with_python(transient=False))
            return
        if st.selected_inferior not in {x.id for x in stopped}:
            # the process shown ended: the first one that lives is shown, still marked transient (the stop is not
            # the user's: the session goes on from it at once)
            s.set_state(replace(st, selected_inferior=stopped[0].id).with_python(transient=True))
        try:
            if drop_sigstop:
                await self._cont_without_sigstop()
            else:
                await s.cont()
        except (MIError, EngineError, Timeout) as exc:
            log.info("going on after a child's exit: %s", exc)
            s.set_state(s.state.with_python(transient=False))
            return
        except GdbExited:
            return
        cur = s.state
        if not cur.live_inferiors() and cur.python.transient:  # (every process had ended: nothing went on, the
            s.set_state(cur.with_python(transient=False))      # end is to be seen)
            return
        if not signal and inf.id == st.inferiors[0].id:  # (the program's end, its helpers going on: they end as
            # it has)
            self._spawn(self._exit_unsaid(self._stops, HELPERS_END_WAIT))
