"""A planned step's new line written to the terminal by the thread that reads gdb's output.

A step key the input thread writes to gdb (``ui.keyplan``) has gdb's output held until the step's
``*stopped`` record (``MIClient.write_reserved``, ``engine.gdb_output``). When that record names a
line of the source pane's view, the reader's thread writes the two rows a step changes (the old
line's, the new line's) itself, from the texts the pane drew ahead (``RowsAhead.step_rows``),
before the app's loop has heard of the stop: the loop then finds them on the screen
(``SourceView.show_stop_early``'s ``on_screen``) and does not write them again.

``make`` (the app's loop, when the plan is armed) takes what the rows are and where, as
``_on_stop_seen`` in ``app_source`` would show them then. ``on_stop`` (the reader's thread) writes
them only where that is what the loop would write for the stop: a native step's end
(``end-stepping-range``) in the thread the panes show, in the file the pane shows, on a line in view;
the terminal the size it was then; and nothing written to the terminal since the plan was made
(``OrderedWriter.written``: the screen is as it was when the texts were taken, and the write is
refused under the writer's lock otherwise). Anything else is left to the loop, as before.

**The line first.** Once the rows are written, the reader's thread waits STILL before gdb's output
goes on to the loop: on a 2-core machine the loop's work on the stop (~1 ms: the record, the state,
the panes' checks, the refresh's commands) otherwise takes the core the terminal needs to show the
line. Measured (bench/step_tmux.py --watch control, 60-80 steps, same runs): the line seen 3.8-4.2
ms after the key without the wait, 2.5-2.7 ms with 0.5-1 ms of it (cgdb: 3.0). The other panes show
the stop that much later (0.5 ms of the 20-24 ms they take).
"""

from __future__ import annotations

import os
import time
from typing import Any

from tuidbg.engine.mi import MIRecord
from tuidbg.engine.state import stop_seen
from tuidbg.ui.driver import OrderedWriter
from tuidbg.ui.rows_now import frame_ends

STILL = 0.0005  # seconds the terminal has to show the rows before the loop hears of the stop


class StopPaint:
    """The rows a planned step's stop may write, and what was written (``painted``)."""

    def __init__(self, writer: OrderedWriter, tty: int, path: str, thread: str | None, pc_row: int, plain: str,
                 rows: dict[int, tuple[int, str]], ends: tuple[str, str], size: tuple[int, int]) -> None:
        self.writer = writer
        self.tty = tty  # the terminal (its size)
        self.path = path
        self.thread = thread
        self.pc_row = pc_row
        self.plain = plain
        self.rows = rows
        self.ends = ends
        self.size = size
        self.written = writer.written  # the count of writes to the terminal when the texts were taken
        self.painted: tuple[int, int, str] | None = None  # (line, the count after, text) once written

    def text(self, line: int) -> str | None:
        """The terminal text that shows ``line`` as the current line (as ``rows_now.paint_rows`` writes it)."""
        got = self.rows.get(line)
        if got is None:
            return None
        row, text = got
        head, tail = self.ends
        return head + (self.plain + text if self.pc_row < row else text + self.plain) + tail

    def on_stop(self, rec: MIRecord) -> None:
        """The thread that reads gdb's output: the step's ``*stopped`` record, before the loop has it."""
        stop = stop_seen(rec)
        if (stop.reason != "end-stepping-range" or stop.thread_id != self.thread or stop.fullname != self.path
                or stop.line is None):
            return
        text = self.text(stop.line)
        if text is None:
            return
        try:
            size = os.get_terminal_size(self.tty)
        except (OSError, ValueError):
            return
        if (size.columns, size.lines) != self.size:
            return  # (resized since: the loop redraws the screen for its new size)
        if self.writer.write_now(text, self.written):
            self.painted = (stop.line, self.written + 1, text)
            time.sleep(STILL)

    def on_screen(self, line: int) -> str | None:
        """The app's loop, at the stop: what this wrote for ``line`` if it is still what the terminal
        shows there (nothing written since), else None."""
        painted = self.painted
        if painted is None or painted[0] != line or painted[1] != self.writer.written:
            return None
        return painted[2]


def rows_coming(app: Any) -> bool:
    """The source pane is still drawing ahead the rows ``make`` would take (``RowsAhead``)."""
    src = app._early_view()
    return src is not None and src.ahead.drawing


def make(app: Any) -> StopPaint | None:
    """The app's loop, arming a plan: the rows a step from the current line may write, where the stop's
    line would be shown from gdb's record (``_early_view``) and the view is drawn ahead as it is."""
    src = app._early_view()
    driver = app._driver
    writer = app.terminal_writer
    if src is None or not isinstance(writer, OrderedWriter) or app.is_headless or app.is_inline:
        return None
    got = src.ahead.step_rows()
    if got is None or src.path is None:
        return None
    pc_row, plain, rows = got
    try:
        size = os.get_terminal_size(driver.fileno)
    except (OSError, ValueError):
        return None
    return StopPaint(writer, driver.fileno, src.path, app._painted.selected_thread, pc_row, plain, rows,
                     frame_ends(src), (size.columns, size.lines))
