"""Time from the ``*stopped`` record to all panes repainted, on a 50-frame stack.

The TUI runs headless (Textual's test driver, same rendering code) on a real gdb.
For each ``next``: t0 when the engine handles ``*stopped``; t1 when the screen has
been repainted after the panes received the refreshed state (frames and locals of
that stop). Baseline, in the same run: bare gdb over pipes answering the same
commands the refresh sends (threads, 65 frames, locals), from its ``*stopped``.

Usage: python bench/ui_stop_repaint.py [--stops N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from common import REPO, build, line_of, ms, summary
from mi_roundtrip import PROG, Bare


async def ui_samples(stops: int) -> list[float]:
    from tuidbg.engine.debugger import new_session
    from tuidbg.engine.session import SessionConfig
    from tuidbg.ui.app import TuidbgApp

    exe = str(build("loop50"))
    s = new_session(SessionConfig(mode="run", program=exe, nx=True, ex=[f"break {PROG}:{line_of(PROG, 'loop_a')}"]))
    if os.environ.get("NO_EXT"):
        s.extensions = []
    app = TuidbgApp(s)
    t_stop: dict[int, float] = {}
    t_paint: dict[int, float] = {}

    def on_stop(state):
        t_stop[state.generation + 1] = time.perf_counter()
        return state

    s.stop_hooks.append(lambda st: (t_stop.__setitem__(st.generation, time.perf_counter()), st)[1])
    orig_apply = app._apply_state

    def apply(state):
        orig_apply(state)
        if state.is_stopped and state.locals_key is not None and len(state.frames) >= 50 and state.generation not in t_paint:
            gen = state.generation
            t_paint[gen] = -1.0
            app.call_after_refresh(lambda: t_paint.__setitem__(gen, time.perf_counter()))

    app._apply_state = apply
    samples = []
    async with app.run_test(size=(160, 48)) as pilot:
        while not (app.state.is_stopped and t_paint.get(app.state.generation, -1) > 0):
            await pilot.pause(0.05)
        await s.break_delete("1")
        for i in range(stops + 3):
            gen = app.state.generation
            await pilot.press("n")
            while t_paint.get(gen + 1, -1.0) <= 0:
                await asyncio.sleep(0.001)
            if i >= 3:
                samples.append(t_paint[gen + 1] - t_stop[gen + 1])
        await s.close()
    return samples


async def bare_samples(stops: int) -> list[float]:
    b = Bare()
    await b.start(str(build("loop50")))
    cmds = ["-thread-info", "-stack-list-frames --thread 1 0 64",
            "-stack-list-variables --thread 1 --frame 0 --skip-unavailable --simple-values"]
    out = []
    for i in range(stops + 3):
        await b.cmd("-exec-next")
        await b.until(lambda l: l.startswith("*stopped"))
        t0 = time.perf_counter()
        for c in cmds:
            await b.cmd(c)
        if i >= 3:
            out.append(time.perf_counter() - t0)
    await b.close()
    return out


async def measure(stops: int) -> None:
    bare = summary(await bare_samples(stops))
    ui = summary(await ui_samples(stops))
    print(f"*stopped -> all panes repainted, 50-frame stack, {stops} stops (median / p90)")
    print(f"  bare gdb, refresh commands only   {ms(bare['median']):>10s} {ms(bare['p90']):>10s}")
    print(f"  tuidbg TUI, panes repainted       {ms(ui['median']):>10s} {ms(ui['p90']):>10s}")
    print(f"  ratio {ui['median'] / bare['median']:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stops", type=int, default=50)
    asyncio.run(measure(ap.parse_args().stops))


if __name__ == "__main__":
    main()
