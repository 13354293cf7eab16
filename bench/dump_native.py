#!/usr/bin/env python3
"""Benchmark: ``tuidbg dump --native PID`` (native stacks unwound without gdb) against its gdb reader,
pystack and py-spy, in the same run, on the same process.

The case: 64 threads x 20 Python frames, Debian's stripped /usr/bin/python3.11
(bench/programs/py_threads_deep.py), every thread asleep in time.sleep. The tools take turns on
it (``--runs`` rounds), each timed end to end, from the command's start to its exit:

- ``tuidbg dump --native PID``            the direct reader (procread.native);
- ``tuidbg dump --native --via-gdb PID``  the same through gdb (``--gdb-runs`` rounds);
- ``pystack remote --native PID``         and ``py-spy dump --native --pid PID``.

Every output is checked as bench/dump_fast.py checks it: "exact" when every thread's Python
frames (file and line) are there in full. The direct reader must have read the process itself
(``reader`` "memory" in its --json, no ``fallback``), and after every tuidbg run the process runs
with TracerPid 0. The peers come from bench/requirements-peers.txt into bench/_build/peers-venv.

Goals: (issue 11, item 1) ``tuidbg dump --native`` <= ``pystack remote --native``; (issue 31, item 4)
``tuidbg dump --native`` <= ``py-spy dump --native`` (medians, same frames).

``--threads N`` (default 64); ``--only REGEX`` keeps the tools whose name matches (py-spy always: the ratio's
peer); ``--baseline DIR`` adds "tuidbg dump --native (DIR's name)", the tuidbg package of another tree, as
bench/dump_fast.py does. The order of the tools is rotated each round.

Usage: .venv/bin/python bench/dump_native.py [--runs 11] [--gdb-runs 5] [--threads 64] [--only REGEX]
       [--baseline DIR]...
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dump_fast import (  # noqa: E402
    ROOT, TUIDBG, baseline_tools, case_threads, peers, run_one, stacks_grouped, stacks_pystack, take_turns,
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--gdb-runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=64)
    ap.add_argument("--only", metavar="REGEX", help="only the tools whose name matches")
    ap.add_argument("--baseline", metavar="DIR", action="append", default=[])
    args = ap.parse_args()
    spy, pystack = peers()
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # (an installed tuidbg has its bytecode compiled)
    env.pop("DEBUGINFOD_URLS", None)
    tuidbg = [str(TUIDBG)] if TUIDBG.exists() else [sys.executable, "-m", "tuidbg"]
    if not TUIDBG.exists():
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "tuidbg")], env=env, capture_output=True)
    tmp = Path(tempfile.mkdtemp())
    proc, expected, label = case_threads(tmp, args.threads)
    pid = str(proc.pid)
    tools = [
        ("tuidbg dump --native", [*tuidbg, "dump", "--native", pid], stacks_grouped, args.runs),
        ("tuidbg dump --native --via-gdb", [*tuidbg, "dump", "--native", "--via-gdb", pid], stacks_grouped,
         args.gdb_runs),
        ("pystack remote --native", [pystack, "remote", "--native", pid], stacks_pystack, args.runs),
        ("py-spy dump --native", [spy, "dump", "--native", "--pid", pid], stacks_grouped, args.runs),
    ]
    tools += baseline_tools(args.baseline, ["dump", "--native", pid], "tuidbg dump --native", stacks_grouped, args.runs)
    if args.only:
        import re

        tools = [t for t in tools if re.search(args.only, t[0]) or t[0] == "py-spy dump --native"]
    try:
        _ms, rc, out, err = run_one([*tuidbg, "dump", "--native", "--json", pid], env)
        rep = json.loads(out)["processes"][0] if rc == 0 else {}
        reader = f"reader {rep.get('reader')}" + (f", fallback: {rep['fallback']}" if rep.get("fallback") else "")
        if rc != 0:
            reader = f"failed: {err.strip()[-200:]}"
        times, verdicts = take_turns(tools, args.runs, env, proc, expected)
    finally:
        proc.kill()
        proc.wait()
    base = statistics.median(times.get("pystack remote --native") or times["py-spy dump --native"])
    base_name = "pystack --native" if times.get("pystack remote --native") else "py-spy --native"
    print(f"case: {label}; tuidbg dump --native: {reader}")
    print()
    spy_med = statistics.median(times["py-spy dump --native"])
    print(f"| tool | median ms | min | max | runs | vs {base_name} | vs py-spy --native | result |")
    print("|---|---|---|---|---|---|---|---|")
    for tname, _cmd, _parse, _runs in tools:
        v = times[tname]
        if v:
            med = statistics.median(v)
            print(f"| `{tname}` | {med:.1f} | {min(v):.1f} | {max(v):.1f} | {len(v)} | {med / base:.2f}x | "
                  f"{med / spy_med:.2f}x | {verdicts[tname]} |")
    print()
    ours = statistics.median(times["tuidbg dump --native"])
    met = ours <= base and verdicts["tuidbg dump --native"] == "exact" and reader == "reader memory"
    print(f"goal (tuidbg dump --native <= {base_name}, exact, no gdb): {'met' if met else 'missed'} "
          f"({ours:.1f} vs {base:.1f} ms)")
    met = ours <= spy_med and verdicts["tuidbg dump --native"] == "exact" and reader == "reader memory"
    print(f"goal (tuidbg dump --native <= py-spy dump --native, exact, no gdb; issue 31): {'met' if met else 'missed'} "
          f"({ours:.1f} vs {spy_med:.1f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
