"""Tensors, modules and an optimizer as values at a Python breakpoint, on torch 2.13 (issue 13).

A tensor reads as its metadata (``Tensor float32 [4, 8] cpu``): no data read, no ATen operation,
no user code (a subclass's ``__torch_function__``, a module's ``__repr__``/``__getattr__``); the
program counts all three while it is stopped, and the test reads the counts afterwards.
"""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, line_of
from pystack_helpers import TORCH_PYTHON
from test_agent import _start, _stop

from tuidbg.agent import protocol as P

pytestmark = [
    requires_gdb,
    pytest.mark.slow,
    pytest.mark.torch,
    pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="this machine has no .venv-torch (scripts/setup.sh builds it)"),
]

PROG = PROGRAMS / "py" / "torch_values.py"


async def test_tensors_modules_and_optimizers_read_as_metadata(make_session):
    s, ctl, out = await _start(make_session, TORCH_PYTHON, PROG)
    line = line_of(PROG, "values_here")
    bp = await ctl.add_breakpoint(str(PROG), line)
    await s.launch()
    stop = await _stop(ctl)
    assert (stop.reason, stop.bp_id, stop.line) == (P.R_BREAKPOINT, bp.id, line)
    values = {name: (tp, v) for name, tp, v in await ctl.python_locals()}
    assert values["x"] == ("Tensor", "Tensor float32 [4, 8] cpu")
    assert values["xt"] == ("Tensor", "Tensor float32 [8, 4] cpu")
    assert values["sl"] == ("Tensor", "Tensor float64 [5] cpu")
    assert values["sp"] == ("Tensor", "Tensor float32 [2, 2] cpu sparse_coo")
    assert values["w"] == ("Tensor", "Tensor float32 [3] cpu requires_grad")
    assert values["y"] == ("Tensor", "Tensor float32 [3] cpu grad_fn=MulBackward0")
    assert values["m"] == ("Tensor", "Tensor float32 [1000, 1000] meta")
    assert values["tg"] == ("Tagged", "Tagged float32 [2, 2] cpu")
    assert values["size"][1] == "torch.Size([4, 8])"
    assert values["dt"][1] == "torch.float32"
    assert values["dev"][1] == "device(type='cpu')"
    assert values["param"] == ("Parameter", "Parameter float32 [4, 8] cpu requires_grad")
    # Linear(8, 4) + Linear(4, 2): 8*4+4 + 4*2+2 = 46 parameters; eval() was called
    assert values["net"] == ("Net", "Net (46 params, float32, cpu, eval)")
    assert values["opt"] == ("SGD", "SGD (1 param group: lr=0.1, momentum=0.9, dampening=0, weight_decay=0, "
                                    "nesterov=False, maximize=False, foreach=None, differentiable=False, fused=None)")
    # nothing of the user's ran, and no ATen operation (no data read, no kernel) while describing
    assert await ctl.evaluate("(len(user_calls), len(ops)) == before") == "True"
    assert await ctl.evaluate("user_calls") == "[]"
    # the same lines through an evaluation (the console's pyprint, a watch); the slice is an ATen op
    # of the user's expression, under the program's dispatch mode
    assert await ctl.evaluate("x[1:]") == "Tensor float32 [3, 8] cpu"
    assert await ctl.evaluate("ops[before[1]:]") == "['aten.slice.Tensor']"
    await ctl.resume()
    st = await ctl.wait_stop(60)
    assert st.exit_code == 0, bytes(out)[-2000:]
    assert b"done [] 1" in bytes(out)
