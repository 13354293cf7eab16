"""A line-API log for the console and the program's output.

Lines are kept in a bounded deque (old lines drop off), rendered on demand one
screen row at a time, so 100,000 lines of output cost only the strings. Each
line has a style name; text is made visible (control characters spelled out)
before it is stored, so it can never act on the terminal or as markup. The last
line may be "open" (output without a newline yet) and is updated in place.
"""

from __future__ import annotations

import collections
from typing import Iterable

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
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
        overflow-x: auto;
    }
    TextLog > .textlog--log { color: $text-muted; }
    TextLog > .textlog--error { color: $text-error; }
    TextLog > .textlog--echo { color: $text-accent; text-style: bold; }
    TextLog > .textlog--note { color: $text-warning; text-style: italic; }
    """

    def __init__(self, max_lines: int = 20000, **kw) -> None:
        super().__init__(**kw)
        self.max_lines = max_lines
        self._lines: collections.deque[tuple[str, str]] = collections.deque(maxlen=max_lines)
        self._open: tuple[str, str] | None = None
        self._width = 0
        self.dropped = 0  # lines that fell off the top
        self.total_lines = 0

    @property
    def line_count(self) -> int:
        return len(self._lines) + (1 if self._open is not None else 0)

    def lines(self) -> list[str]:
        out = [t for t, _ in self._lines]
        if self._open is not None:
            out.append(self._open[0])
        return out

    def _at_bottom(self) -> bool:
        return self.scroll_offset.y >= self.max_scroll_y - 1

    def write_lines(self, lines: Iterable[str], style: str = "", open_line: str | None = None) -> None:
        """Append complete lines; ``open_line`` (not None) replaces the open last line."""
        follow = self._at_bottom()
        before = len(self._lines)
        n = 0
        for line in lines:
            text = visible(line)
            self._lines.append((text, style))
            self._width = max(self._width, cell_len(text))
            n += 1
        self.total_lines += n
        if before + n > self.max_lines:
            self.dropped += before + n - self.max_lines
        if open_line is not None:
            self._open = (visible(open_line), style) if open_line else None
            if self._open:
                self._width = max(self._width, cell_len(self._open[0]))
        elif n:
            self._open = None
        self._update(follow)

    def write(self, text: str, style: str = "") -> None:
        self.write_lines(text.split("\n") if text else [], style)

    def clear(self) -> None:
        self._lines.clear()
        self._open = None
        self._width = 0
        self._update(True)

    def _update(self, follow: bool) -> None:
        self.virtual_size = Size(self._width + 1, self.line_count)
        if follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if index >= self.line_count:
            return Strip.blank(width, base)
        if index < len(self._lines):
            text, style_name = self._lines[index]
        else:
            assert self._open is not None
            text, style_name = self._open
        style = base
        if style_name:
            style = base + self.get_component_rich_style(f"textlog--{style_name}", partial=True)
        strip = Strip([Segment(text, style)], cell_len(text))
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.refresh()
