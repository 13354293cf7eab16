"""Recording cuda-gdb's MI: ``RecordingTransport`` runs it like tuidbg's ``SubprocessTransport`` and
writes every line that goes to it or comes from it, in the order they pass, to a transcript file.

The format is the one ``tuidbg.engine.transport.ReplayTransport`` reads (and ``gpucheck.replay``
replays with the tokens kept): ``#`` lines are comments (the header says where the transcript was
captured; ``# mark: NAME`` where the scene looked at what it had; ``# stderr: TEXT`` what cuda-gdb
wrote to its standard error), ``-> TOKEN-COMMAND`` what tuidbg sent, every other line cuda-gdb's
standard output as read. Each line is flushed as it is written: a scene killed by its timeout keeps
everything up to its end.
"""

from __future__ import annotations

from typing import AsyncIterator, Callable, Sequence, TextIO

from tuidbg.engine.transport import Line, SubprocessTransport


class TranscriptWriter:
    """One transcript file: the header, then lines as they come, each flushed."""

    def __init__(self, path: str, header: Sequence[str]) -> None:
        self.path = path
        self._f: TextIO | None = open(path, "w", encoding="utf-8", errors="surrogateescape")
        for line in header:
            self._write("# " + line if not line.startswith("#") else line)
        self.lines = 0

    def _write(self, text: str) -> None:
        if self._f is None:
            return
        # (one line each: a line break inside would start a line the replay reads as something else)
        self._f.write(text.replace("\r", "\\r").replace("\n", "\\n") + "\n")
        self._f.flush()

    def sent(self, line: str) -> None:
        self.lines += 1
        self._write("-> " + line)

    def received(self, line: str) -> None:
        self.lines += 1
        self._write(line)

    def comment(self, text: str) -> None:
        self._write("# " + text)

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


class RecordingTransport(SubprocessTransport):
    """A real gdb over pipes, every line both ways written to ``writer``.

    The one-line writes that the UI's key plans make from another thread (``write_fd``) and the held
    output of a step (``hold``) go past ``write`` and ``lines``; a recording offers neither, so
    every line passes here (headless, the engine never asks for them).
    """

    def __init__(self, argv: Sequence[str], writer: TranscriptWriter, env: dict[str, str] | None = None,
                 cwd: str | None = None, on_start: Callable[[int], None] | None = None) -> None:
        super().__init__(argv, env=env, cwd=cwd, stderr_lines=2000)
        self.writer = writer
        self.on_start = on_start

    async def start(self) -> None:
        await super().start()
        if self.on_start is not None and self.pid is not None:
            self.on_start(self.pid)

    def write(self, line: str) -> None:
        self.writer.sent(line)
        super().write(line)

    def write_fd(self) -> int | None:
        return None

    def hold(self, on_stop, at_most, too_late) -> None:
        return None

    async def lines(self) -> AsyncIterator[Line]:
        async for line in super().lines():
            self.writer.received(line)
            yield line

    async def close(self, timeout: float = 2.0) -> None:
        await super().close(timeout)
        for line in super().stderr_tail():
            self.writer.comment("stderr: " + line)
