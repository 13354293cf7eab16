"""Python calling C: ctypes on libfoo.so and a small extension module (tests/agent/test_agent.py)."""
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
if len(sys.argv) > 2:
    sys.path.insert(0, sys.argv[2])
    import tuidbg_testext
else:
    tuidbg_testext = None


def compute(a, b):
    r = lib.foo_add(a, b)  # MARK:ctypes_call
    r = r * 10  # MARK:after_ctypes
    return r


def compute_ext(a, b):
    r = tuidbg_testext.add(a, b)  # MARK:ext_call
    r = r * 100  # MARK:after_ext
    return r


print("result", compute(2, 3), flush=True)
if tuidbg_testext is not None:
    print("ext", compute_ext(4, 5), flush=True)
