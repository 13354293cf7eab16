"""A line-API log for the console and the program's output.

Lines are kept in a bounded list (old lines drop off), rendered on demand one
screen row at a time, so 100,000 lines of output cost only the strings. A line
longer than the log is wide wraps onto the rows below it, as in a terminal:
the log knows how many rows each line takes at the present width (a running
sum, counted again when the width changes) and finds a row's line by bisection.
Each line has a style name; text is made visible (control characters spelled
out) before it is stored, so it can never act on the terminal or as markup. The
last line may be "open" (output without a newline yet) and is updated in place.

The log follows its end while the user has not scrolled away from it: a write,
a resize (another pane maximized and restored, the terminal resized) or a new
width keeps the last line in view; once scrolled up, the rows in view stay put
until the user scrolls back to the end.
"""

from __future__ import annotations

import bisect
from typing import Iterable

from rich.cells import cell_len
from rich.segment import Segment
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tuidbg.ui.text import visible


class TextLog(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {
        "textlog--log",
        "textlog--error",
        "textlog--echo",
        "textlog--note",
    }
    DEFAULT_CSS = """
    TextLog {
        background: $surface;
        color: $foreground;
        overflow-y: scroll;
        overflow-x: hidden;
    }
    TextLog > .textlog--log { color: $text-muted; }
    TextLog > .textlog--error { color: $text-error; }
    TextLog > .textlog--echo { color: $text-accent; text-style: bold; }
    TextLog > .textlog--note { color: $text-warning; text-style: italic; }
    """

    def __init__(self, max_lines: int = 20000, **kw) -> None:
        super().__init__(**kw)
        self.max_lines = max_lines
        # (text, style, cells) of each line kept, from self._head on (the ones before it fell off)
        self._lines: list[tuple[str, str, int]] = []
        self._head = 0
        self._ends: list[int] = []  # rows taken by lines[0..i], at self._wrap_width
        self._open: tuple[str, str, int] | None = None
        self._wrap_width = 0  # the width rows were counted at (0: not laid out yet, a row a line)
        self.following = True  # the end is in view: new lines keep it so
        self.dropped = 0  # lines that fell off the top
        self.total_lines = 0

    # -- lines ---------------------------------------------------------------------------------

    @property
    def line_count(self) -> int:
        return len(self._lines) - self._head + (1 if self._open is not None else 0)

    def lines(self, without: str | None = None) -> list[str]:
        """The lines kept, the open one last (``without``: those written with that style left out)."""
        out = [t for t, style, _ in self._lines[self._head:] if without is None or style != without]
        if self._open is not None and (without is None or self._open[1] != without):
            out.append(self._open[0])
        return out

    def tail(self, n: int) -> list[tuple[str, str]]:
        """(text, style) of the last ``n`` complete lines."""
        return [(t, s) for t, s, _ in self._lines[max(self._head, len(self._lines) - n):]]

    def restyle_tail(self, n: int, style: str) -> None:
        """Give the last ``n`` complete lines another style (an error gdb printed as a warning first)."""
        for i in range(max(self._head, len(self._lines) - n), len(self._lines)):
            text, _, cells = self._lines[i]
            self._lines[i] = (text, style, cells)
        self.refresh()

    def write_lines(self, lines: Iterable[str], style: str = "", open_line: str | None = None) -> None:
        """Append complete lines; ``open_line`` (not None) replaces the open last line."""
        n = 0
        for line in lines:
            text = visible(line)
            cells = cell_len(text)
            self._lines.append((text, style, cells))
            self._ends.append((self._ends[-1] if self._ends else 0) + self._rows(cells))
            n += 1
        self.total_lines += n
        over = len(self._lines) - self._head - self.max_lines
        if over > 0:
            self.dropped += over
            self._head += over
            if self._head > max(1024, self.max_lines // 2):
                self._compact()
        if open_line is not None:
            if open_line:
                text = visible(open_line)
                self._open = (text, style, cell_len(text))
            else:
                self._open = None
        elif n:
            self._open = None
        self._update()

    def write(self, text: str, style: str = "") -> None:
        self.write_lines(text.split("\n") if text else [], style)

    def clear(self) -> None:
        self._lines.clear()
        self._ends.clear()
        self._head = 0
        self._open = None
        self.following = True
        self._update()

    # -- rows ----------------------------------------------------------------------------------

    def _rows(self, cells: int) -> int:
        w = self._wrap_width
        return max(1, -(-cells // w)) if w > 0 else 1

    def _base(self) -> int:
        """Rows of the lines that fell off (before self._head)."""
        return self._ends[self._head - 1] if self._head else 0

    def _kept_rows(self) -> int:
        return (self._ends[-1] if self._ends else 0) - self._base()

    @property
    def row_count(self) -> int:
        """Screen rows the lines take at the present width."""
        return self._kept_rows() + (self._rows(self._open[2]) if self._open is not None else 0)

    def _compact(self) -> None:
        base = self._base()
        del self._lines[:self._head]
        self._ends = [e - base for e in self._ends[self._head:]]
        self._head = 0

    def _relayout(self, width: int) -> None:
        """Count each line's rows again at a new width; the line at the top stays there (or the end
        stays in view)."""
        anchor = None if self.following else self._line_at(int(self.scroll_offset.y))
        self._compact()
        self._wrap_width = width
        total = 0
        ends = []
        for _, _, cells in self._lines:
            total += self._rows(cells)
            ends.append(total)
        self._ends = ends
        self._update()
        if anchor is not None and anchor[0] < len(self._lines):
            i, sub = anchor
            start = self._ends[i - 1] if i else 0
            self.scroll_to(y=start + min(sub, self._rows(self._lines[i][2]) - 1), animate=False, immediate=True)

    def _line_at(self, row: int) -> tuple[int, int]:
        """(index into self._lines, row within it) of the kept row ``row``; the open line is len(self._lines)."""
        absolute = row + self._base()
        i = bisect.bisect_right(self._ends, absolute, self._head)
        if i >= len(self._lines):
            return len(self._lines), row - self._kept_rows()
        return i, absolute - (self._ends[i - 1] if i else 0)

    def _width_now(self) -> int:
        return max(1, self.scrollable_content_region.width)

    def _update(self) -> None:
        self.virtual_size = Size(self._width_now(), self.row_count)
        if self.following:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.refresh()

    # -- following -----------------------------------------------------------------------------

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        # (a scroll by the user, or the clamp of a smaller log: at the end or not, from now on)
        self.following = new_value >= self.max_scroll_y

    def on_resize(self) -> None:
        width = self.scrollable_content_region.width
        if width > 0 and width != self._wrap_width:
            self._relayout(width)
        elif self.following:
            self._update()  # (taller now: the end goes back to the bottom row)

    # -- rendering -----------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_y = int(self.scroll_offset.y)
        width = self.size.width
        base = self.rich_style
        row = scroll_y + y
        if row >= self.row_count:
            return Strip.blank(width, base)
        i, sub = self._line_at(row)
        if i < len(self._lines):
            text, style_name, cells = self._lines[i]
        else:
            assert self._open is not None
            text, style_name, cells = self._open
        style = base
        if style_name:
            style = base + self.get_component_rich_style(f"textlog--{style_name}", partial=True)
        strip = Strip([Segment(text, style)], cells)
        step = self._wrap_width or width  # (the width without the scroll bar, which size.width counts)
        return strip.crop_extend(sub * step, sub * step + step, base).extend_cell_length(width, base)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.refresh()
