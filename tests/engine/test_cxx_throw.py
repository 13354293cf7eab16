"""Stops at libtorch's c10::Error throws (tuidbg/engine/cxx_throw.py) on the stripped python3.11 with
torch 2.13: the thrown type and message read from the exception object, the Python line that called
into libtorch in the merged stack."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import line_of, wait_stopped
from pystack_helpers import PY_PROGRAMS, TORCH_PYTHON

from tuidbg.engine import cxx_throw
from tuidbg.engine.state import ProcessState

pytestmark = [
    requires_gdb,
    pytest.mark.slow,
    pytest.mark.torch,
    pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="this machine has no .venv-torch (scripts/setup.sh builds it)"),
]

PROG = PY_PROGRAMS / "torch_throw.py"


async def test_c10_error_throw_stops_with_message_and_python_line(make_session):
    s = await make_session(mode="run", program=str(TORCH_PYTHON), args=[str(PROG)])
    await cxx_throw.arm(s)
    await s.launch()

    async def throw_stop():
        st = await wait_stopped(s, 280)
        assert st.stop.reason == "breakpoint-hit", st.stop
        assert st.frames[0].func.startswith("__cxa_throw"), [f.func for f in st.frames[:3]]
        ps = st.python.stack
        assert ps is not None and ps.ok, ps
        py = ps.thread(st.stop.thread_id)
        return await cxx_throw.read_throw(s), (py.frames[0].function, py.frames[0].line)

    thrown, pyline = await throw_stop()
    assert thrown == cxx_throw.CxxThrow("c10::IndexError", "index 5 is out of bounds for dimension 0 with size 3")
    assert pyline == ("index_it", line_of(PROG, "index_call"))
    await s.cont()
    thrown, pyline = await throw_stop()
    assert thrown == cxx_throw.CxxThrow("c10::Error", "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)")
    assert pyline == ("multiply", line_of(PROG, "matmul_call"))
    await s.cont()
    st = await wait_stopped(s, 280)
    assert st.process is ProcessState.EXITED and st.exit_code == 1
