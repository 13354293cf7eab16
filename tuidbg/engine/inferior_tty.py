"""A pseudo-terminal for the program being debugged.

gdb is told to run the program on the slave side (``-inferior-tty-set``), so the
program's output never mixes with MI. The master side is read on the event loop
and handed to a callback as bytes; it is data, never terminal control: the UI
shows escape sequences visibly. Input typed in the program pane is written to
the master.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import os
import struct
import termios
from typing import Callable


class InferiorTTY:
    def __init__(self, on_output: Callable[[bytes], None] | None = None, columns: int = 120, rows: int = 40) -> None:
        self.on_output = on_output or (lambda data: None)
        self.master, self.slave = os.openpty()
        self.path = os.ttyname(self.slave)
        for fd in (self.master, self.slave):
            flags = fcntl.fcntl(fd, fcntl.F_GETFD)
            fcntl.fcntl(fd, fcntl.F_SETFD, flags | fcntl.FD_CLOEXEC)
        fl = fcntl.fcntl(self.master, fcntl.F_GETFL)
        fcntl.fcntl(self.master, fcntl.F_SETFL, fl | os.O_NONBLOCK)
        self.resize(columns, rows)
        self._loop: asyncio.AbstractEventLoop | None = None
        self.bytes_read = 0
        self.closed = False

    def resize(self, columns: int, rows: int) -> None:
        try:
            fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        except OSError:
            pass

    def attach(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop or asyncio.get_running_loop()
        self._loop.add_reader(self.master, self._on_readable)

    def _on_readable(self) -> None:
        chunks = []
        while True:
            try:
                data = os.read(self.master, 65536)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EIO:  # no process holds the slave side right now
                    break
                raise
            if not data:
                break
            chunks.append(data)
            if sum(len(c) for c in chunks) > 1 << 20:
                break
        if chunks:
            data = b"".join(chunks)
            self.bytes_read += len(data)
            self.on_output(data)

    def write(self, data: bytes) -> None:
        """Send input to the program (as if typed on its terminal)."""
        if self.closed:
            return
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.master, view)
            except BlockingIOError:
                break
            view = view[n:]

    def drain(self) -> None:
        """Read whatever output is buffered now (used before showing an exit)."""
        if not self.closed:
            self._on_readable()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._loop is not None:
            try:
                self._loop.remove_reader(self.master)
            except Exception:
                pass
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass
