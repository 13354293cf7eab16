"""The program of bench/dump_fast.py: NTHREADS threads, each DEPTH Python frames deep, asleep.

Usage: py_threads_deep.py NTHREADS DEPTH READY.json -- writes READY.json once every thread
sleeps: {"main": native id, "threads": {native id: the thread's frames as
traceback.extract_stack lists them (function, file, line), outermost first}}.
"""

import json
import os
import sys
import threading
import time
import traceback

N = int(sys.argv[1])
DEPTH = int(sys.argv[2])
READY = sys.argv[3]
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


sys.setrecursionlimit(DEPTH + 1000)
for _ in range(N):
    threading.Thread(target=worker, daemon=True).start()
while len(stacks) < N:
    time.sleep(0.01)
time.sleep(0.2)  # the last one from its record to its sleep
with open(READY + ".tmp", "w") as f:
    json.dump({"main": threading.get_native_id(), "threads": stacks}, f)
os.replace(READY + ".tmp", READY)
while True:
    time.sleep(1e6)
