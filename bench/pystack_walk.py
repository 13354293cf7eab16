#!/usr/bin/env python3
"""Benchmark: the merged Python/native stack of a thread 2,000 Python frames deep, against gdb's ``bt``.

The program (bench/py_deep_loop.py) recurses DEPTH deep, stops itself with SIGTRAP,
returns, and does it again: every stop is a fresh stop (gdb's frame caches empty).
Stops alternate between what tuidbg does and the baseline, so each is measured cold:

- walk:    ``-tuidbg-pystack --native none``: every thread's Python frames, read from
           memory inside gdb (``walk (gdb)`` is gdb's own time for it; the rest is MI
           transport, decompression and parsing in tuidbg), first command after the stop;
- merged:  then what the UI does for the stopped thread: ``pystack.collect(native={tid})``
           (its Python frames placed on their eval-loop frames), the first page of native
           frames, ``merge`` and ``fold``;
- bt:      the baseline on the other stops, gdb's own backtrace of the same thread:
           ``-stack-list-frames`` (MI's bt), then CLI ``bt`` through ``-interpreter-exec console``.

The first stop also locates the runtime and reads the offsets (once per session): its walk
is reported as "setup" and left out of the medians.

Usage: .venv/bin/python bench/pystack_walk.py [--depth 2000] [--stops 11] [--python NAME ...]
NAME: pyenv-3.9 ... pyenv-3.13, debian-3.11, stripped-3.12, stripped-3.13 (default: all present)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from helpers import DEBIAN_PY311, pyenv_python, stripped_libpython  # noqa: E402

from tuidbg.engine import pystack as P  # noqa: E402
from tuidbg.engine.python import merge as M
from tuidbg.engine.debugger import new_session
from tuidbg.engine.session import DebugSession, SessionConfig  # noqa: E402
from tuidbg.engine.state import ProcessState  # noqa: E402

PROGRAM = ROOT / "bench" / "py_deep_loop.py"
NAMES = ["pyenv-3.9", "pyenv-3.10", "pyenv-3.11", "pyenv-3.12", "pyenv-3.13", "debian-3.11", "stripped-3.12",
         "stripped-3.13"]


def interpreter(name: str, build: Path):
    kind, minor = name.split("-")
    if kind == "pyenv":
        exe = pyenv_python(minor)
        return (exe, {}) if exe else None
    if kind == "debian":
        return (DEBIAN_PY311, {}) if DEBIAN_PY311.exists() else None
    return stripped_libpython(minor, build)


async def wait_stop(s: DebugSession, timeout: float = 300) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while s.state.process is not ProcessState.STOPPED:
        if s.state.process in (ProcessState.EXITED, ProcessState.GDB_EXITED):
            raise RuntimeError(f"the program {s.state.exit_description or s.state.gdb_exit}")
        if loop.time() > end:
            raise RuntimeError("no stop")
        await asyncio.sleep(0.002)


async def timed(coro) -> tuple[float, object]:
    t = time.perf_counter()
    r = await coro
    return (time.perf_counter() - t) * 1000, r


async def bench_one(name: str, exe: Path, env: dict, depth: int, stops: int) -> dict:
    cfg = SessionConfig(mode="run", program=str(exe), args=[str(PROGRAM), str(depth), str(stops)], nx=True,
                        program_env=env)
    s = new_session(cfg)
    s.extensions = []  # nothing runs after a stop but what is measured here
    await s.start()
    samples: dict[str, list[float]] = {k: [] for k in ("walk", "walk_gdb", "merged", "mi_bt", "cli_bt")}
    setup = 0.0
    py_frames = native_frames = 0
    try:
        await s.launch()
        for i in range(stops):
            await wait_stop(s)
            tid = s.state.stop.thread_id
            if i % 2 == 0:
                # tuidbg's work after a stop: the walk (every thread), then the merged stack of this one
                ms, res = await timed(s.cmd("-tuidbg-pystack --jsonz --native none", timeout=300))
                d = P._unz(res.get("jsonz"))
                py_frames = max(len(t["frames"]) for t in d["threads"])
                t = time.perf_counter()
                ps = await P.collect(s, thread=tid, native={tid})
                frames, _ = await s.fetch_frames(tid, 0, 64)
                rows = M.fold(M.merge(frames, ps.thread(tid), ps))
                merged = (time.perf_counter() - t) * 1000
                assert any(r.kind == "python" for r in rows)
                if i == 0:
                    setup = ms  # locating the runtime, reading the offsets: once per session
                    continue
                samples["walk"].append(ms)
                samples["walk_gdb"].append(d["stats"]["walk_ms"])
                samples["merged"].append(merged)
            else:
                # the baseline on a stop of its own: gdb's backtrace, MI and CLI
                ms, res = await timed(s.cmd(f"-stack-list-frames --thread {tid}", timeout=300))
                native_frames = len(res.get("stack") or [])
                samples["mi_bt"].append(ms)
                ms, _ = await timed(s.cmd('-interpreter-exec console "bt"', timeout=300))
                samples["cli_bt"].append(ms)
            await s.cmd("-exec-continue")
    finally:
        await s.close()
    med = {k: statistics.median(v) for k, v in samples.items() if v}
    return {"name": name, "py_frames": py_frames, "native_frames": native_frames, "median": med, "setup": setup,
            "n": {k: len(v) for k, v in samples.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--depth", type=int, default=2000)
    ap.add_argument("--stops", type=int, default=11)
    ap.add_argument("--python", action="append", choices=NAMES)
    args = ap.parse_args()
    build = Path(tempfile.gettempdir()) / "tuidbg-bench-build"
    build.mkdir(exist_ok=True)
    rows = []
    for name in args.python or NAMES:
        got = interpreter(name, build)
        if got is None:
            print(f"{name}: not on this machine, skipped")
            continue
        exe, env = got
        rows.append(asyncio.run(bench_one(name, Path(exe), env, args.depth, args.stops)))
    print(f"\na thread {args.depth} Python frames deep; ms, medians over {args.stops} stops (each stop is fresh: "
          f"gdb's caches empty; tuidbg and gdb measured on alternate stops; the first stop, which also locates "
          f"the runtime, is the 'setup' column)")
    hdr = (f"{'python':<14} {'py/native frames':>16} {'walk (gdb)':>10} {'walk':>7} {'merged':>7} {'MI bt':>8} "
           f"{'CLI bt':>8} {'walk/MI bt':>10} {'setup':>7}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        m = r["median"]
        ratio = m["walk"] / m["mi_bt"] if m.get("mi_bt") else float("nan")
        print(f"{r['name']:<14} {str(r['py_frames']) + '/' + str(r['native_frames']):>16} {m['walk_gdb']:>10.1f} "
              f"{m['walk']:>7.1f} {m['merged']:>7.1f} {m['mi_bt']:>8.1f} {m['cli_bt']:>8.1f} {ratio:>10.2f} "
              f"{r['setup']:>7.1f}")
    print("walk (gdb): the walk's own time inside gdb; walk: -tuidbg-pystack end to end (MI, decoding);\n"
          "merged: Python frames of the stopped thread placed on its native frames + 64 native frames + merge + fold")
    if args.depth == 2000:
        goal = [r for r in rows if r["median"]["walk"] > 30]
        print("\ngoal (2,000 frames: walk <= 30 ms end to end):",
              "met" if not goal else "missed for " + ", ".join(r["name"] for r in goal))
    return 0


if __name__ == "__main__":
    os.environ.pop("DEBUGINFOD_URLS", None)
    raise SystemExit(main())
