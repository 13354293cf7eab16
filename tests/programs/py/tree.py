"""A parent with a child of every multiprocessing start method, each asleep in its own function,
and a child that is not Python (sleep).

Usage: tree.py READY_FILE -- writes READY_FILE (JSON: {"parent": pid, "children": {method: pid},
"other": the sleep's pid})
once every child is asleep; the children exit with the parent.
"""

import json
import multiprocessing as mp
import os
import subprocess
import sys
import time


def child_sleep(method, conn):
    conn.send(os.getpid())
    conn.close()
    while True:
        time.sleep(1000)  # MARK:child_sleep


def main():
    ready = sys.argv[1]
    children = {}
    procs = []
    for method in ("fork", "forkserver", "spawn"):
        ctx = mp.get_context(method)
        here, there = ctx.Pipe()
        p = ctx.Process(target=child_sleep, args=(method, there), daemon=True)
        p.start()
        children[method] = here.recv()
        procs.append(p)
    other = subprocess.Popen(["sleep", "1000"])  # a child that is not Python
    time.sleep(0.3)  # from sending the PID to the sleep
    with open(ready + ".tmp", "w") as f:
        json.dump({"parent": os.getpid(), "children": children, "other": other.pid}, f)
    os.rename(ready + ".tmp", ready)
    while True:
        time.sleep(1000)  # MARK:parent_sleep


if __name__ == "__main__":
    main()
