"""PyTorch: a native breakpoint in at::native::randn while Python calls torch.randn."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import line_of, wait_stopped
from pystack_helpers import PY_PROGRAMS, TORCH_PYTHON

from tuidbg.engine import pystack as P

pytestmark = [
    requires_gdb,
    pytest.mark.slow,
    pytest.mark.torch,
    pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="this machine has no .venv-torch (scripts/setup.sh builds it)"),
]

PROG = PY_PROGRAMS / "torch_randn.py"


async def test_randn_breakpoint_merged_stack(make_session):
    s = await make_session(mode="run", program=str(TORCH_PYTHON), args=[str(PROG)])
    await s.break_insert(function="at::native::randn")
    await s.launch()
    st = await wait_stopped(s, 280)
    assert st.stop.reason == "breakpoint-hit", st.stop
    ps = P.pystack_of(st)
    assert ps is not None and ps.ok, ps
    py = ps.thread(st.stop.thread_id)
    assert [(f.function, f.line) for f in py.frames] == [
        ("make_tensor", line_of(PROG, "randn_call")),
        ("main", line_of(PROG, "main_call")),
        ("<module>", py.frames[2].line),
    ]
    assert all(f.file == str(PROG) for f in py.frames)
    assert py.merge == "anchor"

    rows = P.merged_stack(st)
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
