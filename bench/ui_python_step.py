"""One step in the TUI, from the key to every pane repainted: Python step (the agent) vs native step.

The TUI runs headless (Textual's test driver, same rendering code) on real gdb. Keys are
delivered the way the terminal driver delivers them (Pilot.press adds idle waits).

  python   `n` with a Python frame selected, in bench/programs/pysteps.py stopped at a Python
           breakpoint: the agent steps one Python line; measured from the key to the screen
           repainted with the new line in the source pane and the refreshed Python stack.
  native   the baseline, in the same run: `n` in bench/programs/loop50.c (gdb's own next, a
           50-frame stack), from the key to the screen repainted with the new stop.

Usage: python bench/ui_python_step.py [--steps N] [--python PATH ...]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from common import REPO, build, line_of, ms, summary

import tuidbg.ui  # noqa: F401  (before Textual: it sets Textual's frame rate as tuidbg runs it)
from mi_roundtrip import PROG as C_PROG
from textual import events

PY_PROG = REPO / "bench" / "programs" / "pysteps.py"


def send_key(app, key: str) -> None:
    ev = events.Key(key, None)
    ev.set_sender(app)
    app._driver.send_message(ev)


async def step_samples(app, steps: int, shown) -> list[float]:
    """Press n ``steps`` times (after 3 warm-up steps); the time until ``shown(state)`` is painted."""
    painted: dict[int, float] = {}
    orig_apply = app._apply_state

    def apply(state):
        orig_apply(state)
        if state.generation not in painted and shown(app, state):
            gen = state.generation
            painted[gen] = -1.0
            app.call_after_refresh(lambda: painted.__setitem__(gen, time.perf_counter()))

    app._apply_state = apply
    out = []
    for i in range(steps + 3):
        gen = app.state.generation
        await asyncio.sleep(0.05)  # let the previous repaint settle
        t0 = time.perf_counter()
        send_key(app, "n")
        while not any(g > gen and t > 0 for g, t in painted.items()):
            await asyncio.sleep(0.0005)
        t1 = min(t for g, t in painted.items() if g > gen and t > 0)
        if i >= 3:
            out.append(t1 - t0)
    return out


async def python_samples(python: str, steps: int) -> list[float]:
    from tuidbg.engine import pyagent
    from tuidbg.engine.debugger import new_session
    from tuidbg.engine.session import SessionConfig
    from tuidbg.ui.app import TuidbgApp

    s = new_session(SessionConfig(mode="run", program=python, args=[str(PY_PROG)], nx=True, agent=True,
                                   python_target=True, ex=[f"break {PY_PROG}:{line_of(PY_PROG, 'loop_call')}"]))
    app = TuidbgApp(s)

    def shown(app, st) -> bool:
        stop = st.python.stop
        ps = st.python.stack
        return (st.is_stopped and stop is not None and ps is not None and ps.ok
                and app.query_one("#source").pc_line == stop.line)

    async with app.run_test(size=(160, 48)) as pilot:
        while not (app.state.is_stopped and shown(app, app.state) and app.py_sel is not None):
            await pilot.pause(0.05)
        await pyagent.controller(s).delete_all_breakpoints()
        samples = await step_samples(app, steps, shown)
        await s.close()
    return samples


async def native_samples(steps: int) -> list[float]:
    from tuidbg.engine.debugger import new_session
    from tuidbg.engine.session import SessionConfig
    from tuidbg.ui.app import TuidbgApp

    exe = str(build("loop50"))
    s = new_session(SessionConfig(mode="run", program=exe, nx=True, ex=[f"break {C_PROG}:{line_of(C_PROG, 'loop_a')}"]))
    app = TuidbgApp(s)

    def shown(app, st) -> bool:
        return st.is_stopped and st.locals_key is not None and len(st.frames) >= 50

    async with app.run_test(size=(160, 48)) as pilot:
        while not (app.state.is_stopped and shown(app, app.state)):
            await pilot.pause(0.05)
        await s.break_delete("1")
        samples = await step_samples(app, steps, shown)
        await s.close()
    return samples


def pythons(given: list[str]) -> list[str]:
    """Debian's stripped 3.11 and pyenv's 3.12 and 3.9 (settrace backend), where the machine has them."""
    if given:
        return given
    import glob
    import os

    out = [p for p in ("/usr/bin/python3.11",) if Path(p).exists()]
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for v in ("3.12", "3.9"):
        found = sorted(glob.glob(f"{root}/versions/{v}.*/bin/python{v}"))
        if found:
            out.append(found[-1])
    return out


async def measure(steps: int, given: list[str]) -> None:
    native = summary(await native_samples(steps))
    print(f"one step, key -> panes repainted, {steps} steps (median / p90)")
    print(f"  {'native next (gdb), 50-frame C stack':<44} {ms(native['median']):>10s} {ms(native['p90']):>10s}   baseline")
    for py in pythons(given):
        r = summary(await python_samples(py, steps))
        print(f"  {'Python next (agent), ' + py:<44} {ms(r['median']):>10s} {ms(r['p90']):>10s}   "
              f"{r['median'] / native['median']:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--python", action="append", default=[])
    args = ap.parse_args()
    asyncio.run(measure(args.steps, args.python))


if __name__ == "__main__":
    main()
