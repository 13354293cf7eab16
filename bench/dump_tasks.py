#!/usr/bin/env python3
"""Benchmark: the asyncio tasks of ``tuidbg dump PID`` (issue 32).

Cases, each one fresh process of tests/programs/py/tasks_demo.py (every task waiting, the loop idle):

- ``ps-1000`` (CPython 3.14 by scripts/build-cpython314.sh, 1,000 pending tasks + the demo's 12):
  ``tuidbg dump PID`` against ``python3.14 -m asyncio ps PID`` (CPython's own reader, the same
  interpreter's ``_remote_debugging``), taking turns on the process, each end to end (the command's
  start to its exit); checked: the same tasks (ids) with the same names.
- ``read-10000`` (Debian's stripped /usr/bin/python3.11, 10,000 pending tasks + 12): ``tuidbg dump
  PID`` end to end, its peak memory (the command's ru_maxrss), and the read itself in this process:
  ``procread.snapshot.take`` with the tasks against without them (the time the process is stopped
  for), and the task read's CPU time (``time.process_time``: the machine is shared).

After every tuidbg run the process runs, TracerPid 0. tuidbg's bytecode is compiled first (as after
``pip install``); the CPU time of each command is printed too (the machine is shared).

Usage: .venv/bin/python bench/dump_tasks.py [--runs 11] [--case ps-1000|read-10000 ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from helpers import DEBIAN_PY311, cpython314  # noqa: E402

DEMO = ROOT / "tests" / "programs" / "py" / "tasks_demo.py"
TUIDBG = ROOT / ".venv" / "bin" / "tuidbg"
_PS_ROW = re.compile(r"^\s*(\d+)\s+(0x[0-9a-f]+)\s+(.*?)\s{2,}")


def tracer(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("TracerPid:")).split()[1])


def start(python: Path, extra: int, tmp: Path) -> tuple[subprocess.Popen, dict]:
    ready = tmp / f"ready-{extra}.json"
    proc = subprocess.Popen([str(python), str(DEMO), str(ready), "--extra", str(extra)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while not ready.exists():
        if proc.poll() is not None:
            raise SystemExit(f"tasks_demo.py exited: {proc.stderr.read().decode()[-500:]}")
        if time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("tasks_demo.py did not get ready")
        time.sleep(0.05)
    time.sleep(0.3)
    return proc, json.loads(ready.read_text())


CPU: dict[str, list[float]] = {}


def timed(cmd: list[str], tool: str = "") -> tuple[float, str, int, int]:
    """(seconds, stdout, exit status, peak RSS in KiB) of one run of ``cmd`` (its CPU time in ``CPU[tool]``)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    out, _err = proc.communicate()
    dt = time.perf_counter() - t0
    CPU.setdefault(tool, []).append(getattr(proc, "_tuidbg_cpu", 0.0))
    return dt, out.decode(errors="replace"), proc.returncode, proc_rss(proc)


def proc_rss(proc) -> int:
    return getattr(proc, "_tuidbg_rss", 0)


class _Popen(subprocess.Popen):
    def _try_wait(self, wait_flags):  # (the child's rusage with its status: its peak memory)
        try:
            pid, sts, ru = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return self.pid, 0
        if pid == self.pid:
            self._tuidbg_rss = ru.ru_maxrss
            self._tuidbg_cpu = ru.ru_utime + ru.ru_stime
        return pid, sts


subprocess.Popen = _Popen  # type: ignore[misc]


def ps_tasks(text: str) -> dict[str, str]:
    """``python -m asyncio ps``'s table: task id -> name."""
    out = {}
    for line in text.splitlines():
        m = _PS_ROW.match(line)
        if m:
            out[m.group(2)] = m.group(3).strip()
    return out


def stats(xs: list[float]) -> tuple[float, float, float]:
    return statistics.median(xs), min(xs), max(xs)


def case_ps(runs: int, tmp: Path) -> list[str]:
    py = cpython314("3.14")
    if py is None:
        return ["ps-1000: no CPython 3.14 build (scripts/build-cpython314.sh)"]
    proc, info = start(py, 1000, tmp)
    try:
        doc = json.loads(subprocess.run([str(TUIDBG), "dump", "--json", str(proc.pid)], capture_output=True,
                                        text=True, check=True).stdout)
        mine = {t["id"]: t["name"] for t in doc["processes"][0]["tasks"]}
        times = {"tuidbg dump": [], "python3.14 -m asyncio ps": []}
        theirs = None
        for _ in range(runs):
            dt, out, rc, _rss = timed([str(TUIDBG), "dump", str(proc.pid)], "tuidbg dump")
            assert rc == 0 and tracer(proc.pid) == 0 and proc.poll() is None
            assert out.count("Task '") + sum(int(n) for n in re.findall(r"^(\d+) tasks: ", out, re.M)) == len(mine)
            times["tuidbg dump"].append(dt)
            dt, out, rc, _rss = timed([str(py), "-m", "asyncio", "ps", str(proc.pid)], "python3.14 -m asyncio ps")
            assert rc == 0, out
            theirs = ps_tasks(out)
            times["python3.14 -m asyncio ps"].append(dt)
        same = "same tasks and names" if theirs == mine else (
            f"DIFFERENT: {len(set(mine) ^ set(theirs))} ids differ, "
            f"{sum(mine[k] != theirs[k] for k in set(mine) & set(theirs))} names differ")
        peer = statistics.median(times["python3.14 -m asyncio ps"])
        lines = [f"ps-1000: CPython {doc['processes'][0]['python']}, {len(mine)} tasks ({same}), {runs} runs each"]
        for tool, xs in times.items():
            med, lo, hi = stats(xs)
            lines.append(f"  {tool:28s} median {med * 1e3:7.1f} ms  min {lo * 1e3:7.1f}  max {hi * 1e3:7.1f}  "
                         f"{med / peer:.2f}x  (CPU median {statistics.median(CPU[tool]) * 1e3:.0f} ms)")
        return lines
    finally:
        proc.kill()
        proc.wait()


def case_read(runs: int, tmp: Path) -> list[str]:
    from tuidbg.procread import snapshot as S

    proc, info = start(DEBIAN_PY311, 10000, tmp)
    try:
        walls, rss = [], []
        for _ in range(runs):
            dt, out, rc, peak = timed([str(TUIDBG), "dump", "--json", str(proc.pid)], "dump-10000")
            assert rc == 0 and tracer(proc.pid) == 0 and proc.poll() is None
            assert len(json.loads(out)["processes"][0]["tasks"]) == len(info["names"])
            walls.append(dt)
            rss.append(peak)
        without, with_, cpu = [], [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            S.take(proc.pid, tasks=False)
            without.append(time.perf_counter() - t0)
            c0, t0 = time.process_time(), time.perf_counter()
            snap = S.take(proc.pid, tasks=True)
            with_.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            assert len(snap.tasks["tasks"]) == len(info["names"]) and tracer(proc.pid) == 0
        lines = [f"read-10000: Debian's python3.11, {len(info['names'])} tasks, {runs} runs each"]
        for what, xs in (("tuidbg dump --json (end to end)", walls), ("take() without the tasks", without),
                         ("take() with the tasks", with_), ("  its CPU time", cpu)):
            med, lo, hi = stats(xs)
            lines.append(f"  {what:34s} median {med * 1e3:7.1f} ms  min {lo * 1e3:7.1f}  max {hi * 1e3:7.1f}")
        lines.append(f"  the task read (median difference)  {(statistics.median(with_) - statistics.median(without)) * 1e3:7.1f} ms")
        lines.append(f"  tuidbg dump's peak memory          median {statistics.median(rss) / 1024:7.1f} MiB, "
                     f"CPU median {statistics.median(CPU['dump-10000']) * 1e3:.0f} ms")
        return lines
    finally:
        proc.kill()
        proc.wait()


def main() -> int:
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # (tuidbg's bytecode compiled, as after pip install)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "tuidbg")], check=True,
                   stdout=subprocess.DEVNULL)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--case", action="append", choices=["ps-1000", "read-10000"])
    args = ap.parse_args()
    with open("/proc/loadavg") as f:
        print("load average before:", f.read().split()[:3])
    with tempfile.TemporaryDirectory(prefix="tuidbg-bench-tasks-") as tmp:
        for case in args.case or ["ps-1000", "read-10000"]:
            fn = case_ps if case == "ps-1000" else case_read
            for line in fn(args.runs, Path(tmp)):
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
