"""What the parts of ``PyAgent`` share: its constants, its attributes (made in ``PyAgent.__init__``)
and the small helpers every part uses (see ``tuidbg.engine.pyagent``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import replace
from typing import Any, AsyncIterator, Callable, Iterator, Mapping, Sequence

from tuidbg.engine.errors import EngineError, Timeout
from tuidbg.engine.extensions import Extension
from tuidbg.engine.listeners import Channel
from tuidbg.engine.python.model import AGENT_DIR, AgentInfo, AgentStop, PyBreakpoint
from tuidbg.engine.state import DebuggerState, ProcessState

log = logging.getLogger("tuidbg.engine")

BOOT_DIR = os.path.join(AGENT_DIR, "boot")
TUIDBG_PARENT = os.path.dirname(os.path.dirname(AGENT_DIR))


REQUEST_TIMEOUT = 5.0
# how long closing waits for a request to the agent under way (an inferior call, which the agent ends after
# EVAL_TIMEOUT_MS, cannot be cut short) before it lets the program go all the same (requests._quiesce)
QUIESCE_TIMEOUT = 6.0
TABLE_TIMEOUT = 1.0  # how long the agent's thread may take to apply a table while the others wait
FIRST_TRY = 1.0  # answering with only the agent's thread running; then with every thread
FIRST_READ = 4096 - 64  # the header and a typical stop in one read; larger ones take a second


class ProcLink:
    """The agent in one process: its connection, its stop function's breakpoint, its stop and step.
    ``PyAgent`` has one per process that said hello (``tuidbg run --children``: the program's
    children too); the one of the selected process is current, and the attributes named in
    ``_PER_PROCESS`` read and write it."""

    def __init__(self, info: AgentInfo, pid: int | None = None) -> None:
        self.pid = pid
        self.conn = 0  # which hello made it (PyAgent._conn then)
        self.info = info
        self.writer: asyncio.StreamWriter | None = None
        self.connected = asyncio.Event()
        self.hello: dict[str, Any] | None = None
        self.stub_bp: str | None = None
        self.stub_code: dict[int, bytes] = {}  # the stop function's code under gdb's breakpoint
        self.last_stop: AgentStop | None = None
        self.last_stop_gen = 0  # the state generation that last_stop arrived with
        self.pending_table: asyncio.Future | None = None  # a breakpoint table sent at a native stop
        self.step_token = 0  # the Python step in progress (0: none)
        self.step_native_id: int | None = None  # the thread it is on
        self.interrupted_token = 0  # a step a native stop interrupted (for step_out_to_python)
        self.native_step = False  # "step into native" in progress
        self.native_tbreak: str | None = None
        self.injection: tuple | None = None  # tuidbg attach: the agent's load queued in it, until hello


def _per_process(name: str) -> property:
    return property(lambda self: getattr(self._link, name), lambda self, v: setattr(self._link, name, v))


class AgentBase(Extension):
    """The agent controller's shared attributes and helpers."""

    config: Any  # SessionConfig
    session: Any  # the DebugSession, once configured
    _bps: dict[int, PyBreakpoint]
    _next_bp: int
    _opts: dict[str, Any]
    _link: ProcLink  # the selected process's
    _links: dict[int, ProcLink]  # by pid, every process whose agent said hello
    info = _per_process("info")
    _writer = _per_process("writer")
    _connected = _per_process("connected")
    _hello = _per_process("hello")
    _stub_bp = _per_process("stub_bp")
    _stub_code = _per_process("stub_code")
    _last_stop = _per_process("last_stop")
    _last_stop_gen = _per_process("last_stop_gen")
    _pending_table = _per_process("pending_table")
    _step_token = _per_process("step_token")
    _step_native_id = _per_process("step_native_id")
    _interrupted_token = _per_process("interrupted_token")
    _native_step = _per_process("native_step")
    _native_tbreak = _per_process("native_tbreak")
    _folder: Any  # gate.AgentFolder, or None
    _servers: dict[int, asyncio.AbstractServer]
    _uids: set[int]
    _hellos: dict[int, asyncio.StreamWriter]  # by pid: the one connection of a process still saying hello
    _refused: int
    _sock_path: str | None
    _token: str
    _server: asyncio.AbstractServer | None
    _conn_task: asyncio.Task | None
    _transient_native: int  # > 0 while a step is armed from a native stop
    _request_lock: asyncio.Lock | None  # made in the running loop (Python 3.9)
    _transient: int  # > 0 while a request made at a stop runs
    _request_inferior: str | None  # the process it runs in
    _transient_gens: set[int]  # the generations of a request's own stops
    _requests: dict[int, asyncio.Future]
    _req_ids: Iterator[int]
    _tokens: Iterator[int]
    _entry_wanted: bool  # the program's next agent stops at its first line (engine.entry)
    _notes: Channel[str]
    _sched_lock: str | None
    _sched_lockable: bool | None
    _sched_multiple: str | None  # gdb's schedule-multiple as the session set it
    _closing: bool
    _quiet: bool  # the session lets the program go: no request to the agent starts any more (_quiesce)
    _awaiting_answer: bool  # a request's program runs until the agent's answer stops it
    _bg: set[asyncio.Task]
    _stub_check_pending: bool
    _had_process: bool
    _conn: int  # counts agent connections (one per process)
    _conns: set[asyncio.StreamWriter]  # every connection to the agent's socket

    def _session(self):
        if self.session is None:
            raise EngineError("the Python agent is not part of a started session")
        return self.session

    def _state(self) -> DebuggerState | None:
        return self.session.state if self.session is not None else None

    @contextlib.contextmanager
    def request_window(self, session) -> Iterator[None]:
        """While a request made at a stop runs: the stops meanwhile are the request's (``stop_hook`` marks
        them transient); after the last one, a mark left on the state (a request that failed on the way)
        is taken off: what there is shows."""
        self._transient += 1
        try:
            yield
        finally:
            self._transient -= 1
            if session.state.python.transient and self._transient == 0:
                session.set_state(session.state.with_python(transient=False))

    def add_link(self, link: ProcLink) -> None:
        """The link to the agent of the process ``link.pid`` (made as its process appears)."""
        self._links[link.pid] = link

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
        st = s.state.evolve(python_breakpoints=self.breakpoints)
        for inf in st.inferiors:
            link = self._link if inf.id == st.selected_inferior else self._links.get(inf.pid or -1)
            if link is not None and inf.python.agent is not link.info:
                st = st.with_inferior(inf.id, python=replace(inf.python, agent=link.info))
        s.set_state(st)

    def _select_link(self, st: DebuggerState) -> None:
        """The selected process's link becomes current (a new one for a process not heard from yet;
        the first process's, before its hello, is the one made with the extension)."""
        pid = st.inferior.pid
        if pid is None or self._link.pid == pid:
            return
        link = self._links.get(pid)
        if link is None:
            if self._link.pid is None and self._link.hello is None and len(st.inferiors) == 1:
                return  # (the program's own, before it said hello)
            if self.config.mode == "attach" and pid != self.config.pid and pid not in self.config.more_pids:
                # a child that appeared after the attach (--children): a fork loads the agent as it starts;
                # a Python started anew loads it at start-up (tuidbg.agent._follow)
                info = AgentInfo(status="waiting", how="fork", pid=pid)
            else:
                info = AgentInfo(status="waiting", how="attach" if self.config.mode == "attach" else "fork", pid=pid)
            link = ProcLink(info, pid)
            self.add_link(link)
        self._link = link

    def _link_of_inferior(self, st: DebuggerState, iid: str) -> ProcLink | None:
        inf = st.find(iid)
        return self._links.get(inf.pid) if inf is not None and inf.pid else None

    @contextlib.asynccontextmanager
    async def _only_this_process(self) -> AsyncIterator[None]:
        """In the block gdb resumes the threads of its current process only (``schedule-multiple off``),
        where the session has several: another process's agent would stop on the way, and that stop be
        taken for what the block waits for (an inferior call's end, a request's answer), or another's exit
        come in the middle. gdb keeps the others' stops that are due until they run again."""
        s = self._session()
        if len(s.state.inferiors) < 2 or getattr(self, "_only_depth", 0):  # (inside another such block: its)
            yield
            return
        if self._sched_multiple is None:  # (the session's own setting, read once: a block cut short by a
            # timeout must not leave 'off' for the next one to take as the setting)
            res = await s.cmd("-gdb-show schedule-multiple", check=False)
            self._sched_multiple = str(res.get("value") or "on")
        await s.cmd("-gdb-set schedule-multiple off", check=False)
        self._only_depth = 1
        try:
            yield
        finally:
            self._only_depth = 0
            # (the session's setting now: a run group sets it off, and on again when it ends)
            await s.cmd(f"-gdb-set schedule-multiple {s.schedule_multiple or self._sched_multiple}", check=False)

    def _notify(self, text: str) -> None:
        self._notes.emit(text)

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._bg.add(task)
        task.add_done_callback(self._bg.discard)


def _reply(replies: Sequence[Mapping[str, Any]] | None, op: str) -> Mapping[str, Any]:
    for r in replies or ():
        if r.get("op") == op:
            return r
    return {}


async def _wait_stop(session, generation: int, timeout: float) -> None:
    """Until a stop newer than ``generation`` (``state.last_generation`` before the program was resumed):
    of any process, since gdb stops every one."""
    await _wait(lambda: session.state.last_generation > generation
                and session.state.process is not ProcessState.RUNNING, timeout)


async def _wait(pred: Callable[[], bool], timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        if loop.time() > deadline:
            raise Timeout("the Python agent", timeout)
        await asyncio.sleep(0.002)
