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
        await pilot.pause(0.2)  # (a negative check: no second call; a slow machine can only miss one)
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
        await pilot.pause(0.2)  # (a negative check: no second call; a slow machine can only miss one)
        assert called == [True]


async def test_a_line_shown_early_is_not_written_again_by_the_states_own_set_pc(monkeypatch):
    """``show_stop_early`` writes the stop's rows; the state's ``set_pc`` of the same line right after
    writes nothing more (and still says the line is out), unless the view moved in between."""
    from tuidbg.ui.panes import source as source_module

    written: list[list[int]] = []

    def paint_rows(widget, rows, known=None, on_screen=None):  # (a terminal that takes the rows at once, as ui.rows_now does)
        written.append(sorted(rows))
        return True

    monkeypatch.setattr(source_module, "paint_rows", paint_rows)
    app = SourceApp()
    async with app.run_test(size=(80, 20)) as pilot:
        src = app.query_one(SourceView)
        assert src.show_file(str(SRC))
        src.set_pc(10)
        await pilot.pause()
        top = src.scroll_offset.y
        written.clear()
        src.show_stop_early(12)
        assert written == [[9 - top, 11 - top]] and src.painted_now
        called = []
        src.after_pc_painted(lambda: called.append(True), at_most=30)
        src.set_pc(12)  # (the state's own, a moment later)
        assert written == [[9 - top, 11 - top]] and src.painted_now and src.pc_line == 12
        await until(pilot, lambda: called, 5, "the line said to be out")
        src.set_pc(12)  # (once only: a second set_pc writes the row as usual)
        assert written[-1] == [11 - top]
        # the view moved between the two: written again
        src.show_stop_early(13)
        src.scroll_to(y=top + 1, animate=False, immediate=True)
        written.clear()
        src.set_pc(13)
        assert written or not src.painted_now
        # another line than the one shown early: written
        src.show_stop_early(14)
        written.clear()
        src.set_pc(15)
        assert written and 14 - 1 - src.scroll_offset.y in written[0]
