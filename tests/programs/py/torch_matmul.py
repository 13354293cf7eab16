"""Python code that calls torch.matmul (the test steps from the Python line into C++ and back)."""

import torch


def product(n):
    a = torch.ones(n, n)
    b = torch.full((n, n), 2.0)
    c = torch.matmul(a, b)  # MARK:matmul_call
    total = float(c.sum())  # MARK:after_matmul
    return total


print("total", product(3))
