"""Python code that calls torch.randn (the test breaks in at::native::randn)."""

import torch


def make_tensor(rows):
    t = torch.randn(rows, 4)  # MARK:randn_call
    return t


def main():
    return make_tensor(3)  # MARK:main_call


print(main().shape)
