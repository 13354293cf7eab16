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
from dataclasses import replace

from tuidbg.engine import mi, rescue
from tuidbg.engine.errors import EngineError, GdbExited, MIError, Timeout
from tuidbg.engine.extensions import Extension
from tuidbg.engine.state import DebuggerState, ProcessState
from tuidbg.procread.proc import cmdline_of, parent_of, role_env

log = logging.getLogger("tuidbg.engine")

POLICIES = ("python", "all", "none")
_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?[a-z]*(-dbg)?$")
UNSAID_STOP_WAIT = 0.5  # seconds after a process's exit with no *stopped (it follows in < 1 ms) before gdb is asked
_EXEC = re.compile(r"^process (\d+) is executing new program: (.+?)\n?$")


def _running(st: DebuggerState) -> bool:
    return any(inf.process is ProcessState.RUNNING for inf in st.inferiors)


def is_python_program(path: str | None) -> bool:
    """A CPython interpreter by its file name (python, python3, python3.11, python3.13t, python3-dbg)."""
    return bool(path) and bool(_PYTHON.match(os.path.basename(str(path))))


class ChildProcesses(Extension):
    """Session extension: keeps the program's children under gdb, per ``config.children``."""

    def __init__(self, config) -> None:
        self.config = config
        self.policy = getattr(config, "children", "none") or "none"
        self.session = None
        self._described: dict[str, tuple] = {}  # inferior -> what it was when last read from /proc
        self._bg: set[asyncio.Task] = set()
        self._going_on = 0  # children's exits being gone on from
        self._exited: frozenset[str] = frozenset()  # the processes known to have exited
        self._stops = 0  # *stopped records so far

    @property
    def active(self) -> bool:
        return self.policy in ("python", "all") and self.config.mode in ("run", "attach")

    async def on_configure(self, session) -> None:
        self.session = session
        session.on_state(self._on_state)
        if not self.active:
            return
        for setting in ("detach-on-fork off", "schedule-multiple on", "follow-exec-mode same"):
            await session.cmd(f"-gdb-set {setting}")
        # The program leads the session of tuidbg's terminal: when it ends, the children still there
        # (a forkserver, a resource tracker) get the SIGHUP of a terminal whose leader left. They get it
        # as they would; it does not stop every process as the program ends.
        await session.cmd(f"-interpreter-exec console {mi.quote('handle SIGHUP nostop noprint pass')}", check=False)
        session.on_console(self._on_console, replay=False)
        session.stop_hooks.append(self._stop_hook)

    # -- what each process is ------------------------------------------------------------------

    def _on_state(self, st: DebuggerState) -> None:
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
        if self.policy == "python" and inf.id != st.inferiors[0].id and not is_python_program(program):
            self._spawn(self._let_go(inf.id, program))
        else:
            self.session.set_state(st.with_inferior(inf.id, executable=program, cmdline=tuple(cmdline_of(pid))))

    async def _let_go(self, iid: str, program: str) -> None:
        """Detach a child that became a program other than Python (gdb detaches a running one too)."""
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
        was the process shown: the user had let it run, and it ended; the first process is shown then)."""
        inf = st.find(st.stopped_inferior)
        return (inf is not None and inf.stop is not None and inf.process is ProcessState.EXITED
                and inf.id != st.inferiors[0].id and st.is_stopped and bool(st.live_inferiors())
                # (an agent request under way goes on by itself; the transient mark of another child's exit
                # that is being gone on from is this one's too: two workers end together)
                and (not st.python.transient or self._going_on > 0))

    async def _exit_unsaid(self, stops: int) -> None:
        """A process has exited while the others ran: gdb stops them all and says so with ``*stopped``. Now and
        then gdb 13 does not say it (its handling of the exit failed on the way: "Cannot find user-level
        thread for LWP N"), and waits. When no stop has come after a while, and gdb says every thread is
        stopped or every process has ended, the exit's stop is taken as said."""
        await asyncio.sleep(UNSAID_STOP_WAIT)
        s = self.session
        if self._stops != stops or not _running(s.state):
            return
        try:
            res = await s.cmd("-thread-info", check=False)
        except (EngineError, Timeout, GdbExited):
            return
        threads = res.get("threads") if res.cls == "done" else None
        stopped = isinstance(threads, list) and all(isinstance(t, dict) and t.get("state") == "stopped" for t in threads)
        ended = not s.config.remote and all(rescue.has_ended(inf.os_pid or inf.pid)
                                            for inf in s.state.live_inferiors() if inf.os_pid or inf.pid)
        if self._stops != stops or not _running(s.state) or not (stopped or ended):
            return
        inf = s.state.find(s.state.exited_last)
        code = inf.exit_code if inf is not None else None
        log.info("gdb did not report the stop after %s's exit", s.state.exited_last)
        s.stopped_unannounced({"reason": "exited-normally"} if code == 0 else
                              {"reason": "exited", **({"exit-code": f"{code:o}"} if code is not None else {})})

    def _stop_hook(self, st: DebuggerState) -> DebuggerState:
        self._stops += 1
        if not self._unseen(st):
            inf = st.find(st.stopped_inferior)
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

    async def _go_on(self, iid: str, generation: int) -> None:
        """After a child's exit: continue every process (from a thread that lives: gdb's current one was
        the exited process's), unless something else happened meanwhile."""
        try:
            await self._go_on_now(iid, generation)
        finally:
            self._going_on -= 1

    async def _go_on_now(self, iid: str, generation: int) -> None:
        s = self.session
        await asyncio.sleep(0)  # (the stop's state is set once the hooks have run)
        st = s.state
        inf = st.find(iid)
        if inf is None or inf.generation != generation or st.stopped_inferior != iid or not st.is_stopped:
            # Something came since. Another child's exit goes on by itself; anything else is to be seen.
            sel = st.find(st.selected_inferior)
            live = st.live_inferiors()
            if sel is not None and sel.process is ProcessState.EXITED and live and sel.id == iid:
                st = replace(st, selected_inferior=live[0].id)  # (not left showing the process that ended)
                s.set_state(st)
            if self._going_on == 1 and st.python.transient and not self._unseen(st):
                s.set_state(st.with_python(transient=False))
            return
        if st.selected_inferior == iid:  # (the process shown ended: the first one that lives is shown)
            live = st.live_inferiors()
            if live:
                s.set_state(replace(st, selected_inferior=live[0].id))
        try:
            await s.cont()
        except (MIError, EngineError, Timeout) as exc:
            log.info("going on after a child's exit: %s", exc)
            s.set_state(s.state.with_python(transient=False))
        except GdbExited:
            pass
