"""The user's terminal comes back as it was, whatever ends tuidbg.

Textual restores the terminal when the app exits. ``TerminalGuard`` covers the rest: it saves the
terminal's modes before the app starts, and a signal (SIGTERM, SIGHUP, SIGQUIT, SIGINT sent by
``kill``) asks the app to quit the way ``q`` does (run: the program is killed; attach: detached)
within a deadline; past it, or at a second signal, the guard leaves at once: the session is
abandoned (gdb killed, the program released or ended without it) and the terminal restored by hand.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Callable

# What Textual turns on, turned off: the alternate screen, mouse reporting (all modes), bracketed
# paste, focus events, the hidden cursor; then the scroll region and attributes reset.
RESTORE_SEQUENCES = (
    "\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1015l\x1b[?1004l\x1b[?2004l"
    "\x1b[?1049l\x1b[?25h\x1b[r\x1b[0m"
)
SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGINT)
DEADLINE = 15.0  # seconds a signalled tuidbg may take to quit properly


class TerminalGuard:
    def __init__(self, fd: int | None = None) -> None:
        self.fd = sys.stdin.fileno() if fd is None else fd
        self._attrs = None
        try:
            import termios

            self._attrs = termios.tcgetattr(self.fd)
        except Exception:  # not a terminal: nothing to restore
            self._attrs = None
        self._signalled: int | None = None
        self._lock = threading.Lock()

    def restore(self) -> None:
        """Put the terminal back by hand (best effort: it may be gone, after a SIGHUP)."""
        try:
            os.write(sys.stdout.fileno(), RESTORE_SEQUENCES.encode())
        except OSError:
            pass
        if self._attrs is not None:
            try:
                import termios

                termios.tcsetattr(self.fd, termios.TCSADRAIN, self._attrs)
            except Exception:
                pass

    def install(self, loop, quit_now: Callable[[int], None], abandon: Callable[[], object]) -> None:
        """On a signal: ``quit_now(signum)`` (the app quits as with q); a second signal, or the deadline
        passing, ends the process at once after ``abandon()`` and a hand-made terminal restore."""

        def on_signal(signum: int) -> None:
            with self._lock:
                first = self._signalled is None
                self._signalled = self._signalled or signum
            if not first:
                threading.Thread(target=self._leave, args=(signum, abandon), daemon=True).start()
                return
            timer = threading.Timer(DEADLINE, self._leave, args=(signum, abandon))
            timer.daemon = True
            timer.start()
            quit_now(signum)

        for sig in SIGNALS:
            loop.add_signal_handler(sig, on_signal, sig)

    def leave_if_hung_up(self) -> None:
        """Called once the session is closed after a signal. When the terminal is gone (hung up: its
        modes cannot even be read), Textual's last writes to it can block until the deadline (its
        writer's queue fills) and there is nothing left to restore, so the process leaves now. A
        terminal still there (kill -HUP by hand) is left to Textual to put back."""
        if self._signalled is None or self._attrs is None:
            return
        try:
            import termios

            termios.tcgetattr(self.fd)
        except Exception:  # EIO: hung up
            os._exit(128 + self._signalled)

    def _leave(self, signum: int, abandon: Callable[[], object]) -> None:
        try:
            abandon()
        finally:
            self.restore()
            os._exit(128 + signum)

    @property
    def signalled(self) -> int | None:
        return self._signalled
