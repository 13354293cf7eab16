"""Memory of the TUI after 100,000 lines of program output, and the time to take them in.

The program prints N lines to its terminal; the TUI (headless, Textual's test
driver) reads them through the program's pty and shows them in the output pane,
which keeps at most 50,000 lines. Baseline, in the same run: the RSS of the same
TUI process after start-up, before any output.

Usage: python bench/ui_output_rss.py [--lines N]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time

import psutil
from common import REPO, BUILD

from tuidbg.engine.debugger import new_session
from tuidbg.engine.session import SessionConfig


def threads_prog():
    import subprocess

    out = BUILD / "threads"
    BUILD.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", "-g", "-O0", "-pthread", str(REPO / "tests" / "programs" / "threads.c"), "-o", str(out)], check=True)
    return out


async def measure(lines: int) -> None:
    from tuidbg.ui.app import TuidbgApp
    from tuidbg.ui.panes.io import OutputPane

    exe = threads_prog()
    proc = psutil.Process()
    s = new_session(SessionConfig(mode="run", program=str(exe), args=["output", str(lines)], nx=True))
    app = TuidbgApp(s)
    async with app.run_test(size=(160, 48)) as pilot:
        # baseline: started, before the program prints (it runs once launched; measure right away)
        gc.collect()
        base = proc.memory_info().rss
        t0 = time.perf_counter()
        out = app.query_one(OutputPane)
        while not (app.state.process.name == "EXITED" and out.log_widget.total_lines >= lines):
            await pilot.pause(0.05)
        took = time.perf_counter() - t0
        await pilot.pause(0.3)
        gc.collect()
        after = proc.memory_info().rss
        kept = out.log_widget.line_count
        max_kept = out.log_widget.max_lines
        await s.close()
    print(f"program output: {lines:,} lines through the pty into the output pane")
    print(f"  RSS after start-up (baseline)  {base / 2**20:8.1f} MiB")
    print(f"  RSS after the output           {after / 2**20:8.1f} MiB  (+{(after - base) / 2**20:.1f} MiB, {after / base:.2f}x)")
    print(f"  lines kept in the pane         {kept:,} (the pane keeps the last {max_kept:,})")
    print(f"  time to take them in           {took:.2f} s ({lines / took:,.0f} lines/s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=100_000)
    asyncio.run(measure(ap.parse_args().lines))


if __name__ == "__main__":
    main()
