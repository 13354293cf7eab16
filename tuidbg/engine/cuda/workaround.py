"""cuda-gdb 11.8's broken embedded Python, found by a probe and worked around."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from tuidbg.engine import mi
from tuidbg.engine.errors import EngineError

if TYPE_CHECKING:
    from tuidbg.engine.session import DebugSession

log = logging.getLogger("tuidbg.engine")

# cuda-gdb 11.8's embedded Python mis-handles None (the Debian executable carries
# its own _Py_NoneStruct), so gdb's Python unwinders and pretty-printers break
# every host unwind. These three commands switch that machinery off; tuidbg's
# own Python code does not depend on it.
WORKAROUND_118 = (
    "set python print-stack none",
    "python del gdb._execute_unwinders",
    "python gdb.pretty_printers.clear()",
)

# Asks gdb's Python whether a None made by gdb's C code is Python's None. On the
# broken builds it prints False.
PYTHON_NONE_PROBE = 'python print(gdb.lookup_global_symbol("tuidbg_no_such_symbol_probe") is None)'



def needs_unwinder_workaround(version: tuple[int, ...], has_python: bool) -> bool:
    """The fallback rule when the probe cannot tell: 11.x builds with Python have the bug."""
    return has_python and bool(version) and version[0] == 11


async def probe_python_none(session: "DebugSession") -> bool | None:
    """True when gdb's Python has the broken-None bug, False when not, None when it cannot tell."""
    try:
        res = await session.cmd(f"-interpreter-exec console {mi.quote(PYTHON_NONE_PROBE)}", check=False)
    except EngineError:
        return None
    text = res.console_text().strip()
    if res.cls != "done" or text not in ("True", "False"):
        return None
    return text == "False"


async def configure(session: "DebugSession") -> bool | None:
    """Called right after cuda-gdb is detected: apply the 11.8 workaround where needed. Returns
    whether gdb's Python has the broken-None bug (None: no Python in this cuda-gdb)."""
    info = session.info
    if not info.has_python:
        return None  # cuda-gdb-minimal: nothing Python-side to fix
    broken = await probe_python_none(session)
    if broken is None:
        broken = needs_unwinder_workaround(info.cuda_version, info.has_python)
    if broken:
        for command in WORKAROUND_118:
            await session.cmd(f"-interpreter-exec console {mi.quote(command)}", check=False)
        session.cuda_workaround_applied = True
    return broken
