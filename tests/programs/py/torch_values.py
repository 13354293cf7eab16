"""Torch values at a Python stop (tests/agent/test_agent_torch_values.py): tensors of several dtypes,
shapes and layouts, a meta tensor, a Tensor subclass with __torch_function__, a module with a side-effecting
__repr__ and an optimizer. The program counts aten ops (a dispatch mode active at the stop), __repr__ and
__torch_function__ calls and prints the counts after the stop."""
import torch, json
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
calls = {"aten": 0, "repr": 0, "tf": 0, "tfmode": 0}
class Count(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        calls["aten"] += 1
        return func(*args, **(kwargs or {}))
class CountTF(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        calls["tfmode"] += 1
        return func(*args, **(kwargs or {}))
class MyT(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        calls["tf"] += 1
        return super().__torch_function__(func, types, args, kwargs or {})
class Loud(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)
        self.register_buffer("steps", torch.zeros(3, dtype=torch.int64))
    def __repr__(self):
        calls["repr"] += 1
        return "Loud!"
def main():
    a = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    t = a.t()
    s = a[1:3, 2:5]
    i = torch.tensor([[1, 2], [3, 4]], dtype=torch.int16)
    sp = torch.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2))
    w = torch.ones(3, requires_grad=True)
    y = w * 2
    m = torch.empty(2, 3, device="meta")
    sub = torch.zeros(2).as_subclass(MyT)
    net = Loud()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    size, dt, dev = a.shape, a.dtype, a.device
    big = torch.arange(250_000, dtype=torch.float64)
    calls["tf"] = 0
    with CountTF(), Count():  # the modes count every torch function and aten op run while stopped below
        pass  # MARK:stop
    print("CALLS", json.dumps(calls), flush=True)
    assert all(v is not None for v in (t, s, i, sp, y, m, sub, opt, size, dt, dev, big))  # all kept alive to the stop
main()
