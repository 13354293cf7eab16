"""The program tests/cli/test_remote.py runs on its second "node" (and here, to merge the two dumps).

Usage: remote_node.py OUT.json -- the main thread goes outer -> middle -> leaf and sleeps there for
good, after writing {"pid": its PID as it sees it, "frames": the interpreter's own view of the stack};
a thread named "ticker" writes a growing count to OUT.json.tick every 50 ms (so a test can tell that
the process runs), calling clock_nanosleep each time (a C breakpoint to stop at).
"""

import json
import os
import sys
import threading
import time
import traceback

OUT = sys.argv[1]


def tick():
    n = 0
    while True:
        n += 1
        with open(OUT + ".tick.tmp", "w") as f:
            f.write(str(n))
        os.replace(OUT + ".tick.tmp", OUT + ".tick")
        time.sleep(0.05)


def leaf(n):
    with open(OUT + ".tmp", "w") as f:
        json.dump({"pid": os.getpid(), "frames": [(fs.name, fs.filename, fs.lineno) for fs in traceback.extract_stack()]}, f)
    os.replace(OUT + ".tmp", OUT)
    time.sleep(1e6)  # MARK:remote_leaf


def middle(n):
    return leaf(n + 1)  # MARK:remote_middle


def outer():
    return middle(1)  # MARK:remote_outer


threading.Thread(target=tick, name="ticker", daemon=True).start()
outer()  # MARK:remote_module
