"""Requests answered by several processes' agents at a stop that is none of theirs (``pyall``: one
Python expression in the same function's frame of every rank).

At an all-stop stop most processes stopped where they were (in a collective, because another process
stopped): no agent stop, no mailbox answer to write. Each process's agent thread answers on its
socket instead (``eval_thread``: the innermost frame of a given thread that runs a given function),
and only those threads run meanwhile: gdb resumes each agent thread alone (``scheduler-locking on``,
``-exec-continue --thread``: all-stop gdb resumes threads of several processes one after another,
and every other thread stays stopped), waits for the answers, and stops them again with one
interrupt. Every process is then shown as it was before (its stop, stacks, selection): the short run
and its stop are marked transient, as an agent request's are.

The agent's thread needs the GIL to run Python: where a stopped thread holds it (a rank stopped in
pure Python, not in a collective or a sleep), that process does not answer within ``timeout`` and is
reported so; its request runs when the program next runs (its answer is dropped then).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from typing import Sequence

from tuidbg.engine import mi
from tuidbg.engine.errors import EngineError, MIError, Timeout
from tuidbg.engine.records import Thread
from tuidbg.engine.state import DebuggerState, ProcessState
from tuidbg.engine.pyagent.base import AgentBase, _reply, _wait_stop

log = logging.getLogger("tuidbg.engine")

ACROSS_TIMEOUT = 2.0  # seconds the agents' threads have to answer
NO_GIL = ("the agent's thread could not run: a stopped thread of this process holds the GIL (a Python breakpoint "
          "in it evaluates there)")


@dataclass(frozen=True)
class ThreadAsk:
    """Evaluate ``expr`` in process ``iid`` (``pid``), in the innermost frame of thread ``lwp`` that runs
    ``func`` (its qualified name) in ``file``."""

    iid: str
    pid: int
    lwp: int | None
    file: str
    func: str
    expr: str


class AcrossProcesses(AgentBase):
    """Part of ``PyAgent`` (see the module's docstring)."""

    def agent_connected_in(self, pid: int | None) -> bool:
        """Whether the agent of process ``pid`` is connected (it can answer ``evaluate_in_threads``)."""
        link = self._link if pid is not None and self._link.pid == pid else self._links.get(pid or -1)
        return link is not None and link.info.connected

    async def evaluate_in_threads(self, asks: Sequence[ThreadAsk], timeout: float = ACROSS_TIMEOUT) -> dict[str, dict]:
        """{process id: the agent's reply (``value``, ``type``, ``torch``; or ``absent``; or ``error``)}, each
        process's agent answering at once (see the module's docstring). The program stays stopped."""
        s = self._session()
        out: dict[str, dict] = {}
        async with self._agent_lock():
            self._refuse_when_closing()  # type: ignore[attr-defined]  (requests)
            st = s.state
            if not st.is_stopped or any(inf.process is ProcessState.RUNNING for inf in st.inferiors):
                raise EngineError("every process must be stopped (some run: interrupt them first)")
            todo = []
            for a in asks:
                link = self._link if self._link.pid == a.pid else self._links.get(a.pid)
                inf = st.find(a.iid)
                if link is None or not link.info.connected or not link.info.control_native_id:
                    out[a.iid] = {"error": "tuidbg's Python agent is not running in this process"}
                elif inf is None or inf.process is not ProcessState.STOPPED:
                    out[a.iid] = {"error": "not stopped"}
                else:
                    todo.append((a, link))
            ids: dict[str, str] = {}
            for a, link in todo:
                tid = await self._gdb_thread(st, a.iid, int(link.info.control_native_id))
                if tid is None:
                    out[a.iid] = {"error": "gdb does not know the agent's thread in this process"}
                else:
                    ids[a.iid] = tid
            if not ids:
                return out
            loop = asyncio.get_running_loop()
            futs: dict[str, tuple[int, asyncio.Future]] = {}
            for a, link in todo:
                if a.iid not in ids:
                    continue
                rid = next(self._req_ids)
                fut = loop.create_future()
                self._requests[rid] = fut
                futs[a.iid] = (rid, fut)
                await self._send({"id": rid, "ops": [{"op": "eval_thread", "native_id": a.lwp or a.pid, "file": a.file,
                                                      "func": a.func, "expr": a.expr}]}, link)
            await self._run_agent_threads(list(ids.values()), [f for _r, f in futs.values()], timeout)
            for iid, (rid, fut) in futs.items():
                if fut.done() and not fut.cancelled():
                    out[iid] = dict(_reply(fut.result(), "eval_thread")) or {"error": "no answer from the agent"}
                else:
                    self._requests.pop(rid, None)
                    out[iid] = {"error": NO_GIL}
        return out

    async def apply_pending_tables(self, timeout: float) -> bool:
        """At a native stop: the agent threads of every process sent a new breakpoint table (each
        ``ProcLink.pending_table``) run alone until each has applied it, then stop again (the view as it was).
        Returns False: the state is not left transient."""
        s = self._session()
        st = s.state
        links = list({id(k): k for k in (self._link, *self._links.values())}.values())
        pending = [(k, k.pending_table) for k in links if k.pending_table is not None and not k.pending_table.done()]
        for k in links:
            k.pending_table = None
        if not st.is_stopped or any(inf.process is ProcessState.RUNNING for inf in st.inferiors):
            return False
        tids, futs = [], []
        for link, fut in pending:
            inf = next((i for i in st.inferiors if i.pid and i.pid == link.pid), None)
            if inf is None or inf.process is not ProcessState.STOPPED or not link.info.connected \
                    or not link.info.control_native_id:
                continue
            tid = await self._gdb_thread(st, inf.id, int(link.info.control_native_id))
            if tid is not None:
                tids.append(tid)
                futs.append(fut)
        if not tids:
            return False
        await self._run_agent_threads(tids, futs, timeout)
        if not all(f.done() for f in futs):
            log.info("an agent thread did not apply the breakpoints alone; they apply as the program runs")
        return False

    async def _gdb_thread(self, st: DebuggerState, iid: str, lwp: int) -> str | None:
        """gdb's id of thread ``lwp`` of process ``iid`` (its threads listed by gdb when the state has no LWPs
        for them: a process never selected)."""
        inf = st.find(iid)
        found = next((t.id for t in inf.threads if t.lwp == lwp), None) if inf is not None else None
        if found is not None:
            return found
        res = await self._session().cmd(f"-list-thread-groups {iid}", check=False)
        for t in mi.as_list(res.get("threads")):
            if isinstance(t, dict) and Thread.from_mi(t).lwp == lwp:
                return str(t.get("id"))
        return None

    async def _run_agent_threads(self, tids: list[str], futs: list[asyncio.Future], timeout: float) -> None:
        """Resume each of ``tids`` alone until every future is done (or ``timeout``), then stop them; the
        state is then the one before (the processes are where they were)."""
        s = self._session()
        before = s.state
        old = await self._scheduler_locking()
        self._transient_native += 1  # (the stop hook marks the interrupt's stop transient)
        s.set_state(before.with_python(transient=True))
        last = before.last_generation
        try:
            await s.cmd("-gdb-set scheduler-locking on")
            for tid in tids:
                try:
                    await s.cmd(f"-exec-continue --thread {tid}")
                except MIError as exc:
                    log.info("the agent's thread %s did not resume: %s", tid, exc)
            if futs:
                await asyncio.wait(futs, timeout=timeout)
            if any(inf.process is ProcessState.RUNNING for inf in s.state.inferiors) or s.state.last_generation == last:
                await s.cmd("-exec-interrupt", check=False)
                try:
                    await _wait_stop(s, last, 10)
                except Timeout:
                    log.info("the agents' threads did not stop again at once")
        finally:
            await s.cmd(f"-gdb-set scheduler-locking {old}", check=False)
            self._transient_native -= 1
            self._restore_view(before)

    def _restore_view(self, before: DebuggerState) -> None:
        """Every process that is stopped again as it was before the agents' short run (its stop, stacks,
        generation), the user's process selected; another's exit meanwhile is kept."""
        s = self._session()
        cur = s.state
        infs = []
        for inf in cur.inferiors:
            old = before.find(inf.id)
            if old is not None and old.process is ProcessState.STOPPED and inf.process is ProcessState.STOPPED:
                inf = old
            infs.append(inf)
        sel = before.selected_inferior if any(i.id == before.selected_inferior for i in infs) else cur.selected_inferior
        new = replace(cur, inferiors=tuple(infs), selected_inferior=sel, stopped_inferior=before.stopped_inferior)
        s.set_state(new)
        self._select_link(new)
        tid = before.selected_thread
        if tid and new.selected_inferior == before.selected_inferior:
            self._spawn(self._reselect_thread(tid, before.selected_frame))

    async def _reselect_thread(self, tid: str, frame: int) -> None:
        s = self._session()
        try:
            await s.cmd(f"-thread-select {tid}", check=False)
            if frame:
                await s.cmd(f"-stack-select-frame --thread {tid} {int(frame)}", check=False)
        except (MIError, Timeout, EngineError):
            pass
