"""libtorch throws c10::Error subclasses: one caught by Python, one uncaught."""
import torch


def index_it():
    try:
        torch.zeros(3)[5]  # MARK:index_call
    except IndexError as exc:
        print("caught", exc)


def multiply():
    return torch.ones(2, 3) @ torch.ones(2, 3)  # MARK:matmul_call


index_it()
multiply()
