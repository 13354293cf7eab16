#!/usr/bin/env python3
"""Benchmark: ``tuidbg dump PID`` (Python frames read without gdb) against py-spy and pystack.

Each case is one fresh process; the tools take turns on it (``--runs`` rounds), each timed end
to end, from the command's start to its exit, as a user runs it:

- ``tuidbg dump PID``           .venv/bin/tuidbg (compiled bytecode present, as after pip install);
- ``tuidbg dump --via-gdb PID`` the gdb reader, for reference (``--gdb-runs`` rounds; not on the
                                50,000-frame case);
- ``py-spy dump --pid PID``     and ``pystack remote PID``: both stop the process while they
                                read it, as tuidbg does;
- ``python -c pass``            for reference: tuidbg's interpreter starting and doing nothing (the floor).

Cases: ``threads``: 64 threads x 20 Python frames, Debian's stripped /usr/bin/python3.11
(bench/programs/py_threads_deep.py); ``threads-16``: the same with 16 threads (issue 31); ``deep-2000``: one thread 2,000 frames deep, pyenv 3.12;
``deep-10000`` and ``deep-50000``: on pyenv 3.12 and Debian's 3.11 (tests/programs/py/deep_sleep.py).

Every output is checked against the program's own ``traceback.extract_stack``: "exact" when
every thread's Python frames (file and line, innermost first) are there in full. After every
tuidbg run the process must be running with TracerPid 0.

The peers come from PyPI into their own venv, bench/_build/peers-venv
(bench/requirements-peers.txt), on first use.

The tools take turns in an order rotated each round (the first tool of a round is not always the same).
``--only REGEX`` keeps the tools whose name matches (e.g. ``'tuidbg dump$|py-spy'``); ``--baseline DIR``
(repeatable) adds "tuidbg dump (DIR's name)": the tuidbg package of another tree (``git archive main tuidbg |
tar -x -C /tmp/main``), run as ``python -m tuidbg`` with PYTHONPATH=DIR, in the same rounds.

Usage: .venv/bin/python bench/dump_fast.py [--runs 11] [--gdb-runs 3] [--case NAME ...] [--only REGEX]
       [--baseline DIR]...
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

from helpers import DEBIAN_PY311, pyenv_python  # noqa: E402

PEERS = ROOT / "bench" / "_build" / "peers-venv"
THREADS_PROG = ROOT / "bench" / "programs" / "py_threads_deep.py"
DEEP_PROG = ROOT / "tests" / "programs" / "py" / "deep_sleep.py"
TUIDBG = ROOT / ".venv" / "bin" / "tuidbg"

_PY_LINE = re.compile(r"^\s+(\S.*) \((.+):(\d+)\)$")  # tuidbg and py-spy: "    name (file:line)"
_PYSTACK_LINE = re.compile(r'^\s+\(Python\) File "(.+)", line (\d+), in (.+)$')


def line_of(path: Path, marker: str) -> int:
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if f"MARK:{marker}" in line:
            return i
    raise SystemExit(f"no MARK:{marker} in {path}")


def peers() -> tuple[str, str]:
    spy, pystack = PEERS / "bin" / "py-spy", PEERS / "bin" / "pystack"
    if not (spy.exists() and pystack.exists()):
        print(f"installing the peers into {PEERS} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(PEERS)], check=True)
        res = subprocess.run([str(PEERS / "bin" / "pip"), "install", "-q", "-r",
                              str(ROOT / "bench" / "requirements-peers.txt")], capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(f"cannot install py-spy and pystack: {res.stderr.strip()[-500:]}")
    return str(spy), str(pystack)


def tracer(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("TracerPid:")).split()[1])


# ---------------------------------------------------------------------------------------------
# What each tool printed: the stacks, innermost first, as [(basename, line)]


def stacks_tuidbg_or_spy(text: str) -> list[list[tuple[str, int]]]:
    out: list[list[tuple[str, int]]] = []
    cur = None
    for line in text.splitlines():
        if line.startswith("Thread ") or line.startswith("Process "):
            cur = []
            out.append(cur)
            continue
        m = _PY_LINE.match(line)
        if m and cur is not None:
            cur.append((os.path.basename(m.group(2)), int(m.group(3))))
    return [s for s in out if s]


def stacks_grouped(text: str) -> list[list[tuple[str, int]]]:
    """The Python frames of each stack of tuidbg's or py-spy's text (tuidbg's groups of identical
    stacks: one stack per group)."""
    out: list[list[tuple[str, int]]] = []
    cur = None
    for line in text.splitlines():
        if line.startswith(("Thread ", "Process ")) or (line and not line.startswith(" ") and " threads: " in line):
            cur = []
            out.append(cur)
            continue
        m = _PY_LINE.match(line)
        if m and cur is not None:
            cur.append((os.path.basename(m.group(2)), int(m.group(3))))
    return [s for s in out if s]


def stacks_pystack(text: str) -> list[list[tuple[str, int]]]:
    out: list[list[tuple[str, int]]] = []
    cur = None
    for line in text.splitlines():
        if line.startswith("Traceback for thread"):
            cur = []
            out.append(cur)
            continue
        m = _PYSTACK_LINE.match(line)
        if m and cur is not None:
            cur.append((os.path.basename(m.group(1)), int(m.group(2))))
    return [list(reversed(s)) for s in out if s]  # (outermost first there)


def verdict(rc: int, text: str, err: str, parse, expected: list[list[tuple[str, int]]]) -> str:
    if parse is None:
        return "(reference: reads nothing)"
    if rc != 0:
        lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
        why = next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else "no message")[:90]
        return f"failed ({'signal ' + str(-rc) if rc < 0 else 'exit ' + str(rc)}: {why})"
    got = parse(text)
    missing = [e for e in expected if e not in got]
    if not missing:
        return "exact"
    deepest = max((len(s) for s in got), default=0)
    return f"wrong ({len(missing)} of {len(expected)} stacks not found; deepest read: {deepest} frames)"


# ---------------------------------------------------------------------------------------------
# Cases


def start(cmd: list[str], ready: Path, timeout: float = 120) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while not ready.exists():
        if proc.poll() is not None:
            raise SystemExit(f"{cmd[1]} exited: {proc.stderr.read().decode()[-500:]}")
        if time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"{cmd[1]} did not get ready")
        time.sleep(0.02)
    time.sleep(0.3)
    return proc


def case_threads(tmp: Path, n: int = 64):
    ready = tmp / f"threads{n}.json"
    proc = start([str(DEBIAN_PY311), str(THREADS_PROG), str(n), "20", str(ready)], ready)
    data = json.loads(ready.read_text())
    leaf = (THREADS_PROG.name, line_of(THREADS_PROG, "leaf_sleep"))
    expected = [[leaf] + [(os.path.basename(f), ln) for _n, f, ln in reversed(frames)]
                for frames in data["threads"].values()]
    assert all(len(e) == 20 for e in expected), [len(e) for e in expected]
    return proc, expected, f"{n} threads x 20 frames, {DEBIAN_PY311} (stripped)"


def case_deep(depth: int, python: Path, label: str):
    def make(tmp: Path):
        out = tmp / f"deep{depth}-{python.name}.json"
        proc = start([str(python), str(DEEP_PROG), str(depth), str(out)], out)
        data = json.loads(out.read_text())
        expected = [[(os.path.basename(f), ln) for _n, f, ln in reversed(data["frames"])]]
        return proc, expected, f"1 thread {len(expected[0]):,} frames deep, {label}"

    return make


def cases(selected: list[str] | None):
    py312 = pyenv_python("3.12")
    out = []
    if DEBIAN_PY311.exists():
        out.append(("threads", case_threads))
        out.append(("threads-16", lambda tmp: case_threads(tmp, 16)))
    if py312:
        out.append(("deep-2000", case_deep(2000, py312, f"pyenv {py312.parent.parent.name}")))
        out.append(("deep-10000", case_deep(10000, py312, f"pyenv {py312.parent.parent.name}")))
    if DEBIAN_PY311.exists():
        out.append(("deep-10000", case_deep(10000, DEBIAN_PY311, "Debian 3.11 (stripped)")))
    if py312:
        out.append(("deep-50000", case_deep(50000, py312, f"pyenv {py312.parent.parent.name}")))
    if DEBIAN_PY311.exists():
        out.append(("deep-50000", case_deep(50000, DEBIAN_PY311, "Debian 3.11 (stripped)")))
    return [(n, f) for n, f in out if not selected or n in selected]


# ---------------------------------------------------------------------------------------------


def run_one(cmd: list[str], env: dict) -> tuple[float, int, str, str]:
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, stdin=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1000, res.returncode, res.stdout, res.stderr


def take_turns(tools, rounds: int, env: dict, proc: subprocess.Popen, expected) -> tuple[dict, dict]:
    """The tools (name, command, parser, runs) take turns on one process, ``rounds`` times (a tool at most its
    own runs): each one's times, and whether its output was exact (the first wrong or failed run shows).
    After every tuidbg run the process must live on, untraced."""
    times: dict[str, list[float]] = {t[0]: [] for t in tools}
    verdicts: dict[str, str] = {}
    for r in range(rounds):
        k = r % len(tools)
        for tname, cmd, parse, runs in tools[k:] + tools[:k]:  # (the order rotated each round)
            if r >= runs:
                continue
            ms, rc, out, err = run_one(cmd, env)
            times[tname].append(ms)
            v = verdict(rc, out, err, parse, expected)
            if verdicts.get(tname, "exact") == "exact":
                verdicts[tname] = v
            time.sleep(0.05)
            if proc.poll() is not None:
                raise SystemExit(f"the process died after {tname}")
            if tname.startswith("tuidbg"):
                assert tracer(proc.pid) == 0, "the process is still traced"
    return times, verdicts


def baseline_tools(dirs: list[str], args: list[str], name: str, parse, runs: int) -> list:
    """``name (DIR's name)``: ``python -m tuidbg ARGS`` with the tuidbg of each DIR (bytecode compiled first)."""
    out = []
    for d in dirs:
        d = os.path.abspath(d)
        subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(d, "tuidbg")], capture_output=True)
        cmd = ["env", f"PYTHONPATH={d}", sys.executable, "-P", "-m", "tuidbg", *args]
        out.append((f"{name} ({os.path.basename(d)})", cmd, parse, runs))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--gdb-runs", type=int, default=3)
    ap.add_argument("--case", action="append",
                    help="threads, threads-16, deep-2000, deep-10000, deep-50000 (default: all)")
    ap.add_argument("--only", metavar="REGEX", help="only the tools whose name matches")
    ap.add_argument("--baseline", metavar="DIR", action="append", default=[],
                    help="also run the tuidbg package found in DIR (repeatable)")
    args = ap.parse_args()
    spy, pystack = peers()
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # (an installed tuidbg has its bytecode compiled)
    env.pop("DEBUGINFOD_URLS", None)
    tuidbg = [str(TUIDBG)] if TUIDBG.exists() else [sys.executable, "-m", "tuidbg"]
    if not TUIDBG.exists():
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    subprocess.run([*tuidbg, "--help"], env=env, capture_output=True)  # compiles the bytecode
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "tuidbg")], env=env, capture_output=True)
    tmp = Path(tempfile.mkdtemp())
    rows = []
    for name, make in cases(args.case):
        proc, expected, label = make(tmp)
        pid = str(proc.pid)
        deep50k = name == "deep-50000"
        tools = [
            ("tuidbg dump", [*tuidbg, "dump", pid], stacks_grouped, args.runs),
            ("tuidbg dump --via-gdb", [*tuidbg, "dump", "--via-gdb", pid], stacks_grouped,
             0 if deep50k else args.gdb_runs),
            ("py-spy dump", [spy, "dump", "--pid", pid], stacks_tuidbg_or_spy, args.runs),
            ("pystack remote", [pystack, "remote", pid], stacks_pystack, args.runs),
        ]
        tools += baseline_tools(args.baseline, ["dump", pid], "tuidbg dump", stacks_grouped, args.runs)
        # the floor under tuidbg dump: its interpreter starting (with the venv's site) and doing nothing
        tools.append(("python -c pass", [sys.executable, "-c", "pass"], None, args.runs))
        if args.only:
            tools = [t for t in tools if re.search(args.only, t[0]) or t[0] == "py-spy dump"]
        try:
            times, verdicts = take_turns(tools, args.runs, env, proc, expected)
        finally:
            proc.kill()
            proc.wait()
        spy_med = statistics.median(times["py-spy dump"])
        for tname, _cmd, _parse, _runs in tools:
            v = times[tname]
            if not v:
                continue
            rows.append((name, label, tname, statistics.median(v), min(v), max(v), len(v),
                         statistics.median(v) / spy_med, verdicts[tname]))
        print(f"done: {name} ({label})", flush=True)
    print()
    print("| case | tool | median ms | min | max | runs | vs py-spy | result |")
    print("|---|---|---|---|---|---|---|---|")
    last = None
    for name, label, tname, med, lo, hi, n, ratio, v in rows:
        head = f"{name}: {label}" if (name, label) != last else ""
        last = (name, label)
        print(f"| {head} | `{tname}` | {med:.1f} | {lo:.1f} | {hi:.1f} | {n} | {ratio:.2f}x | {v} |")
    print()
    for name, label, tname, med, _lo, _hi, _n, ratio, v in rows:
        if tname == "tuidbg dump" and name == "threads-16":
            print(f"goal ({name}: tuidbg dump <= py-spy, issue 31): {'met' if ratio <= 1.0 else 'missed'} ({ratio:.2f}x, {v})")
        elif tname == "tuidbg dump" and name in ("threads", "deep-2000"):
            print(f"goal ({name}: tuidbg dump <= 1.5x py-spy): {'met' if ratio <= 1.5 else 'missed'} ({ratio:.2f}x, {v})")
        elif tname == "tuidbg dump":
            print(f"goal ({name}, {label}: exact): {'met' if v == 'exact' else 'missed'} ({v})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
