"""PyTorch (a CPU wheel on Debian's stripped python3.11): a native breakpoint in at::native::randn while
Python calls torch.randn; a Python breakpoint on a torch.matmul line, "step into native" to
THPVariable_matmul, finish back to the Python line, step over it."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import line_of, wait_stopped
from pystack_helpers import PY_PROGRAMS, TORCH_PYTHON

from tuidbg.agent import protocol as AP
from tuidbg.engine import pyagent
from tuidbg.engine.python import merge as M
from tuidbg.engine.pyagent import AgentStop
from tuidbg.engine.state import ProcessState

pytestmark = [
    requires_gdb,
    pytest.mark.slow,
    pytest.mark.torch,
    pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="this machine has no .venv-torch (scripts/setup.sh builds it)"),
]

PROG = PY_PROGRAMS / "torch_randn.py"
MATMUL = PY_PROGRAMS / "torch_matmul.py"


async def test_randn_breakpoint_merged_stack(make_session):
    s = await make_session(mode="run", program=str(TORCH_PYTHON), args=[str(PROG)])
    await s.break_insert(function="at::native::randn")
    await s.launch()
    st = await wait_stopped(s, 280)
    assert st.stop.reason == "breakpoint-hit", st.stop
    ps = st.python.stack
    assert ps is not None and ps.ok, ps
    py = ps.thread(st.stop.thread_id)
    assert [(f.function, f.line) for f in py.frames] == [
        ("make_tensor", line_of(PROG, "randn_call")),
        ("main", line_of(PROG, "main_call")),
        ("<module>", py.frames[2].line),
    ]
    assert all(f.file == str(PROG) for f in py.frames)
    assert py.merge == "anchor"

    rows = M.merged_stack(st)
    names = [r.function for r in rows]

    def index(pred, what):
        for i, r in enumerate(rows):
            if pred(r):
                return i
        raise AssertionError(f"no {what} row in {names}")

    randn = index(lambda r: r.kind == "native" and r.native.func.startswith("at::native::randn"), "at::native::randn")
    thp = index(lambda r: r.kind == "native" and "THPVariable_randn" in r.native.func, "THPVariable_randn")
    caller = index(lambda r: r.kind == "python" and r.python.function == "make_tensor", "make_tensor")
    assert randn < thp < caller
    # the dispatcher frames between them are one fold row; the CPython call machinery another
    between = rows[randn + 1:thp]
    assert [r.kind for r in between] == ["fold"] and between[0].rule == "torch-dispatch"
    assert len(between[0].children) >= 2
    assert any("at::_ops::randn::" in c.native.func for c in between[0].children)
    glue = rows[thp + 1:caller]
    assert all(r.kind == "fold" and r.rule == "cpython" for r in glue)
    # nothing of the dispatcher is left unfolded, and the eval loop is gone
    assert not any(r.kind == "native" and ("c10::impl::" in r.native.func or "_PyEval_EvalFrameDefault" in r.native.func) for r in rows)


async def test_python_breakpoint_step_into_matmul_and_back(make_session):
    out = bytearray()
    s = await make_session(mode="run", program=str(TORCH_PYTHON), args=[str(MATMUL)], agent=True, python_target=True)
    s.on_program_output(out.extend)
    ctl = pyagent.controller(s)
    call = line_of(MATMUL, "matmul_call")
    await ctl.add_breakpoint(str(MATMUL), call)
    await s.launch()

    async def python_stop() -> AgentStop:
        st = await ctl.wait_stop(280)
        stop = st.python.stop
        assert isinstance(stop, AgentStop), (st.process, st.stop, bytes(out)[-2000:])
        return stop

    stop = await python_stop()
    assert (stop.reason, stop.func, stop.line) == (AP.R_BREAKPOINT, "product", call)
    # step into native: the first native function the line calls in an extension
    await ctl.step_into_native()
    st = await ctl.wait_stop(280)
    assert st.stop.reason == "breakpoint-hit" and st.python.stop is None, st.stop
    assert "THPVariable_matmul" in st.frames[0].func, [f.func for f in st.frames[:4]]
    assert st.frames[0].library and st.frames[0].library.endswith("libtorch_python.so")
    assert all(b.internal for b in s.state.breakpoints)  # the temporary native breakpoint was tuidbg's
    # the C++ frame is tied to the Python line that called it
    ps = st.python.stack
    assert ps is not None and ps.ok, ps
    py = ps.thread(st.stop.thread_id)
    assert [(f.function, f.line) for f in py.frames[:1]] == [("product", call)]
    # finish: back at the Python line of the call, then over it
    await ctl.step_out_to_python()
    stop = await python_stop()
    assert (stop.reason, stop.func, stop.line) == (AP.R_STEP, "product", call)
    await ctl.step_over()
    stop = await python_stop()
    assert stop.line == line_of(MATMUL, "after_matmul")
    assert await ctl.evaluate("c") == "Tensor float32 [3, 3] cpu"  # (a tensor reads as its metadata)
    assert "[6.0, 6.0, 6.0]" in await ctl.evaluate("c.tolist()")
    await ctl.delete_all_breakpoints()
    await ctl.resume()
    st = await ctl.wait_stop(280)
    assert st.process is ProcessState.EXITED and st.exit_code == 0
    assert b"total 54.0" in out
