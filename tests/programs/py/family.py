"""A running process that tuidbg attaches to (``tuidbg attach PID PID...``, ``attach --children``), and
the children it starts once it is told to, after the attach.

Usage: family.py DIR -- writes DIR/ready-PID.json, then calls tick() every 20 ms. It starts a child
when a file appears in DIR (each once): ``fork`` (os.fork; the child calls child_work() every 20 ms),
``spawn`` (multiprocessing's spawn: a Python started anew, calling child_work() too). When DIR/stop
appears the children end. On SIGUSR1 it writes DIR/report-PID.json: what tuidbg may have changed in
it (its environment as the process sees it, subprocess's fork switches, trace hooks, threads).
"""

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time

DIR = sys.argv[1] if __name__ == "__main__" else None


def child_work(d, n):
    while not os.path.exists(os.path.join(d, "stop")):
        n += 1  # MARK:child line
        time.sleep(0.02)


def tick(n):
    return n + 1  # MARK:tick line


def report(*_):
    monitoring = None
    if hasattr(sys, "monitoring"):
        monitoring = [sys.monitoring.get_tool(i) for i in range(6)]
    data = {
        "env": {k: v for k, v in os.environ.items() if k.startswith("TUIDBG") or k == "PYTHONPATH"},
        "vfork": [getattr(subprocess, "_USE_VFORK", None), getattr(subprocess, "_USE_POSIX_SPAWN", None)],
        "trace": repr(sys.gettrace()),
        "monitoring": monitoring,
        "threads": sorted(t.name for t in threading.enumerate()),
        "excepthook": repr(sys.excepthook),
    }
    path = os.path.join(DIR, "report-%d.json" % os.getpid())
    with open(path + ".tmp", "w") as f:
        json.dump(data, f)
    os.rename(path + ".tmp", path)


def main():
    signal.signal(signal.SIGUSR1, report)
    started = set()
    kids = []
    with open(os.path.join(DIR, "ready-%d.json" % os.getpid()), "w") as f:
        json.dump({"pid": os.getpid()}, f)
    n = 0
    while True:
        n = tick(n)
        for how in ("fork", "spawn"):
            if how not in started and os.path.exists(os.path.join(DIR, how)):
                started.add(how)
                if how == "fork":
                    pid = os.fork()
                    if pid == 0:
                        child_work(DIR, 100)
                        os._exit(0)
                    kids.append(pid)
                else:
                    p = multiprocessing.get_context("spawn").Process(target=child_work, args=(DIR, 200))
                    p.start()
                    kids.append(p)
                with open(os.path.join(DIR, "started-" + how), "w") as f:
                    f.write("%d\n" % (pid if how == "fork" else p.pid))
        time.sleep(0.02)


if __name__ == "__main__":
    main()
