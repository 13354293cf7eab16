"""Threads that sleep, each in its own function, until killed.

Usage: sleepers.py NTHREADS READY_FILE -- writes READY_FILE (JSON: native thread ids by
function) once every thread is asleep.
"""

import json
import sys
import threading
import time

N = int(sys.argv[1])
READY = sys.argv[2]
started = []
lock = threading.Lock()


def sleeper_a(i):
    with lock:
        started.append(("sleeper_a", i, threading.get_native_id()))
    while True:
        time.sleep(1000)  # MARK:sleep_a


def sleeper_b(i):
    with lock:
        started.append(("sleeper_b", i, threading.get_native_id()))
    ev = threading.Event()
    ev.wait()  # MARK:wait_b


def main():
    for i in range(N):
        fn = sleeper_a if i % 2 == 0 else sleeper_b
        threading.Thread(target=fn, args=(i,), name=f"{fn.__name__}-{i}", daemon=True).start()
    while len(started) < N:
        time.sleep(0.01)
    time.sleep(0.2)  # let the last one reach its sleep
    with open(READY, "w") as f:
        json.dump({"main": threading.get_native_id(), "threads": started}, f)
    while True:
        time.sleep(1000)  # MARK:sleep_main


main()
