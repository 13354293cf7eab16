"""Recursion DEPTH deep in a thread with a large C stack, then a SIGTRAP to that thread.

Usage: deep.py DEPTH OUT.json -- writes the interpreter's own view of the stack first.
"""

import json
import signal
import sys
import threading
import traceback

DEPTH = int(sys.argv[1])
OUT = sys.argv[2]


def save(frames):
    with open(OUT, "w") as f:
        json.dump({"frames": [(fs.name, fs.filename, fs.lineno) for fs in frames],
                   "native_id": threading.get_native_id()}, f)


def record_and_trap():
    save(traceback.extract_stack()); signal.pthread_kill(threading.get_ident(), signal.SIGTRAP)  # MARK:deep_trap


def recurse(n):
    if n <= 0:
        return record_and_trap()
    return recurse(n - 1)  # MARK:deep_recurse


def main():
    # extract_stack itself, record_and_trap and the thread's bootstrap frames come on top of DEPTH
    recurse(DEPTH - 6)


sys.setrecursionlimit(DEPTH + 1000)
threading.stack_size(512 * 1024 * 1024)
t = threading.Thread(target=main, name="deep")
t.start()
t.join()
