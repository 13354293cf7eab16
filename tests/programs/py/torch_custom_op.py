"""Calls a custom C++ operator (tests/programs/py/torch_custom_op.cpp, built with -g -O0).

argv[1]: the build directory (compiled once per test session; a rebuild with the same
source and flags is a no-op for ninja). torch_op_checks.py calls the op from a pytest test.
"""
import os
import sys

import torch
from torch.utils.cpp_extension import load

HERE = os.path.dirname(os.path.abspath(__file__))


def build(build_dir):
    os.makedirs(build_dir, exist_ok=True)
    return load("tuidbg_custom_op", sources=[os.path.join(HERE, "torch_custom_op.cpp")],
                extra_cflags=["-g", "-O0"], build_directory=build_dir)


def main():
    op = build(sys.argv[1])
    if len(sys.argv) > 2 and sys.argv[2] == "build-only":
        return
    x = torch.ones(4, 8)
    out = op.scale_add(x, 2.0)  # MARK:op_call
    print("sum", float(out.sum()))  # MARK:after_op


if __name__ == "__main__":
    main()
