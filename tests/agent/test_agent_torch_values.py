"""Torch values at a Python stop (issue 13): tensors, modules and optimizers are described from
metadata, with no user code run and no data read (the program counts aten ops, __repr__ and
__torch_function__ calls made while it is stopped), and expand through the agent's children request."""

from __future__ import annotations

import json

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, line_of
from pystack_helpers import TORCH_PYTHON
from test_agent import _exit, _start, _stop

pytestmark = [
    requires_gdb, pytest.mark.slow,
    pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="this machine has no .venv-torch (scripts/setup.sh builds it)"),
]

PROG = PROGRAMS / "py" / "torch_values.py"

LINES = {
    "a": ("Tensor", "Tensor float32 [4, 8] cpu"),
    "t": ("Tensor", "Tensor float32 [8, 4] cpu"),
    "s": ("Tensor", "Tensor float32 [2, 3] cpu"),
    "i": ("Tensor", "Tensor int16 [2, 2] cpu"),
    "sp": ("Tensor", "Tensor float32 [2, 2] cpu sparse_coo"),
    "w": ("Tensor", "Tensor float32 [3] cpu requires_grad"),
    "y": ("Tensor", "Tensor float32 [3] cpu grad_fn=MulBackward0"),
    "m": ("Tensor", "Tensor float32 [2, 3] meta"),
    "sub": ("MyT", "Tensor(MyT) float32 [2] cpu"),
    "net": ("Loud", "Loud params=10 cpu float32 train"),
    "opt": ("SGD", "SGD groups=1 params=2"),
    "size": ("Size", "Size[4, 8]"),
    "dt": ("dtype", "torch.float32"),
    "dev": ("device", "cpu"),
}

def _meta(stride, contiguous, offset, grad_fn, leaf, numel, values, requires_grad="False"):
    return [("stride", stride), ("contiguous", contiguous), ("storage_offset", offset), ("layout", "strided"),
            ("requires_grad", requires_grad), ("grad_fn", grad_fn), ("is_leaf", leaf), ("numel", numel),
            ("_version", "0"), ("values", values)]

async def test_torch_values_without_user_code(make_session):
    s, ctl, out = await _start(make_session, TORCH_PYTHON, PROG)
    stop_line = line_of(PROG, "stop")
    await ctl.add_breakpoint(str(PROG), stop_line)
    await s.launch()
    stop = await _stop(ctl)
    assert stop.line == stop_line

    got = {name: (typ, value) for name, typ, value in await ctl.python_locals(0)}
    for name, want in LINES.items():
        assert got[name] == want, name
    # The console and watches show the same line.
    assert await ctl.evaluate("net") == "Loud params=10 cpu float32 train"
    # (watch expressions that are names and module attributes: a.shape would run torch code of its own)
    assert await ctl.evaluate_many(["net.fc.weight", "size"]) == [
        ("Parameter float32 [2, 4] cpu requires_grad", "Parameter", None, True), ("Size[4, 8]", "Size", None, False)]

    async def kids(expr, *path):
        return [(n, v) for n, _t, v, _e in await ctl.python_children(expr, path)]

    assert await kids("a") == _meta("(8, 1)", "True", "0", "None", "True", "32 (128 bytes)",
                                    "[0, 1, 2, 3, 4, ..., 27, 28, 29, 30, 31] min=0 max=31 mean=15.5")
    assert await kids("t") == _meta("(1, 8)", "False", "0", "None", "True", "32 (128 bytes)",
                                    "[0, 8, 16, 24, 1, ..., 30, 7, 15, 23, 31] min=0 max=31 mean=15.5")
    assert await kids("s") == _meta("(8, 1)", "False", "10", "None", "True", "6 (24 bytes)",
                                    "[10, 11, 12, 18, 19, 20] min=10 max=20 mean=15")
    assert await kids("i") == _meta("(2, 1)", "True", "0", "None", "True", "4 (8 bytes)", "[1, 2, 3, 4]")
    assert await kids("y") == _meta("(1)", "True", "0", "MulBackward0", "False", "3 (12 bytes)",
                                    "[2, 2, 2] min=2 max=2 mean=2", requires_grad="True")
    assert await kids("m") == _meta("(3, 1)", "True", "0", "None", "True", "6 (24 bytes)",
                                    "not read (meta tensor; data stays on the device)")
    assert await kids("sp") == [("layout", "sparse_coo"), ("requires_grad", "False"), ("grad_fn", "None"),
                                ("is_leaf", "True"), ("numel", "4 (16 bytes)"), ("_version", "0"),
                                ("values", "not shown (sparse_coo layout)")]
    assert await kids("sub") == _meta("(1)", "True", "0", "None", "True", "2 (8 bytes)", "[0, 0] min=0 max=0 mean=0")
    # A big tensor's preview reads a bounded prefix, and says so.
    assert (await kids("big"))[-1] == ("values", "[0, 1, 2, 3, 4, ..., 99995, 99996, 99997, 99998, 99999] "
                                       "min=0 max=99999 mean=49999.5 (first 100000 of 250000 elements)")
    net = await ctl.python_children("net")
    assert net == [("training", "", "True", False), ("fc", "Linear", "Linear params=10 cpu float32 train", True),
                   ("steps", "Tensor", "Tensor int64 [3] cpu", True)]
    assert await kids("net", "fc") == [("training", "True"), ("weight", "Parameter float32 [2, 4] cpu requires_grad"),
                                       ("bias", "Parameter float32 [2] cpu requires_grad")]
    assert (await kids("net", "fc", "weight"))[:2] == [("stride", "(4, 1)"), ("contiguous", "True")]
    assert await kids("opt") == [("param_groups[0]", "2 params, lr=0.1, momentum=0.9, dampening=0, weight_decay=0, "
                                  "nesterov=False, maximize=False, foreach=None, differentiable=False, fused=None")]
    await ctl.resume()
    assert await _exit(s, ctl) == 0
    line = [ln for ln in bytes(out).decode().splitlines() if ln.startswith("CALLS ")]
    # No aten op ran while stopped (the meta tensor was never read, previews bypass the program's
    # dispatch mode), no user __repr__, no __torch_function__ of a subclass or of a mode.
    assert json.loads(line[0][6:]) == {"aten": 0, "repr": 0, "tf": 0, "tfmode": 0}
