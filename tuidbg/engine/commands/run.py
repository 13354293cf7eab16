"""Run control: run, continue, step, finish, until, interrupt, kill, detach (``-exec-*``)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from dataclasses import replace

from tuidbg.engine import mi, rescue, xstate
from tuidbg.engine.commands.base import START_TIMEOUT, CommandBase
from tuidbg.engine.errors import EngineError, MIError, StartupError, Timeout, attach_failure
from tuidbg.engine.state import ProcessState, PythonView

log = logging.getLogger("tuidbg.engine")


class RunControl(CommandBase):
    async def run(self) -> None:
        """(Re)start the program from the beginning."""
        if self.config.mode == "attach":
            raise EngineError("cannot restart an attached process")
        if self.config.mode == "core":
            raise EngineError("a core file cannot run")
        if self.tty is not None:
            self.tty.drain()
        for ext in self.extensions:  # e.g. drop breakpoints on addresses of the previous process
            await ext.before_run(self)
        await self.cmd("-exec-run", timeout=START_TIMEOUT)

    async def cont(self) -> None:
        self._require_stopped("continue")
        await self._select_live_thread()
        try:
            await self.cmd("-exec-continue")
        except MIError as exc:
            if len(self._state.inferiors) < 2 or not any(
                    m in exc.message for m in ("No such process", "without a live selected thread", "is not being run")):
                raise
            # (several processes: one was exiting as gdb resumed it, or had ended without gdb seeing it) once
            # more, from a thread that lives, without those gdb still holds but the system has not
            await self._forget_ended()
            await self._select_live_thread()
            await self.cmd("-exec-continue")

    async def _forget_ended(self) -> None:
        """Processes gdb believes alive that have ended (gdb 13 misses the exit of a child that ends while
        it stops all the others): gdb lets go of them, and they show as exited."""
        st = self._state
        for inf in st.live_inferiors():
            pid = inf.os_pid or inf.pid
            info = rescue.proc_info(pid) if pid else None
            if pid and (info is None or info.state in ("Z", "X")):
                await self.cmd(f"-interpreter-exec console {mi.quote('detach inferiors ' + inf.id.lstrip('i'))}",
                               check=False)
                st = st.with_inferior(inf.id, process=ProcessState.EXITED, threads=(), frames=(), locals=(),
                                      exit_description="ended (gdb missed its exit)")
        self.set_state(st)

    async def _select_live_thread(self) -> None:
        """Several processes: gdb's own selection goes back to the one the user sees (gdb selects the process
        a stop was about, and one that exited cannot be continued)."""
        st = self._state
        tid = st.live_thread() if len(st.inferiors) > 1 else None
        if tid:
            await self.cmd(f"-thread-select {tid}", check=False)

    async def next(self) -> None:
        self._require_stopped("step over")
        await self.cmd(f"-exec-next {self._thread_opt()}".rstrip())

    async def step(self) -> None:
        self._require_stopped("step into")
        await self.cmd(f"-exec-step {self._thread_opt()}".rstrip())

    async def finish(self) -> None:
        self._require_stopped("finish")
        st = self._state
        try:
            await self.cmd(f"-exec-finish {self._thread_opt(frame=st.selected_frame)}".rstrip())
        except MIError as exc:
            if "outermost" in exc.message:
                raise EngineError('"finish" is not meaningful in the outermost frame') from exc
            raise

    async def until(self, location: str | None = None) -> None:
        self._require_stopped("run until")
        cmd = f"-exec-until {self._thread_opt()}".rstrip()
        if location:
            cmd += " " + location
        await self.cmd(cmd)

    async def run_to(self, fullname: str, line: int) -> None:
        """Continue to a source line (a temporary breakpoint there, then continue)."""
        self._require_stopped("run to a line")
        await self.cmd(f"-break-insert -t --source {mi.quote(fullname)} --line {int(line)}")
        await self.cmd("-exec-continue")

    async def interrupt(self) -> None:
        """Stop the running program: -exec-interrupt, or SIGINT to the program if that fails."""
        if self._state.process is not ProcessState.RUNNING:
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

    async def _wait_not_running(self) -> None:
        while self._state.process is ProcessState.RUNNING:
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

    async def attach_more(self, pids: list[int]) -> None:
        """``tuidbg attach PID PID...``: each further process as an inferior of its own; all-stop, and a
        continue resumes them all. The first stays the selected one."""
        await self.cmd("-gdb-set schedule-multiple on")
        # The first process's refresh reads gdb's current process, which each attach below moves (a Python
        # stack walked in an inferior that has no process yet said "no Python" for the first one).
        await self.wait_refreshed(START_TIMEOUT)
        for pid in pids:
            res = await self.cmd("-add-inferior")
            iid = str(res.get("inferior") or "")
            info = rescue.proc_info(pid)
            self._more_targets.append((pid, info.start_time if info else None, info is not None and info.state == "T"))
            await self.plain_vector_registers(f"/proc/{pid}/exe", iid)
            try:
                await self.cmd(f"-target-attach --thread-group {iid} {pid}", timeout=START_TIMEOUT)
            except MIError as exc:
                raise StartupError(attach_failure(pid, exc.message)) from exc
        # The first one shown again, read again: its refresh ran while gdb attached to the others (and
        # gdb's selection moved to each of them)
        await self.show_again(self._state.inferiors[0].id)

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
            await self.console("kill inferiors " + " ".join(inf.id.lstrip("i") for inf in self._state.live_inferiors()))
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
            for inf in live:
                await self.cmd(f"-target-detach {inf.id}")
        else:
            await self.cmd("-target-detach")
        self._detached = True
        st = self._state
        for inf in live:
            st = st.with_inferior(inf.id, process=ProcessState.DETACHED, threads=(), frames=(), locals=(), pid=None)
        self.set_state(st)
