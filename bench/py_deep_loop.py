"""Bench program: recurse DEPTH deep and stop with SIGTRAP, STOPS times (each stop is a fresh one).

Usage: py_deep_loop.py DEPTH STOPS
"""

import signal
import sys
import threading

DEPTH = int(sys.argv[1])
STOPS = int(sys.argv[2])


def recurse(n):
    if n <= 0:
        signal.pthread_kill(threading.get_ident(), signal.SIGTRAP)
        return 0
    return recurse(n - 1) + 1


def main():
    for _ in range(STOPS):
        recurse(DEPTH - 4)  # main, <module>, recurse at the bottom, thread bootstrap: about DEPTH in all


sys.setrecursionlimit(DEPTH + 1000)
threading.stack_size(512 * 1024 * 1024)  # 3.9/3.10 recurse on the C stack too
t = threading.Thread(target=main)
t.start()
t.join()
