"""The replay transport the CUDA tests and benchmark use: strict about CUDA, tolerant of generic set-up.

Every command tuidbg sends must be the next one the transcript recorded, argument
for argument; a command that is not (or one skipped) is recorded in
``mismatches`` for the test to check. Generic gdb settings that the session sends
at start-up (``-gdb-set pagination off`` and the like, not ``-gdb-set cuda ...``)
are answered ``^done`` when the transcript does not have them at that point, so a
new start-up setting in the session does not invalidate the CUDA transcripts.
"""

from __future__ import annotations

import re

from tuidbg.engine.transport import Line, ReplayTransport

GENERIC = re.compile(r"^-gdb-set (?!cuda )|^-enable-pretty-printing$")


class CudaReplay(ReplayTransport):
    LOOSE = ("-inferior-tty-set",)  # its argument is a fresh pty path each run

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.mismatches: list[tuple[str, str]] = []
        self.generic_extra: list[str] = []

    def write(self, line: str) -> None:
        m = re.match(r"^(\d*)(.*)$", line)
        token, sent = (m.group(1), m.group(2).strip()) if m else ("", line.strip())
        nxt = self.steps[self._cursor][0] if self._cursor < len(self.steps) else None
        if GENERIC.match(sent) and nxt != sent:
            self.sent.append(sent)
            self.generic_extra.append(sent)
            self._queue.put_nowait(Line(f"{token}^done"))
            return
        before = self._cursor
        super().write(line)
        if self._cursor == before:
            self.mismatches.append(("<not in transcript>", sent))
            return
        for skipped, _ in self.steps[before : self._cursor - 1]:
            self.mismatches.append((skipped, "<skipped>"))
        recorded = self.steps[self._cursor - 1][0]
        if recorded != sent and not sent.startswith(self.LOOSE):
            self.mismatches.append((recorded, sent))

    @property
    def finished(self) -> bool:
        return self._cursor == len(self.steps)
