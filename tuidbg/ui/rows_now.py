"""A few rows of one widget written to the terminal at once, past Textual's screen update.

A step changes two rows of the source pane (the old line and the new). Through Textual, those rows
go out in a screen update: a compositor pass over every widget under the box around them (screen,
grid, pane, view, scroll bar), 1.0-1.3 ms on a 2-core machine, then the writer thread.
``paint_rows`` renders just the widget's rows (``Widget.render_lines``: its styles, the app's filters,
the strips the compositor would place there) and writes them with the cursor moves in front, ~0.6 ms
for two rows (by this thread when the driver's writer thread has nothing waiting: ``ui.driver``).

Only where that is the same as Textual's own update (``boxes``): a real terminal (not headless), the
app's one screen, no layout, scroll or batch pending, the widget not waiting for a repaint of its
own, and no other widget (a notification, a tooltip, a menu) over those rows. Otherwise it returns
False and the caller refreshes the rows the usual way. The rows are not marked for Textual to repaint: they are on
the screen already, rendered from the widget's present state, as Textual would have rendered them.

A row rendered after 50 ms of idle takes several times its warm time (~0.4 ms against 74 µs: caches
gone cold). So the source pane draws ahead, once a stop is shown, the rows a step may change next
(``row_text(keep=False)``: every row in view as the current line, the current line as a plain row),
and a step writes those texts (``known``): the render the step would do, done before the key. Each
is kept with what it was drawn from (the pane's geometry, styles and focus, the line's text and
highlighting, its breakpoint mark) and used only while all of that is the same
(``panes/source.py``).

Uses Textual's private names (the compositor's map, the widget's styles cache, the driver's writer):
pyproject pins textual to 8.2, and tests/ui/test_rows_now.py compares the rows, in a terminal, with
Textual's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from weakref import WeakKeyDictionary

from rich.control import Control
from textual._ansi_sequences import SYNC_END, SYNC_START
from textual.geometry import Region
from textual.screen import Screen
from textual.widget import Widget

from tuidbg.ui import fastpath

# widget -> (the compositor's visible widgets, the parts of ``region`` other widgets show in)
_OVER: WeakKeyDictionary[Widget, tuple[object, Region, list[Region]]] = WeakKeyDictionary()


def _others_over(widget: Widget, region: Region) -> list[Region]:
    """What of ``region`` (the widget's) widgets other than it and its ancestors take: its scroll bars,
    and whatever is over it (a notification, a tooltip). Worked out again when the screen's layout
    changes (the compositor makes a new map of visible widgets then)."""
    visible = widget.screen._compositor.visible_widgets
    known = _OVER.get(widget)
    if known is not None and known[0] is visible and known[1] == region:
        return known[2]
    mine = set(widget.ancestors_with_self)
    over = [seen for other, (other_region, clip) in visible.items() if other not in mine
            for seen in [other_region.intersection(clip).intersection(region)] if seen]
    _OVER[widget] = (visible, region, over)
    return over


def pending(widget: Widget, screen: Screen | None = None) -> bool:
    """Textual has something to do before its next update is what ``screen`` (default: the widget's own)
    shows: a batch of updates, a layout or scroll of the screen, or (the widget being on that screen's
    map) a repaint or layout of the widget itself."""
    app = widget.app
    screen = screen or widget.screen
    if app._batch_count or screen._layout_required or screen._scroll_required:
        return True
    return widget in screen._compositor.visible_widgets and bool(widget._repaint_regions or widget._layout_required)


def boxes(widget: Widget, rows: Iterable[int]) -> list[tuple[int, Region]] | None:
    """Where on the screen ``widget``'s content rows ``rows`` (0 = the top row of its content area) are,
    (row, box) for those in view, when writing them is the same as Textual's update would be; None
    when Textual must compose them (a layout, scroll or batch pending, the widget waiting for a repaint
    of its own, another screen on top, something else over the rows). A repaint the screen took while
    the widget was off its map (another pane maximized) stays pending in Textual until the widget's
    next own repaint (the source view makes one when shown again)."""
    app = widget.app
    screen = widget.screen
    if (len(app.screen_stack) != 1 or not screen.is_current or not widget.display
            or widget not in screen._compositor.visible_widgets or pending(widget)):
        return None
    region = widget.region  # (on the screen, its border, padding and scroll bars included)
    offset = widget.content_offset
    width = region.width - widget.scrollbar_gutter.right  # (not the vertical scroll bar's columns)
    height = widget.scrollable_content_region.height
    wanted = sorted({r for r in rows if 0 <= r < height})
    if not wanted or width <= 0:
        return []  # (nothing of them on the screen: nothing to draw)
    found = [(r, Region(region.x, region.y + offset.y + r, width, 1)) for r in wanted]
    around = Region.from_union([box for _, box in found])
    if any(seen.overlaps(around) for seen in _others_over(widget, region)):
        return None  # something else over (or under) these rows: Textual composes them
    return found


def _row(widget: Widget, r: int) -> Region:
    """Content row ``r`` of ``widget`` as its render cache (``_styles_cache``) names it."""
    return Region(0, widget.content_offset.y + r, widget.region.width, 1)


def row_text(widget: Widget, r: int, box: Region, keep: bool = True) -> str:
    """The terminal text that draws ``widget``'s content row ``r`` in ``box`` (where ``boxes`` put it): Textual's
    own render of the row. ``keep=False``: a row drawn ahead, as it is not yet (the widget's render cache is
    left without it)."""
    row = _row(widget, r)
    widget._styles_cache.set_dirty(row)  # (its cache may hold the row as it was)
    strip = widget.render_lines(row)[0].crop(0, box.width)
    if not keep:
        widget._styles_cache.set_dirty(row)
    return Control.move_to(box.x, box.y).segment.text + strip.render(widget.app.console)


def frame_ends(widget: Widget) -> tuple[str, str]:
    """What goes before and after ``widget``'s rows (``row_text``, in the order of their rows) in a write
    of them: as in Textual's own updates, the terminal's synchronized output where it has it (it shows
    the rows whole), and the cursor put back where the app has it."""
    app = widget.app
    tail = Control.move_to(*widget.screen.outer_size.clamp_offset(app.cursor_position)).segment.text
    return (SYNC_START, tail + SYNC_END) if app._sync_available else ("", tail)


def paint_rows(widget: Widget, rows: Iterable[int], known: Callable[[int, Region], str | None] | None = None,
               on_screen: str | None = None) -> bool:
    """Write ``widget``'s content rows ``rows`` (0 = the top row of its content area) to the terminal
    now; False, having written nothing, where that cannot be done the same as Textual would (``boxes``;
    and a terminal is needed: not under a headless driver). ``known(row, box)``: the row's text drawn
    ahead, or None (it is rendered now). ``on_screen``: what another thread wrote a moment ago, with
    nothing written since (``ui.stoppaint``): when this call's text is the same, it is not written
    again."""
    app = widget.app
    driver = app._driver
    if (not fastpath.ENABLED or app.is_headless or app.is_inline or driver is None or not app._running
            or app._closed):
        return False  # (inline: the screen is not the terminal's, its rows are elsewhere)
    found = boxes(widget, rows)
    if found is None:
        return False
    if not found:
        return True
    parts: list[str] = []
    for r, box in found:
        text = known(r, box) if known is not None else None
        if text is None:
            text = row_text(widget, r, box)
        else:  # (Textual's cache may hold the row as it was before: it renders it anew when it next composes it)
            widget._styles_cache.set_dirty(_row(widget, r))
        parts.append(text)
    head, tail = frame_ends(widget)
    text = head + "".join(parts) + tail
    if text == on_screen:
        return True
    # (written here when nothing handed to the writer thread before waits: ui.driver)
    write_now = getattr(driver, "write_now", None)
    if write_now is None or not write_now(text):
        driver.write(text)
        driver.flush()
    return True
