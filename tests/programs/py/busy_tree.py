"""A process tree that tuidbg attaches to with ``--children``, every process running into one line
without pause: the parent forks N children (default 3), then each of the N+1 processes calls tick() in a
loop, and every 10 ms writes its count to DIR/beat-PID (the fault tests read it to see that a process is
still making progress).

Usage: busy_tree.py DIR [N] -- writes DIR/ready once every child has written its first beat."""

import os
import sys
import time

DIR = sys.argv[1] if __name__ == "__main__" else None


def tick(n):
    return n + 1  # MARK:busy tick


def beat(path, n):
    with open(path + ".tmp", "w") as f:
        f.write("%d\n" % n)
    os.rename(path + ".tmp", path)


def work():
    path = os.path.join(DIR, "beat-%d" % os.getpid())
    n = 0
    last = 0.0
    while True:
        n = tick(n)
        now = time.monotonic()
        if now - last >= 0.01:
            beat(path, n)
            last = now
        time.sleep(0.0005)


def main():
    kids = []
    for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 3):
        pid = os.fork()
        if pid == 0:
            work()
        kids.append(pid)
    while not all(os.path.exists(os.path.join(DIR, "beat-%d" % k)) for k in kids):
        time.sleep(0.01)
    open(os.path.join(DIR, "ready"), "w").close()
    work()


if __name__ == "__main__":
    main()
