"""Run control: run, continue, step, until, interrupt, kill, detach (``-exec-*``; finish: ``finish``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from dataclasses import replace
from typing import Any, AsyncIterator, Coroutine

from tuidbg.engine import mi, rescue, xstate
from tuidbg.engine.commands.base import START_TIMEOUT, CommandBase
from tuidbg.engine.errors import EngineError, MIError, StartupError, Timeout, attach_failure
from tuidbg.engine.state import ProcessState, PythonView

log = logging.getLogger("tuidbg.engine")

# step_now's operations: (what the error message calls it, the MI command)
_STEPS = {"next": ("step over", "-exec-next"), "step": ("step into", "-exec-step"), "until": ("run until", "-exec-until")}

# gdb's words when it resumes a process that has ended
_GONE = ("No such process", "without a live selected thread", "is not being run", "Couldn't get registers")
_LIVE = (ProcessState.RUNNING, ProcessState.STOPPED)


class RunControl(CommandBase):
    async def run(self) -> None:
        """(Re)start the program from the beginning."""
        if self.config.mode == "attach":
            raise EngineError("cannot restart an attached process")
        if self.config.mode == "core":
            raise EngineError("a core file cannot run")
        if self.tty is not None:
            self.tty.drain()
        if len(self._state.inferiors) > 1:
            await self._end_the_run()
        for ext in self.extensions:  # e.g. drop breakpoints on addresses of the previous process
            await ext.before_run(self)
        await self.cmd("-exec-run", timeout=START_TIMEOUT)

    async def _end_the_run(self) -> None:
        """Before the program runs again in a session of several processes: every process of the run ends
        (gdb's -exec-run would run again only the process gdb has selected: a child, started anew as a bare
        interpreter, the program and the other children left as they were), and gdb keeps only the
        program's inferior, where the new run starts (the children of the new run get new ones)."""
        await self.kill()
        first = self._state.inferiors[0].id
        await self.cmd(f"-interpreter-exec console {mi.quote('inferior ' + first.lstrip('i'))}")
        others = [inf.id.lstrip("i") for inf in self._state.inferiors if inf.id != first]
        if others:
            await self.cmd(f"-interpreter-exec console {mi.quote('remove-inferiors ' + ' '.join(others))}")
        st = self._state
        self.set_state(replace(st, inferiors=(st.inferiors[0],), selected_inferior=first, stopped_inferior=first,
                               exited_last=None))

    async def cont(self) -> None:
        self._require_stopped("continue")
        if len(self._state.inferiors) < 2:
            await self._select_live_thread()
            await self.cmd("-exec-continue")
            return
        async with self._ended_lock():
            if not self._state.is_stopped:
                return  # (another continue went first: a child's exit gone on from)
            # (gdb 13 misses the exit of a process that ends while it stops the others: it would resume the
            # rest but for that one, and wait for nothing)
            await self._forget_ended()
            for ext in self.extensions:  # e.g. a child shown stopped at a SIGTERM is let go with it
                await ext.before_continue(self)
            if not self._state.live_inferiors():
                return  # every process has ended: nothing to continue
            if self._state.run_group:
                await self._continue_group()
                return
            await self._select_live_thread()
            try:
                await self.cmd("-exec-continue")
            except MIError as exc:
                if not any(m in exc.message for m in _GONE):
                    raise
                # (one was exiting as gdb resumed it) once more, from a thread that lives
                await self._forget_ended()
                if not self._state.live_inferiors():
                    return
                await self._select_live_thread()
                await self.cmd("-exec-continue")

    # -- run groups --------------------------------------------------------------------------------
    # gdb runs all-stop; with schedule-multiple off it resumes one process per -exec-continue, and resumes
    # another while the first runs: the group's processes are resumed one after another, every other
    # process stays stopped, and the first stop of any of them stops them all again (all-stop). A step
    # (n, s, a Python step) resumes the shown process alone then. gdb keeps the setting off while a group
    # is set: its own resumptions (past a breakpoint's condition, a library's load) would else resume
    # every process.

    schedule_multiple: str | None = None  # gdb's schedule-multiple as tuidbg last set it (None: never)

    async def set_run_group(self, iids, name: str = "") -> None:
        """From now on continue moves the processes ``iids`` only (inferior ids; the others stay stopped);
        empty, or every live process: all of them again. ``name``: the group's words ("rank 3")."""
        st = self._state
        live = {inf.id for inf in st.live_inferiors()}
        want = tuple(i for i in dict.fromkeys(iids) if i in live)
        if iids and not want:
            raise EngineError("none of those processes lives")
        if not want or set(want) >= live:
            if st.run_group:
                await self._set_schedule_multiple("on")
            self.set_state(replace(self._state, run_group=(), run_group_name=""))
            return
        await self._set_schedule_multiple("off")
        self.set_state(replace(self._state, run_group=want, run_group_name=name))

    async def _set_schedule_multiple(self, value: str) -> None:
        await self.cmd(f"-gdb-set schedule-multiple {value}")
        self.schedule_multiple = value

    async def _continue_group(self) -> None:
        st = self._state
        members = [inf for inf in st.live_inferiors() if inf.id in st.run_group and inf.threads]
        stopped = [inf for inf in members if inf.process is ProcessState.STOPPED]
        if not stopped:
            raise EngineError("no process of the run group is stopped (group all: every process runs again)")
        if st.selected_inferior not in {inf.id for inf in stopped}:
            # (the panes follow the group's first process; gdb's ^running is taken for the shown one's
            # current thread, which a process never shown has not had yet)
            first = stopped[0]
            tid = first.selected_thread or first.current_thread or first.threads[0].id
            st = replace(st, selected_inferior=first.id).evolve(current_thread=first.current_thread or tid,
                                                                  selected_thread=first.selected_thread or tid)
            self.set_state(st)
        stopped = [st.find(inf.id) or inf for inf in stopped]
        stopped.sort(key=lambda inf: inf.id != self._state.selected_inferior)
        for inf in stopped:
            tid = inf.selected_thread or inf.current_thread or inf.threads[0].id
            try:
                await self.cmd(f"-exec-continue --thread {tid}")
            except MIError as exc:
                if not any(m in exc.message for m in _GONE):
                    raise
                log.info("process %s of the run group did not resume: %s", inf.id, exc.message)

    async def forget_ended(self) -> None:
        """Several processes, stopped: those gdb believes alive that have ended (gdb 13 misses the exit of a
        child that ends while it stops all the others) are let go of, and show as exited. When none lives
        on, the first process (the program) is the one shown."""
        async with self._ended_lock():
            if self._state.is_stopped:
                await self._forget_ended()

    def _ended_lock(self) -> asyncio.Lock:
        if self._ended_lock_obj is None:
            self._ended_lock_obj = asyncio.Lock()
        return self._ended_lock_obj

    _ended_lock_obj: asyncio.Lock | None = None

    async def _forget_ended(self) -> None:
        if self.config.remote:  # (its processes are another machine's: this one's /proc knows none of them)
            return
        ended = [inf for inf in self._state.live_inferiors() if (pid := inf.os_pid or inf.pid) and rescue.has_ended(pid)]
        if ended:
            # (gdb may have told already, in records not read yet: a command's answer comes after them)
            await self.cmd("-list-thread-groups", check=False)
        for listed in ended:
            inf = self._state.find(listed.id)  # (as it is now: gdb's records, an earlier one's kill, came in)
            pid = inf and (inf.os_pid or inf.pid)
            if not pid or inf.process not in _LIVE or not rescue.has_ended(pid) or not self._state.is_stopped:
                continue
            status = rescue.exit_status(pid)  # (what it ended with, while it is a zombie)
            if status is None and self.config.mode == "run" and inf.id == self._state.inferiors[0].id:
                # (the program gdb started is gdb's child: gone, gdb has reaped it and holds its exit status,
                # which it reports as it goes on; a kill now would lose the exit code)
                log.info("process %s (%s) ended unreported; gdb holds its exit status", pid, inf.id)
                continue
            log.info("process %s (%s) ended unreported by gdb; its exit status %s", pid, inf.id,
                     "unknown (reaped)" if status is None else status)
            # (gdb 13's "detach" of such a process fails an assertion; its "kill" reaps what is left of it)
            await self.cmd(f"-interpreter-exec console {mi.quote('kill inferiors ' + inf.id.lstrip('i'))}",
                           check=False)
            code, said = _wait_status(status)
            now, st = self._state.find(inf.id), self._state
            if now is None:
                continue
            if now.process not in _LIVE:
                # (gdb said its end meanwhile: what it said stands, and the exit status read from /proc before
                # the kill where gdb, killing what was left of it, says none)
                if now.exit_code is None and code is not None:
                    st = st.with_inferior(inf.id, exit_code=code, exit_description=said)
            else:
                st = st.with_inferior(inf.id, process=ProcessState.EXITED, threads=(), frames=(), locals=(),
                                      exit_code=now.exit_code if code is None else code,
                                      exit_description=now.exit_description or said or "ended (gdb missed its exit)")
            if st.inferior.process not in _LIVE:
                live = st.live_inferiors()
                st = st.showing((live[0] if live else st.inferiors[0]).id)
            self.set_state(st)

    async def _select_live_thread(self) -> None:
        """Several processes: gdb's own selection goes back to the one the user sees (gdb selects the process
        a stop was about, and one that exited cannot be continued)."""
        st = self._state
        tid = st.live_thread() if len(st.inferiors) > 1 else None
        if tid:
            await self.cmd(f"-thread-select {tid}", check=False)

    async def next(self) -> None:
        await self.step_now("next")

    async def step(self) -> None:
        await self.step_now("step")

    def step_now(self, op: str) -> Coroutine[Any, Any, Any]:
        """``next``, ``step`` or ``until`` (to the next line) written to gdb before this returns, not when
        the caller's task next has its turn: the program steps while the caller's loop goes on (a
        key's step, ~0.4 ms sooner on a busy loop). The coroutine returned waits for gdb's answer.
        EngineError at once when the program is not stopped."""
        return self.cmd_now(self.step_command(op))

    def step_command(self, op: str) -> str:
        """The command ``step_now(op)`` writes, as things are now (EngineError when the program is not
        stopped): also what a step key's plan holds (``ui.keyplan``)."""
        what, command = _STEPS[op]
        self._require_stopped(what)
        return f"{command} {self._thread_opt()}".rstrip()

    async def until(self, location: str | None = None) -> None:
        if not location:
            await self.step_now("until")
            return
        self._require_stopped("run until")
        await self.cmd(f"-exec-until {self._thread_opt()}".rstrip() + " " + location)

    async def run_to(self, fullname: str, line: int) -> None:
        """Continue to a source line (a temporary breakpoint there, then continue)."""
        self._require_stopped("run to a line")
        await self.cmd(f"-break-insert -t --source {mi.quote(fullname)} --line {int(line)}")
        await self.cmd("-exec-continue")

    async def interrupt(self) -> None:
        """Stop the running program: -exec-interrupt, or SIGINT to the program if that fails. (With a run
        group the shown process may be one that stays stopped while the group runs.)"""
        if not any(inf.process is ProcessState.RUNNING for inf in self._state.inferiors):
            return
        if self.mi_async:
            try:
                await self.cmd("-exec-interrupt", timeout=5)
            except Timeout:
                # gdb does not answer: a SIGINT to the program would wait in gdb's hands, and reach the
                # program (and end it) once gdb is gone. The watchdog tells the user; nothing more here.
                raise EngineError("gdb did not answer the interrupt (see the status line)") from None
            except MIError as exc:
                log.info("-exec-interrupt failed (%s); sending SIGINT", exc)
            else:
                try:
                    await asyncio.wait_for(self._wait_not_running(), 2.0)
                    return
                except asyncio.TimeoutError:
                    if self.config.remote:  # (no SIGINT of ours can reach another node's process)
                        raise EngineError(
                            "gdbserver did not stop the process: it interrupts with a SIGINT to the process's group, "
                            "which fails when the process leads none (see gdbserver's terminal); a breakpoint still "
                            "stops it, and quitting detaches it running") from None
        self._sigint_program()

    async def signal_handling(self, names: tuple[str, ...]) -> dict[str, tuple[bool, bool, bool]]:
        """(stop, print, pass) of each signal as gdb handles it now (gdb's "info signals"; the help
        screen shows which ones stop)."""
        out: dict[str, tuple[bool, bool, bool]] = {}
        for name in names:
            res = await self.cmd(f"-interpreter-exec console {mi.quote('info signals ' + name)}", check=False)
            for line in res.console_text().splitlines():
                parts = line.split()
                if len(parts) >= 4 and parts[0] == name:
                    out[name] = tuple(p == "Yes" for p in parts[1:4])  # type: ignore[assignment]
        return out

    async def _wait_not_running(self) -> None:
        while any(inf.process is ProcessState.RUNNING for inf in self._state.inferiors):
            await asyncio.sleep(0.02)

    def _sigint_program(self) -> None:
        pid = self._state.pid or self.config.pid
        if pid and not self.config.remote:  # (a remote PID is another node's: gdb interrupts it itself)
            try:
                os.kill(pid, signal.SIGINT)
                return
            except ProcessLookupError:
                pass
        if self._transport is not None:
            self._transport.send_signal(signal.SIGINT)

    async def plain_vector_registers(self, program: str | None, iid: str | None = None) -> None:
        """gdb before 14 on a CPU with AMX cannot write registers (an inferior call breaks the thread it
        runs in): describe the target without AVX state, for the inferior ``iid`` (gdb's current one by
        default) before it runs or attaches ``program`` (tuidbg.engine.xstate)."""
        info = getattr(self, "info", None)
        if info is None or not xstate.needs_sse_description(info.version, program):
            return
        opt = f"--thread-group {iid} " if iid else ""
        await self.cmd(f"-interpreter-exec {opt}console {mi.quote('set tdesc filename ' + xstate.TDESC)}", check=False)

    _first_shown: asyncio.Future | None = None  # (first_process_shown)

    async def first_process_shown(self) -> None:
        """Until the launch has the first process to show (attach PID PID... and --children: the first one
        attached and read; the others are attached after it, while the screen shows it), or the launch is
        over (its failure raised here)."""
        task = self.begin_launch()
        if self._first_shown is None:
            self._first_shown = asyncio.get_running_loop().create_future()
        await asyncio.wait([task, self._first_shown], return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            task.result()

    async def first_attached(self) -> None:
        """The launch's first process is attached and read (its stop follows the attach's ^done, then its
        refresh): ``first_process_shown`` returns."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_TIMEOUT
        while not self._state.is_stopped and loop.time() < deadline:
            await asyncio.sleep(0.01)
        await self.wait_refreshed(START_TIMEOUT)
        if self._first_shown is None:
            self._first_shown = loop.create_future()
        if not self._first_shown.done():
            self._first_shown.set_result(None)

    async def attach_more(self, pids: list[int]) -> None:
        """``tuidbg attach PID PID...``: each further process as an inferior of its own; all-stop, and a
        continue resumes them all. The first stays the selected one."""
        await self.cmd("-gdb-set schedule-multiple on")
        # The first process's refresh reads gdb's current process, which each attach below moves (a Python
        # stack walked in an inferior that has no process yet said "no Python" for the first one).
        await self.wait_refreshed(START_TIMEOUT)
        async with self.keeping_shown(self._state.inferiors[0].id):
            await self._attach_each(pids)

    _keep_shown: str | None = None  # see keeping_shown

    @property
    def attaching(self) -> bool:
        """gdb attaches to further processes (or loads the agent into them) while the first is shown: no run
        control until it is done (``keeping_shown``), from the moment the first is shown (``first_attached``)
        to the launch's end (the agent loaded into every process)."""
        if self._keep_shown is not None:
            return True
        return self._first_shown is not None and not self.begin_launch().done()

    @contextlib.asynccontextmanager
    async def keeping_shown(self, iid: str) -> AsyncIterator[None]:
        """While the block moves gdb's selection from process to process (attaching to them, loading the
        agent into them), the screen keeps showing process ``iid`` as it was read: another process's stop or
        gdb's selection of it does not select it, nor is it read through gdb then (``procstacks`` reads its
        Python stacks; its threads and frames are read when it is shown). gdb's selection is put back on
        ``iid`` at the end."""
        outer = self._keep_shown
        self._keep_shown = iid
        try:
            yield
        finally:
            self._keep_shown = outer
            if outer is None:
                inf = self._state.find(iid)
                if inf is not None and inf.threads and self._state.selected_inferior == iid:
                    await self.cmd(f"-thread-select {inf.selected_thread or inf.threads[0].id}", check=False)
                else:
                    await self.show_again(iid)

    async def _attach_each(self, pids: list[int]) -> None:
        attached = []
        for pid in pids:
            res = await self.cmd("-add-inferior")
            iid = str(res.get("inferior") or "")
            info = rescue.proc_info(pid)
            target = (pid, info.start_time if info else None, info is not None and info.state == "T")
            self._more_targets.append(target)
            await self.plain_vector_registers(f"/proc/{pid}/exe", iid)
            try:
                await self.cmd(f"-target-attach --thread-group {iid} {pid}", timeout=START_TIMEOUT)
            except MIError as exc:
                self._more_targets.remove(target)
                await self.cmd(f"-remove-inferiors {iid}", check=False)
                if rescue.has_ended(pid) or not rescue.same_process(pid, target[1]):
                    # it exited meanwhile (a pool's worker, replaced every few milliseconds): the others go on
                    note = f"process {pid} exited before it could be attached; the others are"
                    self.startup_messages.append(note)
                    self._emit_console(mi.MIRecord(mi.TEXT, payload=note + "\n"))
                else:
                    # (the first process is on the screen already: this one is said and left out)
                    self._emit_console(mi.MIRecord(mi.LOG, payload=f"tuidbg: {attach_failure(pid, exc.message)}\n"))
                continue
            attached.append(iid)
        # (each attach's stop follows its ^done: the last ones' may still be on their way)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_TIMEOUT
        while any((inf := self._state.find(i)) is not None and inf.process is not ProcessState.STOPPED
                  and inf.process is not ProcessState.EXITED for i in attached) and loop.time() < deadline:
            await asyncio.sleep(0.01)

    async def show_again(self, iid: str) -> None:
        """Process ``iid`` selected in gdb and shown again, read again: gdb's selection moved to other
        processes meanwhile (attaching to them, loading the agent into them), and a refresh that ran
        then may have read another process."""
        inf = self._state.find(iid)
        if inf is None:
            return
        if inf.threads:
            await self.cmd(f"-thread-select {inf.threads[0].id}", check=False)
        else:  # (its threads not read yet: gdb picks one)
            await self.cmd(f"-interpreter-exec console {mi.quote('inferior ' + iid.lstrip('i'))}", check=False)
        st = replace(self._state, selected_inferior=inf.id)
        self.set_state(st.evolve(refreshed=False, python=PythonView(agent=inf.python.agent)))
        self._start_refresh(self._state.inferior.generation)

    async def kill(self) -> None:
        live = self._state.live_inferiors()
        if not live:
            return
        if any(inf.process is ProcessState.RUNNING for inf in live):
            await self.interrupt()
        if len(self._state.inferiors) > 1:  # (every process of the session: the children too)
            ids = [inf.id.lstrip("i") for inf in self._state.live_inferiors()]  # (one may have ended meanwhile)
            if ids:
                await self.console("kill inferiors " + " ".join(ids))
        else:
            await self.console("kill")
        st = self._state
        for inf in live:
            st = st.with_inferior(inf.id, process=ProcessState.EXITED, exit_description="killed", threads=(), frames=(),
                                  locals=())
        self.set_state(st)

    async def detach(self) -> None:
        """Let every process of the session go, running and untraced."""
        live = self._state.live_inferiors()
        if not live:
            return
        if any(inf.process is ProcessState.RUNNING for inf in live) and not self.config.remote:
            await self.interrupt()  # (a remote session's gdb detaches a running process itself: target-non-stop)
        if len(self._state.inferiors) > 1:
            # each process of the session, those that came meanwhile too (a fork gdb followed as it stopped
            # them); one that ended meanwhile ("Thread group is empty") does not keep the others traced
            done: list = []
            while todo := [inf for inf in self._state.live_inferiors() if inf.id not in {d.id for d in done}]:
                for inf in todo:
                    done.append(inf)
                    res = await self.cmd(f"-target-detach {inf.id}", check=False)
                    msg = str(res.get("msg") or "")
                    if res.cls == "error" and not any(m in msg for m in (*_GONE, "Thread group is empty")):
                        raise MIError(msg, f"-target-detach {inf.id}")
            live = tuple(done)
        else:
            await self.cmd("-target-detach")
        self._detached = True
        st = self._state
        for inf in live:
            st = st.with_inferior(inf.id, process=ProcessState.DETACHED, threads=(), frames=(), locals=(), pid=None)
        self.set_state(st)


def _wait_status(status: int | None) -> tuple[int | None, str | None]:
    """(exit code, words as gdb says them) of a wait status; (None, None) when unknown."""
    if status is None:
        return None, None
    if os.WIFEXITED(status):
        code = os.WEXITSTATUS(status)
        return code, "exited normally (code 0)" if code == 0 else f"exited with code {code}"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return None, f"killed by {name}"
    return None, None
