"""The front end's half of tuidbg's Python agent: Python breakpoints, stepping, exceptions.

``PyAgent`` is a session extension (created when ``SessionConfig.agent`` is
true). It loads the agent into the program (``tuidbg run``: through the
program's environment; ``tuidbg attach``: injected through gdb), keeps the
table of Python breakpoints, and turns the UI's actions into messages for the
agent. The agent and the wire format are described in ``tuidbg/agent``.

What the UI uses (``controller(session)`` finds the instance):

- the state, refreshed at every stop and whenever it changes:
  ``state.python_breakpoints`` (the table) and the process's ``state.python``
  (``PythonView``: the agent's ``AgentInfo``, the ``AgentStop`` of a stop it made,
  ``stop_pending`` between such a stop and its ``AgentStop``, ``transient`` on the
  short internal stops of a request: panes need not redraw);
- breakpoints: ``add_breakpoint``, ``delete_breakpoint``, ``enable_breakpoint``,
  ``set_condition``, ``set_ignore_count``, ``toggle_breakpoint_at``;
- execution: ``step_over``, ``step_into``, ``step_out``, ``step_into_native``,
  ``step_out_to_python`` (from a native frame), ``resume``;
- exceptions: ``set_exception_breaks``, ``set_break_on_failure``;
- data: ``evaluate``, ``python_locals``;
- ``handle_console(text)`` for the ``py*`` console commands (``pyhelp``);
- ``on_message(callback)`` for notes such as "breakpoint moved to line 12";
- ``shutdown()`` before detaching (called by ``session.detach`` too);
- ``is_agent_frame(frame)``: what to hide (``python.model.is_agent_file`` for Python files).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import shlex
import shutil
import struct
import tempfile
from dataclasses import replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from tuidbg.agent import protocol as P
from tuidbg.engine import mi, rescue
from tuidbg.engine.errors import EngineError, GdbExited, MIError, Timeout
from tuidbg.engine.extensions import Extension
from tuidbg.engine.python.model import (
    AGENT_DIR,
    INJECT_PENDING,
    INJECT_PEP768,
    INJECT_WORDS,
    AgentInfo,
    AgentStop,
    PyBreakpoint,
    user_frames,
)
from tuidbg.engine.python.view import stop_generation
from tuidbg.engine.state import DebuggerState, Frame, ProcessState, mark_internal

log = logging.getLogger("tuidbg.engine")

BOOT_DIR = os.path.join(AGENT_DIR, "boot")
TUIDBG_PARENT = os.path.dirname(os.path.dirname(AGENT_DIR))


REQUEST_TIMEOUT = 5.0
TABLE_TIMEOUT = 1.0  # how long the agent's thread may take to apply a table while the others wait
FIRST_TRY = 1.0  # answering with only the agent's thread running; then with every thread
FIRST_READ = 4096 - 64  # the header and a typical stop in one read; larger ones take a second


def controller(session) -> PyAgent | None:
    """The PyAgent extension of a session, if it has one."""
    for ext in getattr(session, "extensions", ()):
        if isinstance(ext, PyAgent):
            return ext
    return None


# ---------------------------------------------------------------------------------------------


class PyAgent(Extension):
    """Session extension: the controller the UI calls for Python debugging."""

    def __init__(self, config) -> None:
        self.config = config
        self.session = None
        self._bps: dict[int, PyBreakpoint] = {}
        self._next_bp = 1
        self._opts: dict[str, Any] = {
            "uncaught": bool(getattr(config, "break_on_exception", False)),
            "raise": [],
            "failure": bool(getattr(config, "break_on_failure", False)),
        }
        self.info = AgentInfo(status="waiting", how="attach" if config.mode == "attach" else "run")
        self._dir: str | None = None
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
        self._transient_gens: set[int] = set()
        self._requests: dict[int, asyncio.Future] = {}
        self._req_ids = iter(range(1, 1 << 62))
        self._tokens = iter(range(1, 1 << 62))
        self._step_token = 0  # the Python step in progress (0: none)
        self._step_native_id: int | None = None  # the thread it is on
        self._interrupted_token = 0  # a step a native stop interrupted (for step_out_to_python)
        self._native_step = False  # "step into native" in progress
        self._native_tbreak: str | None = None
        self._listeners: list[Callable[[str], None]] = []
        self._sched_lock: str | None = None
        self._closing = False
        self._bg: set[asyncio.Task] = set()
        self._stub_check_pending = False
        self._had_process = False
        self._conn = 0  # counts agent connections (one per process)
        self._injection: tuple | None = None  # the agent's load queued in an attached process, until hello
        self._shared = False  # the session's directory is shared with another user's process
        self._stub_code: dict[int, bytes] = {}  # the stop function's code under gdb's breakpoint
        self._conns: set[asyncio.StreamWriter] = set()  # every connection to the agent's socket

    # -- extension hooks ---------------------------------------------------------------------

    async def on_configure(self, session) -> None:
        self.session = session
        session.stop_hooks.append(self._stop_hook)
        session.refresh_stages.append(self._stage)
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
    ) -> PyBreakpoint:
        """Set a Python breakpoint on FILE:LINE. Its ``message`` says if it moved to another line."""
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
        self._bps[bp.id] = replace(bp, rev=bp.rev + 1, **changes)
        await self._push_bps()
        return self._bps[bp.id]

    # -- public: options ------------------------------------------------------------------------

    async def set_exception_breaks(self, uncaught: bool | None = None, raised: Sequence[str] | None = None) -> None:
        """Stop on uncaught exceptions, and/or on raised ones whose class (or a base) has one of these names."""
        if uncaught is not None:
            self._opts["uncaught"] = bool(uncaught)
        if raised is not None:
            self._opts["raise"] = [str(x) for x in raised]
        await self._push_options()

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
            await s.cont()
            if hidden:
                s.set_state(s.state.with_python(transient=False))

    async def _apply_pending_table(self) -> bool:
        """At a native stop where Python breakpoints changed: let the agent's own thread run alone until
        it has applied the new table (it answers over the socket), then stop it again. Without this the
        program's threads run first, and a line right after the stop runs before the breakpoint is there.
        If the thread cannot run (a stopped thread holds the GIL), the table applies as the program runs.
        Returns whether the state is left marked transient (the caller's continue clears it)."""
        fut, self._pending_table = self._pending_table, None
        s = self._session()
        st = s.state
        if fut is None or fut.done() or not st.is_stopped or not self.info.connected:
            return False
        ctl = next((t.id for t in st.threads if t.lwp and t.lwp == self.info.control_native_id), None)
        if ctl is None:
            return False
        old = await self._scheduler_locking()
        self._transient_native += 1
        s.set_state(st.with_python(transient=True))  # the short run and stop are not the user's
        try:
            await s.cmd("-gdb-set scheduler-locking on")
            gen = s.state.generation
            await s.cmd(f"-exec-continue --thread {ctl}")
            try:
                await asyncio.wait_for(asyncio.shield(fut), TABLE_TIMEOUT)
            except asyncio.TimeoutError:
                log.info("the agent's thread did not apply the breakpoints alone; they apply as the program runs")
            if s.state.generation == gen:
                await s.interrupt()
                await _wait(lambda: s.state.generation > gen and s.state.process is not ProcessState.RUNNING, 10)
        finally:
            await s.cmd(f"-gdb-set scheduler-locking {old}", check=False)
            self._transient_native -= 1
        return True

    async def step_out_to_python(self) -> None:
        """From a native frame: run until control is back in the Python code that called it.

        If a Python step was going on when the native stop came (a native breakpoint hit while stepping
        Python, or "step into native"), the agent stops at the Python line the call was made from. Otherwise
        gdb finishes the native frames up to the interpreter's frame; the Python frame is then the one the
        stack walker shows.
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
        await self._finish_to_interpreter()

    # -- public: data -------------------------------------------------------------------------

    async def evaluate(self, expression: str, frame: int = 0) -> str:
        """Evaluate (or execute) Python in a frame of the agent stop; returns the repr or raises EngineError."""
        replies = await self._request_stopped([{"op": "eval", "expr": expression, "frame": frame}])
        r = _reply(replies, "eval")
        if r.get("error"):
            raise EngineError(str(r["error"]))
        return "" if r.get("value") is None else str(r["value"])

    async def evaluate_many(self, expressions: Sequence[str], frame: int = 0) -> list[tuple[str | None, str | None, str | None]]:
        """(value, type, error) of each expression in a frame of the agent stop, in one request."""
        if not expressions:
            return []
        replies = await self._request_stopped([{"op": "eval", "expr": e, "frame": frame, "mode": "eval"} for e in expressions])
        answers = [r for r in replies if r.get("op") == "eval"]
        out: list[tuple[str | None, str | None, str | None]] = []
        for i in range(len(expressions)):
            r = answers[i] if i < len(answers) else {"error": "no answer from the agent"}
            if r.get("error"):
                out.append((None, None, str(r["error"])))
            else:
                out.append(("" if r.get("value") is None else str(r["value"]), r.get("type"), None))
        return out

    async def python_locals(self, frame: int = 0) -> list[tuple[str, str, str]]:
        """(name, type, repr) of the locals of a Python frame of the agent stop."""
        replies = await self._request_stopped([{"op": "locals", "frame": frame}])
        r = _reply(replies, "locals")
        if r.get("error"):
            raise EngineError(str(r["error"]))
        return [(str(v["name"]), str(v["type"]), str(v["value"])) for v in r.get("vars", [])]

    # -- public: misc ---------------------------------------------------------------------------

    def on_message(self, cb: Callable[[str], None]) -> None:
        self._listeners.append(cb)

    def is_agent_frame(self, frame: Frame) -> bool:
        """A native frame of the agent's stop function (hide it; the user's Python frame is below)."""
        stub = self.info.stub_addr
        return bool(stub) and mi.to_int(frame.addr) == stub

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
            if st.process in (ProcessState.EXITED, ProcessState.GDB_EXITED, ProcessState.DETACHED):
                return st
            if st.is_stopped and not self._transient:
                st = await s.wait_refreshed(max(0.1, deadline - loop.time()))
                if st.is_stopped and not st.python.stop_pending and not st.python.transient:
                    return st
            if loop.time() > deadline:
                raise Timeout("waiting for a stop", timeout)
            await asyncio.sleep(0.01)

    async def shutdown(self) -> None:
        """Before detaching: tell the agent to switch itself off and remove its breakpoint."""
        if self._closing:
            return
        self._closing = True
        s = self.session
        try:
            if s is not None and s.state.has_process and s.client is not None and s.client.alive:
                if s.state.is_running and self._injection is not None and not self._conn:
                    await s.interrupt()
                await self._cancel_injection()
            if s is not None and self.info.connected and s.state.has_process:
                if s.state.is_running:
                    await s.interrupt()
                stop = self.at_agent_stop()
                if stop is not None:
                    await self._answer(stop, [{"op": "detach"}])
                else:
                    await self._send({"ops": [{"op": "detach"}]})
                await self._delete_stub_bp()
        except (EngineError, MIError, Timeout, GdbExited, OSError) as exc:
            log.info("agent shutdown: %s", exc)
        await self._close_server()

    # -- console --------------------------------------------------------------------------------

    COMMANDS = (
        "pybreak", "pyb", "pytbreak", "pydelete", "pyenable", "pydisable", "pycondition", "pyignore", "pyinfo",
        "pystep", "pynext", "pyfinish", "pystepnative", "pyfinishnative", "pycontinue", "pycatch", "pyprint",
        "pyeval", "pylocals", "pyhelp",
    )

    GDB_BREAK = ("break", "b", "br", "tbreak")

    def claims_console(self, text: str) -> bool:
        """Whether ``handle_console`` runs this command: a ``py*`` command, or gdb's ``break`` on a
        ``.py`` line (``b test_ops.py:42``), which means a Python breakpoint."""
        words = text.strip().split(None, 1)
        if not words:
            return False
        if words[0] in self.COMMANDS:
            return True
        return words[0] in self.GDB_BREAK and len(words) > 1 and _py_location(words[1])

    async def handle_console(self, text: str, frame: int = 0) -> str | None:
        """Run a ``py*`` console command (or ``break FILE.py:LINE``). None if ``text`` is not one;
        raises EngineError on bad input. ``frame``: the selected Python frame (the agent's numbering),
        where pyprint, pylocals and the steps act unless told otherwise."""
        if not self.claims_console(text):
            return None
        words = text.strip().split(None, 1)
        cmd, rest = words[0], (words[1].strip() if len(words) > 1 else "")
        if cmd in self.GDB_BREAK:
            cmd = "pytbreak" if cmd == "tbreak" else "pybreak"
        if cmd in ("pybreak", "pyb", "pytbreak"):
            return await self._cmd_break(rest, temporary=cmd == "pytbreak")
        if cmd == "pydelete":
            if not rest:
                n = len(self._bps)
                await self.delete_all_breakpoints()
                return f"deleted {n} Python breakpoint{'s' if n != 1 else ''}"
            for i in _ids(rest):
                await self.delete_breakpoint(i)
            return f"deleted Python breakpoint {rest}"
        if cmd in ("pyenable", "pydisable"):
            ids = _ids(rest) if rest else list(self._bps)
            for i in ids:
                await self.enable_breakpoint(i, cmd == "pyenable")
            return "\n".join(self._bps[i].describe() for i in ids if i in self._bps) or "no Python breakpoints"
        if cmd == "pycondition":
            parts = rest.split(None, 1)
            if not parts:
                raise EngineError("usage: pycondition ID [EXPRESSION]")
            bp = await self.set_condition(_ids(parts[0])[0], parts[1] if len(parts) > 1 else None)
            return bp.describe()
        if cmd == "pyignore":
            parts = rest.split()
            if len(parts) != 2 or not parts[1].isdigit():
                raise EngineError("usage: pyignore ID COUNT")
            bp = await self.set_ignore_count(_ids(parts[0])[0], int(parts[1]))
            return bp.describe()
        if cmd == "pyinfo":
            return self._info_text()
        if cmd in ("pystep", "pynext", "pyfinish", "pystepnative"):
            mode = {"pystep": self.step_into, "pynext": self.step_over, "pyfinish": self.step_out,
                    "pystepnative": self.step_into_native}[cmd]
            await mode(int(rest) if rest.isdigit() else frame)
            return ""
        if cmd == "pyfinishnative":
            await self.step_out_to_python()
            return ""
        if cmd == "pycontinue":
            await self.resume()
            return ""
        if cmd == "pycatch":
            return await self._cmd_catch(rest)
        if cmd in ("pyprint", "pyeval"):
            if not rest:
                raise EngineError(f"usage: {cmd} EXPRESSION")
            return await self.evaluate(rest, frame)
        if cmd == "pylocals":
            rows = await self.python_locals(int(rest) if rest.isdigit() else frame)
            return "\n".join(f"{n} = {v}  ({t})" for n, t, v in rows) or "no locals"
        return _HELP

    async def _cmd_break(self, rest: str, temporary: bool) -> str:
        if not rest:
            raise EngineError("usage: pybreak [FILE:]LINE [if CONDITION]")
        cond = None
        loc = rest
        m = _split_if(rest)
        if m is not None:
            loc, cond = m
        loc = loc.strip()
        if ":" in loc:
            file, _, line_s = loc.rpartition(":")
        else:
            stop = self.at_agent_stop()
            if stop is None or not stop.file:
                raise EngineError("give FILE:LINE (there is no current Python file)")
            file, line_s = stop.file, loc
        if not line_s.strip().isdigit():
            raise EngineError(f"{line_s!r} is not a line number")
        bp = await self.add_breakpoint(os.path.expanduser(file), int(line_s), condition=cond, temporary=temporary)
        text = bp.describe()
        if bp.message and bp.verified:
            text += f"\n{bp.message}"
        if not self.info.connected:
            text += "\n(the Python agent is not running yet: the breakpoint is set when it starts)"
        return text

    async def _cmd_catch(self, rest: str) -> str:
        words = rest.split()
        if not words:
            o = self._opts
            raised = ", ".join(o["raise"]) or "none"
            return f"uncaught exceptions: {'stop' if o['uncaught'] else 'ignore'}; raised: {raised}; " \
                   f"failing tests: {'stop' if o['failure'] else 'ignore'}"
        if words[0] == "off":
            await self.set_exception_breaks(uncaught=False, raised=[])
        elif words[0] == "uncaught":
            await self.set_exception_breaks(uncaught=not (len(words) > 1 and words[1] == "off"))
        elif words[0] == "raise":
            names = [w for x in words[1:] for w in x.split(",") if w]
            await self.set_exception_breaks(raised=[] if names == ["off"] else names or ["*"])
        elif words[0] == "failure":
            await self.set_break_on_failure(not (len(words) > 1 and words[1] == "off"))
        else:
            raise EngineError("usage: pycatch [uncaught [off] | raise [TYPE ...|off] | failure [off] | off]")
        return await self._cmd_catch("")

    def _info_text(self) -> str:
        i = self.info
        lines = [f"Python agent: {i.status}" + (f" ({i.message})" if i.message else "")]
        if i.python:
            lines[0] += f"; Python {i.python}, {i.backend}"
        for b in self.breakpoints:
            lines.append(b.describe())
        if not self._bps:
            lines.append("no Python breakpoints")
        return "\n".join(lines)

    # -- the stop hook and the refresh stage ------------------------------------------------------

    def _is_stub_stop(self, st: DebuggerState) -> bool:
        stop = st.stop
        return (
            self._stub_bp is not None
            and stop is not None
            and stop.reason == "breakpoint-hit"
            and (stop.bkptno or "").split(".")[0] == self._stub_bp
        )

    def _stop_hook(self, st: DebuggerState) -> DebuggerState:
        st = st.evolve(python_breakpoints=self.breakpoints).with_python(agent=self.info)
        if st.process is not ProcessState.STOPPED:
            return st
        if self._transient_native:
            # gdb's finish back to the eval loop of a step armed from a native stop.
            return st.with_python(transient=True)
        if self._transient and self._last_stop is not None:
            # A stop of a request in progress (its answer, or the interrupt of its fallback).
            self._transient_gens.add(st.generation)
            return st.with_python(transient=True, stop=self._last_stop, stop_generation=self._last_stop_gen)
        if self._is_stub_stop(st):
            return st.with_python(stop_pending=True)
        stop = st.stop
        if (
            self._native_tbreak is not None
            and stop is not None
            and stop.reason == "breakpoint-hit"
            and stop.bkptno == self._native_tbreak
        ):
            self._native_tbreak = None  # gdb deletes a temporary breakpoint when it hits
            return st.with_python(native_step=True)
        return st

    async def _stage(self, session, generation: int) -> None:
        st = session.state
        if st.generation != generation or not st.is_stopped:
            return
        if generation in self._transient_gens and not self._transient:
            self._transient_gens.discard(generation)
            return
        if not self._is_stub_stop(st):
            if self._step_token and self.info.connected:
                # A native stop interrupts the Python step: cancel it, unless step_out_to_python() revives it.
                self._interrupted_token = self._step_token
                self._step_token = 0
                await self._write_ctl(0, 0)
            return
        if self._transient or generation in self._transient_gens:
            self._transient_gens.discard(generation)
            return
        if self._native_tbreak is not None:
            # "step into native" set a temporary breakpoint the call never reached (an exception first).
            number, self._native_tbreak = self._native_tbreak, None
            if st.breakpoint(number) is not None:
                await session.cmd(f"-break-delete {number}", check=False)
                await session.refresh_breakpoints()
        data = await self._read_out()
        stop = AgentStop.from_json(data, st.stop.thread_id if st.stop else None)
        if data.get("deleted_bp") is not None:  # a temporary breakpoint that just stopped the program
            self._bps.pop(int(data["deleted_bp"]), None)
        self._apply_statuses(data.get("bps") or [])
        self._step_token = 0
        self._interrupted_token = 0
        if stop.reason == P.R_REPLY:
            # An answer nobody waits for any more (a request that timed out): let the program go on.
            await self._answer(stop, [{"op": "resume", "mode": P.M_CONTINUE}])
            await session.cmd("-exec-continue")
            return
        if stop.reason == P.R_NATIVE_CALL and self._native_step and stop.native_addr:
            await self._native_call_stop(stop, data)
            return
        self._native_step = False
        self._last_stop = stop
        self._last_stop_gen = generation
        if stop.message:
            self._notify(f"tuidbg: {stop.describe()}")
        cur = session.state
        if cur.generation == generation:
            new = cur.evolve(python_breakpoints=self.breakpoints)
            session.set_state(new.with_python(stop=stop, stop_pending=False, stop_generation=generation))

    async def _native_call_stop(self, stop: AgentStop, data: Mapping[str, Any]) -> None:
        """"step into native" found the C function: break there and let the call happen."""
        s = self._session()
        self._native_step = False
        bp = await s.break_insert(address=int(stop.native_addr or 0), temporary=True)
        s.set_state(mark_internal(s.state, bp.number))
        self._native_tbreak = bp.number
        token = int(data.get("step_token") or next(self._tokens))
        await self._answer(stop, [{"op": "resume", "mode": P.M_NATIVE_ARMED, "token": token}], ctl_token=token)
        self._step_token = token
        self._step_native_id = stop.native_id
        await s.cmd("-exec-continue")

    def _on_state(self, st: DebuggerState) -> None:
        had_process, self._had_process = self._had_process, st.has_process
        if (
            self._stub_bp is None
            and self._hello is None
            and st.process is ProcessState.EXITED
            and self.config.mode == "run"
            and self.info.status == "waiting"
        ):
            self._set_info(
                status="failed",
                message="the Python agent did not start: the interpreter ignored PYTHONPATH or site "
                "(python -E, -I or -S?), or it is not CPython 3.9+",
            )
            return
        if self._stub_bp is None:
            return
        if had_process and st.process in (ProcessState.EXITED, ProcessState.DETACHED):
            # The stop function's address means nothing in the next process: drop its breakpoint now
            # (only this connection's: the next program's agent may say hello before this runs).
            self._spawn(self._after_exit(self._stub_bp, self._conn))
        elif self.info.connected and st.has_process and st.breakpoint(self._stub_bp) is None:
            if not self._stub_check_pending:  # someone deleted it (gdb's "delete"): put it back
                self._stub_check_pending = True
                self._spawn(self._restore_stub_bp())

    async def before_run(self, session) -> None:
        """The program starts again: the stop function's breakpoint of the previous process must go
        first (its address is unmapped in the new one and gdb would refuse to run)."""
        if self._stub_bp is not None and not session.state.has_process:
            await self._after_exit(self._stub_bp, self._conn)

    async def _after_exit(self, number: str, conn: int) -> None:
        if self._conn != conn or self._stub_bp != number:
            return
        self._stub_bp = None
        s = self.session
        try:
            if s is not None and s.client is not None and s.client.alive:
                await s.cmd(f"-break-delete {number}", check=False)
                await s.refresh_breakpoints()
            if self._conn == conn:
                self._set_info(status="disconnected", message="the program is not running")
        except (MIError, EngineError, Timeout, GdbExited) as exc:
            log.info("cannot remove the agent breakpoint: %s", exc)

    async def _restore_stub_bp(self) -> None:
        try:
            s = self._session()
            if self.info.stub_addr and self._stub_bp and s.state.breakpoint(self._stub_bp) is None:
                await self._insert_stub_bp(self.info.stub_addr)
        except (MIError, EngineError, Timeout, GdbExited) as exc:
            log.info("cannot restore the agent breakpoint: %s", exc)
        finally:
            self._stub_check_pending = False

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

    # -- stepping -------------------------------------------------------------------------------

    async def _step(self, mode: str, frame: int, thread: str | None) -> None:
        s = self._session()
        # After a request under way has had its answer (the program runs for it meanwhile, unseen).
        async with self._agent_lock():
            if self.at_agent_stop() is None:
                st = s.state
                if not st.is_stopped:
                    raise EngineError(f"cannot step: {s.process_description()}")
                await self._step_from_native(mode, frame, thread)
                return
            await self._step_at_agent_stop(mode, frame, thread)

    async def _step_at_agent_stop(self, mode: str, frame: int, thread: str | None) -> None:
        s = self._session()
        stop = self.at_agent_stop()
        if stop is None:
            st = s.state
            if not st.is_stopped:
                raise EngineError(f"cannot step: {s.process_description()}")
            await self._step_from_native(mode, frame, thread)
            return
        if stop.reason in (P.R_UNCAUGHT, P.R_FAILURE):
            raise EngineError("the exception has ended the code it was raised in: continue, or inspect the frames")
        token = next(self._tokens)
        op: dict[str, Any] = {"op": "resume", "mode": mode, "token": token, "frame": int(frame)}
        native_id = stop.native_id
        if thread is not None and thread != stop.thread_id:
            t = s.state.thread(thread)
            if t is None or t.lwp is None:
                raise EngineError(f"no thread {thread}")
            op["thread"] = t.lwp
            native_id = t.lwp
        await self._answer(stop, [op], ctl_token=token)
        self._step_token = token
        self._step_native_id = native_id
        self._interrupted_token = 0
        await s.cmd("-exec-continue")

    async def _step_from_native(self, mode: str, frame: int, thread: str | None) -> None:
        """A Python step from a native stop (SIGTRAP, a native breakpoint, an interrupt): the thread
        runs back to the eval loop of the Python frame (gdb's finish), then gdb calls the agent's arm
        function in it (only that thread running; every thread in a free-threaded build, where arming
        stops the world), which arms the step there; then the program goes on.
        ``frame`` counts the thread's Python frames from the innermost, the agent's left out."""
        s = self._session()
        if mode not in P.ARM_MODES:
            raise EngineError(f"cannot start a Python {mode} step from a native stop")
        if not self.info.connected or not self.info.arm_addr:
            raise EngineError("Python stepping needs tuidbg's Python agent running in the program")
        st = s.state
        tid = thread or st.selected_thread or st.current_thread
        ps = st.python.stack
        pt = ps.thread(tid) if ps is not None and ps.ok else None
        frames = user_frames(pt.frames) if pt is not None else ()
        if not 0 <= frame < len(frames):
            raise EngineError("no Python frame to step in this thread (its Python stack is not known)")
        level = frames[frame].native_level
        # The innermost Python frame's eval loop: the thread holds the GIL there once the native
        # frames above it have returned.
        inner = next((f.native_level for f in frames if f.native_level is not None), None)
        if inner is None or level is None:
            raise EngineError("cannot find the eval loop that runs this Python frame; use gdb's finish, then step")
        self._transient_native += 1
        try:
            if inner > 0:
                gen = st.generation
                # Where the eval loop resumes (without debug info gdb's *stopped of a finish may carry
                # no reason: the address tells).
                eval_frame = next((f for f in st.frames if f.level == inner), None) if st.frames_thread == tid else None
                if eval_frame is None:  # the stop's frames are not read yet (a key pressed right after it)
                    fetched, _more = await s.fetch_frames(tid, inner, 1)
                    eval_frame = fetched[0] if fetched else None
                back = eval_frame.addr if eval_frame is not None else None
                await s.cmd(f"-exec-finish --thread {tid} --frame {inner - 1}")
                await _wait(lambda: s.state.generation > gen and s.state.process is not ProcessState.RUNNING, 600)
                st = s.state
                stop = st.stop
                finished = stop is not None and (
                    stop.reason == "function-finished"
                    or (not stop.reason and stop.thread_id in (tid, None) and stop.frame is not None
                        and back is not None and mi.to_int(stop.frame.addr) == mi.to_int(back))
                )
                if st.process is not ProcessState.STOPPED or not finished:
                    # Something else stopped the program first (a breakpoint in another thread): show it.
                    s.set_state(st.with_python(transient=False))
                    return
            token = next(self._tokens)
            old = await self._scheduler_locking()
            # Free-threaded: arming instruments code, which stops the world, which waits for every thread;
            # the others run during the call (the few milliseconds it takes), or it never returns.
            await s.cmd(f"-gdb-set scheduler-locking {'off' if self.info.free_threaded else 'on'}")
            await s.cmd("-gdb-set unwindonsignal on", check=False)
            try:
                r = await s.cmd(
                    f"-data-evaluate-expression --thread {tid} --frame 0 "
                    + mi.quote(f"((int(*)(int,int,unsigned long))({self.info.arm_addr:#x}))"
                               f"({P.ARM_MODES.index(mode)},{frame},{token})"),
                    timeout=REQUEST_TIMEOUT,
                )
            finally:
                await s.cmd("-gdb-set unwindonsignal off", check=False)
                await s.cmd(f"-gdb-set scheduler-locking {old}", check=False)
            if mi.to_int(r.get("value")) != 1:
                raise EngineError("the Python agent could not arm the step in this thread")
        finally:
            self._transient_native -= 1
        # (no longer transient: the step's own stop may come before -exec-continue's answer)
        self._step_token = token
        self._step_native_id = st.thread(tid).lwp if st.thread(tid) else None
        self._interrupted_token = 0
        await s.cmd("-exec-continue")

    async def _finish_to_interpreter(self) -> None:
        """gdb's finish, repeated up to the first frame that belongs to the interpreter."""
        s = self._session()
        st = s.state
        tid = st.selected_thread or st.current_thread
        frames, _more = await s.fetch_frames(tid, 0, 256) if tid else ((), False)
        ranges = _interpreter_ranges(st.pid or self.config.pid)
        target = None
        for f in frames:
            if f.level == 0:
                continue
            a = mi.to_int(f.addr)
            if a is not None and any(lo <= a < hi for lo, hi in ranges):
                target = f.level
                break
        if target is None:
            await s.finish()
            return
        opt = f"--thread {tid} " if tid else ""
        await s.cmd(f"-exec-finish {opt}--frame {target - 1}")

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
                if stop_generation(self._session().state) != gen:
                    # the stop it was asked at is over (a step or continue went first)
                    raise EngineError("the program is no longer at the stop this was asked at")
                return await self._request_stopped_now(ops, timeout)

        task = asyncio.ensure_future(serialized())
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved, even if nobody waits
        return await asyncio.shield(task)

    async def _request_stopped_now(self, ops: list[dict], timeout: float) -> list[dict]:
        s = self._session()
        if s.state.device_focus is not None:
            # The answer runs the host thread, which would take cuda-gdb's focus off the device thread.
            raise EngineError("Python runs on the host: put the CUDA focus back on the host thread first")
        stop = self.at_agent_stop()
        if stop is None:
            raise EngineError("this needs the program stopped by the Python agent (a Python breakpoint or step)")
        tid = s.state.stop.thread_id if s.state.stop else None
        # What the user sees of this stop: it is still what they see once the answer is in. The short
        # run and stop in between are marked transient (the *running state inherits the mark).
        before = s.state
        self._transient += 1
        try:
            s.set_state(before.with_python(transient=True))
            await self._answer(stop, ops + [{"op": "reply"}])
            old = await self._scheduler_locking()
            gen = s.state.generation
            await s.cmd("-gdb-set scheduler-locking on")
            try:
                await s.cmd(f"-exec-continue --thread {tid}" if tid else "-exec-continue")
                try:
                    await _wait(lambda: s.state.generation > gen and s.state.process is not ProcessState.RUNNING,
                                FIRST_TRY)
                except Timeout:
                    # Most likely the agent's thread waits for the GIL to go to a thread gdb keeps frozen
                    # (CPython hands it over when another thread asked for it). Let every thread run until
                    # the answer comes: other threads may run a little of their code meanwhile.
                    log.info("the agent did not answer with only its thread running; resuming all threads")
                    await s.interrupt()
                    await s.cmd(f"-gdb-set scheduler-locking {old}", check=False)
                    gen = s.state.generation
                    await s.cmd("-exec-continue")
                    await _wait(lambda: s.state.generation > gen and s.state.process is not ProcessState.RUNNING,
                                timeout)
            except Timeout:
                await s.interrupt()
                # a native stop now (the interrupt), shown as it is
                s.set_state(s.state.with_python(transient=False, stop=None))
                raise EngineError("the Python agent did not answer (the expression may be waiting for another thread)")
            finally:
                await s.cmd(f"-gdb-set scheduler-locking {old}", check=False)
            st = s.state
            if not self._is_stub_stop(st):
                s.set_state(st.with_python(transient=False, stop=None))
                raise EngineError(f"the program stopped elsewhere while evaluating: {st.stop.describe() if st.stop else '?'}")
            data = await self._read_out()
            replies = data.get("replies") or []
            new_stop = replace(stop, seq=int(data.get("seq", stop.seq)))
            self._last_stop = new_stop
            cur = s.state
            # The program is where it was: the view of the stop before the request (frames, selection,
            # Python stacks) under the new stop's generation; that stop's refresh brings the same again.
            view = before.evolve(generation=cur.generation, stop=cur.stop, process=cur.process)
            s.set_state(view.with_python(stop=new_stop, transient=False, stop_generation=self._last_stop_gen))
            await self._reselect(before)
            return replies
        finally:
            self._transient -= 1
            if s.state.python.transient and self._transient == 0:
                # a request that failed on the way (gdb's error, gdb gone): show what there is
                s.set_state(s.state.with_python(transient=False))

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
            return
        await self._settled()
        s = self._session()
        ops = [{"op": "set_bps", "bps": self._bp_defs()}]
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

    async def _push_options(self) -> None:
        if not self.info.connected:
            return
        ops = [dict(op="options", **self._opts)]
        await self._settled()
        st = self._session().state
        if self.at_agent_stop(st) is not None:
            await self._request_stopped(ops)
        elif st.is_running:
            await self._request_running(ops)
        else:
            await self._send({"ops": ops})

    def _bp_defs(self) -> list[dict]:
        return [
            {"id": b.id, "file": b.file, "line": b.line, "cond": b.condition, "ignore": b.ignore_count,
             "enabled": b.enabled, "temporary": b.temporary, "rev": b.rev}
            for b in self.breakpoints
        ]

    def _apply_statuses(self, statuses: Iterable[Mapping[str, Any]]) -> None:
        changed = False
        for x in statuses:
            bp = self._bps.get(int(x.get("id", -1)))
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

    # -- connection -----------------------------------------------------------------------------

    async def _listen(self) -> None:
        if self._server is not None:
            return
        self._dir = tempfile.mkdtemp(prefix="tuidbg-")
        os.chmod(self._dir, 0o700)
        self._sock_path = os.path.join(self._dir, "agent.sock")
        self._server = await asyncio.start_unix_server(self._on_client, path=self._sock_path, limit=1 << 24)

    async def _close_server(self) -> None:
        # Every connection, the agent's and any still saying hello: an agent whose hello was not read
        # yet must see the end of the conversation (and switch itself off), not wait on it forever.
        for w in list(self._conns):
            w.close()
        self._conns.clear()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    async def _set_program_env(self) -> None:
        s = self._session()
        orig = self.config.program_env.get("PYTHONPATH", os.environ.get("PYTHONPATH"))
        path = BOOT_DIR + (os.pathsep + orig if orig else "")
        env = {"PYTHONPATH": path, P.ENV_SOCKET: self._sock_path or "", P.ENV_TOKEN: self._token}
        if orig is not None:
            env[P.ENV_ORIG_PYTHONPATH] = orig
        else:
            await s.cmd(f"-interpreter-exec console {mi.quote('unset environment ' + P.ENV_ORIG_PYTHONPATH)}", check=False)
        for k, v in env.items():
            await s.cmd(f"-gdb-set environment {k}={v}")

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._server is None:  # (closing)
            writer.close()
            return
        self._conns.add(writer)
        try:
            await self._serve(reader, writer)
        finally:
            self._conns.discard(writer)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
            msg = json.loads(line.decode("utf-8", "replace")) if line else {}
        except (ValueError, OSError):
            writer.close()
            return
        if msg.get("ev") != "hello" or msg.get("token") != self._token:
            writer.close()
            return
        if self._writer is not None:
            self._writer.close()
        self._writer = writer
        try:
            await self._on_hello(msg)
            while True:
                raw = await reader.readline()
                if not raw:
                    break
                try:
                    self._on_agent_message(json.loads(raw.decode("utf-8", "replace")))
                except ValueError:
                    continue
        except (OSError, asyncio.IncompleteReadError, MIError, EngineError, Timeout, GdbExited) as exc:
            log.info("agent connection: %s", exc)
        except asyncio.CancelledError:
            # The session is closing. End quietly: asyncio's stream callback asks a cancelled
            # handler task for its exception and logs an error for it.
            writer.close()
        finally:
            if self._writer is writer:
                self._writer = None
                self._connected.clear()
                if self.info.status == "connected":
                    self._set_info(status="disconnected", message="the Python agent closed the connection")

    async def _on_hello(self, msg: dict[str, Any]) -> None:
        self._hello = msg
        self._conn += 1
        self._injection = None  # it ran
        await self._delete_stub_bp()
        self._step_token = self._interrupted_token = 0
        self._last_stop = None
        info = AgentInfo(
            status="connected",
            pid=msg.get("pid"),
            python=msg.get("python"),
            backend=msg.get("backend"),
            how=msg.get("how"),
            stub_addr=msg.get("stub") or None,
            arm_addr=msg.get("arm") or None,
            mailbox=msg.get("mailbox") or None,
            main_native_id=msg.get("main_native_id"),
            control_native_id=msg.get("control_native_id"),
            agent_dir=str(msg.get("agent_dir") or AGENT_DIR),
            inject=self.info.inject,
            inject_note=self.info.inject_note,
            free_threaded=bool(msg.get("free_threaded")),
        )
        if msg.get("error") or not info.stub_addr:
            self._set_info(status="failed", message=str(msg.get("error") or "no stop function"), python=info.python)
            await self._send({"id": "init", "ops": []})
            self._notify(f"tuidbg: the Python agent cannot work in this process: {msg.get('error')}")
            return
        await self._insert_stub_bp(int(info.stub_addr))
        self.info = info
        self._connected.set()
        await self._send(
            {"id": "init", "ops": [{"op": "set_bps", "bps": self._bp_defs()}, dict(op="options", **self._opts)]}
        )
        self._publish()

    def restore_bytes(self) -> dict[int, bytes]:
        """The agent's stop function, as it was before gdb put its breakpoint there (for a session that
        must leave the process without gdb's help: ``DebugSession.abandon``)."""
        return dict(self._stub_code)

    def abandon(self) -> None:
        """Without gdb (hung or gone): tell the agent over its own socket to switch itself off. Synchronous:
        the socket's transport sends at once when its buffer is empty."""
        w = self._writer
        if w is not None and not w.is_closing():
            try:
                w.write((json.dumps({"ops": [{"op": "detach"}]}) + "\n").encode())
            except (OSError, RuntimeError):
                pass

    async def _insert_stub_bp(self, addr: int) -> None:
        s = self._session()
        pid = s.state.pid or self.config.pid
        orig = rescue.read_memory(int(pid), addr, 4) if pid else None
        self._stub_code = {addr: orig} if orig else {}
        try:
            bp = await s.break_insert(address=addr)
        except MIError as exc:
            if not s.state.is_running:
                raise
            # A gdb without asynchronous MI (old cuda-gdb) cannot insert while the program runs.
            log.info("inserting the agent breakpoint while running failed (%s); interrupting", exc.message)
            await s.interrupt()
            bp = await s.break_insert(address=addr)
            await s.cmd("-exec-continue")
        self._stub_bp = bp.number
        s.set_state(mark_internal(s.state, bp.number))

    async def _delete_stub_bp(self) -> None:
        if self._stub_bp is None or self.session is None:
            return
        number, self._stub_bp = self._stub_bp, None
        s = self.session
        if s.client is not None and s.client.alive:
            await s.cmd(f"-break-delete {number}", check=False)
            await s.refresh_breakpoints()

    def _on_agent_message(self, msg: dict[str, Any]) -> None:
        if "re" in msg:
            rid = msg.get("re")
            replies = msg.get("replies") or []
            if rid == "init":
                self._apply_statuses(_reply(replies, "set_bps").get("bps") or [])
                return
            fut = self._requests.pop(rid, None) if isinstance(rid, int) else None
            if fut is not None and not fut.done():
                fut.set_result(replies)
            for r in replies:
                if r.get("op") == "set_bps":
                    self._apply_statuses(r.get("bps") or [])
            return
        ev = msg.get("ev")
        if ev == "bps":
            self._apply_statuses(msg.get("bps") or [])

    async def _send(self, obj: dict[str, Any]) -> None:
        w = self._writer
        if w is None:
            return
        w.write((json.dumps(obj) + "\n").encode())
        await w.drain()

    # -- attach: loading the agent into a running process ------------------------------------------

    async def _inject(self) -> None:
        s = self._session()
        pid = s.state.pid or self.config.pid
        self._share_with_target(pid)
        version = await self._target_hexversion()
        why = "Python before 3.14 has no PEP 768 remote execution"
        if version is not None and version >= 0x030E0000:
            script = self._write_boot_script(pid)
            ok, why = await self._inject_pep768(script)
            if ok:
                self._set_info(status="waiting", message="the agent starts at the main thread's next Python line",
                               inject=INJECT_PEP768, inject_note=None)
                self._say_injected(pid)
                return
        log.info("PEP 768 injection not used (%s); using a pending call", why)
        await self._inject_pending_call(self._boot_code())
        self._set_info(status="waiting", message="the agent starts when the main thread runs Python code",
                       inject=INJECT_PENDING, inject_note=why)
        self._say_injected(pid)

    def _say_injected(self, pid: int | None) -> None:
        """Which path loaded the agent (and why not PEP 768): in the log and, through the listeners, the
        UI's console."""
        text = f"Python agent injected into process {pid} {INJECT_WORDS[self.info.inject]}"
        if self.info.inject_note:
            text += f" (not PEP 768: {self.info.inject_note})"
        log.info("%s", text)
        self._notify(text)

    def _boot_args(self) -> dict[str, str]:
        return {"socket": self._sock_path or "", "token": self._token, "parent": TUIDBG_PARENT}

    def _boot_code(self) -> str:
        """The Python statement the target runs to load the agent: self-contained (it needs no file of this
        session, which is gone once tuidbg detaches) and it can never raise. A pending call that fails
        kills the program's main thread ("SystemError: error return without exception set"), so every
        error is swallowed here; the boot script reports its own on the program's stderr."""
        boot = os.path.join(BOOT_DIR, "attach.py")
        args = self._boot_args()
        return (
            "try:\n"
            f" exec(compile(open({boot!r}).read(), {boot!r}, 'exec'), "
            f"{{'__name__': '_tuidbg_attach', 'TUIDBG_ARGS': {args!r}}})\n"
            "except BaseException:\n"
            " pass\n"
        )

    def _write_boot_script(self, pid: int | None) -> str:
        """3.14's PEP 768 runs a script file: the same statement, in this session's private directory."""
        assert self._dir is not None
        path = os.path.join(self._dir, f"attach-{pid}.py")
        with open(path, "w") as f:
            f.write("# tuidbg: loads tuidbg's agent into this process (written by tuidbg attach)\n")
            f.write(self._boot_code())
        if self._shared:
            os.chmod(path, 0o644)
        return path

    def _share_with_target(self, pid: int | None) -> None:
        """tuidbg (root) attaching to another user's process: that process must read the boot script
        and connect to the socket. The directory stays unlisted; the token guards the conversation."""
        try:
            self._shared = os.stat(f"/proc/{pid}").st_uid != os.getuid()
        except OSError:
            self._shared = False
        if self._shared and self._dir:
            os.chmod(self._dir, 0o711)
            if self._sock_path:
                os.chmod(self._sock_path, 0o666)

    async def _cancel_injection(self) -> None:
        """Before detaching from a process whose agent never said hello: the load queued in it must not
        run once tuidbg is gone (it would find no debugger, or, before this fix, no boot file)."""
        inj, self._injection = self._injection, None
        if inj is None or self._conn:
            return
        s = self._session()
        kind = inj[0]
        try:
            if kind == "pending":
                # The queued call runs PyRun_SimpleString on this page: make it a statement that does nothing.
                await s.cmd(f"-data-write-memory-bytes {inj[1]:#x} {b'pass'.hex()}00")
            elif kind == "pep768":
                await s.cmd(f"-data-write-memory-bytes {inj[1]:#x} {struct.pack('<i', 0).hex()}")
        except (MIError, Timeout) as exc:
            log.info("cancelling the agent's load: %s", exc)

    async def _target_hexversion(self) -> int | None:
        r = await self._session().cmd('-data-evaluate-expression "*(unsigned int*)&Py_Version"', check=False)
        if r.cls != "done":
            return None  # no Py_Version: 3.10 or older
        return mi.to_int(r.get("value"))

    async def _inject_pending_call(self, source: str) -> None:
        """3.9-3.13: Py_AddPendingCall(PyRun_SimpleString, page) as gdb inferior calls.

        The page comes from an inferior mmap (a plain system call: unlike malloc it takes no lock that a
        frozen thread could hold) and holds ``source`` itself. The pending call runs in the main thread at
        its next eval-breaker check; until the agent says hello, ``_cancel_injection`` can void it.
        """
        s = self._session()
        code = source.encode() + b"\0"
        if len(code) > 4096:
            raise EngineError(f"the agent's boot statement is {len(code)} bytes, over one page")
        await s.cmd("-gdb-set unwindonsignal on", check=False)
        try:
            r = await s.cmd(
                '-data-evaluate-expression "(long)((void*(*)(void*,unsigned long,int,int,int,long))mmap)(0,4096,3,34,-1,0)"',
                timeout=30,
            )
            page = mi.to_int(r.get("value"))
            if page is None or page <= 0:
                raise EngineError(f"mmap in the program failed ({r.get('value')})")
            await s.cmd(f"-data-write-memory-bytes {page:#x} {code.hex()}")
            r = await s.cmd(
                "-data-evaluate-expression "
                + mi.quote(f"((int(*)(void*,void*))Py_AddPendingCall)((void*)PyRun_SimpleString,(void*){page:#x})"),
                timeout=30,
            )
            if mi.to_int(r.get("value")) != 0:
                raise EngineError("Py_AddPendingCall refused (its queue is full)")
            self._injection = ("pending", page)
        finally:
            await s.cmd("-gdb-set unwindonsignal off", check=False)

    async def _inject_pep768(self, script: str) -> tuple[bool, str]:
        """3.14+: write the PEP 768 fields of the main thread state (no inferior call at all).

        The same fields in a free-threaded build (the eval-breaker bit is the one CPython's own
        ``sys.remote_exec`` sets, its stop-the-world bit: a thread that finds no stop-the-world under
        way goes on at once). The debugger-support offsets are found by their shape in ``_Py_DebugOffsets`` (the last block: ..., pending-call offset 0, script-path
        offset 4, script-path size 512) rather than by a hard-coded position, because the struct grew
        during 3.14's betas.
        """
        s = self._session()
        r = await s.cmd('-data-evaluate-expression "(unsigned long)&_PyRuntime"', check=False)
        rt = mi.to_int(r.get("value")) if r.cls == "done" else None
        if not rt:
            return False, "no _PyRuntime symbol"
        blob = await s.read_memory(rt, 2048)
        if blob[:8] != b"xdebugpy":
            return False, "no _Py_DebugOffsets cookie"
        words = struct.unpack_from("<256Q", blob)
        interp_head_off, threads_main_off = words[5], words[10]
        dbg = None
        for i in range(30, 256 - 6):
            eb, rds, rde, pend, path_off, size = words[i : i + 6]
            if pend == 0 and path_off == 4 and size == 512 and 0 < eb < 1 << 16 and 0 < rds < 1 << 16 and 0 < rde < 1 << 20:
                dbg = (eb, rds, rde, pend, path_off, size)
                break
        if dbg is None:
            return False, "debugger support offsets not found"
        eb, rds, rde, pend, path_off, size = dbg
        interp = struct.unpack("<Q", await s.read_memory(rt + interp_head_off, 8))[0]
        if not interp:
            return False, "no interpreter"
        enabled = struct.unpack("<i", await s.read_memory(interp + rde, 4))[0]
        if enabled != 1:
            return False, "remote debugging is disabled in it (PYTHON_DISABLE_REMOTE_DEBUG or -X disable-remote-debug)"
        tstate = struct.unpack("<Q", await s.read_memory(interp + threads_main_off, 8))[0]
        if not tstate:
            return False, "no main thread state"
        path = script.encode() + b"\0"
        if len(path) > size:
            return False, "script path too long"
        await s.cmd(f"-data-write-memory-bytes {tstate + rds + path_off:#x} {path.hex()}")
        await s.cmd(f"-data-write-memory-bytes {tstate + rds + pend:#x} {struct.pack('<i', 1).hex()}")
        self._injection = ("pep768", tstate + rds + pend)
        breaker = struct.unpack("<Q", await s.read_memory(tstate + eb, 8))[0]
        await s.cmd(f"-data-write-memory-bytes {tstate + eb:#x} {struct.pack('<Q', breaker | (1 << 5)).hex()}")
        return True, ""

    # -- detach ------------------------------------------------------------------------------

    def _wrap_detach(self, session) -> None:
        # DebugSession has no hook before detaching; wrap this session's detach so quitting an attached
        # process always switches the agent off first.
        original = session.detach

        async def detach() -> None:
            await self.shutdown()
            await original()

        session.detach = detach

    # -- small things --------------------------------------------------------------------------

    def _session(self):
        if self.session is None:
            raise EngineError("the Python agent is not part of a started session")
        return self.session

    def _state(self) -> DebuggerState | None:
        return self.session.state if self.session is not None else None

    def _cwd(self) -> str:
        return self.config.cwd or os.getcwd()

    def _set_info(self, **changes) -> None:
        self.info = replace(self.info, **changes)
        if changes.get("status") and changes["status"] != "connected":
            self._connected.clear()
        self._publish()

    def _publish(self) -> None:
        s = self.session
        if s is None:
            return
        st = s.state
        st = st.evolve(python_breakpoints=self.breakpoints).with_python(agent=self.info)
        s.set_state(st)

    def _notify(self, text: str) -> None:
        for cb in list(self._listeners):
            try:
                cb(text)
            except Exception:
                log.exception("agent message listener failed")

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._bg.add(task)
        task.add_done_callback(self._bg.discard)


# ---------------------------------------------------------------------------------------------


_HELP = """Python debugging commands (tuidbg's agent):
  pybreak [FILE:]LINE [if COND]   set a Python breakpoint (pytbreak: temporary);
                                  gdb's break/tbreak on FILE.py:LINE does the same
  pydelete [ID ...]               delete Python breakpoints (all without IDs)
  pyenable / pydisable [ID ...]   enable or disable them
  pycondition ID [COND]           set or clear a condition
  pyignore ID COUNT               ignore the next COUNT hits
  pyinfo                          the agent and the Python breakpoints
  pynext / pystep / pyfinish [FRAME]  step over / into / out (Python; the selected frame)
  pystepnative                    step into the first native function the line calls
  pyfinishnative                  from a native frame, run back to the Python caller
  pycontinue                      continue
  pycatch [uncaught|raise TYPE...|failure|off]  stop on exceptions / failing tests
  pyprint EXPR                    evaluate Python in the selected Python frame
  pylocals [FRAME]                the locals of a Python frame (the selected one)"""


def _reply(replies: Sequence[Mapping[str, Any]] | None, op: str) -> Mapping[str, Any]:
    for r in replies or ():
        if r.get("op") == op:
            return r
    return {}


def _py_location(rest: str) -> bool:
    """``FILE.py:LINE`` (with an optional ``if COND``)."""
    m = _split_if(rest)
    loc = (m[0] if m is not None else rest).strip()
    file, sep, line = loc.rpartition(":")
    return bool(sep) and file.endswith((".py", ".pyw")) and line.strip().isdigit()


def _ids(text: str) -> list[int]:
    out = []
    for w in text.replace(",", " ").split():
        w = w[2:] if w.startswith("py") else w
        if not w.isdigit():
            raise EngineError(f"{w!r} is not a Python breakpoint number")
        out.append(int(w))
    return out


def _split_if(text: str) -> tuple[str, str] | None:
    try:
        words = shlex.split(text, posix=False)
    except ValueError:
        words = text.split()
    if "if" not in words:
        return None
    idx = text.find(" if ")
    if idx < 0:
        return None
    return text[:idx], text[idx + 4 :].strip()


def _canon(path: str, base: str) -> str:
    p = os.path.expanduser(path)
    if not os.path.isabs(p):
        p = os.path.join(base, p)
    return os.path.realpath(p)


def _interpreter_ranges(pid: int | None) -> list[tuple[int, int]]:
    """Address ranges of the interpreter's code in a process (libpython, or the executable)."""
    if not pid:
        return []
    try:
        exe = os.path.realpath(f"/proc/{pid}/exe")
        with open(f"/proc/{pid}/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) < 6:
            continue
        path = parts[5].strip()
        base = os.path.basename(path)
        if path == exe or (base.startswith("libpython3") and ".so" in base):
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            out.append((lo, hi))
    return out


async def _wait(pred: Callable[[], bool], timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        if loop.time() > deadline:
            raise Timeout("the Python agent", timeout)
        await asyncio.sleep(0.002)
