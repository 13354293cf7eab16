"""Spins in C called through ctypes.PyDLL (the GIL held) until the test releases it, after saying
"ready": ctrl+c lands in C under this Python frame (tests/agent/test_native_eval.py)."""
import ctypes
import sys


def wait_in_c(lib):
    waiting = ["for", "ctrl+c"]
    print("ready", flush=True)
    return lib.native_spin(len(waiting))


print("spun", wait_in_c(ctypes.PyDLL(sys.argv[1])), flush=True)
