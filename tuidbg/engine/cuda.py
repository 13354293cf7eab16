"""cuda-gdb: version-specific set-up and the CUDA focus."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from tuidbg.engine.state import DebuggerState, ProcessState

if TYPE_CHECKING:
    from tuidbg.engine.session import DebugSession

log = logging.getLogger("tuidbg.engine")

# cuda-gdb 11.8's embedded Python mis-handles None (the executable carries its own
# _Py_NoneStruct), so gdb's Python unwinders and pretty-printers break every host
# unwind. These three commands switch that machinery off; tuidbg's own Python
# code does not depend on it.
WORKAROUND_118 = (
    "set python print-stack none",
    "python del gdb._execute_unwinders",
    "python gdb.pretty_printers.clear()",
)


def needs_unwinder_workaround(version: tuple[int, ...], has_python: bool) -> bool:
    return has_python and bool(version) and version[0] == 11


async def configure(session: "DebugSession") -> None:
    info = session.info
    if needs_unwinder_workaround(info.cuda_version, info.has_python):
        for command in WORKAROUND_118:
            await session.cmd(f"-interpreter-exec console \"{command}\"", check=False)
        session.cuda_workaround_applied = True


def focus(state: DebuggerState) -> dict[str, Any] | None:
    """The CUDA focus of the current stop, if it is on the device."""
    if state.process is not ProcessState.STOPPED:
        return None
    f = state.extras.get("cuda_focus")
    if f is None and state.stop is not None:
        f = state.stop.payload.get("CudaFocus")
    return dict(f) if isinstance(f, dict) else None


def device_focus(state: DebuggerState) -> bool:
    return focus(state) is not None
