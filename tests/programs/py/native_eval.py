"""Python calling into C with a native breakpoint there (tests/agent/test_native_eval.py).

argv[1]: the compiled native_eval_lib.so. First through ctypes.PyDLL (the thread keeps the GIL during
the call), then through ctypes.CDLL (it releases it) while a worker thread runs Python, so the worker
holds the GIL at that stop, then through CDLL with no other thread (nobody holds the GIL), then into
malloc (through PyDLL)."""
import ctypes
import sys
import threading


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __repr__(self):
        return "Point(x=%d, y=%d)" % (self.x, self.y)


class Broken:
    def __repr__(self):
        raise ValueError("repr of Broken failed")


def doubled(v):
    return v * 2  # MARK:doubled (only the tests' expressions call it)


def held(lib):
    count = 41
    point = Point(3, 4)
    broken = Broken()
    r = lib.native_point(count)  # MARK:held_call
    return r + point.x + (broken is not None)


def released(lib):
    done = threading.Event()
    started = threading.Event()

    ran = ctypes.c_long.in_dll(lib, "worker_ran")

    def spin():
        started.set()
        while not done.is_set():
            ran.value += 1  # (C waits for this: this thread holds the GIL then, and keeps it)

    worker = threading.Thread(target=spin, name="spinner")
    worker.start()
    started.wait()
    label = "released"
    r = lib.native_wait_then_point(7)  # MARK:released_call
    done.set()
    worker.join()
    return r, label


def free(lib):
    nobody = "holds it"
    return lib.native_point(5), nobody  # MARK:free_call


def alloc(lib):
    size = 64
    return lib.native_alloc(size)


def main():
    total = held(ctypes.PyDLL(sys.argv[1]))
    r, label = released(ctypes.CDLL(sys.argv[1]))
    r2, text = free(ctypes.CDLL(sys.argv[1]))
    alloc(ctypes.PyDLL(sys.argv[1]))
    print("result", total, r, label, r2, text, flush=True)


main()
