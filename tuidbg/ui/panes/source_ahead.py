"""The source view's rows drawn ahead of a step (``SourceView.ahead``).

A row rendered after 50 ms of idle takes several times its warm time (~0.4 ms against 74 µs: caches
gone cold), and a step renders two: the old line's row and the new one's. So once a stop is shown,
``prepare`` draws (``rows_now.row_text``, Textual's own render) the rows the next step may change:
every row in view as the current line (the cursor's line too, as a step makes it), and the current
line's row as a plain one. A step's ``rows_now.paint_rows`` then writes those texts (``known``)
instead of rendering: bench/RESULTS.md, "Rows drawn ahead".

Each text is kept with what it was drawn from: the view as a whole (``_key``: its file, size,
horizontal scroll, focus, search, theme, whether the current line is the newest frame's), and the
row's own (its place on the screen, its line's code segments, the same object while the text and its
highlighting stay, and its breakpoint mark). A text is used only while all of that is unchanged;
otherwise the row is rendered as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from textual.geometry import Region

from tuidbg.ui import fastpath
from tuidbg.ui.rows_now import boxes, row_text

# The rows are drawn this long after the current line was shown (after the stop's own updates), and
# again as long later while the screen has an update of its own pending (a layout, a scroll), a few times.
AHEAD_AFTER = 0.03
AHEAD_TRIES = 10
# Rows drawn at a time, nearest the current line first; the loop's other work (a key) has its turn
# between (a view of 60 rows after a scroll is ~25 ms of rendering, cold).
AHEAD_SLICE = 6


class RowsAhead:
    """Rows of one ``SourceView`` drawn ahead: (line, role) -> (code segments, mark, box, text)."""

    def __init__(self, view: Any) -> None:
        self.view = view  # a SourceView (not imported: it imports this module)
        self.rows: dict[tuple, tuple] = {}
        self.drawn_for: tuple | None = None  # the view's _key when the rows were drawn
        self._timer: asyncio.TimerHandle | None = None
        self._tries = 0

    def _key(self) -> tuple:
        """What every row's look depends on besides its own line, current line and cursor."""
        v = self.view
        return (v.path, v._generation, v.scroll_offset.x, v.size, v.has_focus, v.search, v.pc_is_top,
                v._style_generation)

    def _fits(self, line: int, role: str, box: Region) -> tuple | None:
        got = self.rows.get((line, role))
        v = self.view
        if got is None or got[2] != box or got[0] is not v._cache.get(line - 1) or got[1] != v.marks.get(line):
            return None
        return got

    def known(self) -> Callable[[int, Region], str | None] | None:
        """For ``paint_rows``: a row's text drawn ahead, where it is still what the row shows."""
        if not self.rows or self.drawn_for != self._key():
            return None
        v = self.view
        top, pc, cursor = v.scroll_offset.y, v.pc_line, v.cursor_line

        def known(r: int, box: Region) -> str | None:
            line = top + r + 1
            role = "pc" if line == pc == cursor else "plain" if line not in (pc, cursor) else ""
            got = self._fits(line, role, box)
            return None if got is None else got[3]

        return known

    @property
    def drawing(self) -> bool:
        """Rows are yet to be drawn (``prepare`` is scheduled)."""
        return self._timer is not None

    def step_rows(self) -> tuple[int, str, dict[int, tuple[int, str]]] | None:
        """The rows a step from the current line may write, as drawn ahead (``ui.stoppaint``): the
        current line's row (0 = the view's top) and its text as a plain row, and each other line in
        view drawn as the current line, with its row; None unless the view is drawn ahead as it is."""
        v = self.view
        pc = v.pc_line
        if not self.rows or self.drawn_for != self._key() or pc is None or v.cursor_line != pc:
            return None
        found = boxes(v, range(v.scrollable_content_region.height))
        if not found:
            return None
        top = v.scroll_offset.y
        plain: tuple[int, str] | None = None
        rows: dict[int, tuple[int, str]] = {}
        for r, box in found:
            line = top + r + 1
            got = self._fits(line, "plain" if line == pc else "pc", box)
            if got is None:
                continue
            if line == pc:
                plain = (r, got[3])
            else:
                rows[line] = (r, got[3])
        return None if plain is None else (plain[0], plain[1], rows)

    def schedule(self, shown: bool) -> None:
        """A current line was set (``shown``: one is shown): the rows are drawn AHEAD_AFTER later."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._tries = 0
        if shown and fastpath.ENABLED and not self.view.app.is_headless:  # (headless: no terminal to write rows to)
            self._timer = asyncio.get_running_loop().call_later(AHEAD_AFTER, self.prepare)

    def prepare(self, at_most: int = AHEAD_SLICE) -> None:
        """Draw the rows the next step may change that are not drawn yet for the view as it is, ``at_most``
        at a time (the rest in the loop's next turn)."""
        self._timer = None
        v = self.view
        if not v.lines or v.pc_line is None or not v.is_attached:
            return
        found = boxes(v, range(v.scrollable_content_region.height))
        if found is None and self._tries < AHEAD_TRIES and not v.app.is_headless:
            self._tries += 1  # (Textual has the view's rows to compose first: later)
            self._timer = asyncio.get_running_loop().call_later(AHEAD_AFTER, self.prepare)
            return
        if not found:
            return
        key = self._key()
        if key != self.drawn_for:
            self.rows, self.drawn_for = {}, key
        top, pc = v.scroll_offset.y, v.pc_line
        drawn = 0
        for r, box in sorted(found, key=lambda found: abs(top + found[0] + 1 - pc)):
            line = top + r + 1
            if line > len(v.lines):
                continue
            for role, as_if in (("pc", (line, line)), ("plain", (None, None))):
                if (role == "plain" and line != pc) or self._fits(line, role, box) is not None:
                    continue
                if drawn == at_most:
                    self._timer = asyncio.get_running_loop().call_later(0, self.prepare)
                    return
                drawn += 1
                v._as_if = as_if
                try:
                    text = row_text(v, r, box, keep=False)
                finally:
                    v._as_if = None
                self.rows[(line, role)] = (v._cache.get(line - 1), v.marks.get(line), box, text)
