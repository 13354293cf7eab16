"""Run control: run, continue, step, finish, until, interrupt, kill, detach (``-exec-*``)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal

from tuidbg.engine import mi
from tuidbg.engine.commands.base import START_TIMEOUT, CommandBase
from tuidbg.engine.errors import EngineError, MIError, Timeout
from tuidbg.engine.state import ProcessState

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
            if len(self._state.inferiors) < 2 or "No such process" not in exc.message:
                raise
            # (several processes: one was exiting as gdb resumed it) once more, from a thread that lives
            await self._select_live_thread()
            await self.cmd("-exec-continue")

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

    async def kill(self) -> None:
        if self._state.has_process:
            if self._state.process is ProcessState.RUNNING:
                await self.interrupt()
            await self.console("kill")
            self.set_state(self._state.evolve(process=ProcessState.EXITED, exit_description="killed", threads=(), frames=(), locals=()))

    async def detach(self) -> None:
        if not self._state.has_process:
            return
        if self._state.process is ProcessState.RUNNING and not self.config.remote:
            await self.interrupt()  # (a remote session's gdb detaches a running process itself: target-non-stop)
        await self.cmd("-target-detach")
        self._detached = True
        self.set_state(self._state.evolve(process=ProcessState.DETACHED, threads=(), frames=(), locals=(), pid=None))
