"""What every MI command family may use of the session (see ``tuidbg.engine.commands``)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Coroutine

from tuidbg.engine import mi
from tuidbg.engine.errors import EngineError
from tuidbg.engine.state import DebuggerState, ProcessState

if TYPE_CHECKING:
    from tuidbg.engine.client import Result
    from tuidbg.engine.extensions import Extension
    from tuidbg.engine.inferior_tty import InferiorTTY
    from tuidbg.engine.session_config import SessionConfig
    from tuidbg.engine.transport import Transport

CMD_TIMEOUT = 30.0
START_TIMEOUT = 600.0  # loading a large executable's symbols can take minutes
RefreshStage = Callable[[Any, int], Awaitable[None]]  # (session, stop generation)


class CommandBase:
    """The session's side of the door: attributes and methods ``DebugSession`` provides."""

    config: SessionConfig
    _state: DebuggerState
    tty: InferiorTTY | None
    extensions: list[Extension]
    mi_async: bool
    _transport: Transport | None
    _detached: bool
    refresh_stages: list[RefreshStage]  # run after each stop's refresh, in order
    select_stages: list[RefreshStage]  # run again when the user selects another thread
    _refresh_task: asyncio.Task | None
    _prev_values: dict[tuple[str, str], str]
    _more_targets: list[tuple[int, int | None, bool]]  # attach PID PID...: the others (pid, start time, stopped)

    if TYPE_CHECKING:  # provided by DebugSession, which puts the families together

        @property
        def state(self) -> DebuggerState: ...

        def set_state(self, new: DebuggerState) -> None: ...

        async def cmd(self, command: str, timeout: float | None = CMD_TIMEOUT, check: bool = True,
                      quiet: bool = True) -> Result: ...

        def cmd_now(self, command: str, timeout: float | None = CMD_TIMEOUT,
                    check: bool = True) -> Coroutine[Any, Any, Result]: ...

        async def console(self, command: str, timeout: float | None = CMD_TIMEOUT) -> Result: ...

        def _emit_console(self, rec: mi.MIRecord) -> None: ...

        def begin_launch(self) -> asyncio.Future: ...

    def thread_options(self, frame: int | None = None) -> str:
        """``--thread N [--frame F] `` for the selected thread, or nothing under a CUDA device focus."""
        return self._thread_opt(frame=frame)

    def _thread_opt(self, thread: str | None = None, frame: int | None = None) -> str:
        if self._state.device_focus is not None:
            return ""  # --thread would drop cuda-gdb's focus on the device
        parts = []
        tid = thread or self._state.selected_thread
        if tid:
            parts.append(f"--thread {tid}")
            if frame is not None:
                parts.append(f"--frame {frame}")
        return " ".join(parts) + (" " if parts else "")

    def _require_stopped(self, what: str) -> None:
        if getattr(self, "attaching", False):
            # (attach --children: gdb attaches to the other processes, or loads the agent into them, while the
            # screen shows the first; RunControl.keeping_shown)
            raise EngineError(f"cannot {what} yet: gdb is still attaching to the other processes")
        st = self._state.process
        if st is ProcessState.RUNNING:
            raise EngineError(f"cannot {what}: the program is running (interrupt it first)")
        if st is not ProcessState.STOPPED:
            raise EngineError(f"cannot {what}: {self.process_description()}")

    def process_description(self) -> str:
        st = self._state
        if st.process is ProcessState.NOT_STARTED:
            return "the program is not running"
        if st.process is ProcessState.EXITED:
            return f"the program {st.exit_description or 'exited'}"
        if st.process is ProcessState.DETACHED:
            return "detached from the process"
        if st.process is ProcessState.GDB_EXITED:
            return f"gdb is not running ({st.gdb_exit})"
        return st.process.value
