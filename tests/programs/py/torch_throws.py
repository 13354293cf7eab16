"""PyTorch's C++ errors, thrown from two sites (tests/engine/test_cxxthrow.py).

The same indexing error twice, caught in Python each time (its throw site is the one the test
skips), then a matmul of mismatched shapes, uncaught: a c10::Error, then a Python RuntimeError.
"""
import torch


def index_twice():
    t = torch.zeros(3)
    for _ in range(2):
        try:
            t[5]  # MARK:index_throw
        except IndexError:
            pass


def bad_matmul():
    return torch.ones(2, 3) @ torch.ones(2, 3)  # MARK:matmul_throw


index_twice()
print("indexed", flush=True)
bad_matmul()
