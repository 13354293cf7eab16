"""Recursion DEPTH deep in a thread, then asleep there until killed (no debugger needed).

Usage: deep_sleep.py DEPTH OUT.json -- writes the interpreter's own view of the stack first
(traceback.extract_stack, outermost first, and the thread's native ID), then sleeps.
"""

import json
import os
import sys
import threading
import time
import traceback

DEPTH = int(sys.argv[1])
OUT = sys.argv[2]


def save(frames):
    with open(OUT + ".tmp", "w") as f:
        json.dump({"frames": [(fs.name, fs.filename, fs.lineno) for fs in frames],
                   "native_id": threading.get_native_id()}, f)
    os.replace(OUT + ".tmp", OUT)


def record_and_sleep():
    save(traceback.extract_stack()); time.sleep(1e6)  # MARK:deep_sleep


def recurse(n):
    if n <= 0:
        return record_and_sleep()
    return recurse(n - 1)  # MARK:deep_recurse


def main():
    # record_and_sleep and the thread's bootstrap frames come on top of DEPTH
    recurse(DEPTH - 5)


sys.setrecursionlimit(DEPTH + 1000)
threading.stack_size(512 * 1024 * 1024)  # 3.9/3.10 recurse on the C stack too
t = threading.Thread(target=main, name="deep")
t.start()
t.join()
