"""Lines whose first native function runs through a subscript, an attribute access or an operator of a
C extension's type, not a call (tests/agent/test_agent.py: step into native)."""
import ctypes
import decimal


class Point(ctypes.Structure):
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int)]


def ops():
    buf = (ctypes.c_int * 3)(1, 2, 3)
    x = buf[1]  # MARK:op_subscript
    p = Point(4, 5)
    v = p.y  # MARK:op_attribute
    d = decimal.Decimal(3)
    e = d * d  # MARK:op_mul
    y = x + v  # MARK:op_python
    return x, v, e, y


print("ops", ops(), flush=True)
