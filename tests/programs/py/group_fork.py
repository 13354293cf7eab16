"""A parent with a helper process (asleep) that forks one more child after a line a Python breakpoint
can stop at (run groups: a child started by a process of the group joins it).

Usage: group_fork.py READY_DIR -- writes READY_DIR/helper.json once the helper is started."""

import json
import multiprocessing as mp
import os
import sys
import time


def helper():
    time.sleep(1000)


def child_work():
    return os.getpid()  # MARK:child_work


def ready_to_fork(ready_dir, pid):
    path = os.path.join(ready_dir, "helper.json")  # MARK:ready_to_fork
    with open(path, "w") as f:
        json.dump({"helper": pid}, f)


def main():
    ctx = mp.get_context("fork")
    h = ctx.Process(target=helper, daemon=True)
    h.start()
    ready_to_fork(sys.argv[1], h.pid)
    c = ctx.Process(target=child_work)
    c.start()
    c.join()
    print("child done", c.exitcode, flush=True)


if __name__ == "__main__":
    main()
