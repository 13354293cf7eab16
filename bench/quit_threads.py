"""Quitting ``tuidbg attach`` of a Python program with 500 threads (issue 29, item 10): from the quit
dialog's ``d`` (detach) to the app's exit, the process then running, untraced.

The TUI runs headless (Textual's test driver, the same code as in a terminal) on a real gdb and the
Python agent, attached to tests/programs/py/many_threads.py (500 threads waking every 50 ms, on
Debian's python3.11); each round attaches anew, waits for the stop, presses ``q`` then ``d``.
Peers, in the same run: ``gdb -p PID -batch -ex detach`` end to end (its start, the attach of 500
threads, the detach), and the detach alone as gdb times it in its own Python.

Usage: python bench/quit_threads.py [--rounds N] [--threads N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, summary

sys.path.insert(0, str(REPO / "tests"))
PROG = REPO / "tests" / "programs" / "py" / "many_threads.py"
PY = "/usr/bin/python3.11"


def _traced(pid: int) -> bool:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("TracerPid:")) != 0


async def tuidbg_quit(pid: int) -> float:
    from ui_helpers import make_app, until, until_stopped

    from tuidbg.ui.screens.modals import QuitScreen

    app = make_app(mode="attach", pid=pid, agent=True, python_target=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        await until(pilot, lambda: len(app.state.threads) > 400, 60, "the threads to be read")
        await pilot.pause(1.0)  # (the agent loaded, the panes painted: a user's quit)
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, QuitScreen), 10, "the quit dialog")
        t0 = time.perf_counter()
        await pilot.press("d")
        while app.is_running:
            await asyncio.sleep(0.01)
        took = time.perf_counter() - t0
    assert not _traced(pid), "the process is still traced after the quit"
    return took


def gdb_batch(pid: int) -> tuple[float, float]:
    """(gdb -p PID -batch -ex detach end to end, the detach alone as gdb's Python times it)"""
    t0 = time.perf_counter()
    r = subprocess.run(["gdb", "-nx", "-q", "-p", str(pid), "-batch",
                        "-ex", "python import time; t = time.perf_counter()",
                        "-ex", "detach",
                        "-ex", "python print('DETACH %.6f' % (time.perf_counter() - t))"],
                       capture_output=True, text=True)
    total = time.perf_counter() - t0
    alone = next(float(line.split()[1]) for line in r.stdout.splitlines() if line.startswith("DETACH "))
    return total, alone


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=500)
    args = ap.parse_args()
    d = Path(tempfile.mkdtemp(prefix="qt"))
    os.environ["XDG_STATE_HOME"] = str(d / "state")
    p = subprocess.Popen([PY, str(PROG), str(d), str(args.threads)], stdin=subprocess.DEVNULL)
    try:
        while not (d / "ready").exists():
            time.sleep(0.05)
        ours, peer, peer_detach = [], [], []
        for _ in range(args.rounds):
            ours.append(asyncio.run(tuidbg_quit(p.pid)))
            total, alone = gdb_batch(p.pid)
            peer.append(total)
            peer_detach.append(alone)
        rows = [("tuidbg: quit (d in the dialog) to exit, process let go", ours),
                ("gdb -p PID -batch -ex detach, end to end", peer),
                ("gdb's detach alone (timed in its Python)", peer_detach)]
        print(f"{args.threads} threads, {args.rounds} rounds")
        print(f"{'':58} {'median':>9} {'p90':>9} {'min':>9}")
        for name, xs in rows:
            s = summary(xs)
            print(f"{name:58} {s['median']:8.2f}s {s['p90']:8.2f}s {s['min']:8.2f}s")
        print(f"tuidbg's quit / gdb -batch end to end: {summary(ours)['median'] / summary(peer)['median']:.2f}x")
    finally:
        p.kill()
        p.wait()


if __name__ == "__main__":
    main()
