"""Requests to the agent: its mailbox in the stopped program (read the stop, answer it), requests
made while stopped (with only the agent's thread running, then all) or running (over the
socket), and pushing the breakpoint table and options."""

from __future__ import annotations

import asyncio
import json
import logging
import struct
from dataclasses import replace
from typing import Any, Iterable, Mapping

from tuidbg.agent import protocol as P
from tuidbg.engine.errors import EngineError, GdbExited, MIError, Timeout
from tuidbg.engine.python.model import AgentStop
from tuidbg.engine.python.view import stop_generation
from tuidbg.engine.ranks import applies_to
from tuidbg.engine.state import DebuggerState, ProcessState
from tuidbg.engine.pyagent.base import AgentBase, FIRST_READ, FIRST_TRY, QUIESCE_TIMEOUT, REQUEST_TIMEOUT, _reply, _wait_stop

log = logging.getLogger("tuidbg.engine")


class AgentRequests(AgentBase):
    """Part of ``PyAgent`` (see the module's docstring)."""

    # -- mailbox ----------------------------------------------------------------------------

    async def _read_out(self) -> dict[str, Any]:
        s = self._session()
        base = int(self.info.mailbox or 0)
        if not base:
            raise EngineError("the Python agent has not said where its mailbox is")
        first = await s.read_memory(base, P.HEADER_SIZE + FIRST_READ)
        if first[: len(P.MAGIC)] != P.MAGIC:
            raise EngineError("the Python agent's mailbox is not where it said")
        n = struct.unpack_from("<I", first, P.OFF_OUT_LEN)[0]
        body = first[P.OUT_OFFSET : P.OUT_OFFSET + n]
        if n > len(body):
            body += await s.read_memory(base + P.OUT_OFFSET + len(body), n - len(body))
        try:
            data = json.loads(body.decode("utf-8", "replace"))
        except ValueError as exc:
            raise EngineError(f"the Python agent's stop description is unreadable: {exc}") from exc
        return data if isinstance(data, dict) else {}

    async def _answer(self, stop: AgentStop, ops: list[dict], ctl_token: int = 0, ctl_flags: int = 0) -> None:
        """Write the front end's answer to an agent stop (read when the program resumes)."""
        s = self._session()
        base = int(self.info.mailbox or 0)
        data = json.dumps({"ops": ops}).encode()
        if len(data) > P.IN_SIZE:
            raise EngineError("request too large for the agent's mailbox")
        await s.cmd(f"-data-write-memory-bytes {base + P.IN_OFFSET:#x} {data.hex()}")
        hdr = struct.pack("<QIIQ", stop.seq, len(data), ctl_flags, ctl_token)  # ack_seq, in_len, ctl_flags, ctl_token
        await s.cmd(f"-data-write-memory-bytes {base + P.OFF_ACK_SEQ:#x} {hdr.hex()}")

    async def _write_ctl(self, token: int, flags: int) -> None:
        s = self._session()
        base = int(self.info.mailbox or 0)
        if not base or not s.state.is_stopped:
            return
        await s.cmd(f"-data-write-memory-bytes {base + P.OFF_CTL_FLAGS:#x} {struct.pack('<IQ', flags, token).hex()}")

    # -- requests -------------------------------------------------------------------------------

    def _agent_lock(self) -> asyncio.Lock:
        """Held while the agent's mailbox is in use at a stop: a request and its answer, or the answer
        that lets the program go on (a step, continue). One at a time, or one answer overwrites another."""
        if self._request_lock is None:
            self._request_lock = asyncio.Lock()
        return self._request_lock

    async def _request_stopped(self, ops: list[dict], timeout: float = REQUEST_TIMEOUT) -> list[dict]:
        """Run requests in the stopped agent thread and wait for its answer; the program stays stopped.

        Only that thread runs meanwhile (scheduler-locking on); it answers through a second stop.
        Requests go one at a time (the locals of a frame, the watches and the console may ask at once),
        and a caller that gives up (a UI worker cancelled by a newer one) does not cut one short: the
        answer's stop would be taken for a stop nobody waits for, and the program let go.
        """
        lock = self._agent_lock()
        gen = stop_generation(self._session().state)

        async def serialized() -> list[dict]:
            async with lock:
                self._refuse_when_closing()
                if stop_generation(self._session().state) != gen:
                    # the stop it was asked at is over (a step or continue went first)
                    raise EngineError("the program is no longer at the stop this was asked at")
                return await self._request_stopped_now(ops, timeout)

        task = asyncio.ensure_future(serialized())
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved, even if nobody waits
        return await asyncio.shield(task)

    def _refuse_when_closing(self) -> None:
        """A request that would start once the session has begun to let the program go (``_quiesce``)."""
        if self._quiet:
            raise EngineError("the session is closing: the program is being let go")

    async def _quiesce(self, timeout: float = QUIESCE_TIMEOUT) -> bool:
        """Before the agent is switched off and gdb detaches: no request starts any more, and the one under
        way ends first; True if the agent's lock is then held (the caller releases it once gdb has let go).

        Without this a request queued behind the lock (the screen asks for locals, watches and the console
        at each stop) went on during the detach: it found the stop function's breakpoint gone, took the
        native path, overwrote the agent's detach in its mailbox and ran an inferior call while gdb let go
        (the agent, never told, kept its SIGTRAP shield); and the detach answered the stop the screen showed,
        not the request's own answer stop (a sequence number the agent no longer waited for). A request
        that waits for its answer is cut short by an interrupt (its thread stops where it is, and the agent
        gets the detach over its socket); one in an inferior call cannot be (gdb reads nothing until the
        call returns, which the agent bounds): it is waited for, up to ``timeout``."""
        self._quiet = True
        lock = self._agent_lock()
        s = self.session
        if lock.locked() and self._awaiting_answer and s is not None and s.state.is_running:
            try:
                await s.interrupt()
            except (EngineError, MIError, Timeout, GdbExited) as exc:
                log.info("closing: the request under way was not interrupted: %s", exc)
        try:
            await asyncio.wait_for(lock.acquire(), timeout)
        except asyncio.TimeoutError:
            log.info("closing: a request to the agent is still under way after %ss; detaching anyway", timeout)
            return False
        return True

    async def _request_stopped_now(self, ops: list[dict], timeout: float) -> list[dict]:
        s = self._session()
        if s.state.device_focus is not None:
            # The answer runs the host thread, which would take cuda-gdb's focus off the device thread.
            raise EngineError("Python runs on the host: put the CUDA focus back on the host thread first")
        stop = self.at_agent_stop()
        if stop is None:
            if s.state.is_stopped and self.info.connected and self.info.eval_addr:
                # a native stop (SIGTRAP, ctrl+c, a native breakpoint, attach): in the selected thread
                return await self._request_native(ops, timeout)  # type: ignore[attr-defined]  (native_eval)
            if s.state.is_stopped and self.info.status == "waiting":
                # (attach: the agent loads once the program runs Python; a native stop before that)
                raise EngineError("Python evaluates through tuidbg's agent, which is not loaded in the program yet "
                                  "(it loads when the program runs Python): continue or step, then evaluate")
            raise EngineError("this needs the program stopped by the Python agent (a Python breakpoint or step)")
        tid = s.state.stop.thread_id if s.state.stop else None
        # What the user sees of this stop: it is still what they see once the answer is in. The short
        # run and stop in between are marked transient (the *running state inherits the mark).
        before = s.state
        self._request_inferior = before.selected_inferior
        with self.request_window(s):
            s.set_state(before.with_python(transient=True))
            await self._answer(stop, ops + [{"op": "reply"}])
            await self._run_for_answer(tid, timeout)
            st = s.state
            own = st.find(before.selected_inferior)
            if own is None or own.process is not ProcessState.STOPPED:
                raise EngineError("the process ended while evaluating")
            if not self._is_stub_stop(st):
                s.set_state(st.with_python(transient=False, stop=None))
                raise EngineError(f"the program stopped elsewhere while evaluating: {st.stop.describe() if st.stop else '?'}")
            data = await self._read_out()
            replies = data.get("replies") or []
            new_stop = replace(stop, seq=int(data.get("seq", stop.seq)))
            self._last_stop = new_stop
            cur = s.state
            # The program is where it was: the view of the stop before the request (its process's frames,
            # selection, Python stacks) under the new stop's generation; that stop's refresh brings the same
            # again. The rest is as it is now (the count of generations; another process's exit meanwhile).
            mine = replace(before.inferior, generation=cur.generation, stop=cur.stop, process=cur.process)
            view = replace(cur, selected_inferior=mine.id,
                           inferiors=tuple(mine if inf.id == mine.id else inf for inf in cur.inferiors))
            s.set_state(view.with_python(stop=new_stop, transient=False, stop_generation=self._last_stop_gen))
            await self._reselect(before)
            return replies

    async def _run_for_answer(self, tid: str | None, timeout: float) -> None:
        """Let the agent's thread run until its answer's stop: that thread alone first, then, if it does not
        answer, every thread of its process. The other processes stay stopped: another's agent would stop
        on the way, and its stop be taken for the answer."""
        s = self._session()
        old = await self._scheduler_locking()
        locked = await self._lock_scheduler()
        try:
            async with self._only_this_process():
                if locked and await self._run_until_stop(tid, FIRST_TRY):
                    return
                if locked:
                    # Most likely the agent's thread waits for the GIL to go to a thread gdb keeps frozen
                    # (CPython hands it over when another thread asked for it), or the expression waits for
                    # another thread. Let the process's threads run until the answer comes: the others may
                    # run a little of their code meanwhile.
                    log.info("the agent did not answer with only its thread running; resuming its process")
                    await s.interrupt()
                    await s.cmd(f"-gdb-set scheduler-locking {old}", check=False)
                # (not locked: a gdb that cannot hold the other threads, cuda-gdb: they run from the start)
                if not await self._run_until_stop(tid, timeout):
                    await s.interrupt()
                    # a native stop now (the interrupt), shown as it is
                    s.set_state(s.state.with_python(transient=False, stop=None))
                    raise EngineError("the Python agent did not answer (the expression may be waiting for "
                                      "another process, which stays stopped meanwhile, or a thread)")
        finally:
            if locked:
                await s.cmd(f"-gdb-set scheduler-locking {old}", check=False)

    async def _run_until_stop(self, tid: str | None, timeout: float) -> bool:
        """Resume (``tid``'s process, as gdb's settings say) until a stop; False if none comes in time. Another
        process's exit that gdb had to report first is not the stop: the program goes on."""
        s = self._session()
        mine = s.state.selected_inferior
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            last = s.state.last_generation
            self._refuse_when_closing()  # (the close interrupted the answer's wait: not resumed again)
            await s.cmd(f"-exec-continue --thread {tid}" if tid else "-exec-continue")
            self._awaiting_answer = True
            try:
                await _wait_stop(s, last, max(0.0, deadline - loop.time()))
            except Timeout:
                return False
            finally:
                self._awaiting_answer = False
            if not _another_exited(s.state, mine):
                return True
            if tid:
                await s.cmd(f"-thread-select {tid}", check=False)

    async def _reselect(self, before: DebuggerState) -> None:
        """gdb's own selection back where the user had it (the answer's stop selected frame 0 of the
        agent's thread): the console's commands act in the selected frame."""
        s = self._session()
        st = s.state
        tid = before.selected_thread
        if tid and tid != (st.stop.thread_id if st.stop else None):
            await s.cmd(f"-thread-select {tid}", check=False)
        if before.selected_frame:
            thread = f"--thread {tid} " if tid else ""
            await s.cmd(f"-stack-select-frame {thread}{int(before.selected_frame)}", check=False)

    async def _scheduler_locking(self) -> str:
        if self._sched_lock is None:
            r = await self._session().cmd("-gdb-show scheduler-locking", check=False)
            self._sched_lock = str(r.get("value") or "replay")
        return self._sched_lock

    async def _lock_scheduler(self) -> bool:
        """``scheduler-locking on``: only the thread resumed runs. False where gdb cannot (cuda-gdb: "Target
        'multi-thread' cannot support this command."), asked once a session."""
        if self._sched_lockable is False:
            return False
        r = await self._session().cmd("-gdb-set scheduler-locking on", check=False)
        self._sched_lockable = r.cls == "done"
        if not self._sched_lockable:
            log.info("gdb cannot lock the scheduler (%s): the program's threads run while the agent answers",
                     r.get("msg"))
        return self._sched_lockable

    async def _request_running(self, ops: list[dict], timeout: float = 3.0) -> list[dict] | None:
        """Send requests over the socket; the agent's thread answers. None if no answer in time."""
        rid = next(self._req_ids)
        fut = asyncio.get_running_loop().create_future()
        self._requests[rid] = fut
        await self._send({"id": rid, "ops": ops})
        try:
            return await asyncio.wait_for(asyncio.shield(fut), timeout)
        except asyncio.TimeoutError:
            return None

    async def _settled(self) -> None:
        """Wait for a request under way (the program runs for it, unseen): the state is then the stop."""
        async with self._agent_lock():
            pass

    async def _push_bps(self) -> None:
        self._publish()
        if not self.info.connected:
            await self._tell_others([{"op": "set_bps", "bps": []}])
            return
        await self._settled()
        s = self._session()
        ops = [{"op": "set_bps", "bps": self._bp_defs(self._link.pid)}]
        st = s.state
        replies: list[dict] | None = None
        if self.at_agent_stop(st) is not None:
            replies = await self._request_stopped(ops)
        elif st.is_running:
            replies = await self._request_running(ops)
        else:
            # A native stop: the agent's thread applies the table when it runs; resume() lets it run
            # alone first, so the table is in force before the next Python line.
            rid = next(self._req_ids)
            fut = asyncio.get_running_loop().create_future()
            self._requests[rid] = fut
            self._pending_table = fut
            await self._send({"id": rid, "ops": ops})
        if replies:
            self._apply_statuses(_reply(replies, "set_bps").get("bps") or [])
        await self._tell_others(ops)

    async def _tell_others(self, ops: list[dict]) -> None:
        """The other processes' agents (tuidbg run --children) get the same table or options over their
        sockets: they apply it as soon as they run (all-stop: they are stopped with this one, or running)."""
        stopped = self.session is not None and self.session.state.is_stopped
        for link in list(self._links.values()):
            if link is not self._link and link.info.connected:
                # (each process's own table: a breakpoint limited to some ranks is left out of the others')
                mine = [dict(op, bps=self._bp_defs(link.pid)) if op.get("op") == "set_bps" else op for op in ops]
                msg: dict = {"ops": mine}
                if stopped and any(op.get("op") == "set_bps" for op in ops):
                    # (at a stop: its answer says it applied the table; resume() lets its thread do that first)
                    msg["id"] = rid = next(self._req_ids)
                    link.pending_table = self._requests[rid] = asyncio.get_running_loop().create_future()
                await self._send(msg, link)

    async def _push_options(self) -> None:
        ops = [dict(op="options", **self._opts)]
        await self._tell_others(ops)
        if not self.info.connected:
            return
        await self._settled()
        st = self._session().state
        if self.at_agent_stop(st) is not None:
            await self._request_stopped(ops)
        elif st.is_running:
            await self._request_running(ops)
        else:
            await self._send({"ops": ops})

    def _bp_defs(self, pid: int | None = None) -> list[dict]:
        """The table for process ``pid``'s agent (a breakpoint limited to other ranks left out)."""
        return [
            {"id": b.id, "file": b.file, "line": b.line, "cond": b.condition, "ignore": b.ignore_count,
             "enabled": b.enabled, "temporary": b.temporary, "rev": b.rev, "task": b.task}
            for b in self.breakpoints if applies_to(b.ranks, b.pids, pid)
        ]

    def _apply_statuses(self, statuses: Iterable[Mapping[str, Any]]) -> None:
        changed = False
        for x in statuses:
            if not _status_ok(x):
                continue  # (a status of the wrong shape: an agent of another tuidbg, or none at all)
            bp = self._bps.get(x["id"])
            if bp is None:
                continue
            new = replace(
                bp,
                resolved_line=x.get("line", bp.resolved_line),
                verified=bool(x.get("verified", bp.verified)),
                hits=int(x.get("hits", bp.hits) or 0),
                message=x.get("message"),
            )
            if new != bp:
                if new.message and new.verified and new.message != bp.message:
                    self._notify(f"Python breakpoint {bp.id}: {new.message}")
                self._bps[bp.id] = new
                changed = True
        if changed:
            self._publish()


_STATUS_TYPES: dict[str, tuple[type, ...]] = {"line": (int, type(None)), "verified": (bool,), "hits": (int, type(None)),
                                             "message": (str, type(None))}


def _status_ok(x: Any) -> bool:
    """A breakpoint's status as the agent sends it: an int ``id``, and the other keys of their types."""
    if not isinstance(x, Mapping) or type(x.get("id")) is not int:
        return False
    return all(k not in x or (isinstance(x[k], t) and not (t[0] is int and isinstance(x[k], bool)))
               for k, t in _STATUS_TYPES.items())


def _another_exited(st: DebuggerState, mine: str) -> bool:
    """The last stop is the exit of a process other than ``mine``, which is still stopped."""
    inf = st.find(st.stopped_inferior)
    own = st.find(mine)
    return (inf is not None and inf.id != mine and inf.process is ProcessState.EXITED
            and own is not None and own.process is ProcessState.STOPPED)
