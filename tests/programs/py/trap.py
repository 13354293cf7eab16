"""The main thread stops itself while a second thread is blocked in another function.

Usage: trap.py OUT.json [trap|abort]

Before stopping, it writes what the interpreter itself says about both threads
(traceback.extract_stack(), the code objects' qualified names, native thread ids)
and some locals' reprs to OUT.json. Then the main thread sends the process SIGTRAP
(``os.kill``), or with ``abort`` calls ``os.abort()`` (a core file test). The call
that stops and the one that records are on the same line, so the frames match.
"""

import _thread
import json
import os
import signal
import sys
import threading
import traceback

OUT = sys.argv[1]
HOW = sys.argv[2] if len(sys.argv) > 2 else "trap"
record = {}
ready = _thread.allocate_lock()
ready.acquire()
block = _thread.allocate_lock()
block.acquire()


def describe():
    """The caller's stack as the interpreter sees it (outermost first)."""
    caller = sys._getframe(1)
    frames = [(fs.name, fs.filename, fs.lineno) for fs in traceback.extract_stack(caller)]
    quals = []
    f = caller
    while f is not None:
        quals.append(getattr(f.f_code, "co_qualname", None))
        f = f.f_back
    return {"frames": frames, "qualnames": quals[::-1], "native_id": threading.get_native_id(),
            "ident": threading.get_ident()}


def save():
    with open(OUT, "w") as f:
        json.dump(record, f)


def blocked_in_worker():
    record["worker"] = describe(); ready.release(); block.acquire()  # MARK:worker_block


class Outer:
    class Inner:
        def method(self, n):
            if n:
                return self.method(n - 1)  # MARK:method_recurse
            return stop_here()  # MARK:method_leaf


def stop_here():
    an_int = 7
    big = -(2 ** 200)
    flt = 2.5
    yes = True
    nothing = None
    text = "naïve ☃ \n"
    raw = b"\x00ab"
    lst = [1, "two", [3]]
    tup = (1,)
    dct = {"a": 1, "b": [2]}
    st = {5}
    obj = Outer()
    long_text = "x" * 1000
    captured = 5

    def closure():
        return captured

    record["locals"] = {k: repr(v) for k, v in locals().items() if k not in ("obj", "closure")}
    record["main"] = describe(); save(); os.abort() if HOW == "abort" else os.kill(os.getpid(), signal.SIGTRAP)  # MARK:stop
    return closure


def main():
    t = threading.Thread(target=blocked_in_worker, name="worker", daemon=True)
    t.start()
    ready.acquire()
    # a builtin (sorted) calls a lambda that resumes a generator expression: several C calls of the eval loop
    return sorted([1], key=lambda v: next(Outer.Inner().method(k) for k in [2]))  # MARK:main_call


main()  # MARK:module_call
