"""End to end through a real terminal: tmux runs ``tuidbg run`` at 80x24, keys go in with send-keys."""

from __future__ import annotations

import shutil
import sys

import pytest
from conftest import requires_gdb
from tmux_term import tmux  # noqa: F401 (fixture)

pytestmark = [requires_gdb, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed on this machine")]


def test_run_stop_next_quit_at_80x24(tmux, threads_prog):
    tmux.start([sys.executable, "-m", "tuidbg", "run", "--nx", "-ex", "break middle", "--", str(threads_prog)])
    screen = tmux.wait_for("stopped: breakpoint")
    assert "middle" in screen
    assert "threads.c" in screen
    lines = screen.splitlines()
    assert len(lines) <= 24 and max(len(l) for l in lines) <= 80
    tmux.keys("n")
    tmux.wait_for("stopped: step finished")
    tmux.keys("q")
    tmux.wait_for("Quit tuidbg?")
    tmux.keys("Enter")  # run mode: kill is the default
    screen = tmux.wait_for("TUIDBG_EXIT=0")
    assert "Traceback" not in screen


def test_program_escape_sequences_do_not_reach_the_terminal(tmux, threads_prog):
    before_title = None
    tmux.start([sys.executable, "-m", "tuidbg", "run", "--nx", "--no-stop-at-entry", "--", str(threads_prog), "escapes"],
               width=120, height=30)
    tmux.wait_for("exited normally")
    before_title = tmux.title()
    tmux.keys("9")
    # the output shown, and the focus on the program's input line: Textual moves the focus after the key's
    # action, once the app gets to it (the screen may be painted first); the keys line then drops q, which
    # types into the line
    screen = tmux.wait_until(lambda sc: "after escapes" in sc and "  q Quit" not in sc,
                             "the output with the focus on its input line never appeared")
    assert "\\x1b[2J" in screen and "HACKED TITLE" in screen
    assert "HACKED" not in tmux.title()
    assert before_title == tmux.title()
    assert "Source" in screen or "threads.c" in screen or "Console" in screen  # the panes are still drawn
    tmux.keys("Escape")  # leave the program's input line (it took the focus with 9)
    # a key before the app took the Escape in would read as alt+key: wait until it did (the keys line
    # shows the source pane's keys, q among them)
    tmux.wait_for("  q Quit")
    tmux.keys("q")
    tmux.wait_for("TUIDBG_EXIT=0")
