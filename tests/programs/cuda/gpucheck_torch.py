"""The torch program of scripts/gpu-check.sh (run under cuda-gdb by scripts/gpucheck/scenes.py).

    python gpucheck_torch.py build BUILD_DIR     build the custom operator (gpucheck_op.cpp/.cu,
                                                 torch.utils.cpp_extension, -g -O0 / -g -G)
    python gpucheck_torch.py op BUILD_DIR        call it on a CUDA tensor (a kernel breakpoint in it
                                                 has device frames with host and Python frames below)
    python gpucheck_torch.py preview             a Python stop with CUDA tensors in its locals

Exit codes: 0 done, 1 a wrong result, 2 no CUDA here (this torch has no CUDA, or no device: the
dry run stops there; nothing after it needs faking). The host tensor before that exists in every
mode, so that a dry run still stops at a Python line (MARK:py_host) of this program.
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def no_cuda():
    if torch.version.cuda is None:
        return "this torch has no CUDA (torch.version.cuda is None)"
    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is False"
    return None


def build(build_dir):
    from torch.utils.cpp_extension import load

    os.makedirs(build_dir, exist_ok=True)
    return load("gpucheck_op", sources=[os.path.join(HERE, "gpucheck_op.cpp"), os.path.join(HERE, "gpucheck_op.cu")],
                extra_cflags=["-g", "-O0"], extra_cuda_cflags=["-g", "-G"], build_directory=build_dir)


def call_op(op):
    x = torch.arange(4096, dtype=torch.float32, device="cuda") * 0.25
    y = op.scale(x, 3.0)  # MARK:op_call
    torch.cuda.synchronize()
    ok = bool(torch.equal(y, x * 3.0))
    print("op: y[:4] =", y[:4].tolist(), "ok" if ok else "WRONG", flush=True)
    return ok


def inspect(weights, steps):
    total = weights.numel() + steps.numel()  # MARK:py_stop
    return total


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode not in ("build", "op", "preview") or (mode != "preview" and len(sys.argv) < 3):
        print(__doc__, file=sys.stderr)
        return 64
    host = torch.arange(6, dtype=torch.float32) * 0.5
    print("host tensor", host.tolist(), flush=True)  # MARK:py_host
    why = no_cuda()
    if why:
        print("no CUDA:", why, flush=True)
        return 2
    if mode == "build":
        build(sys.argv[2])
        print("built", flush=True)
        return 0
    if mode == "op":
        return 0 if call_op(build(sys.argv[2])) else 1
    # preview: a bounded preview must show these numbers (first and last five, min/max/mean)
    weights = (torch.arange(24, dtype=torch.float32, device="cuda") * 0.5).reshape(4, 6)
    steps = torch.arange(200000, dtype=torch.int64, device="cuda")
    n = inspect(weights, steps)
    print("numel", n, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
