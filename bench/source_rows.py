"""What a step's line costs the source pane, warm: one row rendered (``Widget.render_lines``, as
``ui.rows_now`` does it), the pane's own ``render_line``, ``rows_now.boxes`` (where the rows are, and
whether anything is over them), and ``set_pc`` (headless: it refreshes the rows instead of writing
them). A headless app holding only the source pane in tuidbg's theme, on tests/programs/threads.c.

Usage: python bench/source_rows.py [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from common import REPO

sys.path.insert(0, str(REPO / "tests" / "ui"))
from source_app import SourceApp  # noqa: E402  (the tests' app of the source pane alone)
from textual.geometry import Region  # noqa: E402

from tuidbg.ui import rows_now  # noqa: E402
from tuidbg.ui.panes.source import SourceView  # noqa: E402


def per_call(fn, n: int) -> float:
    t0 = time.perf_counter()
    for i in range(n):
        fn(i)
    return (time.perf_counter() - t0) / n * 1e6


async def main(n: int) -> None:
    app = SourceApp()
    async with app.run_test(size=(120, 40)) as pilot:
        src = app.query_one(SourceView)
        src.show_file(str(REPO / "tests" / "programs" / "threads.c"))
        await pilot.pause()
        src.set_pc(10)
        await pilot.pause()
        row = Region(0, 5, src.region.width, 1)

        def render(_i: int) -> None:
            src._styles_cache.set_dirty(row)  # (as rows_now: not the cached line)
            src.render_lines(row)[0].render(app.console)

        results = {
            "render_lines + to the terminal's bytes, one row": per_call(render, n),
            "SourceView.render_line, one row": per_call(lambda _i: src.render_line(5), n),
            "rows_now.boxes, two rows": per_call(lambda _i: rows_now.boxes(src, [5, 6]), n),
            "set_pc, the next line": per_call(lambda i: src.set_pc(10 + i % 2), n),
        }
    for name, us in results.items():
        print(f"{name:50s} {us:7.1f} µs")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2000)
    asyncio.run(main(ap.parse_args().repeat))
