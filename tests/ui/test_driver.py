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


class FakeApp:
    """What the driver's input loop asks of the app: each read first (``take_input_bytes``)."""

    def __init__(self, takes: bytes) -> None:
        self.takes = takes
        self.offered: list[bytes] = []

    def take_input_bytes(self, data: bytes) -> bool:
        self.offered.append(data)
        return data == self.takes


async def test_the_input_thread_offers_the_app_a_read_only_between_keys(monkeypatch):
    """A read goes to ``take_input_bytes`` first (ui.keyplan) only when the parser and the decoder wait for
    nothing: never a byte in the middle of an escape sequence, a bracketed paste or a character.
    What the app does not take is parsed as Textual's driver does."""
    import asyncio
    import fcntl
    import os
    import termios

    from textual import _parser, events
    from textual.drivers.linux_driver import LinuxDriver

    from tuidbg.ui.driver import driver_class

    # The parser's clock, moved on by the test: a lone escape is a key of its own once no byte came for
    # ESCAPE_DELAY (100 ms) by it, however long a loaded machine takes between two writes below.
    clock = [0.0]
    monkeypatch.setattr(_parser, "get_time", lambda: clock[0])
    messages: list = []
    app = FakeApp(takes=b"n")
    cls = driver_class(LinuxDriver, lambda _app, message: messages.append(message))
    driver = cls(app)  # type: ignore[arg-type]
    r, w = os.pipe()
    driver.fileno = r
    thread = threading.Thread(target=driver.run_input_thread, daemon=True)
    thread.start()

    def unread() -> int:
        return int.from_bytes(fcntl.ioctl(r, termios.FIONREAD, b"\0\0\0\0"), "little")

    def keys() -> int:
        return sum(isinstance(m, events.Key) for m in messages)

    async def typed(data: bytes, until=lambda: True) -> None:
        """``data`` written and read (a read of its own: what comes next is read after it was handled),
        and ``until()`` holds."""
        os.write(w, data)
        deadline = time.monotonic() + 30
        while unread() or not until():
            assert time.monotonic() < deadline, (data, app.offered, messages)
            await asyncio.sleep(0.01)

    try:
        await typed(b"n", lambda: len(app.offered) == 1)  # taken: no key parsed
        assert app.offered == [b"n"]
        await typed(b"x", lambda: keys() == 1)  # offered, not taken: parsed
        assert app.offered == [b"n", b"x"] and messages[-1].key == "x"
        await typed(b"\x1b[200~", lambda: len(app.offered) == 3)  # a paste begins: its bytes are not keys
        await typed(b"n")
        await typed(b"\x1b[201~", lambda: any(isinstance(m, events.Paste) for m in messages))
        assert app.offered == [b"n", b"x", b"\x1b[200~"]  # (the paste's own start, between keys)
        assert any(isinstance(m, events.Paste) and m.text == "n" for m in messages), messages
        await typed(b"\xc3", lambda: len(app.offered) == 4)  # the first byte of a character
        await typed(b"\xa9", lambda: keys() == 2)  # ... and its last: not offered alone
        assert messages[-1].key == "é" or messages[-1].character == "é", messages[-1]
        os.write(w, b"\x1b")  # an escape sequence begun: the parser waits for its next byte
        deadline = time.monotonic() + 10
        while app.offered[-1:] != [b"\x1b"]:  # (read on its own, before the n)
            assert time.monotonic() < deadline, app.offered
            await asyncio.sleep(0.001)
        await typed(b"n")  # (read: the parser has it before it looks at its clock again)
        clock[0] += 1.0  # ... and nothing came after it: ESC n is alt+n
        await typed(b"", lambda: keys() == 3)
        assert app.offered[3:] == [b"\xc3", b"\x1b"], app.offered  # (the bytes that begin them, between keys)
        assert messages[-1].key == "alt+n", messages[-1]
    finally:
        driver.exit_event.set()
        os.write(w, b" ")
        thread.join(5)
        os.close(r)
        os.close(w)
