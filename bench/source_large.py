"""The source view on a 100,000-line file against a 100-line file, same run.

Measured in a headless Textual app holding only the source view: opening the
file, drawing one screen (40 rows) at the top, the middle and the end (what a
jump to a frame costs), and the background highlighting (which does not block
the UI: the view shows plain text until it is done).

Usage: python bench/source_large.py
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from textual.app import App

from common import ms


def write(path: Path, n: int) -> Path:
    path.write_text("".join(f"static int value_{i} = {i} * 3; /* line {i + 1}: some text */\n" for i in range(n)))
    return path


class Holder(App):
    def compose(self):
        from tuidbg.ui.panes.source import SourceView

        yield SourceView(id="src")

    def get_theme_variable_defaults(self):
        from tuidbg.ui.app import THEME_VARIABLE_DEFAULTS

        return dict(THEME_VARIABLE_DEFAULTS)


async def measure_file(path: Path, n: int) -> dict:
    app = Holder()
    out = {}
    async with app.run_test(size=(120, 42)) as pilot:
        src = app.query_one("#src")
        t0 = time.perf_counter()
        src.show_file(str(path))
        out["open"] = time.perf_counter() - t0
        t_hl = time.perf_counter()
        draws = []
        for line in (1, n // 2, n):
            src.goto_line(line)
            await pilot.pause()
            t0 = time.perf_counter()
            for y in range(40):
                src.render_line(y)
            draws.append(time.perf_counter() - t0)
        out["screen"] = max(draws)
        while not src.highlighted:
            await pilot.pause(0.01)
        out["highlight"] = time.perf_counter() - t_hl
        src._cache.clear()
        t0 = time.perf_counter()
        for y in range(40):
            src.render_line(y)
        out["screen_hl"] = time.perf_counter() - t0
    return out


async def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        await measure_file(write(Path(d) / "warm.c", 100), 100)  # imports, lexer set-up
        small = await measure_file(write(Path(d) / "small.c", 100), 100)
        big = await measure_file(write(Path(d) / "big.c", 100_000), 100_000)
    print("source view, 100-line vs 100,000-line file")
    for key, label in (("open", "open the file"), ("screen", "draw a screen (worst of top/middle/end)"),
                       ("screen_hl", "draw a screen, highlighted"), ("highlight", "background highlighting")):
        print(f"  {label:42s} {ms(small[key]):>10s} {ms(big[key]):>10s}  {big[key] / small[key]:7.1f}x")


if __name__ == "__main__":
    asyncio.run(main())
