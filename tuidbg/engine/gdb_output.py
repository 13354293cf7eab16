"""gdb's output held while a step written by another thread runs, and read by a thread of its own then.

The loop reads gdb's stdout (asyncio's pipe reader, ``SubprocessTransport.lines``). A step's key
written to gdb by the terminal's input thread (``MIClient.write_reserved``, ``ui.keyplan``) asks for
``hold`` first: the loop then lends gdb's output to ``HeldOutput``'s thread (``lend``: the pipe's
reading paused), which reads what gdb writes while it steps (``^running``, ``*running``, the
prompt) and keeps it, so the loop is not woken for it; the first whole ``*stopped`` line goes to the
hold's ``on_stop`` in that thread; then everything read goes to the loop at once, in gdb's order,
and the pipe is the loop's again (``_give_back``). A hold ends as well at an ``^error`` (no stop
comes), at the end of gdb's output (the loop's reader then meets it too), or after ``at_most``
seconds (a long step: the loop hears of it running, as without a hold).

Why: on a 2-core machine the loop's work on those records (0.1-0.2 ms each, cold) takes a core from
gdb and the program while they step; held, gdb's ``*stopped`` comes 0.15-0.3 ms sooner, and
``on_stop`` sees it before the loop could (bench/RESULTS.md, "A step's line from gdb's output
thread"). Only a held step goes through the thread: a reply the loop waits for otherwise comes the
direct way (a thread's hand-over costs every MI round trip ~50-100 µs: ~1.5 ms of a Python step's).
"""

from __future__ import annotations

import logging
import os
import re
import select
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("tuidbg.engine")

CHUNK = 256 * 1024  # bytes read from gdb's output at a time (the loop's reader too: transport)
_STOPPED = re.compile(rb"(?:^|\n)\d*\*stopped[^\n]*\n")
_ERROR = re.compile(rb"(?:^|\n)\d*\^error")


class _Hold:
    __slots__ = ("on_stop", "until", "too_late")

    def __init__(self, on_stop: Callable[[str], None], until: float, too_late: Callable[[], bool]) -> None:
        self.on_stop = on_stop
        self.until = until
        self.too_late = too_late


class HeldOutput:
    """The thread that reads ``fd`` (gdb's stdout) while a step is held. ``pause()``/``resume()``: the
    loop's own reading of it (the pipe transport's); ``feed(data)``: what the thread read, to the
    loop's reader, in order; ``reading()``: the loop reads it now (not paused by its reader's own flow
    control, not at gdb's end: ``fd`` may be closed then)."""

    def __init__(self, fd: int, loop: Any, pause: Callable[[], None], resume: Callable[[], None],
                 feed: Callable[[bytes], None], reading: Callable[[], bool]) -> None:
        self._fd = fd
        self._loop = loop
        self._pause, self._resume, self._feed, self._reading = pause, resume, feed, reading
        self._hold: _Hold | None = None  # asked for (hold), not yet lent
        self._lent: _Hold | None = None  # the thread reads for it
        self.holds_read = 0  # how many holds the thread has read gdb's output for (a count for tests and logs)
        self._wake_r, self._wake_w = os.pipe()
        self._lock = threading.Lock()
        self._done = False
        self._stopping = False
        self.thread = threading.Thread(target=self._run, name="tuidbg-gdb-output", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def hold(self, on_stop: Callable[[str], None], at_most: float, too_late: Callable[[], bool]) -> None:
        """Any thread, just before it writes a step to gdb: gdb's output held until the step's
        ``*stopped`` line (given to ``on_stop`` in this reader's thread, as text), an ``^error`` or
        ``at_most`` seconds, whichever comes first; the loop lends it to the thread at its next turn,
        unless ``too_late()`` then (the loop, busy when the step was written, read its stop itself)."""
        self._hold = _Hold(on_stop, time.monotonic() + at_most, too_late)
        try:
            self._loop.call_soon_threadsafe(self.lend)
        except RuntimeError:
            self._hold = None  # (the loop is closed)

    def unhold(self) -> None:
        """The step was not written after all: no hold (if the loop has not lent its output yet)."""
        self._hold = None

    def stop(self) -> None:
        """The transport is closed: the thread ends (and gives back what it held)."""
        with self._lock:
            self._stopping = True
            if not self._done:
                os.write(self._wake_w, b"s")

    @property
    def lent(self) -> bool:
        """gdb's output is the thread's now (lent for a hold, not given back yet)."""
        return self._lent is not None

    def lend(self) -> None:
        """The loop's turn after ``hold`` (scheduled by it): gdb's output is the thread's, for the hold asked
        for, if it is not over already."""
        hold, self._hold = self._hold, None
        if (hold is None or self._lent is not None or time.monotonic() >= hold.until or hold.too_late()
                or not self._reading()):
            return
        with self._lock:
            if self._stopping or self._done:
                return
            self._lent = hold
            os.write(self._wake_w, b"l")
            self._pause()

    def _give_back(self, data: bytes) -> None:
        """The loop: what the thread read, then gdb's output is the loop's again."""
        self._lent = None
        if data:
            self._feed(data)
        self._resume()

    def _run(self) -> None:
        try:
            while True:
                if os.read(self._wake_r, 1) == b"s":  # (blocks until the loop lends or stops)
                    break
                hold = self._lent
                if hold is not None:
                    self.holds_read += 1
                    data, stopped = self._read_held(hold)
                    self._loop.call_soon_threadsafe(self._give_back, data)
                    if stopped:
                        break
        except RuntimeError:
            pass  # (the loop is closed: nobody reads gdb's output any more)
        except Exception:
            log.exception("gdb's output thread failed")
        finally:
            with self._lock:
                self._done = True
                os.close(self._wake_r)
                os.close(self._wake_w)

    def _read_held(self, hold: _Hold) -> tuple[bytes, bool]:
        """gdb's output read for ``hold`` until it is over; (what was read, whether the thread is to stop)."""
        held: list[bytes] = []
        fd = self._fd
        poll = select.poll()
        poll.register(fd, select.POLLIN)
        poll.register(self._wake_r, select.POLLIN)
        while True:
            left = hold.until - time.monotonic()
            if left <= 0:
                return b"".join(held), False  # (no stop within the hold's time: the loop hears of the run)
            try:
                ready = {f for f, _ in poll.poll(max(1, int(left * 1000 + 0.999)))}
            except OSError:
                return b"".join(held), False
            if self._wake_r in ready and fd not in ready:
                return b"".join(held), True  # (stop)
            if not ready:
                continue
            try:
                data = os.read(fd, CHUNK)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                return b"".join(held), False  # (gdb's end: the loop's reader meets it too)
            held.append(data)
            blob = b"".join(held) if len(held) > 1 else data
            stop = _STOPPED.search(blob)
            if stop is not None:
                line = stop.group(0).strip(b"\n").rstrip(b"\r").decode("utf-8", "replace")
                try:
                    hold.on_stop(line)
                except Exception:  # (the caller's: never the reader's end)
                    log.exception("a held step's on_stop failed")
            if stop is not None or _ERROR.search(blob):
                return blob, False
            held = [blob]
