"""tuidbg's demo: Python calling a C library, with a SIGTRAP break-in.

Run it with ``bash scripts/demo.sh`` (which builds the library and starts tuidbg).
In the debugger, try: n (next), s (step), c (continue), b on a line, 2 and 3 to
look at the Python and C++ stacks, 5 for the locals.
"""

import ctypes
import os
import signal
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIB = ctypes.CDLL(str(Path(os.environ.get("VECMATH_LIB", HERE / "_build" / "libvecmath.so"))))
LIB.vm_dot.restype = ctypes.c_double
LIB.vm_dot.argtypes = [ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double), ctypes.c_size_t]
LIB.vm_stddev.restype = ctypes.c_double
LIB.vm_stddev.argtypes = [ctypes.POINTER(ctypes.c_double), ctypes.c_size_t]


def as_array(values):
    return (ctypes.c_double * len(values))(*values)


def under_a_debugger() -> bool:
    with open("/proc/self/status") as f:
        return any(line.startswith("TracerPid:") and line.split()[1] != "0" for line in f)


def break_here():
    """Stop in the debugger, like os.kill(os.getpid(), SIGTRAP), but harmless without one."""
    if under_a_debugger():
        os.kill(os.getpid(), signal.SIGTRAP)
    else:
        print("demo: no debugger attached; not stopping", file=sys.stderr)


def similarity(a, b):
    dot = LIB.vm_dot(as_array(a), as_array(b), len(a))
    norm = (LIB.vm_dot(as_array(a), as_array(a), len(a)) * LIB.vm_dot(as_array(b), as_array(b), len(b))) ** 0.5
    return dot / norm


def spread(values):
    return LIB.vm_stddev(as_array(values), len(values))


def report(name, values, reference):
    score = similarity(values, reference)
    if name == "noisy":
        break_here()  # the debugger stops here, at this Python line
    return f"{name:>6}: similarity {score:.3f}, spread {spread(values):.3f}"


def main():
    reference = [1.0, 2.0, 3.0, 4.0]
    series = {
        "noisy": [3.0, -1.0, 7.5, 0.2],
        "clean": [1.1, 2.0, 2.9, 4.2],
        "flat": [2.0, 2.0, 2.0, 2.0],
    }
    for name, values in series.items():
        print(report(name, values, reference))


if __name__ == "__main__":
    main()
