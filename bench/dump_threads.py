#!/usr/bin/env python3
"""Benchmark: ``tuidbg dump PID`` end to end on a 64-thread Python process.

The process (tests/programs/py/sleepers.py) runs on Debian's stripped python3.11 when the
machine has it (else the first pyenv Python found); 64 threads sleep, each in a
Python function. Timed, end to end (process start of the command to its exit):

- ``tuidbg dump PID``            Python frames of every thread (read without gdb since issue 11;
                                 bench/dump_fast.py compares it with py-spy and pystack);
- ``tuidbg dump --via-gdb PID``  the same through gdb (attach, the walker inside gdb, detach);
- ``tuidbg dump --native PID``   plus every thread's native frames, merged (through gdb);
- baseline: ``gdb -p PID -batch -nx -ex "thread apply all bt"`` (the same attach, unwind
  and detach work, gdb's own output, no Python frames).

After every run the process must still be running with TracerPid 0.

Usage: .venv/bin/python bench/dump_threads.py [--threads 64] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers import DEBIAN_PY311, pyenv_python  # noqa: E402

SLEEPERS = ROOT / "tests" / "programs" / "py" / "sleepers.py"


def tracer(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("TracerPid:")).split()[1])


def run(cmd: list[str], env: dict) -> tuple[float, str]:
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, stdin=subprocess.DEVNULL)
    ms = (time.perf_counter() - t) * 1000
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()}")
    return ms, res.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=64)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    py = DEBIAN_PY311 if DEBIAN_PY311.exists() else next(
        (p for p in (pyenv_python(m) for m in ("3.12", "3.11", "3.13", "3.10", "3.9")) if p), None)
    if py is None:
        raise SystemExit("no Python interpreter to run the sleepers with")
    ready = Path(tempfile.mkdtemp()) / "ready.json"
    proc = subprocess.Popen([str(py), str(SLEEPERS), str(args.threads), str(ready)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("DEBUGINFOD_URLS", None)
    try:
        while not ready.exists():
            if proc.poll() is not None:
                raise SystemExit("sleepers.py exited")
            time.sleep(0.05)
        time.sleep(0.2)
        tuidbg = [sys.executable, "-m", "tuidbg", "dump"]
        cases = [
            ("tuidbg dump", tuidbg + [str(proc.pid)]),
            ("tuidbg dump --via-gdb", tuidbg + ["--via-gdb", str(proc.pid)]),
            ("tuidbg dump --native", tuidbg + ["--native", str(proc.pid)]),
            ("gdb thread apply all bt", ["gdb", "-p", str(proc.pid), "-batch", "-nx", "-ex", "thread apply all bt"]),
        ]
        times: dict[str, list[float]] = {name: [] for name, _ in cases}
        for _ in range(args.runs):
            for name, cmd in cases:
                ms, out = run(cmd, env)
                times[name].append(ms)
                if name in ("tuidbg dump", "tuidbg dump --via-gdb"):
                    threads = out.count("\nThread ")
                    assert threads == args.threads + 1, (threads, out[:500])
                time.sleep(0.1)
                assert proc.poll() is None, "the process died"
                assert tracer(proc.pid) == 0, "the process is still traced"
        # tuidbg's own start-up, for reference: the CLI doing nothing but parsing its arguments
        start_ms = statistics.median(run([sys.executable, "-m", "tuidbg", "--version"], env)[0] for _ in range(3))
    finally:
        proc.kill()
        proc.wait()
    base = statistics.median(times["gdb thread apply all bt"])
    print(f"\n{args.threads + 1} threads ({py}), ms, median of {args.runs} runs; process alive and untraced after each")
    print(f"{'command':<26} {'median':>8} {'min':>8} {'max':>8} {'vs gdb bt':>10}")
    for name, v in times.items():
        print(f"{name:<26} {statistics.median(v):>8.0f} {min(v):>8.0f} {max(v):>8.0f} {statistics.median(v) / base:>10.2f}")
    print(f"{'(tuidbg --version)':<26} {start_ms:>8.0f}")
    dump = statistics.median(times["tuidbg dump"])
    print("\ngoal (tuidbg dump <= 1000 ms):", "met" if dump <= 1000 else "missed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
