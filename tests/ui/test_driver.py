"""tuidbg's terminal driver (ui.driver): the writer thread lets the app's thread write an update
itself only when everything handed to the thread before is written, so that the terminal gets the
bytes in the order they were made."""

from __future__ import annotations

import io
import threading
import time

from tuidbg.ui.driver import OrderedWriter


class Gated(io.StringIO):
    """A file whose writes wait for a gate (a terminal that is slow to take them)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def write(self, text: str) -> int:
        assert self.gate.wait(10)
        return super().write(text)


def test_the_app_writes_itself_only_when_the_thread_has_written_everything():
    f = Gated()
    writer = OrderedWriter(f)
    writer.start()
    try:
        writer.write("a")
        writer.write("b")
        assert writer.write_now("X") is False  # (a and b are still to be written: X would overtake them)
        f.gate.set()
        deadline = time.monotonic() + 10
        while not writer.write_now("c"):
            assert time.monotonic() < deadline, "the writer thread never caught up"
            time.sleep(0.01)
        writer.write("d")
    finally:
        f.gate.set()
        writer.stop()
    assert f.getvalue() == "abcd"


class Gone(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(5, "Input/output error")


def test_a_terminal_gone_is_no_error_in_the_apps_thread():
    writer = OrderedWriter(Gone())
    assert writer.write_now("x") is False  # (handed to the thread instead, which ends on it as Textual's does)
