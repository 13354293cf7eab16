#!/usr/bin/env python3
"""Benchmark: the CUDA pane on a 1M-thread grid (replayed transcript): time to repaint.

The pane (tuidbg/ui/panes/cuda.py) runs headless in a small Textual app that feeds
it the session's states the way TuidbgApp feeds its panes (a message per state
change). The session is the real engine (DebugSession + CudaExtension) on a replay
of tests/data/cuda-replay/make_grid.py's transcript (SYNTHESIZED, cuda-gdb 12.8
formatting): ``scale<<<(4096,1,1),(256,1,1)>>>``, 1,048,576 threads; 1,056 blocks
resident on an H100 (4,808 coalesced ranges), or every block resident (STRESS
variant, 18,633 ranges; no GPU holds that).

What is timed:

- stop → repainted: from the moment the engine sets the state whose CUDA
  snapshot is complete (devices, kernels, blocks, the threads table, lanes) to
  the end of the screen refresh after the pane took that state. One sample per
  session (each run replays the whole session).
- focus switch → repainted: from the Enter keypress on a thread range to the end
  of the screen refresh that shows cuda-gdb's granted focus (the engine's
  switch, device frames, locals and the new warp's lanes in between, replayed).
  Alternates between two ranges, many samples per session.
- cursor move → repainted: a down-arrow keypress to the end of the next refresh
  (the rows are drawn with the line API; only visible rows are built).

Baselines in the same run:

- for the stop: the engine's model work alone for the same table (ThreadRanges
  from the parsed table, a 50-row page, locating the focus, the per-location
  summary), and the raw MI parse (tuidbg.engine.mi.parse_line) of the threads
  table line, which the engine does before the pane sees anything;
- for the switch: the engine alone (``switch_focus`` on the same replay, no UI)
  and the raw MI parse of the switch's reply lines.

Goal (issue 6): repaint under 100 ms.

Usage: .venv/bin/python bench/cuda_pane.py [--runs N] [--switches N] [--resident N ...]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from textual import events  # noqa: E402
from textual.app import App  # noqa: E402
from textual.message import Message  # noqa: E402

from tuidbg.engine import cuda, mi  # noqa: E402
from tuidbg.engine.cuda import CudaExtension, Dim3, ThreadRanges  # noqa: E402
from tuidbg.engine.debugger import new_session
from tuidbg.engine.session import DebugSession, SessionConfig  # noqa: E402
from tuidbg.ui.bridge import SessionBridge  # noqa: E402
from tuidbg.ui.panes.cuda import CudaPane  # noqa: E402

REPLAY = REPO / "tests" / "data" / "cuda-replay"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"cuda_{name}", REPLAY / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


GRID = load("make_grid")
MT = sys.modules["make_transcripts"]
Replay = load("cuda_replay").CudaReplay


def _dim(text: str) -> Dim3:
    x, y, z = text.strip("()").split(",")
    return Dim3(int(x), int(y), int(z))


def targets(g) -> tuple[int, list[tuple[int, int]]]:
    """The focused range's index at the stop and the first threads of the next two ranges."""
    rows = g.ranges(GRID.FIRST_STOP)
    cur = next(i for i, r in enumerate(rows) if r[0] == "*")
    out = []
    for i in (cur + 1, cur + 2):
        b, t = _dim(rows[i][2]), _dim(rows[i][3])
        out.append((b.x, t.x))
    return cur, out


def transcript(resident: int, switches: int) -> str:
    """make_grid's session up to the refresh after the stop, then ``switches`` focus switches (A, B, A, ...)."""
    g = GRID.Grid(resident)
    lines = GRID.generate(resident=resident).splitlines()
    cut = next(i for i, ln in enumerate(lines) if re.match(r"^-> \d+-cuda-focus-switch", ln))
    t = MT.T([])
    _, (a, b) = targets(g)
    sb, st = GRID.FIRST_STOP
    prev = g.place(sb, st)[:2]
    cached = {prev}
    for k in range(switches):
        blk, th = (a, b)[k % 2]
        t.cmd(
            f"-cuda-focus-switch kernel 0 block ({blk},0,0) thread ({th},0,0)",
            MT.done({"CudaFocus": GRID.focus_of(g, blk, th), "frame": GRID.frame(g.line(blk, th))}),
        )
        t.cmd("-stack-list-frames 0 64", MT.done({"stack": MT.Raw("[frame=" + MT.mi_value(GRID.frame(g.line(blk, th), level=0, args=False)) + "]")}))
        t.cmd("-stack-list-variables --skip-unavailable --simple-values", MT.done({"variables": GRID.LOCALS}))
        sm, warp = g.place(blk, th)[:2]
        if (sm, warp) != prev and (sm, warp) not in cached:
            t.cmd(f"-cuda-info-lanes device 0 sm {sm} warp {warp}", MT.done(raw=GRID.lanes_of(g, blk, th)))
            cached.add((sm, warp))
        prev = (sm, warp)
    return "\n".join(lines[:cut]) + "\n" + t.text()


async def replay_session(text: str) -> tuple[DebugSession, Replay]:
    tr = Replay(text)
    s = new_session(SessionConfig(mode="run", program=GRID.EXE, gdb="cuda-gdb", nx=True, load_gdbext=False), transport=tr)
    s.extensions = [CudaExtension(s.config)]
    await s.start()
    await s.break_insert(file=GRID.SRC, line=19)
    return s, tr


class StateChanged(Message):
    def can_replace(self, message: Message) -> bool:
        return isinstance(message, StateChanged)


class PaneApp(App):
    def __init__(self, session: DebugSession) -> None:
        super().__init__()
        self.session = session
        self.stamps: dict[str, float] = {}
        self.on_loaded: float | None = None
        self.on_threads: float | None = None

    def compose(self):
        pane = CudaPane(id="cuda")
        pane.source = SessionBridge(self.session)
        yield pane

    def on_mount(self) -> None:
        self.session.on_state(self._engine_state)
        pane = self.query_one(CudaPane)
        pane.update_state(self.session.state)
        pane.focus()

    def _engine_state(self, st) -> None:
        snap = cuda.snapshot(st)
        if self.on_threads is None and snap is not None and snap.threads is not None and st.is_stopped:
            self.on_threads = time.perf_counter()
        if self.on_loaded is None and snap is not None and snap.loaded and st.is_stopped:
            self.on_loaded = time.perf_counter()
        self.post_message(StateChanged())

    def on_state_changed(self, message: StateChanged) -> None:
        pane = self.query_one(CudaPane)
        pane.update_state(self.session.state)
        snap = pane.snap
        if snap is not None and snap.loaded and "stop" not in self.stamps:
            self.stamps["stop"] = -1.0
            self.call_after_refresh(lambda: self.stamps.__setitem__("stop", time.perf_counter()))
        if snap is not None and snap.focus is not None and pane.rows.row_count:
            key = f"focus {snap.focus.block} {snap.focus.thread}"
            if key not in self.stamps:
                self.stamps[key] = -1.0
                self.call_after_refresh(lambda: self.stamps.__setitem__(key, time.perf_counter()))


async def until(pred, timeout: float = 120.0) -> None:
    end = time.perf_counter() + timeout
    while not pred():
        if time.perf_counter() > end:
            raise TimeoutError("benchmark wait timed out")
        await asyncio.sleep(0.0005)


def send_key(app: App, key: str) -> None:
    """A keypress as the terminal driver delivers it (Pilot.press adds idle waits of 20 ms or more)."""
    ev = events.Key(key, None)
    ev.set_sender(app)
    app._driver.send_message(ev)


async def ui_run(text: str, switches: int, g) -> dict[str, list[float]]:
    s, tr = await replay_session(text)
    app = PaneApp(s)
    out: dict[str, list[float]] = {"stop": [], "stop_threads": [], "switch": [], "move": [], "rows_built": []}
    cur, (a, b) = targets(g)
    async with app.run_test(size=(160, 48)) as pilot:
        await s.launch()
        await until(lambda: app.stamps.get("stop", -1) > 0)
        assert app.on_loaded is not None and app.on_threads is not None
        out["stop"].append(app.stamps["stop"] - app.on_loaded)
        out["stop_threads"].append(app.stamps["stop"] - app.on_threads)
        pane = app.query_one(CudaPane)
        rows = pane.rows
        await pilot.pause()
        # the focused range is under the cursor; ranges cur+1 and cur+2 start at a and b
        base = rows.cursor - cur
        for k in range(switches):
            blk, th = (a, b)[k % 2]
            want = base + cur + 1 + (k % 2)
            while rows.cursor != want:
                before = rows.cursor
                t0 = time.perf_counter()
                send_key(app, "down" if rows.cursor < want else "up")
                await until(lambda: rows.cursor != before)
                done: list[float] = []
                app.call_after_refresh(lambda: done.append(time.perf_counter()))
                await until(lambda: bool(done))
                out["move"].append(done[0] - t0)
            key = f"focus {Dim3(blk)} {Dim3(th)}"
            app.stamps.pop(key, None)
            t0 = time.perf_counter()
            send_key(app, "enter")
            await until(lambda: app.stamps.get(key, -1) > 0)
            out["switch"].append(app.stamps[key] - t0)
            await s.wait_refreshed()
            await app.workers.wait_for_complete()
        out["rows_built"].append(float(rows.rows_built))
        out["rows"] = [float(rows.row_count)]
    if tr.mismatches:
        raise SystemExit(f"the pane sent commands the transcript does not have: {tr.mismatches[:5]}")
    await s.close()
    return out


async def engine_run(text: str, switches: int, g) -> dict[str, list[float]]:
    """The same session without a UI: the switch in the engine alone, the model from the parsed table."""
    s, tr = await replay_session(text)
    await s.launch()
    while not (s.state.is_stopped and (cuda.snapshot(s.state) or cuda.CudaSnapshot()).loaded):
        await asyncio.sleep(0.001)
    await s.wait_refreshed()
    ext = cuda.get(s)
    snap = cuda.snapshot(s.state)
    cur, _ = targets(g)
    ranges = [snap.threads[cur + 1], snap.threads[cur + 2]]
    out: dict[str, list[float]] = {"engine_switch": [], "model": [], "parse_threads": [], "parse_switch": []}
    for k in range(switches):
        t0 = time.perf_counter()
        await ext.switch_focus(ranges[k % 2])
        out["engine_switch"].append(time.perf_counter() - t0)
    # the raw parse of one switch's reply lines, and of the threads table line
    steps = tr.steps
    i = next(i for i, (c, _) in enumerate(steps) if c.startswith("-cuda-focus-switch kernel 0"))
    reply = [ln for c, lines in steps[i : i + 4] for ln in lines if not c.startswith("-cuda-focus-switch") or c == steps[i][0]]
    reply = [ln for ln in reply if ln.strip() != "(gdb)"]
    table_line = next(ln for c, lines in steps if c == "-cuda-info-threads kernel 0" for ln in lines if "ThreadsTable" in ln)
    for _ in range(3):
        t0 = time.perf_counter()
        for ln in reply:
            mi.parse_line(ln)
        out["parse_switch"].append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    rec = mi.parse_line(table_line)
    out["parse_threads"].append(time.perf_counter() - t0)
    table = cuda.parse_table(rec.payload, "ThreadsTable")
    kinfo = snap.kernel_info(0)
    f = snap.focus
    for _ in range(3):
        t0 = time.perf_counter()
        tr2 = ThreadRanges.from_table(table, kernel=0, grid_dim=kinfo.grid_dim, block_dim=kinfo.block_dim, order=snap.caps.order)
        tr2.page(0, 50)
        tr2.locate(f.block, f.thread)
        tr2.summary()
        out["model"].append(time.perf_counter() - t0)
    await s.close()
    return out


def med(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:.1f}" if xs else "-"


def rng(xs: list[float]) -> str:
    return f"[{min(xs) * 1000:.1f}–{max(xs) * 1000:.1f}]" if xs else ""


async def measure(runs: int, switches: int, residents: list[int]) -> None:
    print(f"CUDA pane, 1M-thread grid from a replayed transcript; headless 160x48; {runs} runs, {switches} switches each")
    print("median ms [min–max]")
    for resident in residents:
        g = GRID.Grid(resident)
        text = transcript(resident, switches)
        agg: dict[str, list[float]] = {}
        for _ in range(runs):
            for k, v in (await ui_run(text, switches, g)).items():
                agg.setdefault(k, []).extend(v)
        base: dict[str, list[float]] = {}
        for k, v in (await engine_run(text, switches, g)).items():
            base.setdefault(k, []).extend(v)
        label = f"resident {resident} blocks ({g.total():,} threads, {int(agg['rows'][0]) - 3:,} ranges)"
        if resident >= 4096:
            label += " STRESS"
        print(f"\n{label}")
        print(f"  stop state -> pane repainted           {med(agg['stop']):>8} {rng(agg['stop'])}")
        print(f"  threads-table state -> repainted       {med(agg['stop_threads']):>8} {rng(agg['stop_threads'])}")
        print(f"    baseline: model alone (same table)   {med(base['model']):>8} {rng(base['model'])}")
        print(f"    baseline: raw MI parse, threads line {med(base['parse_threads']):>8}")
        print(f"  focus-switch key -> repainted          {med(agg['switch']):>8} {rng(agg['switch'])}  (n={len(agg['switch'])})")
        print(f"    baseline: engine switch alone        {med(base['engine_switch']):>8} {rng(base['engine_switch'])}")
        print(f"    baseline: raw MI parse of its replies {med(base['parse_switch']):>7}")
        print(f"  cursor move key -> repainted           {med(agg['move']):>8} {rng(agg['move'])}  (n={len(agg['move'])})")
        print(f"  rows drawn per session (of {int(agg['rows'][0]):,})      {statistics.median(agg['rows_built']):>8.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--switches", type=int, default=20)
    ap.add_argument("--resident", type=int, nargs="*", default=[1056, 4096])
    a = ap.parse_args()
    asyncio.run(measure(a.runs, a.switches, a.resident))


if __name__ == "__main__":
    main()
