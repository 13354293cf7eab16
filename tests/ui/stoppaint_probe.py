"""tuidbg (``tuidbg.cli.main``, its arguments after LOG_FILE) with ui.stoppaint's three moments logged
to LOG_FILE, for tests/ui/test_stoppaint.py (run in tmux):

- ``armed LINE ROWS``: a plan for the step keys was made at the current line LINE with the rows of
  ROWS lines a step may write from gdb's output thread (0: none);
- ``thread LINE``: that thread wrote the rows for a step's stop at LINE (``-``: it wrote none);
- ``loop LINE FOUND``: the app's loop at the stop's record, and whether it found those rows on the
  screen;
- ``rows WRITES``: the source pane's rows of a new current line, and how many writes to the terminal
  that took (0: none, they were on the screen already).

Usage: python stoppaint_probe.py LOG_FILE TUIDBG_ARGS...
"""

from __future__ import annotations

import os
import sys

from tuidbg.cli import main
from tuidbg.engine import client
from tuidbg.ui import keyplan, stoppaint
from tuidbg.ui.panes import source

LOG = sys.argv.pop(1)


def log(text: str) -> None:
    fd = os.open(LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (text + "\n").encode())
    finally:
        os.close(fd)


arm, on_stop, on_screen = keyplan.arm, stoppaint.StopPaint.on_stop, stoppaint.StopPaint.on_screen
paint_rows = source.paint_rows


def logged_arm(app, tries: int = 0) -> None:
    arm(app, tries)
    plan = app.__dict__.get("_key_plan")
    if plan is not None:
        log(f"armed {app.state.frames[0].line} {len(plan.paint.rows) if plan.paint is not None else 0}")


def logged_on_stop(self, rec) -> None:
    on_stop(self, rec)
    log(f"thread {self.painted[0] if self.painted is not None else '-'}")


def logged_on_screen(self, line: int) -> str | None:
    found = on_screen(self, line)
    log(f"loop {line} {found is not None}")
    return found


def logged_paint_rows(widget, *args):
    writer = widget.app.terminal_writer
    before = writer.written
    painted = paint_rows(widget, *args)
    log(f"rows {writer.written - before}")
    return painted


client.HOLD_AT_MOST = 5.0  # (a step on a loaded machine still held: what is tested is the way, not the time)
keyplan.arm = logged_arm
source.paint_rows = logged_paint_rows
stoppaint.StopPaint.on_stop = logged_on_stop
stoppaint.StopPaint.on_screen = logged_on_screen
raise SystemExit(main())
