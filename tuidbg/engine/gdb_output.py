"""gdb's output read by a thread of its own, and held while a step written by another thread runs.

``SubprocessTransport`` reads gdb's stdout here rather than on the loop: a thread blocked in
``os.read`` keeps what it read for the loop's ``chunks`` (one wake-up of the loop for whatever came
while it was busy), where the transport's ``lines`` splits it, as before. The thread reads at most
BACKLOG bytes ahead of the loop; beyond that it waits, and gdb waits on its full pipe, as it did on
asyncio's reader.

**A held step.** A step's key written to gdb by the terminal's input thread (``MIClient.
write_reserved``, ``ui.keyplan``) asks first for ``hold``: from then on the pieces gdb writes while
it steps (``^running``, ``*running``, the prompt) stay here, and the loop is not woken for them;
the first whole ``*stopped`` line goes to the hold's ``on_stop`` in this thread, then everything held
goes to the loop at once, in the order gdb wrote it. A hold ends as well at an ``^error`` (no stop
comes), at the end of gdb's output, or after ``at_most`` seconds (a long step: the loop then hears
of it running, as without a hold).

Why: on a 2-core machine the loop's work on those records (0.1-0.2 ms each, cold) takes a core
from gdb and the program while they step; held, gdb's ``*stopped`` comes 0.15-0.3 ms sooner, and
``on_stop`` sees it before the loop could (bench/RESULTS.md, "A step's line from gdb's output
thread").
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import select
import threading
import time
from collections.abc import AsyncIterator, Callable

log = logging.getLogger("tuidbg.engine")

CHUNK = 256 * 1024
BACKLOG = 4 * 1024 * 1024  # bytes read and not yet taken by the loop, at most (then the thread waits)
_STOPPED = re.compile(rb"(?:^|\n)\d*\*stopped[^\n]*\n")
_ERROR = re.compile(rb"(?:^|\n)\d*\^error")


class _Hold:
    __slots__ = ("on_stop", "until")

    def __init__(self, on_stop: Callable[[str], None], until: float) -> None:
        self.on_stop = on_stop
        self.until = until


class OutputThread:
    """Reads ``fd`` (gdb's stdout) until its end, for ``chunks`` on the running loop."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._loop = asyncio.get_running_loop()
        self._arrived = asyncio.Event()
        self._lock = threading.Lock()
        self._taken = threading.Condition(self._lock)  # (the loop took what was ready: the thread reads on)
        self._ready: list[bytes] = []
        self._ready_bytes = 0
        self._ended = False
        self._scheduled = False
        self._stopping = False
        self._hold: _Hold | None = None
        self._wake_r, self._wake_w = os.pipe()  # (stop: the thread's wait ends, whoever holds gdb's output open)
        self._done = False
        self.thread = threading.Thread(target=self._run, name="tuidbg-gdb-output", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def hold(self, on_stop: Callable[[str], None], at_most: float) -> None:
        """Any thread, just before it writes a step to gdb: hold gdb's output until its ``*stopped``
        line (given to ``on_stop`` in this reader's thread, as text), an ``^error`` or ``at_most``
        seconds, whichever comes first."""
        self._hold = _Hold(on_stop, time.monotonic() + at_most)

    def stop(self) -> None:
        """The transport is closed: the thread ends now (gdb gone, whatever still holds its output
        open), the end given to the sink."""
        with self._lock:
            self._stopping = True
            self._taken.notify()
            if not self._done:
                os.write(self._wake_w, b"x")

    async def chunks(self) -> AsyncIterator[bytes]:
        """The loop: gdb's output as it comes, until its end."""
        while True:
            with self._lock:
                data, ended = b"".join(self._ready), self._ended
                self._ready, self._ready_bytes, self._scheduled = [], 0, False
                self._taken.notify()
            if data:
                yield data
            elif ended:
                return
            else:
                self._arrived.clear()  # (a wake-up asked for from now on comes after this: call_soon_threadsafe)
                await self._arrived.wait()

    def _run(self) -> None:
        fd = self._fd
        held: list[bytes] = []
        try:
            while True:
                hold = self._hold
                ready = self._wait(fd, hold)
                if ready is None:
                    break  # (stop)
                if not ready:
                    held = self._end_hold(held)  # (no stop within the hold's time: the loop hears of the run)
                    continue
                try:
                    data = os.read(fd, CHUNK)
                except OSError:
                    data = b""
                if not data:
                    break
                hold = self._hold
                if hold is None:
                    self._deliver(data)
                    continue
                held.append(data)
                if time.monotonic() >= hold.until:
                    held = self._end_hold(held)  # (the step's stop, if it is here, comes too late)
                    continue
                blob = b"".join(held) if len(held) > 1 else data
                stop = _STOPPED.search(blob)
                if stop is not None:
                    line = stop.group(0).strip(b"\n").rstrip(b"\r").decode("utf-8", "replace")
                    try:
                        hold.on_stop(line)
                    except Exception:  # (the caller's: never the reader's end)
                        log.exception("a held step's on_stop failed")
                if stop is not None or _ERROR.search(blob):
                    held = self._end_hold([blob])
        finally:
            self._hold = None
            if held:
                self._deliver(b"".join(held))
            self._deliver(None)
            with self._lock:
                self._done = True
                for end in (fd, self._wake_r, self._wake_w):
                    os.close(end)

    def _wait(self, fd: int, hold: _Hold | None) -> bool | None:
        """Whether gdb has written something (before the hold's time is up, if one is held); None when
        the thread is to stop."""
        left = None if hold is None else hold.until - time.monotonic()
        if left is not None and left <= 0:
            return False
        try:
            ready = select.select([fd, self._wake_r], [], [], left)[0]
        except (OSError, ValueError):
            return True  # (the read that follows meets the same error, and ends)
        return True if fd in ready else None if ready else False  # (gdb's last words before a stop)

    def _end_hold(self, held: list[bytes]) -> list[bytes]:
        self._hold = None
        if held:
            self._deliver(b"".join(held))
        return []

    def _deliver(self, data: bytes | None) -> None:
        """``data`` (None: the end) for the loop's ``chunks``, once it has taken enough of what came before."""
        with self._lock:
            while self._ready_bytes > BACKLOG and not self._stopping:
                self._taken.wait()
            if data is None:
                self._ended = True
            else:
                self._ready.append(data)
                self._ready_bytes += len(data)
            if self._scheduled:
                return
            self._scheduled = True
        try:
            self._loop.call_soon_threadsafe(self._arrived.set)
        except RuntimeError:
            pass  # (the loop is closed: nobody reads gdb's output any more)
