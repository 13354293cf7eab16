"""A Python process for the fault tests: it runs forever, calling work() 20 times a second, and on
SIGUSR1 prints one line of JSON saying what a debugger may have left in it (threads, trace and
monitoring hooks, exception and breakpoint hooks, import finders). It must come out of any debugger
session as it went in."""

import json
import signal
import sys
import threading
import time


def report(*_):
    mon = getattr(sys, "monitoring", None)
    info = {
        "threads": sorted(t.name for t in threading.enumerate()),
        "trace": sys.gettrace() is not None,
        "trace_fn": repr(sys.gettrace())[:100],
        "profile": sys.getprofile() is not None,
        "thread_trace": getattr(threading, "gettrace", lambda: None)() is not None,
        "excepthook": sys.excepthook is sys.__excepthook__,
        "threading_excepthook": threading.excepthook is threading.__excepthook__,
        "breakpointhook": sys.breakpointhook is sys.__breakpointhook__,
        "monitoring": [mon.get_tool(i) for i in range(6)] if mon else [],
        "finders": [type(f).__name__ for f in sys.meta_path],
        "calls": calls,
    }
    print("REPORT " + json.dumps(info), flush=True)


calls = 0


def work(n):
    global calls
    calls += 1
    return n + 1  # MARK:work


signal.signal(signal.SIGUSR1, report)
print("ready", flush=True)
i = 0
while True:
    i = work(i)
    time.sleep(0.05)
