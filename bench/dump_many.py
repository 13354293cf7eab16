#!/usr/bin/env python3
"""Benchmark: ``tuidbg dump`` of a 16-process tree against ``py-spy dump`` over the same PIDs.

The tree (bench/programs/py_tree_deep.py on Debian's stripped /usr/bin/python3.11): a root, 3
children, 4 grandchildren each; every process has two threads 30 Python frames deep, asleep.
Each round times, end to end (from the command's start to its exit, as a user runs it):

- ``tuidbg dump P1 ... P16``         one command, the processes read by its worker pool;
- ``tuidbg dump --children ROOT``     the same, the tree found by tuidbg;
- ``tuidbg dump --jobs 1 P1 ... P16`` one command reading them one after the other, no workers;
- ``tuidbg dump P`` x 16, in a loop   one command per process (for reference);
- ``py-spy dump --pid P`` x 16        one after the other (what people do: pgrep | xargs py-spy);
- ``py-spy dump --pid P`` x 16        all started at once, timed until the last one exits;
- ``tuidbg dump P1`` and ``py-spy dump --pid P1``: one process, for the cost of each extra one.

Every output is checked against each process's own ``traceback.extract_stack``: "exact" when
every thread of every process is there with all its frames (file and line, innermost first).
tuidbg's text groups identical stacks ("== 12 processes: 4101 4102 ..."): each group's frames
count for every process it names. After every tuidbg run each process must be running with
TracerPid 0. py-spy comes from bench/requirements-peers.txt (bench/dump_fast.py installs it).

Usage: .venv/bin/python bench/dump_many.py [--runs 11] [--children 3] [--grandchildren 4] [--depth 30]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from dump_fast import DEBIAN_PY311, TUIDBG, line_of, peers, run_one, stacks_tuidbg_or_spy, tracer  # noqa: E402

PROG = ROOT / "bench" / "programs" / "py_tree_deep.py"
_PY_LINE = re.compile(r"^\s+(\S.*) \((.+):(\d+)\)$")


def start_tree(tmp: Path, children: int, grandchildren: int, depth: int):
    ready = tmp / "tree"
    ready.mkdir()
    proc = subprocess.Popen([str(DEBIAN_PY311), str(PROG), str(children), str(grandchildren), str(depth), str(ready)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while not (ready / "root").exists():
        if proc.poll() is not None:
            raise SystemExit(f"{PROG.name} exited: {proc.stderr.read().decode()[-500:]}")
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            raise SystemExit(f"{PROG.name} did not get ready")
        time.sleep(0.05)
    time.sleep(0.3)
    leaf = (PROG.name, line_of(PROG, "leaf_sleep"))
    expected: dict[int, list[list[tuple[str, int]]]] = {}
    for f in ready.glob("*.json"):
        data = json.loads(f.read_text())
        expected[data["pid"]] = [[leaf] + [(os.path.basename(fn), ln) for _n, fn, ln in reversed(frames)]
                                 for frames in data["threads"].values()]
    return proc, expected


def tree_order(root: int, pids: set[int]) -> list[int]:
    """The PIDs as ``--children`` lists them: depth first, children by PID."""
    parent = {}
    for pid in pids:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        parent[pid] = int(stat[stat.rfind(b")") + 2:].split()[1])
    out = []

    def walk(p):
        out.append(p)
        for c in sorted(c for c in pids if parent[c] == p):
            walk(c)

    walk(root)
    return out


def grouped_stacks(text: str, only: int | None = None) -> dict[int, list[list[tuple[str, int]]]]:
    """tuidbg's text: {pid: its threads' stacks}; a group's frames belong to every process it names
    (``only``: a one-process dump, whose groups name threads)."""
    out: dict[int, list[list[tuple[str, int]]]] = {}
    cur: list | None = None
    for line in text.splitlines():
        if line.startswith("== ") or (only is not None and line and not line.startswith(" ")):
            cur = []
            if only is not None:
                owners = [only]
            else:
                names = line.split(": ", 1)[1]
                names = re.split(r", main thread|, thread |: no frames", names)[0]
                owners = [int(x) for x in re.sub(r"\([^)]*\)", " ", names).split()]
            for pid in owners:
                out.setdefault(pid, []).append(cur)
            continue
        m = _PY_LINE.match(line)
        if m and cur is not None:
            cur.append((os.path.basename(m.group(2)), int(m.group(3))))
    return out


def verdict(got: dict[int, list], expected: dict[int, list], failures: list[str]) -> str:
    if failures:
        return f"failed ({failures[0][:90]})"
    missing = sum(1 for pid, stacks in expected.items() for s in stacks if s not in got.get(pid, []))
    total = sum(len(s) for s in expected.values())
    return "exact" if not missing else f"wrong ({missing} of {total} stacks not found)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--children", type=int, default=3)
    ap.add_argument("--grandchildren", type=int, default=4)
    ap.add_argument("--depth", type=int, default=30)
    args = ap.parse_args()
    spy, _pystack = peers()
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # (an installed tuidbg has its bytecode compiled)
    tuidbg = [str(TUIDBG)] if TUIDBG.exists() else [sys.executable, "-m", "tuidbg"]
    if not TUIDBG.exists():
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    subprocess.run([*tuidbg, "--help"], env=env, capture_output=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "tuidbg")], env=env, capture_output=True)
    tmp = Path(tempfile.mkdtemp())
    proc, expected = start_tree(tmp, args.children, args.grandchildren, args.depth)
    try:
        pids = tree_order(proc.pid, set(expected))
        assert len(pids) == len(expected), (pids, sorted(expected))
        first = pids[0]
        spids = [str(p) for p in pids]
        n = len(pids)
        frames = {len(s) for stacks in expected.values() for s in stacks}
        label = (f"{n} processes x 2 threads, {min(frames)}-{max(frames)} Python frames per thread, "
                 f"{DEBIAN_PY311} (stripped)")

        def one(cmd, parse_pid=None):
            ms, rc, out, err = run_one(cmd, env)
            fails = [] if rc == 0 else [f"exit {rc}: {err.strip()[:80]}"]
            return ms, fails, out

        def tuidbg_many(*opts):
            def go():
                ms, fails, out = one([*tuidbg, "dump", *opts])
                return ms, grouped_stacks(out), fails
            return go

        def tuidbg_loop():
            total, got, fails = 0.0, {}, []
            for pid in pids:
                ms, f, out = one([*tuidbg, "dump", str(pid)])
                total += ms
                fails += f
                got[pid] = grouped_stacks(out, only=pid).get(pid, [])
            return total, got, fails

        def spy_loop():
            total, got, fails = 0.0, {}, []
            for pid in pids:
                ms, f, out = one([spy, "dump", "--pid", str(pid)])
                total += ms
                fails += f
                got[pid] = stacks_tuidbg_or_spy(out)
            return total, got, fails

        def spy_concurrent():
            t = time.perf_counter()
            ps = [subprocess.Popen([spy, "dump", "--pid", str(pid)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, env=env, stdin=subprocess.DEVNULL) for pid in pids]
            outs = [p.communicate(timeout=600) for p in ps]
            ms = (time.perf_counter() - t) * 1000
            fails = [f"exit {p.returncode}: {e.strip()[:80]}" for p, (_o, e) in zip(ps, outs) if p.returncode]
            return ms, {pid: stacks_tuidbg_or_spy(o) for pid, (o, _e) in zip(pids, outs)}, fails

        def single(cmd, parse):
            def go():
                ms, fails, out = one(cmd)
                return ms, {first: parse(out)}, fails
            return go

        tools = [
            (f"tuidbg dump P1 ... P{n}", tuidbg_many(*spids), False),
            ("tuidbg dump --children ROOT", tuidbg_many("--children", str(proc.pid)), False),
            (f"tuidbg dump --jobs 1 P1 ... P{n}", tuidbg_many("--jobs", "1", *spids), False),
            (f"tuidbg dump P, {n} times in a loop", tuidbg_loop, False),
            (f"py-spy dump --pid P, {n} times in a loop", spy_loop, False),
            (f"py-spy dump --pid P, {n} at once", spy_concurrent, False),
            ("tuidbg dump P1 (one process)", single([*tuidbg, "dump", str(first)],
                                                    lambda out: grouped_stacks(out, only=first)[first]), True),
            ("py-spy dump --pid P1 (one process)", single([spy, "dump", "--pid", str(first)], stacks_tuidbg_or_spy),
             True),
        ]
        times: dict[str, list[float]] = {t[0]: [] for t in tools}
        verdicts: dict[str, str] = {}
        for _r in range(args.runs):
            for name, go, alone in tools:
                ms, got, fails = go()
                times[name].append(ms)
                want = {first: expected[first]} if alone else expected
                v = verdict(got, want, fails)
                if verdicts.get(name, "exact") == "exact":
                    verdicts[name] = v  # the first wrong or failed run is what shows
                time.sleep(0.05)
                if proc.poll() is not None:
                    raise SystemExit(f"the tree's root died after {name}")
                if name.startswith("tuidbg"):
                    held = [p for p in pids if tracer(p) != 0]
                    assert not held, f"still traced after {name}: {held}"
            print(f"round {_r + 1} of {args.runs}", flush=True)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    med = {k: statistics.median(v) for k, v in times.items()}
    base = med[f"py-spy dump --pid P, {n} times in a loop"]
    print()
    print(f"{label}; {os.cpu_count()} CPUs")
    print()
    print("| tool | median ms | min | max | runs | vs py-spy loop | result |")
    print("|---|---|---|---|---|---|---|")
    for name, _go, _alone in tools:
        v = times[name]
        print(f"| `{name}` | {med[name]:.1f} | {min(v):.1f} | {max(v):.1f} | {len(v)} | {med[name] / base:.2f}x "
              f"| {verdicts[name]} |")
    print()
    extra_t = (med[f"tuidbg dump P1 ... P{n}"] - med["tuidbg dump P1 (one process)"]) / (n - 1)
    extra_s = (base - med["py-spy dump --pid P1 (one process)"]) / (n - 1)
    print(f"per extra process: tuidbg dump {extra_t:.1f} ms, py-spy loop {extra_s:.1f} ms")
    ratio = med[f"tuidbg dump P1 ... P{n}"] / base
    ok = verdicts[f"tuidbg dump P1 ... P{n}"] == "exact"
    print(f"goal (tuidbg dump of {n} processes within 2x of py-spy's loop, same frames): "
          f"{'met' if ratio <= 2 and ok else 'missed'} ({ratio:.2f}x, {verdicts[f'tuidbg dump P1 ... P{n}']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
