"""A planned step's new line written to the terminal by the thread that reads gdb's output
(ui.stoppaint): in a real terminal (tmux), tuidbg's rows for the step's stop come from that thread,
the app's loop finds them on the screen and does not write them again, and the screen is the one
Textual draws; and the thread writes only where that is what the loop would write (a real writer on
a pseudo-terminal, gdb 13's ``*stopped`` records)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, line_of
from test_rows_now import _repainted_by_textual, _settled
from tmux_term import tmux  # noqa: F401 (fixture)

from tuidbg.engine import mi
from tuidbg.ui.driver import OrderedWriter
from tuidbg.ui.stoppaint import StopPaint

PROBE = Path(__file__).with_name("stoppaint_probe.py")
SRC = PROGRAMS / "threads.c"
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed on this machine")


def _wait_log(path: Path, found, what: str, timeout: float = 30.0) -> list[str]:
    deadline = time.monotonic() + timeout
    lines: list[str] = []
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if found(lines):
            return lines
        time.sleep(0.05)
    raise AssertionError(f"never logged: {what}; the log: {lines}")


@needs_tmux
@requires_gdb
def test_a_planned_steps_rows_come_from_gdbs_output_thread_and_are_not_written_again(tmux, tmp_path, threads_prog):
    log = tmp_path / "paint.log"
    tmux.start([sys.executable, str(PROBE), str(log), "run", "--nx", "-ex", "break middle", "--", str(threads_prog)])
    tmux.wait_for("stopped: breakpoint")
    call, after = line_of(SRC, "middle_call"), line_of(SRC, "middle_after")
    start = 0
    # A loop busy when the step is written (a loaded machine) reads the step's stop itself and lends gdb's
    # output to no thread: the program is then run again (R) to the same breakpoint, and the step taken again,
    # until the thread got the stop.
    for _ in range(6):
        _wait_log(log, lambda lines: any(l.startswith(f"armed {call} ") and l != f"armed {call} 0"
                                         for l in lines[start:]), "a plan with the rows drawn ahead")
        start = len(log.read_text().splitlines())
        tmux.keys("n")
        lines = _wait_log(log, lambda lines: any(l == f"thread {after}" or l.startswith(f"armed {after} ")
                                                for l in lines[start:]), "the step's stop")[start:]
        if f"thread {after}" in lines:
            break
        start = len(log.read_text().splitlines())
        tmux.keys("R")
    else:
        raise AssertionError(f"gdb's output was never lent for the step in 6 runs; the log: {log.read_text()}")
    lines = _wait_log(log, lambda lines: f"loop {after} True" in lines[start:], "the loop at the stop")[start:]
    # the loop's own set_pc for the stop wrote nothing: the rows were there
    assert lines[lines.index(f"loop {after} True") + 1] == "rows 0"
    tmux.wait_for("stopped: step finished")
    stepped = _settled(tmux)
    assert f"{after}▶" in stepped
    assert _repainted_by_textual(tmux, None) == stepped  # (the thread's rows are Textual's own)


# -- where the thread writes ---------------------------------------------------------------------


def _stopped(reason: str = "end-stepping-range", line: int = 12, fullname: str = "/src/prog.c", thread: str = "1"):
    """A ``*stopped`` record as gdb 13 writes it for a step."""
    return mi.parse_line(
        f'*stopped,reason="{reason}",frame={{addr="0x0000555555555189",func="middle",args=[{{name="v",value="3"}}],'
        f'file="prog.c",fullname="{fullname}",line="{line}",arch="i386:x86-64"}},thread-id="{thread}",'
        'stopped-threads="all",core="1"')


@pytest.fixture
def terminal():
    """A real OrderedWriter on a pseudo-terminal: (the terminal's side, the writer)."""
    master, slave = os.openpty()
    os.set_blocking(master, False)
    file = os.fdopen(slave, "w", encoding="utf-8")
    writer = OrderedWriter(file)
    writer.start()
    yield master, writer
    writer.stop()
    file.close()
    os.close(master)


def _read(master: int) -> bytes:
    try:
        return os.read(master, 65536)
    except BlockingIOError:
        return b""


def _written_by_the_loop(master: int, writer: OrderedWriter, text: str) -> None:
    """``text`` handed to the writer thread (as Textual's updates are), and read by the terminal."""
    writer.write(text)
    deadline = time.monotonic() + 10
    got = b""
    while got != text.encode() or writer.outstanding:
        assert time.monotonic() < deadline, got
        got += _read(master)
        time.sleep(0.01)


def _paint(writer: OrderedWriter, size: tuple[int, int] | None = None) -> StopPaint:
    tty = writer.fileno()
    now = os.get_terminal_size(tty)
    return StopPaint(writer, tty, "/src/prog.c", "1", 3, "<plain 10>", {12: (5, "<pc 12>"), 8: (1, "<pc 8>")},
                     ("[", "]"), size or (now.columns, now.lines))


def test_the_thread_writes_the_rows_of_its_steps_stop(terminal):
    master, writer = terminal
    paint = _paint(writer)
    paint.on_stop(_stopped(line=12))
    assert _read(master) == b"[<plain 10><pc 12>]"  # (the rows in the order of the screen's rows)
    assert paint.on_screen(12) == "[<plain 10><pc 12>]" and paint.on_screen(8) is None
    _written_by_the_loop(master, writer, "an update of the loop's")
    assert paint.on_screen(12) is None  # (written over since: the loop writes the rows itself)

    paint = _paint(writer)
    paint.on_stop(_stopped(line=8))
    assert paint.painted is not None and paint.painted[2] == "[<pc 8><plain 10>]"


@pytest.mark.parametrize("rec", [_stopped(reason="breakpoint-hit"), _stopped(thread="2"),
                                 _stopped(fullname="/src/other.c"), _stopped(line=40)],
                         ids=["another-reason", "another-thread", "another-file", "a-line-not-in-view"])
def test_the_thread_leaves_other_stops_to_the_loop(terminal, rec):
    master, writer = terminal
    paint = _paint(writer)
    paint.on_stop(rec)
    assert paint.painted is None and writer.written == paint.written
    assert paint.on_screen(12) is None


def test_nothing_is_written_over_a_screen_that_changed_or_a_resized_terminal(terminal):
    master, writer = terminal
    paint = _paint(writer)
    _written_by_the_loop(master, writer, "x")  # (after the plan was made)
    paint.on_stop(_stopped())
    assert paint.painted is None
    resized = _paint(writer, size=(1, 1))
    resized.on_stop(_stopped())
    assert resized.painted is None and writer.written == resized.written
