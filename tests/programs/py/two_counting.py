"""A process and the child it forks, each counting in a file of its own (argv[1]: the folder; PARENT and
CHILD), a step every 10 ms, for at most two minutes; the child's PID in CHILD.pid."""
import os
import sys
import time


def count(path):
    n = 0
    end = time.monotonic() + 120
    while time.monotonic() < end:
        n += 1
        with open(path + ".tmp", "w") as f:
            f.write(str(n))
        os.replace(path + ".tmp", path)
        time.sleep(0.01)


def main(d):
    pid = os.fork()
    if pid == 0:
        count(os.path.join(d, "CHILD"))
        os._exit(0)
    with open(os.path.join(d, "CHILD.pid"), "w") as f:
        f.write(str(pid))
    count(os.path.join(d, "PARENT"))
    os.waitpid(pid, 0)


if __name__ == "__main__":
    main(sys.argv[1])
