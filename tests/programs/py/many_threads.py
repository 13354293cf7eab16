"""A process with many threads (default 500), each waking every 50 ms: tuidbg's quit must let it go quickly.

Usage: many_threads.py DIR [N] -- writes DIR/ready once every thread runs; the main thread then counts in
DIR/beat every 20 ms (a test reads it to see that the process goes on after tuidbg quit)."""

import os
import sys
import threading
import time


def worker(started):
    started.release()
    while True:
        time.sleep(0.05)


def main(d, n):
    started = threading.Semaphore(0)
    for _ in range(n):
        threading.Thread(target=worker, args=(started,), daemon=True).start()
    for _ in range(n):
        started.acquire()
    open(os.path.join(d, "ready"), "w").close()
    k = 0
    while True:
        k += 1  # MARK:many tick
        with open(os.path.join(d, "beat.tmp"), "w") as f:
            f.write("%d\n" % k)
        os.rename(os.path.join(d, "beat.tmp"), os.path.join(d, "beat"))
        time.sleep(0.02)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 500)
