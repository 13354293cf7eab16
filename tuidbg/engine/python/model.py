"""What the engine knows of a program's Python side, as frozen values.

- The stacks read from memory after a stop: ``PyStack`` (every thread's ``PyThread``,
  each a tuple of ``PyFrame``), and ``PyLocal`` for a frame's locals.
- What tuidbg's agent (running in the program) reports: ``AgentInfo`` (is it there, which
  backend), ``AgentStop`` (the Python side of a stop it made: breakpoint, step,
  exception...), ``PyBreakpoint`` (the Python breakpoint table).

No I/O and no engine imports below ``tuidbg.engine.state``'s level: the state holds these.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

from tuidbg.agent import protocol as P

AGENT_DIR = os.path.dirname(os.path.abspath(P.__file__))


# ---------------------------------------------------------------------------------------------
# Stacks read from memory

@dataclass(frozen=True)
class PyFrame:
    """One Python frame. ``index`` 0 is the innermost frame of its thread."""

    index: int
    function: str
    file: str
    line: int | None
    qualname: str | None = None  # 3.11+ (co_qualname); None before
    is_entry: bool = False  # the first Python frame of a C call of the eval loop
    native_level: int | None = None  # level of the gdb frame (eval loop) that runs it
    code_addr: int = 0
    frame_addr: int = 0

    @property
    def name(self) -> str:
        """The qualified name where the version has one, else the function name."""
        return self.qualname or self.function

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.line is not None else self.file


@dataclass(frozen=True)
class PyThread:
    """The Python stack of one thread state (``tid`` is gdb's thread id, None when no gdb thread runs it)."""

    tid: str | None
    frames: tuple[PyFrame, ...] = ()
    lwp: int | None = None
    name: str | None = None  # the OS thread name gdb reports
    thread_id: int = 0  # threading.get_ident() (pthread_t)
    tstate: int = 0
    interp: int = 0
    truncated: bool = False  # more Python frames than were read
    error: str | None = None  # the walk of this thread stopped early, and why
    merge: str = "not-requested"  # "anchor", "count", "partial", "unmerged" or "not-requested"
    merge_note: str = ""

    @property
    def innermost(self) -> PyFrame | None:
        return self.frames[0] if self.frames else None

    @property
    def merged(self) -> bool:
        return self.merge in ("anchor", "count", "partial")

    def frames_at(self, native_level: int) -> tuple[PyFrame, ...]:
        """The Python frames the native frame at ``native_level`` runs (innermost first)."""
        return tuple(f for f in self.frames if f.native_level == native_level)


@dataclass(frozen=True)
class PyStack:
    status: str  # "ok" or "error"
    reason: str = ""
    python: str = ""  # "3.11.2" (patch level unknown before 3.11: "3.10")
    threads: tuple[PyThread, ...] = ()
    offsets: str = ""  # where the struct offsets came from: "dwarf", "debug_offsets" or "table"
    runtime: int = 0  # address of _PyRuntime
    objfile: str | None = None  # the file that holds the interpreter (libpython or the python executable)
    interp_text: tuple[tuple[int, int], ...] = ()  # its .text address ranges
    backend: str = ""  # "mi" (gdb.MICommand), "console" (old gdb) or "memory" (MI memory reads)
    generation: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def thread(self, tid: str | None) -> PyThread | None:
        for t in self.threads:
            if t.tid is not None and t.tid == tid:
                return t
        return None

    def in_interpreter(self, addr: int) -> bool:
        return any(a <= addr < b for a, b in self.interp_text)


@dataclass(frozen=True)
class PyLocal:
    """A Python local read from memory. ``value`` is None when it could not be read (``error`` says why)."""

    name: str
    type: str
    value: str | None
    kind: str = "local"  # "arg", "local", "cell", "free" or "global" (module-level names)
    address: int | None = None
    error: str | None = None

    @property
    def display(self) -> str:
        return self.value if self.value is not None else f"<unreadable: {self.error}>"


def _fast(cls, **fields):
    """A frozen dataclass instance without the per-field ``object.__setattr__`` of its __init__
    (thousands of frames per stop); ``fields`` must name every field."""
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj


def stack_from_dict(res: dict, backend: str = "", generation: int = 0) -> PyStack | None:
    """A PyStack from the walker's result dict; None when the process has no Python."""
    status = res.get("status")
    if status == "no-python":
        return None
    if status != "ok":
        return PyStack(status="error", reason=str(res.get("reason") or "unknown error"), backend=backend,
                       generation=generation)
    strings = res.get("strings") or []

    def s(i: int) -> str | None:
        return strings[i] if 0 <= i < len(strings) else None

    threads = []
    for t in res.get("threads") or []:
        frames = [
            _fast(PyFrame, index=idx, function=s(fn) or "?", file=s(fi) or "?", line=line if line >= 0 else None,
                  qualname=s(qn), is_entry=bool(entry), native_level=level if level >= 0 else None,
                  code_addr=code, frame_addr=addr)
            for idx, (fn, qn, fi, line, entry, level, code, addr) in enumerate(t.get("frames") or [])
        ]
        threads.append(PyThread(
            tid=str(t["tid"]) if t.get("tid") is not None else None, frames=tuple(frames), lwp=t.get("lwp"),
            name=t.get("name"), thread_id=t.get("thread_id") or 0, tstate=t.get("tstate") or 0,
            interp=t.get("interp") or 0, truncated=bool(t.get("truncated")), error=t.get("error"),
            merge=t.get("merge") or "not-requested", merge_note=t.get("merge_note") or "",
        ))
    return PyStack(
        status="ok", python=str(res.get("python", "")), threads=tuple(threads), offsets=str(res.get("offsets", "")),
        runtime=int(res.get("runtime") or 0), objfile=res.get("objfile"),
        interp_text=tuple((int(a), int(b)) for a, b in res.get("text") or ()), backend=backend, generation=generation,
    )


def with_thread_ids(stack: PyStack, threads: Iterable[Any]) -> PyStack:
    """``stack`` with gdb's thread id on each of its threads that has none, found by LWP among
    ``threads`` (gdb's, anything with ``id`` and ``lwp``); the same object when none is found (a stack
    read without gdb, ``tuidbg.engine.procstacks``, names its threads by LWP only)."""
    by_lwp = {t.lwp: t.id for t in threads if t.lwp}
    if not by_lwp or all(t.tid is not None or t.lwp not in by_lwp for t in stack.threads):
        return stack
    named = tuple(t if t.tid is not None or t.lwp not in by_lwp else replace(t, tid=by_lwp[t.lwp])
                  for t in stack.threads)
    return replace(stack, threads=named)


# ---------------------------------------------------------------------------------------------
# What the agent reports

@dataclass(frozen=True)
class PyBreakpoint:
    id: int
    file: str
    line: int  # the line asked for
    condition: str | None = None
    ignore_count: int = 0
    enabled: bool = True
    temporary: bool = False
    resolved_line: int | None = None  # the line it is on (the next line with code)
    verified: bool = False  # the agent found code on that line
    hits: int = 0
    message: str | None = None  # e.g. "line 10 has no code; moved to line 12"
    rev: int = 0
    task: str | None = None  # stops only in the asyncio task of this name (pybreak FILE:LINE task NAME)
    # Limited to these ranks and processes (pybreak FILE:LINE rank 3); both empty: every process.
    ranks: tuple[int, ...] = ()
    pids: tuple[int, ...] = ()

    @property
    def number(self) -> str:
        return f"py{self.id}"

    @property
    def effective_line(self) -> int:
        return self.resolved_line if self.resolved_line is not None else self.line

    @property
    def label(self) -> str:
        return f"{os.path.basename(self.file)}:{self.effective_line}"

    def describe(self) -> str:
        parts = [f"Python breakpoint {self.id} at {self.file}:{self.effective_line}"]
        if not self.enabled:
            parts.append("(disabled)")
        if self.temporary:
            parts.append("(temporary)")
        if self.task:
            parts.append(f"in task {self.task!r}")
        if self.condition:
            parts.append(f"if {self.condition}")
        if self.ignore_count:
            parts.append(f"(ignore {self.ignore_count})")
        if self.ranks:
            parts.append("rank " + ",".join(map(str, self.ranks)))
        if self.pids:
            parts.append("pid " + ",".join(map(str, self.pids)))
        if self.hits:
            parts.append(f"hit {self.hits} time{'s' if self.hits != 1 else ''}")
        if not self.verified and self.message:
            parts.append(f"[{self.message}]")
        return " ".join(parts)


@dataclass(frozen=True)
class PyFrameInfo:
    file: str
    line: int
    func: str

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class ExceptionInfo:
    type: str
    message: str
    traceback: str = ""

    def describe(self) -> str:
        name = self.type.rsplit(".", 1)[-1] if self.type.startswith("builtins.") else self.type
        return f"{name}: {self.message}" if self.message else name


@dataclass(frozen=True)
class AgentStop:
    """The Python side of a stop made by the agent (its stop function), read from its mailbox."""

    reason: str  # protocol.R_*: breakpoint, step, entry, set_trace, exception, uncaught, failure, native_call
    seq: int
    thread_id: str | None  # gdb thread id of the thread that stopped
    native_id: int | None  # its LWP
    python_thread: int | None  # threading.get_ident() in the program
    thread_name: str | None = None
    file: str | None = None
    line: int | None = None
    func: str | None = None
    frames: tuple[PyFrameInfo, ...] = ()  # the user's Python frames, innermost first (agent frames left out)
    bp_id: int | None = None
    hits: int | None = None
    exception: ExceptionInfo | None = None
    message: str | None = None  # e.g. an error in a breakpoint condition
    test: str | None = None  # pytest node id (failure)
    native_addr: int | None = None  # native_call: the C function about to be called
    native_name: str | None = None
    returned_from: str | None = None
    thread_names: tuple[tuple[int, str], ...] = ()  # (LWP, threading name) of the program's Python threads

    @property
    def frame(self) -> PyFrameInfo | None:
        return self.frames[0] if self.frames else None

    def describe(self) -> str:
        where = f"{self.file}:{self.line}" if self.file else "?"
        r = self.reason
        if r == P.R_BREAKPOINT:
            text = f"Python breakpoint {self.bp_id} at {where}"
        elif r == P.R_STEP:
            text = f"step finished at {where}"
        elif r == P.R_ENTRY:
            text = "at entry (the program's first line)"
        elif r == P.R_SET_TRACE:
            text = f"tuidbg.set_trace() at {where}"
        elif r in (P.R_EXCEPTION, P.R_UNCAUGHT, P.R_FAILURE):
            kind = {P.R_EXCEPTION: "exception raised", P.R_UNCAUGHT: "uncaught exception", P.R_FAILURE: "test failed"}[r]
            exc = self.exception.describe() if self.exception else ""
            text = f"{kind} at {where}: {exc}" if exc else f"{kind} at {where}"
        elif r == P.R_NATIVE_CALL:
            text = f"about to call native {self.native_name} at {where}"
        else:
            text = f"{r} at {where}"
        if self.message:
            text += f" ({self.message})"
        return text

    @classmethod
    def from_json(cls, d: Mapping[str, Any], thread_id: str | None) -> AgentStop:
        frames = tuple(
            PyFrameInfo(str(f.get("file", "?")), int(f.get("line") or 0), str(f.get("func", "?")))
            for f in d.get("frames") or ()
            if isinstance(f, Mapping)
        )
        exc = d.get("exception")
        native = d.get("native") or {}
        return cls(
            reason=str(d.get("reason", "")),
            seq=int(d.get("seq", 0)),
            thread_id=thread_id,
            native_id=d.get("native_id"),
            python_thread=d.get("thread"),
            thread_name=d.get("thread_name"),
            file=d.get("file"),
            line=d.get("line"),
            func=d.get("func"),
            frames=frames,
            bp_id=d.get("bp"),
            hits=d.get("hits"),
            exception=ExceptionInfo(str(exc.get("type", "")), str(exc.get("message", "")), str(exc.get("traceback", "")))
            if isinstance(exc, Mapping)
            else None,
            message=d.get("message"),
            test=d.get("test"),
            native_addr=native.get("addr"),
            native_name=native.get("name"),
            returned_from=d.get("returned_from"),
            thread_names=tuple(
                (int(t[0]), str(t[1])) for t in d.get("threads") or ()
                if isinstance(t, (list, tuple)) and len(t) == 2 and isinstance(t[0], int)
            ),
        )


# How ``tuidbg attach`` loaded the agent into the process.
INJECT_PEP768 = "pep768"  # 3.14+: the PEP 768 fields of the main thread state (what sys.remote_exec writes)
INJECT_PENDING = "pending-call"  # gdb inferior calls: Py_AddPendingCall(PyRun_SimpleString, page)
# 3.9-3.11, free-threaded: gdb makes the program start a thread that boots it, and queues the main thread's
# pending call beside it (tuidbg.engine.pyagent.boot_thread)
INJECT_MAIN_OR_THREAD = "pending-call+thread"
INJECT_WORDS = {
    INJECT_MAIN_OR_THREAD: ("through gdb: the main thread's pending call or a thread of its own, whichever runs "
                            "Python first (inferior calls to Py_AddPendingCall and pthread_create)"),
    INJECT_PEP768: "through PEP 768 remote execution (the fields sys.remote_exec writes)",
    INJECT_PENDING: "through gdb (an inferior call to Py_AddPendingCall)",
}


@dataclass(frozen=True)
class AgentInfo:
    """The agent's state: "off", "waiting" (not connected yet), "connected", "disconnected", "failed"."""

    status: str = "waiting"
    message: str | None = None
    pid: int | None = None
    python: str | None = None
    backend: str | None = None  # "sys.monitoring" or "settrace"
    how: str | None = None  # "run", "attach" or "fork" (a child of the program, --children)
    inject: str | None = None  # attach: the path that loaded the agent, INJECT_PEP768 or INJECT_PENDING
    inject_note: str | None = None  # attach through a pending call: why not PEP 768
    free_threaded: bool = False  # the program runs without a GIL (3.13t/3.14t)
    stub_addr: int | None = None
    stub_traps: bool = False  # the stop function traps by itself (int3): a SIGTRAP there, no breakpoint
    arm_addr: int | None = None  # the agent's "arm a step here" function (steps from native stops)
    eval_addr: int | None = None  # the agent's "evaluate here" function (pyprint, watches at native stops)
    mailbox: int | None = None
    control_native_id: int | None = None  # LWP of the agent's own thread (hide it)
    main_native_id: int | None = None
    agent_dir: str = AGENT_DIR

    @property
    def connected(self) -> bool:
        return self.status == "connected"


@functools.lru_cache(maxsize=4096)
def is_agent_file(path: str | None) -> bool:
    """Whether a Python source file belongs to tuidbg's agent (its frames are hidden)."""
    return bool(path) and os.path.abspath(path).startswith(AGENT_DIR + os.sep)


def user_frames(frames: Iterable[Any]) -> tuple[Any, ...]:
    """The Python frames (anything with ``.file``) that are not tuidbg's agent, in order."""
    return tuple(f for f in frames if not is_agent_file(f.file))


# Stops made after the frames that raised have returned: the stack in memory no longer holds them.
# (An exception stop where it is raised, R_EXCEPTION, has its frames on the stack.)
EXCEPTION_STOPS = (P.R_UNCAUGHT, P.R_FAILURE)
