"""A step's rows of the source pane written to the terminal at once (ui.rows_now): in a real terminal
(tmux) the rows are the ones Textual itself draws, and where something is over them (a notification)
Textual composes them; where they can be written, and where not (``rows_now.boxes``)."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest
from conftest import requires_gdb
from helpers import LOADED_FLOOR, PROGRAMS
from source_app import SourceApp
from textual.app import ComposeResult
from textual.geometry import Region
from textual.screen import ModalScreen
from textual.widgets import Static
from tmux_term import tmux  # noqa: F401 (fixture)
from ui_helpers import until

from tuidbg.ui import rows_now
from tuidbg.ui.panes.source import BreakpointMark, SourceView

SRC = PROGRAMS / "threads.c"
ROWS_APP = Path(__file__).with_name("rows_app.py")
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed on this machine")


# -- in a terminal -------------------------------------------------------------------------------


def _log(path: Path) -> list[tuple[int, bool]]:
    """(line, whether its rows were written at once) of each move"""
    return [(line, painted) for line, painted, _ in _log_ahead(path)]


def _log_ahead(path: Path) -> list[tuple[int, bool, int]]:
    """... and how many of the rows were drawn ahead"""
    if not path.exists():
        return []
    return [(int(a), b == "True", int(c)) for a, b, c in (line.split() for line in path.read_text().splitlines())]


def _wait_log(path: Path, n: int, timeout: float = 20.0) -> list[tuple[int, bool]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        entries = _log(path)
        if len(entries) >= n:
            return entries
        time.sleep(0.05)
    raise AssertionError(f"{n} moves never logged: {_log(path)}")


def _colours(tmux) -> str:
    """The screen with its colours and styles (tmux's escape sequences)."""
    return tmux.tmux("capture-pane", "-e", "-p", "-t", "e2e", check=False).stdout


def _settled(tmux, timeout: float = 10.0) -> str:
    """The screen once it stays the same for half a second."""
    deadline = time.monotonic() + timeout
    last = _colours(tmux)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = _colours(tmux)
        if now == last:
            return now
        last = now
    raise AssertionError("the screen kept changing")


def _taken(tmux, log: Path, timeout: float = 20.0) -> bool:
    """Ask the app (r) whether the rows the next step may change are drawn ahead, once it took in every
    key sent before (it answers in order, in LOG.ready)."""
    ready = Path(str(log) + ".ready")
    before = len(ready.read_text().splitlines()) if ready.exists() else 0
    tmux.keys("r")
    deadline = time.monotonic() + max(timeout, LOADED_FLOOR)
    while True:
        answers = ready.read_text().splitlines() if ready.exists() else []
        if len(answers) > before:
            return answers[before] == "1"
        assert time.monotonic() < deadline, "the app never answered r"
        time.sleep(0.05)


def _ahead_in_terminal(tmux, log: Path, timeout: float = 20.0) -> None:
    """Wait until the rows the next step may change are drawn ahead (``SourceView.ahead``)."""
    deadline = time.monotonic() + max(timeout, LOADED_FLOOR)
    while not _taken(tmux, log):
        assert time.monotonic() < deadline, "the rows were never drawn ahead"
        time.sleep(0.05)


def _repainted_by_textual(tmux, log: Path | None) -> str:
    """The screen after Textual rendered every widget anew and wrote all of it (ctrl+l). With rows_app's
    ``log``: once the app says it took the key in. (tuidbg itself, no ``log``: the screen must then stay
    the same for half a second; a redraw that differs from what was there shows as a change in that
    time, and the screen is taken as it settles after it.)"""
    tmux.keys("C-l")
    if log is not None:
        _taken(tmux, log)  # (the redraw done)
    return _settled(tmux)


@needs_tmux
def test_the_rows_written_at_once_are_the_rows_textual_draws(tmux, tmp_path):
    log = tmp_path / "moves"
    tmux.start([sys.executable, str(ROWS_APP), str(SRC), str(log)])
    tmux.wait_for("#include")
    _settled(tmux)
    for n in range(1, 4):
        tmux.keys("n")
        _wait_log(log, n)
        _ahead_in_terminal(tmux, log)  # (the next rows drawn ahead before the next key)
    # each wrote its rows itself, the old line's and the new one's drawn ahead
    assert _log_ahead(log) == [(4, True, 2), (5, True, 2), (6, True, 2)]
    written = _settled(tmux)
    assert "6▶" in tmux.screen().replace(" ", "")  # the marker on the new line, in the terminal
    assert _repainted_by_textual(tmux, log) == written  # colours and all, as Textual draws every row


@needs_tmux
def test_rows_written_from_those_drawn_ahead_are_composed_anew_afterwards(tmux, tmp_path):
    """A row Textual drew (the cursor went over it) and then written from a text drawn ahead: when a
    notification over it goes, Textual composes it as it is now, not as it drew it before."""
    log = tmp_path / "moves"
    tmux.start([sys.executable, str(ROWS_APP), str(SRC), str(log)])
    tmux.wait_for("#include")
    _settled(tmux)
    tmux.keys("N")  # the current line to a row a notification covers
    _wait_log(log, 1)
    _ahead_in_terminal(tmux, log)
    tmux.keys("Up")  # the cursor over the current line's row and back: Textual draws them
    tmux.keys("Down")
    _ahead_in_terminal(tmux, log)
    tmux.keys("p")  # a step (a line up): both rows written from texts drawn ahead
    _wait_log(log, 2)
    assert _log_ahead(log)[1][1:] == (True, 2)
    tmux.keys("T")  # a notification over those rows, gone after a second
    tmux.wait_for("a toast over the source rows")
    deadline = time.monotonic() + 10
    while "a toast over the source rows" in tmux.screen():
        assert time.monotonic() < deadline, "the notification never went"
        time.sleep(0.1)
    after = _settled(tmux)
    assert tmux.screen().count("▶") == 1
    assert _repainted_by_textual(tmux, log) == after


@needs_tmux
def test_rows_under_a_notification_go_through_textual(tmux, tmp_path):
    log = tmp_path / "moves"
    tmux.start([sys.executable, str(ROWS_APP), str(SRC), str(log)])
    tmux.wait_for("#include")
    tmux.keys("t")
    tmux.wait_for("a toast over the source rows")
    tmux.keys("N")  # the current line moves under the notification
    ((line, painted),) = _wait_log(log, 1)
    assert painted is False
    screen = tmux.wait_for(f"{line}▶".rjust(3))
    assert "a toast over the source rows" in screen  # not written over
    tmux.keys("n")  # (and a line above it is written at once again)
    _wait_log(log, 2)
    assert _settled(tmux) == _repainted_by_textual(tmux, log)


@needs_tmux
@requires_gdb
def test_tuidbg_steps_show_the_rows_textual_draws(tmux, threads_prog):
    tmux.start([sys.executable, "-m", "tuidbg", "run", "--nx", "-ex", "break middle", "--", str(threads_prog)])
    tmux.wait_for("stopped: breakpoint")
    for _ in range(2):
        before = _source_marker(tmux)
        tmux.keys("n")
        deadline = time.monotonic() + LOADED_FLOOR
        while _source_marker(tmux) == before or "stopped: step finished" not in tmux.screen():
            assert time.monotonic() < deadline, f"the step never showed: {tmux.screen()}"
            time.sleep(0.05)
    stepped = _settled(tmux)
    assert _repainted_by_textual(tmux, None) == stepped


def _source_marker(tmux) -> str:
    """The screen's rows with a current-line marker (the step moves the source pane's)."""
    return "\n".join(r for r in tmux.screen().splitlines() if "▶" in r)


# -- where (headless) ----------------------------------------------------------------------------


class Dialog(ModalScreen):
    def compose(self) -> ComposeResult:
        yield Static("a dialog")


async def test_the_boxes_of_rows_in_view_and_none_where_textual_must_compose_them():
    app = SourceApp()
    async with app.run_test(size=(80, 20), notifications=True) as pilot:
        src = app.query_one(SourceView)
        assert src.show_file(str(SRC))
        await _laid_out(app, pilot, src)
        region, width = src.region, src.region.width - src.scrollbar_gutter.right
        assert rows_now.boxes(src, [5, 2, 5]) == [(2, rows_now.Region(region.x, region.y + 2, width, 1)),
                                                   (5, rows_now.Region(region.x, region.y + 5, width, 1))]
        assert rows_now.boxes(src, [-1, 500]) == []  # (not in view: nothing to draw)
        assert rows_now.paint_rows(src, [2]) is False  # (headless: no terminal to write to)

        src.refresh()  # the whole view waits for a repaint: Textual draws it
        assert rows_now.boxes(src, [2]) is None
        await _laid_out(app, pilot, src)
        assert rows_now.boxes(src, [2]) is not None

        app.notify("over the last rows", timeout=30)
        await pilot.pause()
        await _laid_out(app, pilot, src)
        height = src.scrollable_content_region.height
        assert rows_now.boxes(src, [height - 2]) is None  # under the notification
        assert rows_now.boxes(src, [1]) is not None  # above it
        app.clear_notifications()
        await pilot.pause()
        await _laid_out(app, pilot, src)
        assert rows_now.boxes(src, [height - 2]) is not None

        app.push_screen(Dialog())
        await _laid_out(app, pilot, src)
        assert rows_now.boxes(src, [1]) is None  # another screen on top


async def _laid_out(app, pilot, widget, timeout: float = 10.0) -> None:
    """Pause until Textual has nothing of ``widget``'s screen pending (layout, scroll, a batch, a repaint of the
    widget if it is shown): a loaded machine may need more than one pause after a change; what ``boxes``
    says is then its answer for the settled screen, not for one still in change."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        await pilot.pause()
        if not rows_now.pending(widget, app.screen):  # (a hidden widget's repaint waits until shown)
            return
    raise AssertionError(f"Textual still had a layout or repaint pending after {timeout} s")


async def _shown(app, pilot) -> SourceView:
    src = app.query_one(SourceView)
    assert src.show_file(str(SRC))
    await _laid_out(app, pilot, src)
    assert rows_now.boxes(src, [1])
    return src


async def test_no_boxes_for_a_view_that_is_not_on_the_screen():
    app = SourceApp()
    async with app.run_test(size=(80, 20)) as pilot:
        src = await _shown(app, pilot)
        src.display = False
        await _laid_out(app, pilot, src)
        assert rows_now.boxes(src, [1]) is None


class Other(Static, can_focus=True):
    ALLOW_MAXIMIZE = True


class TwoPanes(SourceApp):
    def compose(self) -> ComposeResult:
        yield SourceView()
        yield Other("the other pane", id="other")


async def test_no_boxes_while_another_pane_is_maximized():
    app = TwoPanes()
    async with app.run_test(size=(80, 20)) as pilot:
        src = await _shown(app, pilot)
        app.screen.maximize(app.query_one("#other"))
        await _laid_out(app, pilot, src)
        assert app.screen.maximized is not None
        assert rows_now.boxes(src, [1]) is None
        # Shown again: the view's repaints asked for around the minimize, if Textual's screen saw them before
        # its relayout put the view back on the map, stay pending (the compositor takes a widget's repaint
        # only while it is on the map), and boxes would stay None until the view's next own repaint; the
        # view repaints itself when shown (SourceView.on_show). Without that, 6 of 60 runs failed here with
        # four busy loops on the two cores, as on CI; with it, none of 60.
        app.screen.minimize()
        await _laid_out(app, pilot, src)
        assert rows_now.boxes(src, [1])


# -- rows drawn ahead of a step (panes/source_ahead.py) --------------------------------------------


async def _drawn_ahead(app, pilot) -> tuple[SourceView, int, dict]:
    """The view with its current line on line 3 and the rows drawn ahead: (view, top line, boxes by row)."""
    src = await _shown(app, pilot)
    src.set_pc(3)
    await _laid_out(app, pilot, src)
    src.ahead.prepare(at_most=1000)
    return src, src.scroll_offset.y, dict(rows_now.boxes(src, range(src.scrollable_content_region.height)))


async def test_rows_drawn_ahead_are_the_rows_a_step_renders():
    app = SourceApp()
    async with app.run_test(size=(80, 20)) as pilot:
        src, top, box = await _drawn_ahead(app, pilot)
        # what the compositor renders of a row afterwards (a notification gone from over it) is the
        # row as it is: drawing ahead leaves nothing of the row as it is not in the widget's cache
        row = Region(0, src.content_offset.y + 9 - 1 - top, src.region.width, 1)
        assert "▶" not in "".join(s.text for s in src.render_lines(row)[0])
        old = 3
        for line in (4, 9, 12):
            ahead_new = src.ahead.rows[(line, "pc")][3]
            ahead_old = src.ahead.rows[(old, "plain")][3]
            src.set_pc(line)  # (headless: Textual repaints the rows; the texts are compared here)
            await pilot.pause()
            assert src.scroll_offset.y == top
            assert rows_now.row_text(src, line - 1 - top, box[line - 1 - top]) == ahead_new
            assert rows_now.row_text(src, old - 1 - top, box[old - 1 - top]) == ahead_old
            assert "▶" in ahead_new and "▶" not in ahead_old
            src.ahead.prepare(at_most=1000)  # (the new current line's plain row: the only one not drawn yet)
            old = line


async def test_rows_are_drawn_a_few_at_a_time_nearest_the_current_line_first():
    from tuidbg.ui.panes.source_ahead import AHEAD_SLICE

    app = SourceApp()
    async with app.run_test(size=(80, 20)) as pilot:
        src = await _shown(app, pilot)
        src.set_pc(8)
        await pilot.pause()
        src.ahead.prepare()
        assert AHEAD_SLICE == 6 and set(src.ahead.rows) == {(8, "pc"), (8, "plain"), (7, "pc"), (9, "pc"), (6, "pc"),
                                                            (10, "pc")}
        in_view = src.scrollable_content_region.height
        await until(pilot, lambda: len(src.ahead.rows) == in_view + 1, 5, "every row drawn")


async def test_rows_drawn_ahead_are_used_only_while_they_are_what_the_row_shows():
    app = SourceApp()
    async with app.run_test(size=(80, 20)) as pilot:
        src, top, box = await _drawn_ahead(app, pilot)

        def text(line: int) -> str | None:
            known = src.ahead.known()
            return None if known is None else known(line - 1 - top, box[line - 1 - top])

        src.pc_line = src.cursor_line = 7  # (as set_pc leaves them, for the lookup alone)
        assert text(7) == src.ahead.rows[(7, "pc")][3]
        assert text(3) == src.ahead.rows[(3, "plain")][3]
        src.set_marks({7: BreakpointMark()})  # a breakpoint on the line: its row is drawn anew
        assert text(7) is None and text(3) is not None
        src.set_marks({})
        assert text(7) is not None
        assert text(8) is None  # (not a current line's row: the cursor's rows are not drawn ahead)
        src.search = "int"  # the view's look changes: no row is taken from before
        assert src.ahead.known() is None
        src.search = None
        assert src.ahead.known() is not None
        app.theme = "tuidbg-light"
        await pilot.pause()
        assert src.ahead.known() is None
