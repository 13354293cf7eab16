"""Mixed-mode steps as a PyTorch user takes them, on torch 2.13 (CPU) and Debian's stripped python3.11:
``S`` on ``a @ b`` steps into the native function the operator runs, a native breakpoint on a
function a library calls through its PLT stops once, ``f`` in C++ that throws stops where the
exception is caught and ``f`` again returns to the Python line, and a ``--break-on-failure`` stop
selects the test's frame, the frames the exception left on the merged stack; breakpoint() stops at the
next line, as pdb does. (The custom op's way back to Python: tests/engine/test_torch_custom_op.py;
breakpoint() on every interpreter: tests/agent/test_agent.py.)"""

from __future__ import annotations

import os
import shutil

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, line_of
from pystack_helpers import TORCH_PYTHON

from tuidbg.agent import protocol as P
from tuidbg.engine import pyagent
from tuidbg.engine.python import merge, view
from tuidbg.engine.state import ProcessState

pytestmark = [
    requires_gdb,
    pytest.mark.slow,
    pytest.mark.torch,
    pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="this machine has no .venv-torch (scripts/setup.sh builds it)"),
]

CPPERR = PROGRAMS / "py" / "torch_cpperr.py"
FAILING = PROGRAMS / "py" / "torch_failing_checks.py"
TIMEOUT = 280


def _mapped_file(pid: int, addr: str) -> str:
    a = int(addr, 16)
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if lo <= a < hi:
                return os.path.basename(parts[5].strip()) if len(parts) > 5 else ""
    return ""


async def test_operator_step_plt_breakpoint_and_finish_through_a_throw(make_session):
    out = bytearray()
    s = await make_session(mode="run", program=str(TORCH_PYTHON), args=[str(CPPERR)], agent=True, python_target=True)
    s.on_program_output(out.extend)
    ctl = pyagent.controller(s)
    line = line_of(CPPERR, "bad_matmul")
    await ctl.add_breakpoint(str(CPPERR), line)
    await s.launch()
    # breakpoint() stops where pdb would: at the next line, the call over
    st = await ctl.wait_stop(TIMEOUT)
    stop = st.python.stop
    assert stop is not None and stop.reason == P.R_SET_TRACE, (st.stop, bytes(out)[-2000:])
    assert (stop.func, stop.line) == ("<module>", line_of(CPPERR, "after_breakpoint")), stop
    assert await ctl.evaluate("list(a.shape)") == "[2, 3]"
    await ctl.resume()
    st = await ctl.wait_stop(TIMEOUT)
    assert st.python.stop is not None and st.python.stop.line == line, (st.stop, bytes(out)[-2000:])
    # S on `a @ b`: the operator's native function (no call on the line)
    await ctl.step_into_native()
    st = await ctl.wait_stop(TIMEOUT)
    assert st.python.stop is None and "THPVariable_matmul" in st.frames[0].func, [f.func for f in st.frames[:3]]
    assert _mapped_file(st.pid, st.frames[0].addr).startswith("libtorch_python"), st.frames[0]
    # a breakpoint on a function libtorch_python calls through its PLT: one stop, at the function
    await s.console("break at::_ops::matmul::call")
    await s.console("break c10::detail::torchCheckFail")
    await ctl.resume()
    st = await ctl.wait_stop(TIMEOUT)
    assert st.frames[0].func.startswith("at::_ops::matmul::call"), [f.func for f in st.frames[:2]]
    assert _mapped_file(st.pid, st.frames[0].addr).startswith("libtorch_cpu"), st.frames[0]
    await ctl.resume()
    st = await ctl.wait_stop(TIMEOUT)
    assert st.frames[0].func.startswith("c10::detail::torchCheckFail"), [f.func for f in st.frames[:2]]
    # f in the frame that throws: where the exception is caught (the binding's catch), not the program's end
    await s.finish()
    st = await ctl.wait_stop(TIMEOUT)
    assert st.process is ProcessState.STOPPED and st.stop.describe() == "exception caught", st.stop
    assert "THPVariable_matmul" in st.frames[0].func, [f.func for f in st.frames[:3]]
    rows = merge.merged_stack(st)
    assert next(r for r in rows if r.kind == "python").python.function == "bad", [(r.kind, r.function) for r in rows]
    # and f again (the catch returns into Python): the Python line where it is a Python exception now
    assert view.returns_into_python(st)
    await ctl.step_out_to_python()
    st = await ctl.wait_stop(TIMEOUT)
    stop = st.python.stop
    assert stop is not None and stop.func == "bad", (st.stop, stop)
    assert stop.line in (line, line_of(CPPERR, "except")), stop
    await ctl.resume()
    st = await ctl.wait_stop(TIMEOUT)
    assert st.process is ProcessState.EXITED and st.exit_code == 0, bytes(out)[-3000:]
    assert b"caught RuntimeError" in out and b"done" in out


async def test_a_failed_assert_close_selects_the_test_frame(make_session, tmp_path):
    """--break-on-failure, a test whose torch.testing.assert_close fails: the test's frame is the one selected
    (not assert_close's), with its locals; the merged stack has the frames the exception left on top."""
    shutil.copy(FAILING, tmp_path / FAILING.name)
    out = bytearray()
    s = await make_session(mode="run", program=str(TORCH_PYTHON), cwd=str(tmp_path),
                           args=["-m", "pytest", FAILING.name, "-q", "-p", "no:cacheprovider"],
                           agent=True, python_target=True, break_on_failure=True)
    s.on_program_output(out.extend)
    ctl = pyagent.controller(s)
    await s.launch()
    st = await ctl.wait_stop(TIMEOUT)
    stop = st.python.stop
    assert stop is not None and stop.reason == P.R_FAILURE and stop.func == "assert_close", (st.stop, bytes(out)[-2000:])
    pt = view.python_thread(st)
    sel = view.next_selection(st, view.PySelection())
    chosen = pt.frames[sel.index]
    assert (chosen.function, chosen.line) == ("test_scaled_matches", line_of(FAILING, "assert_close"))
    assert chosen.file.endswith(FAILING.name)
    names = {n for n, _t, _v in await ctl.python_locals(view.agent_frame_index(st, sel.index))}
    assert {"got", "want"} <= names, names
    rows = merge.merged_stack(st, folded=False)
    assert rows[0].kind == "note" and "the exception left" in rows[0].label
    pys = [r.python.function for r in rows if r.kind == "python"]
    assert pys[:2] == ["assert_close", "test_scaled_matches"], pys[:4]
    await ctl.resume()
    st = await ctl.wait_stop(TIMEOUT)
    assert st.process is ProcessState.EXITED and st.exit_code == 1
    assert b"1 failed" in out
