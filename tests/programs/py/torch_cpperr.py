"""A TORCH_CHECK that fails in C++ (a matmul of mismatched shapes: c10::detail::torchCheckFail throws
c10::Error), caught in Python as a RuntimeError (tests/engine/test_torch_steps.py); a breakpoint() before it."""
import torch


def bad(a, b):
    try:
        return a @ b  # MARK:bad_matmul
    except RuntimeError as exc:  # MARK:except
        print("caught", type(exc).__name__, flush=True)  # MARK:caught
        return None


a, b = torch.ones(2, 3), torch.ones(2, 3)
breakpoint()  # MARK:breakpoint
shapes = (a.shape, b.shape)  # MARK:after_breakpoint
bad(a, b)
print("done", flush=True)
