"""The source pane alone in a real terminal, for tests/ui/test_rows_now.py (run in tmux).

Keys: n moves the current line one down, p one up, N to the third row from the bottom of the view (not
scrolled); t shows a notification (bottom right, over the source pane's last rows), T one that goes
after a second; up and down move the cursor (the source pane's own keys); ctrl+l redraws
the screen as tuidbg does (every widget rendered anew). After each move it appends "LINE PAINTED_NOW AHEAD"
to the file named by argv[2]: whether the source pane wrote its rows to the terminal itself, and how
many of them were texts drawn ahead (panes/source_ahead.py). r appends a line to argv[2] + ".ready":
1 if the rows the next step may change are drawn ahead for the view as it is now, else 0 (the keys
before it were taken in first: a test's way to know they were, and when the rows are ready).

Usage: python rows_app.py SOURCE_FILE LOG_FILE
"""

from __future__ import annotations

import sys

from source_app import SourceApp
from textual.binding import Binding

from tuidbg.ui.app_source import redraw
from tuidbg.ui.panes.source import SourceView


class RowsApp(SourceApp):
    BINDINGS = [Binding("n", "down", "Down"), Binding("p", "up", "Up"), Binding("N", "bottom", "Bottom"), Binding("t", "toast", "Toast"), Binding("T", "toast(1)", "Short toast"),
                Binding("ctrl+l", "redraw", "Redraw"), Binding("r", "ready", "Ready?")]

    def __init__(self, source: str, log: str) -> None:
        super().__init__()
        self.source, self.log_path = source, log

    def on_mount(self) -> None:
        src = self.query_one(SourceView)
        src.show_file(self.source)
        src.set_pc(3)

    def _moved(self, line: int) -> None:
        src = self.query_one(SourceView)
        ahead, found = src.ahead.known, []

        def counted():  # (the rows the step took from those drawn ahead)
            known = ahead()
            return None if known is None else lambda r, box: found.append(known(r, box)) or found[-1]

        src.ahead.known = counted
        try:
            src.set_pc(line)
        finally:
            src.ahead.known = ahead
        with open(self.log_path, "a") as f:
            f.write(f"{line} {src.painted_now} {sum(t is not None for t in found)}\n")

    def action_down(self) -> None:
        self._moved((self.query_one(SourceView).pc_line or 0) + 1)

    def action_up(self) -> None:
        self._moved((self.query_one(SourceView).pc_line or 2) - 1)

    def action_bottom(self) -> None:
        src = self.query_one(SourceView)
        self._moved(src.scroll_offset.y + src.scrollable_content_region.height - 2)

    def action_redraw(self) -> None:
        redraw(self.screen)

    def action_ready(self) -> None:
        ahead = self.query_one(SourceView).ahead
        with open(self.log_path + ".ready", "a") as f:
            f.write(f"{int(not ahead.drawing and ahead.step_rows() is not None)}\n")

    def action_toast(self, timeout: float = 60) -> None:
        self.notify("a toast over the source rows", timeout=timeout)


if __name__ == "__main__":
    RowsApp(sys.argv[1], sys.argv[2]).run()
