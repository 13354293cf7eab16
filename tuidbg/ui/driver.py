"""tuidbg's terminal driver: Textual's own for the terminal, with two changes for a step's latency
(issue 11, bench/step_tmux.py --watch control).

- **Input.** Textual's driver hands the app each message from its input thread as a coroutine run by
  a task of its own. Here it is one call on the app's loop (``take_input``, given by ``ui.fastkeys``),
  ~0.15 ms sooner a key.
- **A step key.** Each read of the terminal goes first to the app's ``take_input_bytes``
  (``ui.keyplan.take``): a step key the app has planned for is written to gdb from this thread, and
  does not go on to the parser. The input loop is Textual's own (``LinuxDriver.run_input_thread``)
  with that one call added.
- **Output.** Textual writes every screen update from a writer thread, which waits for the GIL while
  the app's thread goes on (a step's line: 0.2-0.5 ms, more when gdb answers the stop's refresh on
  the other core). ``OrderedWriter`` is that thread, and also lets the app's thread write a small
  update itself (``write_now``, used by ``ui.rows_now``) when everything handed to the thread before
  is written and the terminal has read it all (a write that could wait stays the thread's): the
  terminal gets the bytes in the order the app made them either way. It counts every piece of output
  (``written``), so that another thread may write rows only if nothing was written since it took them
  (``write_now``'s ``after``: ``ui.stoppaint``, from gdb's output thread).
"""

from __future__ import annotations

import fcntl
import io
import os
import select
import selectors
import struct
import termios
import threading
from codecs import getincrementaldecoder
from typing import Callable

from textual._loop import loop_last
from textual._parser import ParseError
from textual._xterm_parser import XTermParser

from textual.app import App
from textual.driver import Driver
from textual.drivers._writer_thread import WriterThread
from textual.message import Message


NOW_AT_MOST = 16384  # characters write_now takes (a step's rows: 1-2 KB)


def _terminal_behind(file) -> bool:
    """The terminal has not read all that was written to it (a slow link), or has no room for more
    now: a write could wait, and the app's thread (or gdb's output thread, ui.stoppaint) must not.
    (TIOCOUTQ: a serial line's or a socket's; a pseudo-terminal's is 0: its room is what tells.)"""
    try:
        fd = file.fileno()
        return (struct.unpack("i", fcntl.ioctl(fd, termios.TIOCOUTQ, b"\0" * 4))[0] > 0
                or not select.select([], [fd], [], 0)[1])
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False  # (not a terminal: a file or a pipe of a test)


class OrderedWriter(WriterThread):
    """Textual's writer thread that counts what it was given and has not written yet."""

    def __init__(self, file) -> None:
        super().__init__(file)
        self._lock = threading.Lock()
        self._outstanding = 0  # handed to the thread (write), not written yet
        self.written = 0  # pieces handed to the thread or written by write_now: all that changes the screen
        self._stopping = False

    @property
    def outstanding(self) -> int:
        """Pieces handed to the thread and not written yet."""
        return self._outstanding

    def write(self, text: str) -> None:
        with self._lock:
            self._outstanding += 1
            self.written += 1
        super().write(text)

    def write_now(self, text: str, after: int | None = None) -> bool:
        """``text`` written and flushed by the calling thread, when the thread has nothing left to
        write (else False, nothing written: the caller hands it over with ``write``). ``after``: only
        if ``written`` is still that (nothing else was written or handed over since)."""
        with self._lock:
            if (self._outstanding or self._stopping or len(text) > NOW_AT_MOST
                    or (after is not None and after != self.written) or _terminal_behind(self._file)):
                return False
            self.written += 1
            try:
                self._file.write(text)
                self._file.flush()
            except OSError:
                return False  # (a terminal gone: the thread meets it too, where Textual expects it)
            return True

    def stop(self) -> None:
        with self._lock:
            self._stopping = True  # (the app gives the terminal back: nobody else writes to it now)
        super().stop()

    def run(self) -> None:
        # (Textual's loop, the count kept: an item is written before it stops being outstanding)
        write, flush, get, qsize = self._file.write, self._file.flush, self._queue.get, self._queue.qsize
        while True:
            text = get()
            if text is None:
                break
            write(text)
            if qsize() == 0:
                flush()
            with self._lock:
                self._outstanding -= 1
        flush()


def driver_class(base: type[Driver], take_input: Callable[[App, Message], None]) -> type[Driver]:
    """``base`` (Textual's driver for this terminal) with the input handed over by ``take_input`` on
    the app's loop, and an ``OrderedWriter`` where ``base`` has Textual's writer thread."""

    class TuidbgDriver(base):  # type: ignore[misc, valid-type]
        _sent = 0  # messages handed to the app's loop (by the input thread, or a resize by the loop)
        _taken = 0  # ... and taken in there
        _count_lock = threading.Lock()

        def send_message(self, message: Message) -> None:
            with self._count_lock:
                self._sent += 1
            self._loop.call_soon_threadsafe(self._take, message)

        def _take(self, message: Message) -> None:
            self._taken += 1
            take_input(self._app, message)

        @property
        def input_in_flight(self) -> bool:
            """A message handed to the app's loop is not taken in yet (a key that a later one must not
            overtake: ui.keyplan)."""
            return self._sent != self._taken

        _swapping: threading.Lock | None = None

        if hasattr(base, "run_input_thread"):
            def run_input_thread(self) -> None:
                # (Textual's LinuxDriver.run_input_thread, each read offered to the app first)
                take = getattr(self._app, "take_input_bytes", None)
                selector = selectors.SelectSelector()
                selector.register(self.fileno, selectors.EVENT_READ)
                fileno = self.fileno
                parser = XTermParser(self._debug)
                feed, tick = parser.feed, parser.tick
                decoder = getincrementaldecoder("utf-8")()
                decode = decoder.decode
                pasting = False  # (inside a bracketed paste: its bytes are text, not keys)
                tail = ""  # (the last characters read: a paste's marker may come in two reads)

                def process_selector_events(selector_events, final: bool = False) -> None:
                    nonlocal pasting, tail
                    for last, (_key, mask) in loop_last(selector_events):
                        if mask & selectors.EVENT_READ:
                            data = os.read(fileno, 1024 * 4)
                            # (a read of its own, the parser and the decoder waiting for nothing: in the
                            # middle of an escape sequence or a character, a key's bytes are part of it)
                            if (data and take is not None and parser._timeout_time is None and not pasting
                                    and not decoder.getstate()[0] and take(data)):
                                continue
                            unicode_data = decode(data, final=final and last)
                            if not unicode_data:
                                break
                            seen = tail + unicode_data
                            start, end = seen.rfind("\x1b[200~"), seen.rfind("\x1b[201~")
                            if start >= 0 or end >= 0:
                                pasting = start > end
                            tail = seen[-5:]
                            for event in feed(unicode_data):
                                self.process_message(event)
                    for event in tick():
                        self.process_message(event)

                try:
                    while not self.exit_event.is_set():
                        process_selector_events(selector.select(0.1))
                    selector.unregister(self.fileno)
                    process_selector_events(selector.select(0.1), final=True)
                finally:
                    selector.close()
                    try:
                        for _event in feed(""):
                            pass
                    except (EOFError, ParseError):
                        pass

        def write(self, data: str) -> None:
            # (the input thread writes too, answering the terminal's replies: not while the writer is
            # being swapped, start_application_mode)
            if self._swapping is None:
                super().write(data)
                return
            with self._swapping:
                super().write(data)

        def start_application_mode(self) -> None:
            self._swapping = threading.Lock()
            super().start_application_mode()
            with self._swapping:
                writer = getattr(self, "_writer_thread", None)
                if type(writer) is WriterThread:
                    writer.stop()  # (it writes what it has, then ends)
                    self._writer_thread = OrderedWriter(self._file)
                    self._writer_thread.start()

        def write_now(self, data: str) -> bool:
            """``data`` written by the calling thread, when nothing written before waits (``OrderedWriter``)."""
            writer = getattr(self, "_writer_thread", None)
            return isinstance(writer, OrderedWriter) and writer.write_now(data)

    TuidbgDriver.__name__ = TuidbgDriver.__qualname__ = f"Tuidbg{base.__name__}"
    return TuidbgDriver
