"""``PyAgent``: the controller the UI calls for Python debugging, and its public API; the parts it
is made of are mixins in this package (console, stops, requests, link, inject)."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
from dataclasses import replace
from typing import Any, Awaitable, Callable, Sequence

from tuidbg.agent import protocol as P
from tuidbg.engine import mi
from tuidbg.engine.errors import EngineError, GdbExited, MIError, Timeout
from tuidbg.engine.listeners import Channel
from tuidbg.engine.python.model import AgentInfo, AgentStop, PyBreakpoint
from tuidbg.engine.state import DebuggerState, Frame, ProcessState
import tuidbg.engine.pyagent.gate as gate
from tuidbg.engine.pyagent.across import AcrossProcesses
from tuidbg.engine.pyagent.base import AgentBase, ProcLink, TABLE_TIMEOUT, _reply, _wait_stop
from tuidbg.engine.pyagent.console import ConsoleCommands
from tuidbg.engine.pyagent.inject import Injection
from tuidbg.engine.pyagent.link import AgentLink
from tuidbg.engine.pyagent.native_eval import NativeEvaluation
from tuidbg.engine.pyagent.requests import AgentRequests
from tuidbg.engine.pyagent.stops import StopHandling

log = logging.getLogger("tuidbg.engine")
# the agent switches itself off; gdb then detaches the process properly (``PyAgent.shutdown``)
DETACH = {"op": "detach", "clean": True}


def controller(session) -> PyAgent | None:
    """The PyAgent extension of a session, if it has one."""
    for ext in getattr(session, "extensions", ()):
        if isinstance(ext, PyAgent):
            return ext
    return None




class PyAgent(ConsoleCommands, NativeEvaluation, StopHandling, AgentRequests, AgentLink, Injection, AcrossProcesses, AgentBase):
    """Session extension: the controller the UI calls for Python debugging."""

    def __init__(self, config) -> None:
        self.config = config
        self._links: dict[int, ProcLink] = {}
        self._link = ProcLink(AgentInfo(status="waiting", how="attach" if config.mode == "attach" else "run"))
        self.session = None
        # Told when stopping on uncaught exceptions is switched (pycatch): the C++ throw stops follow it.
        self.on_uncaught_changed: Callable[[bool], Awaitable[None]] | None = None
        self._bps: dict[int, PyBreakpoint] = {}
        self._next_bp = 1
        self._opts: dict[str, Any] = {
            "uncaught": bool(getattr(config, "break_on_exception", False)),
            "raise": [],
            "failure": bool(getattr(config, "break_on_failure", False)),
        }
        self.info = AgentInfo(status="waiting", how="attach" if config.mode == "attach" else "run")
        self._folder: gate.AgentFolder | None = None  # the socket's folder (gate)
        self._servers: dict[int, asyncio.AbstractServer] = {}  # by the uid whose processes connect to it
        self._uids: set[int] = set()  # the users whose processes may connect
        self._hellos: dict[int, asyncio.StreamWriter] = {}  # by pid: a connection not past its hello yet
        self._refused = 0  # connections to the socket refused (gate)
        self._sock_path: str | None = None
        self._token = secrets.token_hex(16)
        self._server: asyncio.AbstractServer | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._conn_task: asyncio.Task | None = None
        self._connected = asyncio.Event()
        self._hello: dict[str, Any] | None = None
        self._stub_bp: str | None = None
        self._transient_native = 0  # > 0 while a step is armed from a native stop
        self._last_stop: AgentStop | None = None
        self._last_stop_gen = 0  # the state generation that _last_stop arrived with
        self._request_lock: asyncio.Lock | None = None  # made in the running loop (Python 3.9)
        self._pending_table: asyncio.Future | None = None  # a breakpoint table sent at a native stop
        self._transient = 0
        self._request_inferior: str | None = None
        self._transient_gens: set[int] = set()
        self._requests: dict[int, asyncio.Future] = {}
        self._req_ids = iter(range(1, 1 << 62))
        self._tokens = iter(range(1, 1 << 62))
        self._step_token = 0  # the Python step in progress (0: none)
        self._step_native_id: int | None = None  # the thread it is on
        self._interrupted_token = 0  # a step a native stop interrupted (for step_out_to_python)
        self._native_step = False  # "step into native" in progress
        self._native_tbreak: str | None = None
        self._notes: Channel[str] = Channel("agent note", 1000)  # (kept for the screen: tuidbg run starts early)
        self._sched_lock: str | None = None
        self._sched_lockable: bool | None = None  # gdb can lock the scheduler (None: not asked yet)
        self._sched_multiple: str | None = None
        self._closing = False
        self._quiet = False
        self._awaiting_answer = False
        self._bg: set[asyncio.Task] = set()
        self._stub_check_pending = False
        self._had_process = False
        self._conn = 0  # counts agent connections (one per process)
        self._stub_code: dict[int, bytes] = {}  # the stop function's code under gdb's breakpoint
        self._conns: set[asyncio.StreamWriter] = set()  # every connection to the agent's socket
        self._entry_wanted = False  # the program's next agent stops at its first line (stop_at_entry)

    # -- extension hooks ---------------------------------------------------------------------

    async def on_configure(self, session) -> None:
        self.session = session
        session.stop_hooks.append(self.stop_hook)
        session.refresh_stages.append(self.stage)
        session.on_state(self._on_state)
        self._wrap_detach(session)
        await self._listen()
        if self.config.mode == "run":
            await self._set_program_env()

    async def on_launch(self, session) -> None:
        if self.config.mode == "attach":
            try:
                await self._inject()
            except (MIError, EngineError, Timeout) as exc:
                self._set_info(status="failed", message=f"cannot load the Python agent: {exc}")
                self._notify(f"tuidbg: cannot load the Python agent into process {self.config.pid}: {exc}")

    # -- public: breakpoints -------------------------------------------------------------------

    @property
    def breakpoints(self) -> tuple[PyBreakpoint, ...]:
        return tuple(self._bps[k] for k in sorted(self._bps))

    def breakpoint(self, bp_id: int) -> PyBreakpoint | None:
        return self._bps.get(int(bp_id))

    def breakpoints_at(self, file: str, line: int) -> list[PyBreakpoint]:
        path = _canon(file, self._cwd())
        return [b for b in self._bps.values() if b.file == path and line in (b.line, b.effective_line)]

    async def add_breakpoint(
        self,
        file: str,
        line: int,
        condition: str | None = None,
        ignore_count: int = 0,
        enabled: bool = True,
        temporary: bool = False,
        task: str | None = None,
        ranks: Sequence[int] = (),
        pids: Sequence[int] = (),
    ) -> PyBreakpoint:
        """Set a Python breakpoint on FILE:LINE (``task``: only in the asyncio task of that name; ``ranks``,
        ``pids``: only in those processes, ``engine.ranks.applies_to``: the others' agents never get it). Its
        ``message`` says if it moved to another line."""
        path = _canon(file, self._cwd())
        if not path.endswith((".py", ".pyw")) and not os.path.exists(path):
            raise EngineError(f"{file}: no such Python file")
        bp = PyBreakpoint(
            id=self._next_bp,
            file=path,
            line=int(line),
            condition=condition or None,
            ignore_count=max(0, int(ignore_count)),
            enabled=enabled,
            temporary=temporary,
            task=task or None,
            ranks=tuple(sorted(set(int(r) for r in ranks))),
            pids=tuple(sorted(set(int(p) for p in pids))),
        )
        self._next_bp += 1
        self._bps[bp.id] = bp
        await self._push_bps()
        return self._bps.get(bp.id, bp)

    async def delete_breakpoint(self, bp_id: int) -> None:
        if self._bps.pop(int(bp_id), None) is None:
            raise EngineError(f"no Python breakpoint {bp_id}")
        await self._push_bps()

    async def delete_all_breakpoints(self) -> None:
        self._bps.clear()
        await self._push_bps()

    async def enable_breakpoint(self, bp_id: int, enabled: bool = True) -> PyBreakpoint:
        return await self._modify(bp_id, enabled=enabled)

    async def set_condition(self, bp_id: int, condition: str | None) -> PyBreakpoint:
        return await self._modify(bp_id, condition=condition or None)

    async def set_ignore_count(self, bp_id: int, count: int) -> PyBreakpoint:
        return await self._modify(bp_id, ignore_count=max(0, int(count)))

    async def toggle_breakpoint_at(self, file: str, line: int) -> PyBreakpoint | None:
        """The source pane's toggle: delete the Python breakpoints on that line, or set one."""
        existing = self.breakpoints_at(file, line)
        if existing:
            for b in existing:
                self._bps.pop(b.id, None)
            await self._push_bps()
            return None
        return await self.add_breakpoint(file, line)

    async def _modify(self, bp_id: int, **changes) -> PyBreakpoint:
        bp = self._bps.get(int(bp_id))
        if bp is None:
            raise EngineError(f"no Python breakpoint {bp_id}")
        new = self._bps[bp.id] = replace(bp, rev=bp.rev + 1, **changes)
        await self._push_bps()
        return self._bps.get(bp.id, new)  # (a delete while the table went out took it away: no KeyError)

    # -- public: options ------------------------------------------------------------------------

    def stop_at_entry(self) -> None:
        """The program about to start stops at the first line of its ``__main__`` module (the agent's
        ``entry``; tuidbg.engine.entry): asked of its own process's agent as it says hello."""
        self._entry_wanted = True

    async def set_exception_breaks(self, uncaught: bool | None = None, raised: Sequence[str] | None = None) -> None:
        """Stop on uncaught exceptions, and/or on raised ones whose class (or a base) has one of these names."""
        if uncaught is not None:
            self._opts["uncaught"] = bool(uncaught)
        if raised is not None:
            self._opts["raise"] = [str(x) for x in raised]
        await self._push_options()
        if uncaught is not None and self.on_uncaught_changed is not None:
            await self.on_uncaught_changed(bool(uncaught))

    async def set_break_on_failure(self, on: bool = True) -> None:
        """Under pytest: stop at a failing test with its frames and the exception."""
        self._opts["failure"] = bool(on)
        await self._push_options()

    @property
    def options(self) -> dict[str, Any]:
        return {"uncaught": self._opts["uncaught"], "raise": list(self._opts["raise"]), "failure": self._opts["failure"]}

    # -- public: execution ----------------------------------------------------------------------

    def at_agent_stop(self, state: DebuggerState | None = None) -> AgentStop | None:
        """The agent stop the program is at (None at a native stop or when running)."""
        st = state or self._state()
        if st is None or not st.is_stopped or not self._is_stub_stop(st):
            return None
        return st.python.stop

    async def step_over(self, frame: int = 0, thread: str | None = None) -> None:
        await self._step(P.M_OVER, frame, thread)

    async def step_into(self, frame: int = 0, thread: str | None = None) -> None:
        await self._step(P.M_INTO, frame, thread)

    async def step_out(self, frame: int = 0, thread: str | None = None) -> None:
        await self._step(P.M_OUT, frame, thread)

    async def step_into_native(self, frame: int = 0) -> None:
        """Run the current Python line until it calls a native function (outside the interpreter) and stop
        at that function's first instruction; a Python function called first is stepped into instead."""
        self._native_step = True
        try:
            await self._step(P.M_NATIVE, frame, None)
        except BaseException:
            self._native_step = False
            raise

    async def resume(self) -> None:
        """Continue, cancelling a Python step that a native stop interrupted."""
        s = self._session()
        async with self._agent_lock():  # after a request under way has had its answer
            stop = self.at_agent_stop()
            if stop is not None:
                await self._answer(stop, [{"op": "resume", "mode": P.M_CONTINUE}])
            elif self._interrupted_token and self.info.connected:
                await self._write_ctl(0, 0)
            self._interrupted_token = 0
            self._step_token = 0
            hidden = stop is None and await self._apply_pending_table()
            if stop is not None and len(self._links) > 1:
                # (the other processes' agents take a table sent at this stop before their code runs on)
                await self.apply_pending_tables(TABLE_TIMEOUT)
            await s.cont()
            if hidden:
                s.set_state(s.state.with_python(transient=False))

    async def _apply_pending_table(self) -> bool:
        """At a native stop where Python breakpoints changed: let the agent's own thread run alone until
        it has applied the new table (it answers over the socket), then stop it again. Without this the
        program's threads run first, and a line right after the stop runs before the breakpoint is there.
        If the thread cannot run (a stopped thread holds the GIL), the table applies as the program runs.
        Returns whether the state is left marked transient (the caller's continue clears it).
        Several processes: every process's agent that was sent the table does the same, all at once
        (``pyagent.across``: a breakpoint limited to a rank is for another process than the shown one)."""
        if len(self._links) > 1:
            return await self.apply_pending_tables(TABLE_TIMEOUT)
        fut, self._pending_table = self._pending_table, None
        s = self._session()
        st = s.state
        if fut is None or fut.done() or not st.is_stopped or not self.info.connected:
            return False
        ctl = next((t.id for t in st.threads if t.lwp and t.lwp == self.info.control_native_id), None)
        if ctl is None:
            return False
        old = await self._scheduler_locking()
        if not await self._lock_scheduler():
            return False  # (its thread cannot run alone: the table applies as the program runs)
        self._transient_native += 1
        s.set_state(st.with_python(transient=True))  # the short run and stop are not the user's
        try:
            last = s.state.last_generation
            await s.cmd(f"-exec-continue --thread {ctl}")
            try:
                await asyncio.wait_for(asyncio.shield(fut), TABLE_TIMEOUT)
            except asyncio.TimeoutError:
                log.info("the agent's thread did not apply the breakpoints alone; they apply as the program runs")
            if s.state.last_generation == last:
                await s.interrupt()
                await _wait_stop(s, last, 10)
        finally:
            await s.cmd(f"-gdb-set scheduler-locking {old}", check=False)
            self._transient_native -= 1
        return True

    async def step_out_to_python(self) -> None:
        """From a native frame: run until control is back in the Python code that called it.

        If a Python step was going on when the native stop came (a native breakpoint hit while stepping
        Python, or "step into native"), the agent stops at the Python line the call was made from. Otherwise
        a step is armed from here in the innermost Python frame that stops as soon as control is back in it
        (the same stop: that line, with its frame's locals and evaluation). Without the agent's arming (no
        agent, no Python stack read), gdb finishes the native frames up to the interpreter's frame.
        """
        s = self._session()
        st = s.state
        if not st.is_stopped:
            raise EngineError(f"cannot step out to Python: {s.process_description()}")
        if self.at_agent_stop(st) is not None:
            await self.step_out()
            return
        thread = st.thread(st.selected_thread)
        lwp = thread.lwp if thread else None
        if self._interrupted_token and self.info.connected and (lwp is None or lwp == self._step_native_id):
            token = self._interrupted_token
            self._interrupted_token = 0
            self._step_token = token
            await self._write_ctl(token, P.CTL_RETURN_TO_PYTHON)
            await s.cmd("-exec-continue")
            return
        if self.info.connected and self.info.arm_addr and st.python.stack is not None and st.python.stack.ok:
            await self._step_from_native(P.M_OVER, 0, st.selected_thread, return_to_python=True)
            return
        await self._finish_to_interpreter()

    # -- public: data -------------------------------------------------------------------------

    async def evaluate(self, expression: str, frame: int = 0) -> str:
        """Evaluate (or execute) Python in a frame of the agent stop; returns the repr or raises EngineError."""
        replies = await self._request_stopped([{"op": "eval", "expr": expression, "frame": frame}])
        r = _reply(replies, "eval")
        if r.get("error"):
            raise EngineError(str(r["error"]))
        return "" if r.get("value") is None else str(r["value"])

    async def evaluate_many(self, expressions: Sequence[str], frame: int = 0) -> list[tuple[str | None, str | None, str | None, bool]]:
        """(value, type, error, expandable) of each expression in a frame of the agent stop, in one request;
        expandable: a torch value whose children python_children gives."""
        if not expressions:
            return []
        replies = await self._request_stopped([{"op": "eval", "expr": e, "frame": frame, "mode": "eval"} for e in expressions])
        answers = [r for r in replies if r.get("op") == "eval"]
        out: list[tuple[str | None, str | None, str | None, bool]] = []
        for i in range(len(expressions)):
            r = answers[i] if i < len(answers) else {"error": "no answer from the agent"}
            if r.get("error"):
                out.append((None, None, str(r["error"]), False))
            else:
                out.append(("" if r.get("value") is None else str(r["value"]), r.get("type"), None, bool(r.get("expandable"))))
        return out

    async def python_locals(self, frame: int = 0) -> list[tuple[str, str, str]]:
        """(name, type, repr) of the locals of a Python frame of the agent stop."""
        replies = await self._request_stopped([{"op": "locals", "frame": frame}])
        r = _reply(replies, "locals")
        if r.get("error"):
            raise EngineError(str(r["error"]))
        return [(str(v["name"]), str(v["type"]), str(v["value"])) for v in r.get("vars", [])]

    async def python_torch_locals(self, frame: int = 0) -> list[tuple[str, str, str, bool]]:
        """(name, type, value, expandable) of the locals of a Python frame of the agent stop that are torch
        values (tensors, modules, optimizers, sizes, dtypes, devices), described from their metadata: no
        user code runs, and the other locals are left out (the front end reads those from memory)."""
        replies = await self._request_stopped([{"op": "locals", "frame": frame, "torch_only": True}])
        r = _reply(replies, "locals")
        if r.get("error"):
            raise EngineError(str(r["error"]))
        return [(str(v["name"]), str(v["type"]), str(v["value"]), bool(v.get("expandable"))) for v in r.get("vars", [])]

    async def python_children(self, expression: str, path: Sequence[str] = (), frame: int = 0,
                              device_data: bool = False) -> list[tuple[str, str, str, bool]]:
        """(name, type, value, expandable) of the children of a Python value (a torch tensor, module or
        optimizer) named by an expression in a frame of the agent stop and a path of child names.
        device_data: a preview of a cuda tensor's values (synchronizes the device)."""
        replies = await self._request_stopped([{"op": "children", "expr": expression, "path": list(path),
                                                "frame": frame, "device_data": bool(device_data)}])
        r = _reply(replies, "children")
        if r.get("error"):
            raise EngineError(str(r["error"]))
        return [(str(c["name"]), str(c.get("type") or ""), str(c["value"]), bool(c.get("expandable")))
                for c in r.get("children", [])]

    # -- public: misc ---------------------------------------------------------------------------

    def on_message(self, cb: Callable[[str], None]) -> None:
        """``cb`` gets the agent's notes; the first listener also those from before it (the program runs
        before the screen is up)."""
        self._notes.listen(cb)

    def is_agent_frame(self, frame: Frame) -> bool:
        """A native frame of the agent's stop function (hide it; the user's Python frame is below)."""
        stub = self.info.stub_addr
        return bool(stub) and mi.to_int(frame.addr) in (stub, stub + 1)

    async def wait_connected(self, timeout: float = 30.0) -> bool:
        try:
            await asyncio.wait_for(self._connected.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    async def wait_stop(self, timeout: float = 30.0) -> DebuggerState:
        """Wait for the next stop the user should see (internal stops are skipped), refreshed."""
        s = self._session()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            st = s.state
            if st.process in (ProcessState.GDB_EXITED, ProcessState.DETACHED) or (
                    # (the exit of one process of several: its stop, which selects another, follows)
                    st.process is ProcessState.EXITED and not st.live_inferiors()):
                return st
            if st.is_stopped and not self._transient:
                st = await s.wait_refreshed(max(0.1, deadline - loop.time()))
                if st.is_stopped and not st.python.stop_pending and not st.python.transient:
                    return st
            if loop.time() > deadline:
                raise Timeout("waiting for a stop", timeout)
            await asyncio.sleep(0.01)

    async def shutdown(self) -> None:
        """Before detaching: tell the agent to switch itself off and remove its breakpoint. The detach is
        a proper one ("clean": gdb lets go of the process itself), so the agent takes its SIGTRAP shield
        out once gdb has (``agent._shield``); ``abandon`` is not, and the shield stays."""
        if self._closing:
            return
        self._closing = True
        s = self.session
        try:
            if s is not None and s.state.has_process and s.client is not None and s.client.alive:
                if s.state.is_running and self._injections_pending():
                    await s.interrupt()
                await self._cancel_injection()
            if s is not None and self.info.connected and s.state.has_process:
                if s.state.is_running:
                    await s.interrupt()
                stop = self.at_agent_stop()
                if stop is not None:
                    # (the stop the agent waits at now: a request's answer stop may have followed the one shown)
                    stop = replace(stop, seq=int((await self._read_out()).get("seq", stop.seq)))
                    await self._answer(stop, [DETACH])
                else:
                    await self._send({"ops": [DETACH]})
                await self._delete_stub_bp()
            for link in list(self._links.values()):  # the program's children (--children)
                if link is not self._link and link.info.connected:
                    await self._send({"ops": [DETACH]}, link)
                    if link.stub_bp is not None and s is not None and s.state.has_process:
                        number, link.stub_bp = link.stub_bp, None
                        await self._delete_bp(number)
        except (EngineError, MIError, Timeout, GdbExited, OSError) as exc:
            log.info("agent shutdown: %s", exc)
        self._close_server()


def _canon(path: str, base: str) -> str:
    p = os.path.expanduser(path)
    if not os.path.isabs(p):
        p = os.path.join(base, p)
    return os.path.realpath(p)
