"""The source pane says when a stop's line has gone out in a screen update (app_source holds the other
panes' update of the stop until then): once it rendered that line, or after its wait when it cannot."""

from __future__ import annotations

from helpers import PROGRAMS
from source_app import SourceApp
from ui_helpers import until

from tuidbg.ui.panes.source import SourceView

SRC = PROGRAMS / "threads.c"


async def test_the_callback_comes_after_the_stop_line_was_rendered_and_only_once():
    app = SourceApp()
    async with app.run_test(size=(80, 20)) as pilot:
        src = app.query_one(SourceView)
        assert src.show_file(str(SRC))
        await pilot.pause()
        rendered, called = [], []
        real = src.render_line

        def render_line(y):
            if src.scroll_offset.y + y + 1 == src.pc_line:
                rendered.append(src.pc_line)
            return real(y)

        src.render_line = render_line
        src.set_pc(30)
        src.after_pc_painted(lambda: called.append(list(rendered)), at_most=30)
        await until(pilot, lambda: called, 10, "the callback")
        assert called == [[30]]  # (the line was in an update before the callback ran)
        await pilot.pause(0.2)
        assert len(called) == 1


async def test_a_hidden_source_pane_still_calls_back():
    app = SourceApp()
    async with app.run_test(size=(80, 20)) as pilot:
        src = app.query_one(SourceView)
        assert src.show_file(str(SRC))
        src.display = False
        await pilot.pause()
        called = []
        src.set_pc(12)
        src.after_pc_painted(lambda: called.append(True), at_most=0.05)
        await until(pilot, lambda: called, 10, "the callback of a pane that draws nothing")
        await pilot.pause(0.2)
        assert called == [True]
