"""Tables whose columns are made anew with their rows (``panes.tables.add_fitted_columns``, the Tasks pane):
their rows are whole in a screen update that comes before the table next goes idle. Textual's own sizing
(``add_columns``) is shown beside it, cut and kept cut: the reason the helper exists (should a Textual
release measure before it renders, the second half fails and the helper can go)."""

from __future__ import annotations

from svg_text import svg_rows
from textual.app import App, ComposeResult
from textual.widgets import DataTable
from ui_helpers import until

from tuidbg.ui.panes.tables import T, add_fitted_columns

LABELS = ("Task", "Waits in")
ROWS = [[T("parent-gather"), T("parent_gather tasks_demo.py:77")], [T("  leaf-task"), T("Event.wait locks.py:213")]]


class _TableApp(App):
    CSS = "DataTable { height: 1fr; }"  # (as the panes: the rows shown without a new layout)

    def compose(self) -> ComposeResult:
        yield DataTable()


def _screen(app) -> str:
    return "\n".join(svg_rows(app.export_screenshot())).replace("\xa0", " ")


async def _refilled_screens(fitted: bool) -> tuple[str, str]:
    """The screen at once after a shown table's columns and rows are made anew, and again once it went idle."""
    app = _TableApp()
    async with app.run_test(size=(80, 10)) as pilot:
        table = app.query_one(DataTable)
        table.add_columns(*LABELS)
        table.add_row(T(""), T("(reading the tasks…)"))
        await pilot.pause()
        assert "(reading the tasks…)" in _screen(app)
        table.clear(columns=True)
        if fitted:
            add_fitted_columns(table, LABELS, ROWS)
        else:
            table.add_columns(*LABELS)
        for cells in ROWS:
            table.add_row(*cells)
        at_once = _screen(app)  # (a screen update now: before the table's idle)
        # the table went idle: it measured its rows (its scrollable width is theirs)
        await until(pilot, lambda: table.virtual_size.width >= 40, 10, lambda: f"the table measured ({table.virtual_size})")
        await pilot.pause()
        return at_once, _screen(app)


async def test_fitted_columns_show_new_rows_whole_in_the_next_screen_update():
    at_once, later = await _refilled_screens(fitted=True)
    for text in (at_once, later):
        assert "parent-gather" in text and "Event.wait locks.py:213" in text and "parent_gather tasks_demo.py:77" in text, \
            text


async def test_textual_sized_columns_keep_cells_cut_by_an_early_screen_update():
    at_once, later = await _refilled_screens(fitted=False)
    for text in (at_once, later):
        assert "parent-gather" not in text and "par…" in text and "Event.wait locks.py:213" not in text, text
