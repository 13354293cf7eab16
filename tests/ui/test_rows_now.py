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
from helpers import PROGRAMS
from source_app import SourceApp
from textual.app import ComposeResult
from textual.screen import ModalScreen
from textual.widgets import Static
from tmux_term import tmux  # noqa: F401 (fixture)

from tuidbg.ui import rows_now
from tuidbg.ui.panes.source import SourceView

SRC = PROGRAMS / "threads.c"
ROWS_APP = Path(__file__).with_name("rows_app.py")
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed on this machine")


# -- in a terminal -------------------------------------------------------------------------------


def _log(path: Path) -> list[tuple[int, bool]]:
    if not path.exists():
        return []
    return [(int(a), b == "True") for a, b in (line.split() for line in path.read_text().splitlines())]


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


def _repainted_by_textual(tmux) -> str:
    """The screen after Textual rendered every widget anew and wrote all of it (ctrl+l)."""
    tmux.keys("C-l")
    time.sleep(0.3)
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
    assert _log(log) == [(4, True), (5, True), (6, True)]  # (each wrote its rows itself)
    written = _settled(tmux)
    assert "6▶" in tmux.screen().replace(" ", "")  # the marker on the new line, in the terminal
    assert _repainted_by_textual(tmux) == written  # colours and all, as Textual draws every row


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
    assert _settled(tmux) == _repainted_by_textual(tmux)


@needs_tmux
@requires_gdb
def test_tuidbg_steps_show_the_rows_textual_draws(tmux, threads_prog):
    tmux.start([sys.executable, "-m", "tuidbg", "run", "--nx", "-ex", "break middle", "--", str(threads_prog)])
    tmux.wait_for("stopped: breakpoint")
    for _ in range(2):
        tmux.keys("n")
        time.sleep(0.3)
        tmux.wait_for("stopped: step finished")
    stepped = _settled(tmux)
    assert _repainted_by_textual(tmux) == stepped


# -- where (headless) ----------------------------------------------------------------------------


class Dialog(ModalScreen):
    def compose(self) -> ComposeResult:
        yield Static("a dialog")


async def test_the_boxes_of_rows_in_view_and_none_where_textual_must_compose_them():
    app = SourceApp()
    async with app.run_test(size=(80, 20), notifications=True) as pilot:
        src = app.query_one(SourceView)
        assert src.show_file(str(SRC))
        await pilot.pause()
        region, width = src.region, src.region.width - src.scrollbar_gutter.right
        assert rows_now.boxes(src, [5, 2, 5]) == [(2, rows_now.Region(region.x, region.y + 2, width, 1)),
                                                   (5, rows_now.Region(region.x, region.y + 5, width, 1))]
        assert rows_now.boxes(src, [-1, 500]) == []  # (not in view: nothing to draw)
        assert rows_now.paint_rows(src, [2]) is False  # (headless: no terminal to write to)

        src.refresh()  # the whole view waits for a repaint: Textual draws it
        assert rows_now.boxes(src, [2]) is None
        await pilot.pause()
        assert rows_now.boxes(src, [2]) is not None

        app.notify("over the last rows", timeout=30)
        await pilot.pause()
        await pilot.pause()
        height = src.scrollable_content_region.height
        assert rows_now.boxes(src, [height - 2]) is None  # under the notification
        assert rows_now.boxes(src, [1]) is not None  # above it
        app.clear_notifications()
        await pilot.pause()
        await pilot.pause()
        assert rows_now.boxes(src, [height - 2]) is not None

        app.push_screen(Dialog())
        await pilot.pause()
        assert rows_now.boxes(src, [1]) is None  # another screen on top


async def _shown(app, pilot) -> SourceView:
    src = app.query_one(SourceView)
    assert src.show_file(str(SRC))
    await pilot.pause()
    assert rows_now.boxes(src, [1])
    return src


async def test_no_boxes_for_a_view_that_is_not_on_the_screen():
    app = SourceApp()
    async with app.run_test(size=(80, 20)) as pilot:
        src = await _shown(app, pilot)
        src.display = False
        await pilot.pause()
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
        await pilot.pause()
        assert app.screen.maximized is not None
        assert rows_now.boxes(src, [1]) is None
        app.screen.minimize()
        await pilot.pause()
        assert rows_now.boxes(src, [1])
