"""A multiprocessing Pool whose workers each do one task of 50 ms and exit (``maxtasksperchild=1``), so that
the pool replaces a worker every few milliseconds: the processes of its tree come and go while tuidbg
attaches to it (``attach --children``) or dumps it (``dump --children``).

Usage: pool_churn.py DIR -- writes DIR/ready once the pool runs, then DIR/beat (the number of rounds done)
after every round of tasks. Beside the pool, a child of its own (its PID in DIR/side) sleeps until
DIR/side-exit appears, then exits: a process of the tree that ends when a test says so."""

import multiprocessing
import os
import sys
import time


def work(i):
    time.sleep(0.05)  # MARK:pool work
    return i


def side(d):
    while not os.path.exists(os.path.join(d, "side-exit")):
        time.sleep(0.01)
    os._exit(0)


def main(d):
    pid = os.fork()
    if pid == 0:
        side(d)
    with open(os.path.join(d, "side"), "w") as f:
        f.write("%d\n" % pid)
    with multiprocessing.get_context("fork").Pool(4, maxtasksperchild=1) as pool:
        n = 0
        while True:
            pool.map(work, range(8), chunksize=1)
            n += 1
            with open(os.path.join(d, "beat.tmp"), "w") as f:
                f.write("%d\n" % n)
            os.rename(os.path.join(d, "beat.tmp"), os.path.join(d, "beat"))
            if n == 1:
                open(os.path.join(d, "ready"), "w").close()


if __name__ == "__main__":
    main(sys.argv[1])
