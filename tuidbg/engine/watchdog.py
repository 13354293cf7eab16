"""Is gdb answering? The engine's view of a gdb that is slow, hung or stopped.

gdb answers tuidbg's own queries (frames, threads, locals) in milliseconds. A command that waits
longer is one of three things, told apart by ``/proc``: gdb is working on it (its CPU time grows:
reading a large library's symbols, say), gdb is stopped (state ``T``: someone sent it SIGSTOP,
or another tracer holds it), or gdb is silent (no CPU, no answer: hung, or waiting on something
it will not get). The UI polls :meth:`GdbWatchdog.check` and shows what it says, with choices.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from tuidbg.engine import rescue

BUSY_AFTER = 2.0  # a command waiting longer than this is worth a word in the status line
SILENT_AFTER = 5.0  # no answer and no CPU used for this long: gdb is not answering

OK, BUSY, SILENT, STOPPED, GONE = "ok", "busy", "silent", "stopped", "gone"


@dataclass(frozen=True)
class GdbHealth:
    kind: str = OK
    command: str = ""
    waited: float = 0.0
    token: int | None = None

    @property
    def hung(self) -> bool:
        return self.kind in (SILENT, STOPPED)

    def describe(self) -> str:
        cmd = self.command if len(self.command) <= 60 else self.command[:57] + "…"
        secs = f"{self.waited:.0f} s"
        if self.kind == BUSY:
            return f"gdb busy {secs}: {cmd}"
        if self.kind == SILENT:
            return f"gdb has not answered for {secs} ({cmd}) and uses no CPU"
        if self.kind == STOPPED:
            return f"gdb is stopped (state T: sent SIGSTOP, or held by another tracer) and has not answered {cmd} for {secs}"
        return ""


Pending = Callable[[], "tuple[int, str, float] | None"]


class GdbWatchdog:
    """Samples gdb's state and CPU time against the oldest command still waiting for an answer."""

    def __init__(self, gdb_pid: Callable[[], int | None], oldest_pending: Pending) -> None:
        self._gdb_pid = gdb_pid
        self._oldest = oldest_pending
        self._ticks: int | None = None
        self._progress_at = 0.0
        self._token: int | None = None

    def check(self, now: float | None = None) -> GdbHealth:
        now = time.monotonic() if now is None else now
        pid = self._gdb_pid()
        if not pid:
            return GdbHealth()
        pend = self._oldest()
        if pend is None:
            self._token = None
            return GdbHealth()
        token, command, sent_at = pend
        waited = now - sent_at
        info = rescue.proc_info(pid)
        if info is None or info.state in ("Z", "X"):
            return GdbHealth(GONE, command, waited, token)
        ticks = rescue.cpu_ticks(pid)
        if token != self._token:  # a new command: progress unknown before this first look
            self._token, self._ticks, self._progress_at = token, ticks, sent_at
        elif ticks != self._ticks:  # gdb used CPU since the last look: it is working
            self._ticks, self._progress_at = ticks, now
        if info.state in ("T", "t") and waited >= BUSY_AFTER:
            return GdbHealth(STOPPED, command, waited, token)
        if waited < BUSY_AFTER:
            return GdbHealth(OK, command, waited, token)
        if waited >= SILENT_AFTER and now - self._progress_at >= SILENT_AFTER:
            return GdbHealth(SILENT, command, waited, token)
        return GdbHealth(BUSY, command, waited, token)
