"""A multiprocessing Pool of 8 (fork) whose workers wait, one of them (task 5) in another function
(the Parallel Stacks tab and pyall across a Pool).

Usage: pool8.py READY_DIR -- each worker writes READY_DIR/worker-I.json ({"task", "pid"}) once it holds
its task, and the parent writes READY_DIR/ready.json when all eight do; then everything waits (asleep:
no thread holds the GIL) until killed. Each task's ``size`` is 10, task 5's is 11.
"""

import json
import multiprocessing as mp
import os
import sys
import time


class Task(object):
    def __init__(self, i):
        self.i = i
        self.size = 11 if i == 5 else 10


def write_json(path, data):
    with open(path + ".tmp", "w") as f:
        json.dump(data, f)
    os.rename(path + ".tmp", path)


def wait(task):
    time.sleep(1000)  # MARK:wait


def odd_wait(task):
    time.sleep(1000)  # MARK:odd_wait


def work(i):
    task = Task(i)
    write_json(os.path.join(sys.argv[1], "worker-%d.json" % i), {"task": i, "pid": os.getpid()})
    if i == 5:
        odd_wait(task)  # MARK:call_odd
    else:
        wait(task)  # MARK:call_wait
    return i


def main():
    ready = sys.argv[1]
    pool = mp.get_context("fork").Pool(8)
    result = pool.map_async(work, range(8), chunksize=1)
    while not all(os.path.exists(os.path.join(ready, "worker-%d.json" % i)) for i in range(8)):
        time.sleep(0.02)
    write_json(os.path.join(ready, "ready.json"), {"pid": os.getpid()})
    result.get()  # MARK:parent_wait


if __name__ == "__main__":
    main()
