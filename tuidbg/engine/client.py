"""MIClient: token-numbered commands over a transport, results as awaitables.

Results complete the future of their token. Everything else (exec and notify
records, stream output, non-MI text) goes to one listener. Stream output that
arrives while commands are pending is also collected for the oldest of them,
because gdb answers commands in order: that is how a console command gets its
text back.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Coroutine

from tuidbg.engine import mi
from tuidbg.engine.errors import GdbExited, MIError, Timeout
from tuidbg.engine.transport import Line, Transport

# Lines above this size are parsed in a worker thread so the event loop stays free.
_PARSE_IN_THREAD = 256 * 1024

# A step written by another thread (write_reserved's on_stop): gdb's output held this long at most
# for its *stopped record (a longer step: the loop hears of it running, as without a hold).
HOLD_AT_MOST = 0.02

# Called with every record that is not the result of a pending command. The flag
# tells that the record is stream output of a command sent with quiet=True
# (tuidbg's own queries, whose text the user's console should not show).
Listener = Callable[[mi.MIRecord, bool], None]


class _WriteFailed(Exception):
    pass


def _parsed_stop(on_stop: Callable[[mi.MIRecord], None], line: str) -> None:
    rec = mi.parse_line(line)
    if rec is not None and rec.kind == mi.EXEC and rec.cls == "stopped":
        on_stop(rec)


@dataclass
class _Pending:
    command: str
    future: asyncio.Future
    output: list[mi.MIRecord] = field(default_factory=list)
    sent_at: float = 0.0
    quiet: bool = False


@dataclass(frozen=True)
class Result:
    """A command's ``^done``/``^running``/... record and the stream output it produced."""

    record: mi.MIRecord
    output: tuple[mi.MIRecord, ...] = ()

    @property
    def cls(self) -> str:
        return self.record.cls

    @property
    def payload(self) -> dict:
        return self.record.results

    def get(self, key: str, default=None):
        return self.record.results.get(key, default)

    def console_text(self) -> str:
        return "".join(r.text for r in self.output if r.kind == mi.CONSOLE)

    def all_text(self) -> str:
        return "".join(r.text for r in self.output if r.kind in (mi.CONSOLE, mi.LOG, mi.TARGET))


class MIClient:
    def __init__(self, transport: Transport, listener: Listener | None = None) -> None:
        self.transport = transport
        self._listener: Listener = listener or (lambda rec, quiet: None)
        self._tokens = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._reader: asyncio.Task | None = None
        self.exited: GdbExited | None = None
        self._exit_event = asyncio.Event()
        self.on_exit: Callable[[GdbExited], None] | None = None
        self.lines_read = 0
        self.stops_read = 0  # *stopped records dispatched (a held step's hold comes too late after one)
        self.late_answers = 0  # results of commands no longer waited for (timed out, cancelled): dropped
        self.writes = 0  # commands this client has written (a reserved one written elsewhere: not counted)
        self._write_lock = threading.Lock()  # (send_nowait's write, or write_reserved's from another thread)
        self._reserved: dict[int, _Pending] = {}  # reserve(): tokens for a command written elsewhere
        self._answered_early: dict[int, _Pending] = {}  # reserved, answered before take_reserved

    @property
    def listener(self) -> Listener:
        """What hears every record the loop reads from gdb, in gdb's order (but the answers to commands)."""
        return self._listener

    def set_listener(self, listener: Listener) -> None:
        self._listener = listener

    async def start(self) -> None:
        await self.transport.start()
        self._reader = asyncio.ensure_future(self._read_loop())

    @property
    def alive(self) -> bool:
        return self.exited is None

    async def wait_exit(self) -> GdbExited:
        await self._exit_event.wait()
        assert self.exited is not None
        return self.exited

    async def _read_loop(self) -> None:
        try:
            async for line in self.transport.lines():
                self.lines_read += 1
                if isinstance(line, Line) and line.truncated:
                    # Cut at the transport's limit: not parsed (it is up to 64 MB of a
                    # record that is lost anyway), the command gets an error at once.
                    rec: mi.MIRecord | None = self._truncated(line)
                elif len(line) > _PARSE_IN_THREAD:
                    rec = await asyncio.get_running_loop().run_in_executor(None, mi.parse_line, line)
                else:
                    rec = mi.parse_line(line)
                if rec is not None:
                    self._dispatch(rec)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a broken pipe or decoder bug must still fail pending commands
            reason = f"lost the connection to gdb: {type(exc).__name__}: {exc}"
            await self._finish(reason)
            return
        await self._finish(None)

    def _truncated(self, line: Line) -> mi.MIRecord:
        m = mi._PREFIX_RE.match(line)
        token = int(m.group(1)) if m and m.group(1) else None
        msg = (
            f"gdb's reply was {line.full_length:,} bytes, over tuidbg's limit of "
            f"{len(line):,}; ask for less (fewer frames, fewer children, set print elements)"
        )
        if m and m.group(2) == "^":
            return mi.MIRecord(mi.RESULT, cls="error", payload={"msg": msg}, token=token, raw=line[:200])
        return mi.MIRecord(mi.TEXT, payload=line[:2000] + "…", raw=line[:200], error=msg)

    def _dispatch(self, rec: mi.MIRecord) -> None:
        if rec.token is not None and rec.token in self._reserved and rec.kind == mi.RESULT:
            # (a reserved command written elsewhere, answered before the loop heard it was: take_reserved)
            pend = self._pending[rec.token] = self._answered_early[rec.token] = self._reserved.pop(rec.token)
        if rec.kind == mi.RESULT and rec.token is not None and rec.token in self._pending:
            pend = self._pending.pop(rec.token)
            if not pend.future.done():
                pend.future.set_result(Result(rec, tuple(pend.output)))
            if rec.cls != "running":
                return
            # ^running may come before or after *running: the listener sees it in
            # stream order, so the state machine never misses a resume.
        elif rec.kind == mi.RESULT and rec.token is not None:
            self.late_answers += 1
        quiet = False
        if rec.kind == mi.EXEC and rec.cls == "stopped":
            self.stops_read += 1
        elif rec.kind in mi.STREAM_KINDS or rec.kind == mi.TEXT:
            owner = self._oldest()
            if owner is not None:
                owner[1].output.append(rec)
                quiet = owner[1].quiet
        try:
            self._listener(rec, quiet)
        except Exception as exc:  # a listener bug must not kill the reader
            import logging

            logging.getLogger("tuidbg.engine").exception("listener failed on %r: %s", rec, exc)

    async def _finish(self, reason: str | None) -> None:
        if reason is None:
            reason = await self.transport.exit_reason()
        tail = self.transport.stderr_tail()
        err = GdbExited(reason, tail)
        self.exited = err
        pending, self._pending = self._pending, {}
        for pend in pending.values():
            if not pend.future.done():
                pend.future.set_exception(GdbExited(reason, tail))
        self._exit_event.set()
        if self.on_exit is not None:
            try:
                self.on_exit(err)
            except Exception:
                import logging

                logging.getLogger("tuidbg.engine").exception("on_exit callback failed")

    def send_nowait(self, command: str, quiet: bool = False) -> tuple[int, asyncio.Future]:
        if self.exited is not None:
            raise GdbExited(self.exited.reason, self.exited.stderr_tail)
        token = next(self._tokens)
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._pending[token] = _Pending(command, fut, sent_at=time.monotonic(), quiet=quiet)
        try:
            with self._write_lock:
                self.writes += 1
                self.transport.write(f"{token}{command}")
        except (BrokenPipeError, ConnectionResetError, RuntimeError) as exc:
            self._pending.pop(token, None)
            raise _WriteFailed(str(exc)) from exc
        return token, fut

    async def send(
        self, command: str, timeout: float | None = 30.0, check: bool = True, quiet: bool = False
    ) -> Result:
        """Send one MI command and wait for its result.

        Raises MIError on ``^error`` (unless ``check`` is False), Timeout when no
        result came within ``timeout`` seconds, GdbExited when gdb is gone.
        """
        return await self.send_now(command, timeout, check, quiet)

    def send_now(
        self, command: str, timeout: float | None = 30.0, check: bool = True, quiet: bool = False
    ) -> Coroutine[Any, Any, Result]:
        """``send``, the command written to gdb now, before the caller yields to the loop: the coroutine
        returned waits for the result. (GdbExited at once when gdb is known to be gone.)"""
        try:
            token, fut = self.send_nowait(command, quiet)
        except _WriteFailed as exc:
            return self._write_failed(exc)
        return self._result(command, token, fut, timeout, check)

    def reserve(self, command: str) -> tuple[int, bytes]:
        """A token for ``command`` and the line that sends it, for another thread to write to gdb's input
        (``transport.write_fd``; ``ui.keyplan``). Its answer is the caller's once ``take_reserved`` says
        the line was written; ``release`` when it will not be."""
        token = next(self._tokens)
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._reserved[token] = _Pending(command, fut, quiet=True)
        return token, f"{token}{command}\n".encode("utf-8", "surrogateescape")

    def write_reserved(self, token: int, line: bytes, fd: int, writes: int,
                       on_stop: Callable[[mi.MIRecord], None] | None = None) -> bool:
        """Another thread: the reserved command's ``line`` written to ``fd`` (gdb's input, a copy of
        ``transport.write_fd``) now, when this client has written nothing since it counted ``writes``
        and nothing of its own waits to go (else False, nothing written). From then on it is in flight
        (``oldest_pending``; gdb's output before its answer is its own, quiet).

        ``on_stop`` (a step): gdb's output is held from the write until the step's ``*stopped`` record
        (at most HOLD_AT_MOST seconds; ``transport.hold``), which ``on_stop`` gets first, parsed, in
        the thread that reads gdb's output; the loop then hears of it all as usual."""
        pend = self._reserved.get(token)
        with self._write_lock:
            if pend is None or self.writes != writes or self.exited is not None or self.transport.write_fd() is None:
                return False
            if on_stop is not None:
                stops = self.stops_read
                self.transport.hold(partial(_parsed_stop, on_stop), HOLD_AT_MOST, lambda: self.stops_read != stops)
            try:
                os.write(fd, line)  # (a pipe: a line this short is written whole, or not at all)
            except BaseException:
                self.transport.unhold()  # (nothing written: no step to hold gdb's output for)
                raise
            pend.sent_at = time.monotonic()
        return True

    def release(self, token: int) -> None:
        pend = self._reserved.pop(token, None)
        if pend is not None:
            pend.future.cancel()

    def take_reserved(self, token: int, timeout: float | None = 30.0, check: bool = True) -> Coroutine[Any, Any, Result]:
        """The reserved command ``token`` was written: a pending command from now on, and the coroutine
        that waits for its result (``send_now``'s)."""
        pend = self._reserved.pop(token, None)
        if pend is None:
            pend = self._answered_early.pop(token)  # (answered already: its future has the result)
        elif self.exited is not None:
            pend.future.set_exception(GdbExited(self.exited.reason, self.exited.stderr_tail))
        else:
            pend.sent_at = pend.sent_at or time.monotonic()
            self._pending[token] = pend
        self._answered_early.pop(token, None)
        return self._result(pend.command, token, pend.future, timeout, check)

    async def _write_failed(self, exc: _WriteFailed) -> Result:
        # gdb is going away: its exit status and last stderr lines say why, and
        # the reader learns them as soon as it sees the end of gdb's output.
        try:
            await asyncio.wait_for(self._exit_event.wait(), 5.0)
        except asyncio.TimeoutError:
            raise GdbExited(f"cannot write to gdb: {exc}", self.transport.stderr_tail()) from None
        assert self.exited is not None
        raise GdbExited(self.exited.reason, self.exited.stderr_tail) from None

    async def _result(self, command: str, token: int, fut: asyncio.Future, timeout: float | None,
                      check: bool) -> Result:
        try:
            await self.transport.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the reader sees EOF and fails the future with the exit reason
        try:
            if timeout is None:
                res: Result = await fut
            else:
                res = await asyncio.wait_for(asyncio.shield(fut), timeout)
        except asyncio.TimeoutError:
            self._pending.pop(token, None)
            raise Timeout(command, timeout or 0) from None
        except asyncio.CancelledError:
            self._pending.pop(token, None)
            raise
        if check and res.record.cls == "error":
            payload = res.record.results
            raise MIError(str(payload.get("msg", "gdb reported an error")), command, payload.get("code"))
        return res

    def tokens_held(self) -> dict[str, frozenset[int]]:
        """The tokens this client holds now, by what for: "pending" (sent, its answer awaited),
        "reserved" (``reserve``: not written yet, or written elsewhere and not answered), "answered" (a
        reserved command answered before ``take_reserved``). Nothing held once every command is done."""
        return {"pending": frozenset(self._pending), "reserved": frozenset(self._reserved),
                "answered": frozenset(self._answered_early)}

    @property
    def pending_commands(self) -> list[str]:
        return [p.command for p in self._pending.values()]

    def oldest_pending(self) -> tuple[int, str, float] | None:
        """(token, command, monotonic time sent) of the command waiting longest, or None."""
        oldest = self._oldest()
        if oldest is None:
            return None
        token, p = oldest
        return token, p.command, p.sent_at

    def _oldest(self) -> tuple[int, _Pending] | None:
        """The command written first of those not answered: pending, or reserved and written elsewhere."""
        # (asked at every stream record: the reserved ones, usually none, looked at only when there are)
        written = [t for t, p in self._reserved.items() if p.sent_at] if self._reserved else ()
        if written:
            token = min([*self._pending, *written])
            return token, self._pending.get(token) or self._reserved[token]
        if not self._pending:
            return None
        token = min(self._pending)
        return token, self._pending[token]

    async def close(self) -> None:
        await self.transport.close()
        if self._reader is not None:
            try:
                await asyncio.wait_for(self._reader, 3.0)
            except (asyncio.TimeoutError, asyncio.CancelledError, Exception):
                self._reader.cancel()
