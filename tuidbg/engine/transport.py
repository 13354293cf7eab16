"""Transports carry MI lines between the engine and a gdb.

``SubprocessTransport`` runs a real gdb over pipes. ``ReplayTransport`` plays a
recorded MI session back: it is only for states this machine cannot produce (a
kernel running on a GPU), and the transcripts say where they came from.
"""

from __future__ import annotations

import asyncio
import collections
import os
import re
import signal
from pathlib import Path
from typing import AsyncIterator, Callable, Sequence

from tuidbg.engine.errors import StartupError
from tuidbg.engine.gdb_output import CHUNK, HeldOutput

# One MI line may be several MB (a 10,000-frame stack, a big value). Beyond this
# the line is cut and the command that asked for it fails with a clear error.
MAX_LINE = 64 * 1024 * 1024


class Line(str):
    """A line read from gdb; ``truncated`` tells that it was longer than MAX_LINE."""

    truncated: bool = False
    full_length: int = 0


class Transport:
    """Interface: start, write lines, iterate over lines, learn why it ended."""

    pid: int | None = None

    async def start(self) -> None:
        raise NotImplementedError

    def write(self, line: str) -> None:
        raise NotImplementedError

    async def drain(self) -> None:
        return None

    def write_fd(self) -> int | None:
        """gdb's input as a file descriptor that another thread may write a short line to now (nothing
        of ``write``'s is waiting to go before it), or None (``MIClient.reserve``)."""
        return None

    def hold(self, on_stop: Callable[[str], None], at_most: float, too_late: Callable[[], bool]) -> None:
        """Just before another thread writes a step to gdb (``write_fd``): gdb's output held until the
        step's ``*stopped`` line, which ``on_stop`` gets first, in a thread that reads gdb's output
        meanwhile (``engine.gdb_output``; not if ``too_late()`` when the loop would lend it: the loop
        read the stop already). Here: nothing held, and ``on_stop`` is not called."""
        return None

    def unhold(self) -> None:
        """The step ``hold`` was asked for was not written."""
        return None

    def lines(self) -> AsyncIterator[Line]:
        raise NotImplementedError

    async def exit_reason(self) -> str:
        raise NotImplementedError

    def stderr_tail(self) -> tuple[str, ...]:
        return ()

    def send_signal(self, sig: int) -> None:
        return None

    async def close(self, timeout: float = 2.0) -> None:
        return None


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "gdb closed its output"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"gdb was killed by {name}"
    return f"gdb exited with code {returncode}"


class SubprocessTransport(Transport):
    def __init__(
        self,
        argv: Sequence[str],
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        max_line: int = MAX_LINE,
        stderr_lines: int = 40,
    ) -> None:
        self.argv = list(argv)
        self.env = env
        self.cwd = cwd
        self.max_line = max_line
        self._stderr: collections.deque[str] = collections.deque(maxlen=stderr_lines)
        self._proc: asyncio.subprocess.Process | None = None
        self._held: HeldOutput | None = None  # gdb's output while a step is held (engine.gdb_output)
        self._stderr_task: asyncio.Task | None = None
        self.pid = None

    async def start(self) -> None:
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
                # gdb must not share our process group: a terminal SIGINT or
                # SIGTSTP meant for the UI must never reach it.
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise StartupError(f"cannot run {self.argv[0]}: not found") from exc
        except PermissionError as exc:
            raise StartupError(f"cannot run {self.argv[0]}: permission denied") from exc
        except OSError as exc:
            raise StartupError(f"cannot run {self.argv[0]}: {exc.strerror or exc}") from exc
        self.pid = self._proc.pid
        self._stderr_task = asyncio.ensure_future(self._read_stderr())
        # asyncio's reader of gdb's stdout (Process keeps its transport private; stable since 3.4),
        # lent to a thread while a step is held (engine.gdb_output)
        stdout = self._proc.stdout
        pipe = self._proc._transport.get_pipe_transport(1)
        fileobj = pipe.get_extra_info("pipe") if pipe is not None else None
        if stdout is not None and fileobj is not None and not pipe.is_closing() and not fileobj.closed:

            def resume() -> None:  # (unless the reader paused it itself: too much unread, it resumes it then)
                if not getattr(stdout, "_paused", False):
                    pipe.resume_reading()

            self._held = HeldOutput(fileobj.fileno(), asyncio.get_running_loop(), pipe.pause_reading, resume,
                                    stdout.feed_data, pipe.is_reading)
            self._held.start()

    @property
    def held(self) -> HeldOutput | None:
        """The thread that reads gdb's output while a step is held (None before ``start``)."""
        return self._held

    def hold(self, on_stop: Callable[[str], None], at_most: float, too_late: Callable[[], bool]) -> None:
        if self._held is not None:
            self._held.hold(on_stop, at_most, too_late)

    def unhold(self) -> None:
        if self._held is not None:
            self._held.unhold()

    async def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        buf = b""
        while True:
            chunk = await self._proc.stderr.read(65536)
            if not chunk:
                break
            buf += chunk
            *complete, buf = buf.split(b"\n")
            for raw in complete:
                self._stderr.append(raw.decode("utf-8", "replace")[:2000])
            if len(buf) > 65536:
                self._stderr.append(buf[:2000].decode("utf-8", "replace"))
                buf = b""
        if buf:
            self._stderr.append(buf.decode("utf-8", "replace")[:2000])

    def write(self, line: str) -> None:
        if self._proc is None or self._proc.stdin is None or self._proc.stdin.is_closing():
            raise BrokenPipeError("gdb's input is closed")
        self._proc.stdin.write(line.encode("utf-8", "surrogateescape") + b"\n")

    async def drain(self) -> None:
        if self._proc is not None and self._proc.stdin is not None:
            await self._proc.stdin.drain()

    def write_fd(self) -> int | None:
        stdin = self._proc.stdin if self._proc is not None else None
        if stdin is None or stdin.is_closing() or stdin.transport.get_write_buffer_size():
            return None
        pipe = stdin.transport.get_extra_info("pipe")
        return pipe.fileno() if pipe is not None else None

    async def lines(self) -> AsyncIterator[Line]:
        """Lines of gdb's stdout, split by hand so that no length limit can raise."""
        assert self._proc is not None and self._proc.stdout is not None
        reader = self._proc.stdout
        pending: list[bytes] = []
        pending_len = 0
        dropped = 0
        while True:
            chunk = await reader.read(CHUNK)
            if not chunk:
                break
            start = 0
            while True:
                nl = chunk.find(b"\n", start)
                if nl < 0:
                    piece = chunk[start:]
                    if pending_len + len(piece) <= self.max_line:
                        pending.append(piece)
                        pending_len += len(piece)
                    else:
                        keep = max(0, self.max_line - pending_len)
                        if keep:
                            pending.append(piece[:keep])
                            pending_len += keep
                        dropped += len(piece) - keep
                    break
                piece = chunk[start:nl]
                if pending_len + len(piece) > self.max_line:
                    keep = max(0, self.max_line - pending_len)
                    dropped += len(piece) - keep
                    piece = piece[:keep]
                pending.append(piece)
                yield _make_line(b"".join(pending), dropped)
                pending, pending_len, dropped = [], 0, 0
                start = nl + 1
        if pending:
            yield _make_line(b"".join(pending), dropped)

    async def exit_reason(self) -> str:
        if self._proc is None:
            return "gdb was not started"
        try:
            rc = await asyncio.wait_for(self._proc.wait(), 5.0)
        except asyncio.TimeoutError:
            return "gdb closed its output but is still running"
        if self._stderr_task is not None:
            try:
                await asyncio.wait_for(self._stderr_task, 1.0)
            except (asyncio.TimeoutError, Exception):
                pass
        return describe_exit(rc)

    def stderr_tail(self) -> tuple[str, ...]:
        return tuple(self._stderr)

    def send_signal(self, sig: int) -> None:
        if self._proc is not None and self._proc.returncode is None:
            try:
                self._proc.send_signal(sig)
            except ProcessLookupError:
                pass

    @property
    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.returncode

    async def close(self, timeout: float = 2.0) -> None:
        proc = self._proc
        if proc is None:
            return
        if self._held is not None:
            self._held.stop()  # (before gdb's output is closed: the thread reads it no more)
            await asyncio.to_thread(self._held.thread.join, 2.0)
        if proc.stdin is not None and not proc.stdin.is_closing():
            try:
                proc.stdin.close()
            except Exception:
                pass
        if proc.returncode is None:
            try:
                await asyncio.wait_for(proc.wait(), timeout)
            except asyncio.TimeoutError:
                try:
                    proc.kill()
                except ProcessLookupError:
                    pass
                await proc.wait()
        if self._stderr_task is not None and not self._stderr_task.done():
            self._stderr_task.cancel()


def _make_line(data: bytes, dropped: int) -> Line:
    line = Line(data.decode("utf-8", "replace").rstrip("\r"))
    if dropped:
        line.truncated = True
        line.full_length = len(data) + dropped
    return line


# ---------------------------------------------------------------------------------------------
# Replay


_TRANSCRIPT_CMD = re.compile(r"^(?:->\s*)?(\d*)(-[\w-]+.*)$")


class ReplayTransport(Transport):
    """Plays back a recorded MI session.

    A transcript is plain text. Lines starting with ``#`` are comments (every
    transcript starts by saying where it came from: captured on a GPU, or
    synthesized from cuda-gdb's source). ``-> COMMAND`` lines are what the
    front end sent; every other line is gdb output. Output before the first
    command is emitted at start. When the engine sends a command, the transport
    finds the next recorded command with the same name (the part before the
    first space), rewrites the token of its result records to the token the
    engine used, and emits the output recorded after it. Commands that the
    transcript does not hold get ``^error,msg="not in transcript: …"``, so a
    test sees at once what it did not record; but a ``-gdb-exit`` it does not hold ends the replay as
    gdb ends (``^exit``, then the end of its output).
    """

    def __init__(self, transcript: str | Path, strict_order: bool = False) -> None:
        text = Path(transcript).read_text() if isinstance(transcript, Path) else transcript
        self.preamble: list[str] = []
        self.steps: list[tuple[str, list[str]]] = []
        self.sent: list[str] = []
        self.strict_order = strict_order
        current: list[str] = self.preamble
        for raw in text.splitlines():
            if raw.startswith("#") or not raw.strip():
                continue
            if raw.startswith("->"):
                cmd = raw[2:].strip()
                cmd = re.sub(r"^\d+", "", cmd)
                current = []
                self.steps.append((cmd, current))
                continue
            current.append(raw)
        self._queue: asyncio.Queue[Line | None] = asyncio.Queue()
        self._cursor = 0
        self._closed = False
        self.pid = None

    async def start(self) -> None:
        for line in self.preamble:
            self._queue.put_nowait(Line(line))

    @staticmethod
    def _name(cmd: str) -> str:
        return cmd.split(None, 1)[0] if cmd else ""

    def write(self, line: str) -> None:
        m = re.match(r"^(\d*)(.*)$", line)
        token = m.group(1) if m else ""
        cmd = (m.group(2) if m else line).strip()
        self.sent.append(cmd)
        name = self._name(cmd)
        found = None
        search = range(self._cursor, len(self.steps))
        for i in search:
            if self._name(self.steps[i][0]) == name and (not self.strict_order or i == self._cursor):
                found = i
                break
        if found is None and name == "-gdb-exit":
            # (as gdb ends: the session's close need not wait for a transcript that never recorded it)
            self._queue.put_nowait(Line(f"{token}^exit"))
            self._closed = True
            self._queue.put_nowait(None)
            return
        if found is None:
            self._queue.put_nowait(Line(f'{token}^error,msg="not in transcript: {cmd.replace(chr(34), chr(39))}"'))
            return
        self._cursor = found + 1
        for out in self.steps[found][1]:
            rm = re.match(r"^\d*(\^.*)$", out)
            if rm:
                out = token + rm.group(1)
            else:
                em = re.match(r"^\d*(\*running.*)$", out)
                if em:
                    out = token + em.group(1)
            self._queue.put_nowait(Line(out))

    def inject(self, lines: Sequence[str]) -> None:
        """Emit output that is not the answer to a command (an async stop, say)."""
        for line in lines:
            self._queue.put_nowait(Line(line))

    async def lines(self) -> AsyncIterator[Line]:
        while True:
            line = await self._queue.get()
            if line is None:
                return
            yield line

    async def exit_reason(self) -> str:
        return "the replayed transcript was closed"

    async def close(self, timeout: float = 2.0) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put_nowait(None)


def gdb_env(debuginfod: bool, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment gdb runs in: no debuginfod unless asked for, no pager."""
    env = dict(os.environ if base is None else base)
    if not debuginfod:
        env.pop("DEBUGINFOD_URLS", None)
    env["PAGER"] = "cat"
    # The program inherits this. Its output is shown as text in a pane that does
    # not emulate a terminal, so programs should not colour or position it.
    env["TERM"] = "dumb"
    return env
