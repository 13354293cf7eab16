"""The program of bench/dump_many.py: a tree of processes (this one, CHILDREN children, each with
GRANDCHILDREN children of its own), each with two threads DEPTH Python frames deep, asleep.

Usage: py_tree_deep.py CHILDREN GRANDCHILDREN DEPTH READY_DIR -- each process writes
READY_DIR/PID.json once both its threads sleep: {"pid", "ppid", "threads": {native id: the
thread's frames as traceback.extract_stack lists them (function, file, line), outermost first}};
READY_DIR/root is written by the root once every process has. Kill the process group to end it.
"""

import json
import os
import sys
import threading
import time
import traceback

CHILDREN, GRANDCHILDREN, DEPTH = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
READY_DIR = sys.argv[4]
stacks = {}
lock = threading.Lock()


def leaf():
    with lock:
        stacks[threading.get_native_id()] = [(f.name, f.filename, f.lineno) for f in traceback.extract_stack()][:-1]
    time.sleep(1e6)  # MARK:leaf_sleep


def recurse(n):
    if n <= 0:
        return leaf()
    return recurse(n - 1)


def worker():
    recurse(DEPTH - 6)  # _bootstrap, _bootstrap_inner, run, worker and leaf come on top


def fork(n, then):
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            then()
            os._exit(0)
        pids.append(pid)
    return pids


def live():
    """This process's two sleeping threads, announced; never returns."""
    threading.Thread(target=worker, daemon=True).start()
    t = threading.Thread(target=announce, daemon=True)
    t.start()
    recurse(DEPTH - 3)  # <module>, live and leaf come on top


def announce():
    while len(stacks) < 2:
        time.sleep(0.01)
    time.sleep(0.2)  # from the record to the sleep
    path = os.path.join(READY_DIR, "%d.json" % os.getpid())
    with open(path + ".tmp", "w") as f:
        json.dump({"pid": os.getpid(), "ppid": os.getppid(), "threads": stacks}, f)
    os.replace(path + ".tmp", path)


def child():
    fork(GRANDCHILDREN, live)
    live()


if __name__ == "__main__":
    fork(CHILDREN, child)
    total = 1 + CHILDREN * (1 + GRANDCHILDREN)
    threading.Thread(target=lambda: (
        [time.sleep(0.02) for _ in iter(lambda: len([n for n in os.listdir(READY_DIR) if n.endswith(".json")]) < total, False)],
        open(os.path.join(READY_DIR, "root"), "w").close()), daemon=True).start()
    live()
