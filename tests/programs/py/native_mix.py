"""Threads asleep in C: some in time.sleep, some in libc's pause() called through ctypes (libffi),
each under a few Python frames of its own; the main thread in time.sleep.

Usage: native_mix.py NTHREADS READY_FILE -- writes READY_FILE (JSON) once every thread is about
to sleep: {"main": its native id, "threads": [[function, native id, frames]]}, frames as
traceback.extract_stack lists them ([function, file, line], outermost first).
"""

import ctypes
import json
import sys
import threading
import time
import traceback

N = int(sys.argv[1])
READY = sys.argv[2]
libc = ctypes.CDLL(None)
started = []
lock = threading.Lock()


def _record(name):
    frames = [[f.name, f.filename, f.lineno] for f in traceback.extract_stack()[:-2]]
    with lock:
        started.append([name, threading.get_native_id(), frames])


def in_sleep(depth):
    if depth:
        return in_sleep(depth - 1)
    _record("in_sleep")
    while True:
        time.sleep(1000)  # MARK:in_sleep


def in_ctypes(depth):
    if depth:
        return in_ctypes(depth - 1)
    _record("in_ctypes")
    while True:
        libc.pause()  # MARK:in_ctypes


def main():
    for i in range(N):
        fn = in_sleep if i % 2 == 0 else in_ctypes
        threading.Thread(target=fn, args=(i % 3,), daemon=True).start()
    while len(started) < N:
        time.sleep(0.01)
    time.sleep(0.2)  # let the last one reach its sleep
    with open(READY, "w") as f:
        json.dump({"main": threading.get_native_id(), "threads": started}, f)
    while True:
        time.sleep(1000)  # MARK:sleep_main


main()
