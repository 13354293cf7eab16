"""The one door between the panes and the session.

Panes render the state they are given and post messages for what the user does (a frame chosen,
a breakpoint toggled); the app turns those into session requests. Some panes also read on demand,
as the user opens things: a variable's children, a CUDA block's threads. They do that through a
``SessionBridge``, never through the session: each pane declares the little it needs as a
``Protocol`` (``VarSource`` in ``panes/variables.py``, ``CudaSource`` in ``panes/cuda/pane.py``,
``DisasmSource``, ``RegisterSource`` and ``MemorySource`` in ``panes/disasm.py``, ``registers.py``, ``memory.py``),
and this class is the only implementation, made by the app for each session (a restarted session
gets a new bridge). Panes never import the session (a contract in ``pyproject.toml``), and with
this door they never hold it either.
"""

from __future__ import annotations

from tuidbg.engine import cuda, machine, native
from tuidbg.engine.records import CHILDREN_PAGE, VarObj
from tuidbg.engine.session import DebugSession
from tuidbg.engine.state import DebuggerState


class SessionBridge:
    """What the panes may ask of a session, and nothing more."""

    def __init__(self, session: DebugSession) -> None:
        self._session = session

    @property
    def state(self) -> DebuggerState:
        return self._session.state

    @property
    def gdb_started(self) -> bool:
        """gdb answered its first command (its banner is known): whether it is cuda-gdb is known."""
        return bool(self._session.info.banner)

    # -- variable objects (the Locals and Watch panes) ------------------------------------------

    async def var_create(self, expression: str, thread: str | None = None, frame: int | None = None,
                         floating: bool = False) -> VarObj:
        return await self._session.var_create(expression, thread=thread, frame=frame, floating=floating)

    async def var_children(self, name: str, start: int = 0, count: int = CHILDREN_PAGE, thread: str | None = None,
                           frame: int | None = None) -> tuple[list[VarObj], bool]:
        return await self._session.var_children(name, start, count, thread=thread, frame=frame)

    async def var_delete(self, name: str) -> None:
        await self._session.var_delete(name)

    # -- CUDA (the CUDA pane) -------------------------------------------------------------------

    def cuda(self) -> cuda.CudaExtension | None:
        """The session's cuda-gdb support, when gdb is cuda-gdb."""
        ext = cuda.get(self._session)
        return ext if ext is not None and ext.active else None

    # -- the machine level (the Disassembly view, the Registers and Memory panes) ----------------

    def disasm_window(self) -> native.DisasmWindow:
        """An empty window of instructions over this session (it decodes as it is asked)."""
        return native.DisasmWindow(self._session)

    def register_tracker(self) -> machine.RegisterTracker:
        return machine.RegisterTracker(self._session)

    async def read_memory(self, address: int, count: int) -> list[machine.MemoryChunk]:
        return await machine.read_memory(self._session, address, count)

    async def address_of(self, expression: str) -> int:
        return await machine.address_of(self._session, expression)
