"""Python programs under gdb: SIGTRAP break-ins and pending breakpoints in libraries loaded later."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, cpython314_param, debian_py311_param, line_of, pyenv_python, wait_for, wait_stopped

from tuidbg.engine.state import ProcessState

pytestmark = requires_gdb


def _interpreters():
    out = []
    py = pyenv_python("3.11")
    out.append(pytest.param(py, id="pyenv-3.11", marks=pytest.mark.skipif(py is None, reason="pyenv has no CPython 3.11 on this machine")))
    out.append(debian_py311_param())
    out.extend(cpython314_param(b) for b in ("3.14", "3.14-stripped", "3.14t"))
    return out


SCRIPT = """
import ctypes, os, signal, sys
print("before trap", flush=True)
os.kill(os.getpid(), signal.SIGTRAP)
lib = ctypes.CDLL(sys.argv[1])
print("sum", lib.foo_add(2, 3), flush=True)
"""


@pytest.mark.parametrize("python", _interpreters())
async def test_sigtrap_and_pending_breakpoint_in_late_library(make_session, python, libfoo, tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(SCRIPT)
    out = bytearray()
    s = await make_session(mode="run", program=str(python), args=[str(script), str(libfoo)])
    s.on_program_output(out.extend)
    bp = await s.break_insert(function="foo_add")
    assert bp.is_pending  # the library is not loaded yet
    await s.launch()
    st = await wait_stopped(s)
    assert st.stop.reason == "signal-received"
    assert st.stop.signal_name == "SIGTRAP"
    assert b"before trap" in out
    await s.cont()
    st = await wait_stopped(s)
    assert st.stop.reason == "breakpoint-hit" and st.stop.bkptno == bp.number
    assert st.frames[0].func == "foo_add"
    assert st.frames[0].line == line_of(PROGRAMS / "libfoo.c", "foo_add_body")
    assert any(lib.basename == "libfoo.so" for lib in st.libraries)
    await s.cont()
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 30, "exit")
    assert s.state.exit_code == 0
    assert b"sum 5" in out
