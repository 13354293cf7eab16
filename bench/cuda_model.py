#!/usr/bin/env python3
"""Benchmark: the engine's CUDA model for a 1M-thread grid, from a replayed transcript.

What is timed (the engine part; the pane repaint is measured separately by the UI):

- stop:   from ``launch()`` to the end of the refresh after the kernel-breakpoint
          stop (MI parsing of every line, reducer, frames/locals, the CUDA tables:
          devices, kernels, blocks, the coalesced threads table, the lanes).
- switch: ``switch_focus("block (3000,0,0) thread (77,0,0)")`` (reply, device
          frames and locals, lanes of the new warp, current range moved locally).
- expand: one block's 256 threads, uncoalesced (``expand_block``).
- model:  building the ThreadRanges from the already parsed table, reading a page
          of 50 rows, locating the focus, the per-location summary.

Baseline in the same run: the same MI lines parsed by the raw parser alone
(``tuidbg.engine.mi.parse_line``, which wraps pygdbmi), no engine. The ratio
engine/baseline says what the engine adds on top of reading gdb's output.

The transcript comes from tests/data/cuda-replay/make_grid.py: resident=1056 is
what an H100 holds of the grid; resident=4096 is a STRESS variant with every
block resident (no GPU holds that), to show how the cost scales.

Usage: .venv/bin/python bench/cuda_model.py [--repeat N] [--resident N ...]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tuidbg.engine import cuda, mi  # noqa: E402
from tuidbg.engine.cuda import CudaExtension, Dim3, ThreadRanges  # noqa: E402
from tuidbg.engine.debugger import new_session
from tuidbg.engine.session import SessionConfig  # noqa: E402
from tuidbg.engine.transport import ReplayTransport  # noqa: E402
from pygdbmi.gdbescapes import unescape  # noqa: E402


def load(name: str):
    path = REPO / "tests" / "data" / "cuda-replay" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"cuda_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def phase_lines(tr: ReplayTransport, first: str, last_prefix: str) -> list[str]:
    """gdb's output lines from the step named ``first`` through the next step starting with ``last_prefix``."""
    out: list[str] = []
    on = False
    for cmd, lines in tr.steps:
        if not on and cmd.startswith(first):
            on = True
        if on:
            out.extend(lines)
            if cmd.startswith(last_prefix) and cmd != first:
                break
    return out


_ROW = re.compile(r'(\w+)=\{((?:[^"{}]|"(?:[^"\\]|\\.)*")*)\}')
_KV = re.compile(r'([\w-]+)="((?:[^"\\]|\\.)*)"')


def fast_table_rows(line: str) -> list[dict]:
    """PROPOSAL, not engine code: a regex reader for table rows (flat string cells), to compare with pygdbmi."""
    at = line.index(",body=[")
    out = []
    for m in _ROW.finditer(line, at + 7):
        row = {}
        for k, v in _KV.findall(m.group(2)):
            row[k] = unescape(v) if "\\" in v else v
        out.append(row)
    return out


def parse_all(lines: list[str]) -> float:
    t0 = time.perf_counter()
    for line in lines:
        mi.parse_line(line)
    return time.perf_counter() - t0


async def one_run(text: str) -> dict[str, float]:
    tr = load("cuda_replay").CudaReplay(text)
    s = new_session(SessionConfig(mode="run", program="/home/user/proj/scale", gdb="cuda-gdb", nx=True, load_gdbext=False), transport=tr)
    s.extensions = [CudaExtension(s.config)]
    await s.start()
    ext = cuda.get(s)
    await s.break_insert(file="/home/user/proj/scale.cu", line=19)
    out: dict[str, float] = {}

    t0 = time.perf_counter()
    await s.launch()
    while not (cuda.snapshot(s.state) and cuda.snapshot(s.state).loaded and s.state.is_stopped):
        await asyncio.sleep(0)
    await s.wait_refreshed()
    out["stop"] = time.perf_counter() - t0
    snap = cuda.snapshot(s.state)
    assert snap.threads is not None and snap.threads.total_threads > 0

    t0 = time.perf_counter()
    sw = await ext.switch_focus("block (3000,0,0) thread (77,0,0)")
    out["switch"] = time.perf_counter() - t0
    assert sw.focus.block == Dim3(3000)

    t0 = time.perf_counter()
    rows = await ext.expand_block(0, Dim3(3000))
    out["expand"] = time.perf_counter() - t0
    assert len(rows) == 256

    # the model alone, from the parsed table (what a repaint could redo at will)
    tbl = snap.threads
    raw_rows = tbl._rows
    t0 = time.perf_counter()
    fresh = ThreadRanges(raw_rows, kernel=0, grid_dim=tbl.grid_dim, block_dim=tbl.block_dim, order=tbl.order)
    fresh.total_threads
    fresh.page(len(fresh) // 2, 50)
    i = fresh.locate(Dim3(3000), Dim3(77))
    fresh.with_focus(sw.focus)
    fresh.summary(10)
    out["model"] = time.perf_counter() - t0
    assert i is not None
    out["rows"] = float(len(fresh))
    out["threads"] = float(fresh.total_threads)
    assert tr.mismatches == [], tr.mismatches[:3]  # the engine sent exactly what the transcript holds
    await s.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--resident", type=int, nargs="+", default=[1056, 4096])
    args = ap.parse_args()
    grid = load("make_grid")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, median of {args.repeat} runs (min in brackets)\n")
    for resident in args.resident:
        text = grid.generate(resident=resident)
        tr = ReplayTransport(text)
        stop_lines = phase_lines(tr, "-exec-run", "-cuda-info-lanes")
        switch_lines = phase_lines(tr, "-cuda-focus-switch", "-cuda-info-lanes")
        expand_lines = phase_lines(tr, "-gdb-show cuda coalescing", "-gdb-set cuda coalescing auto")
        runs = [asyncio.run(one_run(text)) for _ in range(args.repeat)]
        base = {
            "stop": [parse_all(stop_lines) for _ in range(args.repeat)],
            "switch": [parse_all(switch_lines) for _ in range(args.repeat)],
            "expand": [parse_all(expand_lines) for _ in range(args.repeat)],
        }
        r0 = runs[0]
        label = "STRESS (all 4096 blocks resident)" if resident >= 4096 else f"{resident} resident blocks (H100)"
        print(f"== scale<<<(4096,1,1),(256,1,1)>>>: {label}: {int(r0['threads']):,} threads in {int(r0['rows']):,} ranges")
        print(f"   transcript {len(text) / 1e6:.2f} MB; stop phase {sum(map(len, stop_lines)) / 1e6:.2f} MB of MI")
        print(f"   {'phase':<8}{'engine ms':>16}{'baseline parse ms':>22}{'ratio':>8}")
        for key in ("stop", "switch", "expand"):
            eng = [r[key] * 1e3 for r in runs]
            bl = [b * 1e3 for b in base[key]]
            print(
                f"   {key:<8}{statistics.median(eng):>9.1f} [{min(eng):>5.1f}]{statistics.median(bl):>15.1f} [{min(bl):>5.1f}]"
                f"{statistics.median(eng) / max(statistics.median(bl), 1e-9):>8.2f}"
            )
        model = [r["model"] * 1e3 for r in runs]
        print(f"   {'model':<8}{statistics.median(model):>9.1f} [{min(model):>5.1f}]{'(no MI)':>22}")
        big = max(stop_lines, key=len)
        ref = mi.parse_line(big).payload
        rows = next(iter(ref.values()))["body"]
        assert fast_table_rows(big) == rows
        py = []
        fast = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            mi.parse_line(big)
            py.append((time.perf_counter() - t0) * 1e3)
            t0 = time.perf_counter()
            fast_table_rows(big)
            fast.append((time.perf_counter() - t0) * 1e3)
        print(
            f"   threads-table line ({len(big) / 1e6:.2f} MB): pygdbmi {statistics.median(py):.0f} ms, "
            f"regex row reader (proposal) {statistics.median(fast):.0f} ms, same rows\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
