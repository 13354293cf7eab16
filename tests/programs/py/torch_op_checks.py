"""A pytest test that calls the custom C++ operator of torch_custom_op.cpp (screenshots/generate.py's
torch scene stops inside the op, under ``python -m pytest torch_op_checks.py -k scale_add``).

The extension is loaded from the build directory in $TUIDBG_OP_BUILD (built there beforehand by
``python torch_custom_op.py DIR build-only``; loading it again is a no-op for ninja). Named without the
test_ prefix: the project's own test run does not collect it; pytest collects a file named on its
command line whatever its name.
"""
import os
import tempfile

import torch
from torch_custom_op import build


def test_scale_add():
    op = build(os.environ.get("TUIDBG_OP_BUILD") or os.path.join(tempfile.gettempdir(), "tuidbg-op-build"))
    x = torch.ones(4, 8)
    out = op.scale_add(x, 2.0)  # MARK:op_call_in_test
    assert float(out.sum()) == 4 * 8 * 3.0  # (x * 2 + x)
