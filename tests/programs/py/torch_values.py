"""Tensors, modules and an optimizer as locals at a Python breakpoint (tests/agent/test_agent_torch_values.py).

The program counts what describing its values must never cause: a user's ``__repr__``,
``__getattr__`` or ``__torch_function__`` run, and any ATen operation (a dispatch mode logs every
op from just before the breakpoint on, so reading a tensor's data or launching a kernel would show).
"""
import torch
from torch.utils._python_dispatch import TorchDispatchMode

user_calls = []
ops = []


class Logged(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        ops.append(str(func))
        return func(*args, **(kwargs or {}))


class Tagged(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        user_calls.append("torch_function")
        return super().__torch_function__(func, types, args, kwargs or {})


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
        self.register_buffer("steps", torch.zeros(1, dtype=torch.int64))

    def __repr__(self):
        user_calls.append("repr")
        return "Net()"

    def __getattr__(self, name):
        if name not in ("body", "steps"):
            user_calls.append("getattr " + name)
        return super().__getattr__(name)


def inspect_here(net, opt):
    x = torch.ones(4, 8)
    xt = x.t()
    sl = torch.arange(20, dtype=torch.float64)[5:15:2]
    sp = torch.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2))
    w = torch.ones(3, requires_grad=True)
    y = w * 2
    m = torch.empty(1000, 1000, device="meta")
    tg = torch.ones(2, 2).as_subclass(Tagged)
    size, dt, dev = x.shape, x.dtype, x.device
    param = net.body[0].weight
    before = (len(user_calls), len(ops))
    with Logged():
        here = 1  # MARK:values_here
    return here, before, x, xt, sl, sp, y, m, tg, size, dt, dev, param, opt


net = Net().eval()
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
inspect_here(net, opt)
print("done", user_calls, len(ops), flush=True)
