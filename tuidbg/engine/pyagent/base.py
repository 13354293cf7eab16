"""What the parts of ``PyAgent`` share: its constants, its attributes (made in ``PyAgent.__init__``)
and the small helpers every part uses (see ``tuidbg.engine.pyagent``)."""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import replace
from typing import Any, Callable, Iterator, Mapping, Sequence

from tuidbg.engine.errors import EngineError, Timeout
from tuidbg.engine.extensions import Extension
from tuidbg.engine.python.model import AGENT_DIR, AgentInfo, AgentStop, PyBreakpoint
from tuidbg.engine.state import DebuggerState

log = logging.getLogger("tuidbg.engine")

BOOT_DIR = os.path.join(AGENT_DIR, "boot")
TUIDBG_PARENT = os.path.dirname(os.path.dirname(AGENT_DIR))


REQUEST_TIMEOUT = 5.0
TABLE_TIMEOUT = 1.0  # how long the agent's thread may take to apply a table while the others wait
FIRST_TRY = 1.0  # answering with only the agent's thread running; then with every thread
FIRST_READ = 4096 - 64  # the header and a typical stop in one read; larger ones take a second


class AgentBase(Extension):
    """The agent controller's shared attributes and helpers."""

    config: Any  # SessionConfig
    session: Any  # the DebugSession, once configured
    _bps: dict[int, PyBreakpoint]
    _next_bp: int
    _opts: dict[str, Any]
    info: AgentInfo
    _dir: str | None
    _sock_path: str | None
    _token: str
    _server: asyncio.AbstractServer | None
    _writer: asyncio.StreamWriter | None
    _conn_task: asyncio.Task | None
    _connected: asyncio.Event
    _hello: dict[str, Any] | None
    _stub_bp: str | None
    _transient_native: int  # > 0 while a step is armed from a native stop
    _last_stop: AgentStop | None
    _last_stop_gen: int  # the state generation that _last_stop arrived with
    _request_lock: asyncio.Lock | None  # made in the running loop (Python 3.9)
    _pending_table: asyncio.Future | None  # a breakpoint table sent at a native stop
    _transient: int
    _transient_gens: set[int]
    _requests: dict[int, asyncio.Future]
    _req_ids: Iterator[int]
    _tokens: Iterator[int]
    _step_token: int  # the Python step in progress (0: none)
    _step_native_id: int | None  # the thread it is on
    _interrupted_token: int  # a step a native stop interrupted (for step_out_to_python)
    _native_step: bool  # "step into native" in progress
    _native_tbreak: str | None
    _listeners: list[Callable[[str], None]]
    _sched_lock: str | None
    _closing: bool
    _bg: set[asyncio.Task]
    _stub_check_pending: bool
    _had_process: bool
    _conn: int  # counts agent connections (one per process)
    _injection: tuple | None  # the agent's load queued in an attached process, until hello
    _shared: bool  # the session's directory is shared with another user's process
    _stub_code: dict[int, bytes]  # the stop function's code under gdb's breakpoint
    _conns: set[asyncio.StreamWriter]  # every connection to the agent's socket

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


def _reply(replies: Sequence[Mapping[str, Any]] | None, op: str) -> Mapping[str, Any]:
    for r in replies or ():
        if r.get("op") == op:
            return r
    return {}


async def _wait(pred: Callable[[], bool], timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        if loop.time() > deadline:
            raise Timeout("the Python agent", timeout)
        await asyncio.sleep(0.002)
