"""gdb's `next` while the process that sent it keeps working: why tuidbg's main thread must go
quiet once it has written a step (issue 11, item 3).

A driver starts gdb (MI, -nx) on bench/programs/loop50.c, stops at the loop, and times `-exec-next`
to `*stopped`, many times, each after a pause (as a person's next key finds the machine). After
writing the command it either waits for the answer at once, or first keeps its core busy for
``--busy`` ms (as a UI handling the step's ``^running`` would). ``pinned``: the driver on core 0,
gdb (and the program) on core 1 (taskset), the same busy wait.

Usage: python bench/gdb_step_busy.py [--steps N] [--idle SECONDS] [--busy MS]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import time

from common import REPO, build, line_of

PROG_SRC = REPO / "bench" / "programs" / "loop50.c"


class Gdb:
    def __init__(self, exe: str, pin: bool):
        argv = ["gdb", "--interpreter=mi3", "-q", "-nx", exe]
        if pin:
            argv = ["taskset", "-c", "1", *argv]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
                                     start_new_session=True)
        self.buf = b""
        self.token = 100
        self.until(lambda line: line.startswith(b"(gdb)"))

    def until(self, ok) -> bytes:
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                if ok(line):
                    return line
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise SystemExit("gdb ended")
            self.buf += chunk

    def send(self, command: str) -> bytes:
        self.token += 1
        tok = str(self.token).encode()
        self.proc.stdin.write(tok + command.encode() + b"\n")
        return tok

    def cmd(self, command: str) -> bytes:
        tok = self.send(command)
        return self.until(lambda line: line.startswith(tok + b"^"))

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def steps(exe: str, bp: str, n: int, idle: float, busy_ms: float, pin: bool) -> float:
    gdb = Gdb(exe, pin)
    try:
        gdb.cmd(f"-break-insert -t {bp}")
        gdb.cmd("-exec-run")
        gdb.until(lambda line: line.startswith(b"*stopped"))
        times = []
        for _ in range(n):
            time.sleep(idle)
            t0 = time.perf_counter()
            gdb.send("-exec-next")
            end = t0 + busy_ms / 1000
            while time.perf_counter() < end:
                pass
            gdb.until(lambda line: line.startswith(b"*stopped"))
            times.append(time.perf_counter() - t0)
        return statistics.median(times) * 1000
    finally:
        gdb.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--idle", type=float, default=0.15, help="pause before each step (s)")
    ap.add_argument("--busy", type=float, default=1.0, help="the driver's busy time after writing (ms)")
    args = ap.parse_args()
    exe = str(build("loop50"))
    bp = f"loop50.c:{line_of(PROG_SRC, 'loop_a')}"
    rows = [("answer awaited at once", 0.0, False), (f"busy {args.busy:g} ms first", args.busy, False)]
    if shutil.which("taskset") and os.cpu_count() and os.cpu_count() >= 2:
        rows.append((f"busy {args.busy:g} ms first, pinned apart", args.busy, True))
    for name, busy, pin in rows:
        if pin:
            os.sched_setaffinity(0, {0})
        try:
            ms = steps(exe, bp, args.steps, args.idle, busy, pin)
        finally:
            os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
        print(f"{name:36s} -exec-next -> *stopped median {ms:6.2f} ms  (n={args.steps})")


if __name__ == "__main__":
    main()
