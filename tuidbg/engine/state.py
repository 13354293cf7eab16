"""The debugger's state as immutable snapshots, and the pure reducer that updates it.

``reduce(state, record)`` applies one async MI record (``*running``,
``*stopped``, ``=thread-*``, ``=breakpoint-*``, ``=library-*``,
``=thread-group-*``) and returns a new ``DebuggerState``; it never does I/O.
MI values are strings; they become ints and bools here and nowhere else.

Each ``*stopped`` bumps ``generation``. The session's refresh after a stop
(threads, frames, locals) is stamped with the generation it started under, and
``apply_refresh`` drops it if another stop came in between.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from tuidbg.engine.mi import MIRecord, as_list, exit_code, to_int


class ProcessState(enum.Enum):
    NOT_STARTED = "not started"
    RUNNING = "running"
    STOPPED = "stopped"
    EXITED = "exited"
    DETACHED = "detached"
    GDB_EXITED = "gdb exited"


@dataclass(frozen=True)
class Frame:
    level: int
    addr: str = ""
    func: str = ""
    file: str | None = None
    fullname: str | None = None
    line: int | None = None
    library: str | None = None
    arch: str | None = None

    @property
    def has_source(self) -> bool:
        return bool(self.fullname) and self.line is not None

    @property
    def location(self) -> str:
        if self.file and self.line is not None:
            return f"{self.file}:{self.line}"
        if self.library:
            return self.library
        return self.addr

    @classmethod
    def from_mi(cls, d: Mapping[str, Any] | None, default_level: int = 0) -> Frame | None:
        if not isinstance(d, Mapping):
            return None
        return cls(
            level=to_int(d.get("level"), default_level) or 0,
            addr=str(d.get("addr", "")),
            func=str(d.get("func", "") or ""),
            file=d.get("file"),
            fullname=d.get("fullname"),
            line=to_int(d.get("line")),
            library=d.get("from"),
            arch=d.get("arch"),
        )


@dataclass(frozen=True)
class Thread:
    id: str
    target_id: str = ""
    name: str | None = None
    state: str = "stopped"
    frame: Frame | None = None
    core: str | None = None

    @property
    def lwp(self) -> int | None:
        import re

        m = re.search(r"LWP (\d+)", self.target_id) or re.search(r"process (\d+)", self.target_id)
        return int(m.group(1)) if m else None

    @classmethod
    def from_mi(cls, d: Mapping[str, Any]) -> Thread:
        return cls(
            id=str(d.get("id", "")),
            target_id=str(d.get("target-id", "")),
            name=d.get("name"),
            state=str(d.get("state", "stopped")),
            frame=Frame.from_mi(d.get("frame")),
            core=d.get("core"),
        )


@dataclass(frozen=True)
class BreakpointLocation:
    number: str
    enabled: bool = True
    addr: str = ""
    func: str | None = None
    file: str | None = None
    fullname: str | None = None
    line: int | None = None

    @classmethod
    def from_mi(cls, d: Mapping[str, Any]) -> BreakpointLocation:
        return cls(
            number=str(d.get("number", "")),
            enabled=d.get("enabled", "y") == "y",
            addr=str(d.get("addr", "")),
            func=d.get("func"),
            file=d.get("file"),
            fullname=d.get("fullname"),
            line=to_int(d.get("line")),
        )


@dataclass(frozen=True)
class Breakpoint:
    number: str
    type: str = "breakpoint"
    disp: str = "keep"
    enabled: bool = True
    addr: str = ""
    func: str | None = None
    file: str | None = None
    fullname: str | None = None
    line: int | None = None
    times: int = 0
    condition: str | None = None
    ignore: int = 0
    pending: str | None = None
    original_location: str | None = None
    what: str | None = None
    thread: str | None = None
    locations: tuple[BreakpointLocation, ...] = ()
    # Breakpoints tuidbg sets for itself (the Python agent's stop function) are hidden.
    internal: bool = False

    @property
    def is_pending(self) -> bool:
        return self.pending is not None or self.addr == "<PENDING>"

    def source_lines(self) -> list[tuple[str, int]]:
        """(fullname, line) of every location that has a source line."""
        out = []
        if self.fullname and self.line is not None:
            out.append((self.fullname, self.line))
        for loc in self.locations:
            if loc.fullname and loc.line is not None and (loc.fullname, loc.line) not in out:
                out.append((loc.fullname, loc.line))
        return out

    @property
    def label(self) -> str:
        if self.file and self.line is not None:
            return f"{self.file}:{self.line}"
        if self.pending:
            return self.pending
        if self.what:
            return self.what
        if self.func:
            return self.func
        return self.original_location or self.addr

    @classmethod
    def from_mi(cls, d: Mapping[str, Any]) -> Breakpoint:
        locs = tuple(BreakpointLocation.from_mi(x) for x in as_list(d.get("locations")) if isinstance(x, Mapping))
        file, fullname, line = d.get("file"), d.get("fullname"), to_int(d.get("line"))
        func = d.get("func")
        if not fullname and locs:
            # Several locations: show the first enabled one that has a source line.
            for loc in locs:
                if loc.fullname and loc.line is not None and loc.enabled:
                    file, fullname, line, func = loc.file, loc.fullname, loc.line, loc.func
                    break
        thread = d.get("thread")
        if isinstance(thread, list):
            thread = ",".join(str(t) for t in thread)
        return cls(
            number=str(d.get("number", "")),
            type=str(d.get("type", "breakpoint")),
            disp=str(d.get("disp", "keep")),
            enabled=d.get("enabled", "y") == "y",
            addr=str(d.get("addr", "")),
            func=func,
            file=file,
            fullname=fullname,
            line=line,
            times=to_int(d.get("times"), 0) or 0,
            condition=d.get("cond"),
            ignore=to_int(d.get("ignore"), 0) or 0,
            pending=d.get("pending"),
            original_location=d.get("original-location"),
            what=d.get("what"),
            thread=thread,
            locations=locs,
        )


@dataclass(frozen=True)
class Library:
    id: str
    target_name: str = ""
    host_name: str = ""
    symbols_loaded: bool = False

    @property
    def basename(self) -> str:
        return (self.target_name or self.id).rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Variable:
    """A local, argument or watch expression's value (``value`` None: not shown by --simple-values)."""

    name: str
    value: str | None = None
    type: str | None = None
    is_arg: bool = False
    changed: bool = False


@dataclass(frozen=True)
class StopInfo:
    reason: str = ""
    thread_id: str | None = None
    frame: Frame | None = None
    signal_name: str | None = None
    signal_meaning: str | None = None
    bkptno: str | None = None
    exit_code: int | None = None
    payload: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def describe(self) -> str:
        r = self.reason
        if r == "breakpoint-hit":
            return f"breakpoint {self.bkptno}" if self.bkptno else "breakpoint"
        if r == "signal-received":
            name = self.signal_name or "signal"
            return f"{name} ({self.signal_meaning})" if self.signal_meaning else name
        if r == "end-stepping-range":
            return "step finished"
        if r == "function-finished":
            return "function finished"
        if r == "location-reached":
            return "location reached"
        if r in ("watchpoint-trigger", "read-watchpoint-trigger", "access-watchpoint-trigger"):
            return "watchpoint"
        if r == "watchpoint-scope":
            return "watchpoint went out of scope"
        if r == "exited-normally":
            return "exited normally (code 0)"
        if r == "exited":
            return f"exited with code {self.exit_code}"
        if r == "exited-signalled":
            return f"killed by {self.signal_name}" + (f" ({self.signal_meaning})" if self.signal_meaning else "")
        if r == "solib-event":
            return "shared library event"
        if r == "no-history":
            return "no more history"
        if r == "core file" and self.signal_name:
            # (tuidbg's own reason for the state a core file holds)
            return f"core file: the program got {self.signal_name}" + (f" ({self.signal_meaning})" if self.signal_meaning else "")
        if not r:
            return "stopped"
        return r.replace("-", " ")


@dataclass(frozen=True)
class DebuggerState:
    generation: int = 0
    process: ProcessState = ProcessState.NOT_STARTED
    pid: int | None = None
    stop: StopInfo | None = None
    exit_code: int | None = None
    exit_description: str | None = None
    threads: tuple[Thread, ...] = ()
    current_thread: str | None = None
    selected_thread: str | None = None
    selected_frame: int = 0
    frames: tuple[Frame, ...] = ()
    frames_thread: str | None = None
    more_frames: bool = False
    locals: tuple[Variable, ...] = ()
    locals_key: tuple[str, int] | None = None
    breakpoints: tuple[Breakpoint, ...] = ()
    libraries: tuple[Library, ...] = ()
    activity: str = ""
    gdb_exit: str | None = None
    # The refresh after the current stop (threads, frames, locals) has arrived.
    refreshed: bool = False
    # Filled by later stages of the refresh (Python frames, CUDA); opaque to the reducer.
    extras: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def is_stopped(self) -> bool:
        return self.process is ProcessState.STOPPED

    @property
    def is_running(self) -> bool:
        return self.process is ProcessState.RUNNING

    @property
    def has_process(self) -> bool:
        return self.process in (ProcessState.RUNNING, ProcessState.STOPPED)

    def thread(self, tid: str | None) -> Thread | None:
        for t in self.threads:
            if t.id == tid:
                return t
        return None

    def breakpoint(self, number: str) -> Breakpoint | None:
        for b in self.breakpoints:
            if b.number == number:
                return b
        return None

    @property
    def selected(self) -> Frame | None:
        for f in self.frames:
            if f.level == self.selected_frame:
                return f
        return None

    def with_extra(self, key: str, value: Any) -> DebuggerState:
        extras = dict(self.extras)
        extras[key] = value
        return replace(self, extras=MappingProxyType(extras))


# ---------------------------------------------------------------------------------------------
# Reducer


def _upsert_bp(bps: tuple[Breakpoint, ...], bp: Breakpoint) -> tuple[Breakpoint, ...]:
    out = []
    found = False
    for b in bps:
        if b.number == bp.number:
            out.append(replace(bp, internal=b.internal))
            found = True
        else:
            out.append(b)
    if not found:
        out.append(bp)
    return tuple(sorted(out, key=_bp_sort_key))


def _bp_sort_key(b: Breakpoint) -> tuple:
    parts = []
    for p in b.number.split("."):
        parts.append(int(p) if p.isdigit() else 1 << 30)
    return tuple(parts)


def _stop_info(p: Mapping[str, Any]) -> StopInfo:
    return StopInfo(
        reason=str(p.get("reason", "") or ""),
        thread_id=p.get("thread-id"),
        frame=Frame.from_mi(p.get("frame")),
        signal_name=p.get("signal-name"),
        signal_meaning=p.get("signal-meaning"),
        bkptno=p.get("bkptno"),
        exit_code=exit_code(p.get("exit-code")),
        payload=MappingProxyType(dict(p)),
    )


def _set_thread_states(threads: Iterable[Thread], tid: str, state: str) -> tuple[Thread, ...]:
    return tuple(replace(t, state=state) if tid == "all" or t.id == tid else t for t in threads)


def reduce(state: DebuggerState, rec: MIRecord) -> DebuggerState:
    """Apply one exec/notify record. Records of other kinds leave the state unchanged."""
    p = rec.results
    if rec.kind == "exec":
        if rec.cls == "running":
            tid = str(p.get("thread-id", "all"))
            return replace(
                state,
                process=ProcessState.RUNNING,
                threads=_set_thread_states(state.threads, tid, "running"),
                activity="",
            )
        if rec.cls == "stopped":
            info = _stop_info(p)
            gen = state.generation + 1
            if info.reason in ("exited-normally", "exited", "exited-signalled"):
                code = 0 if info.reason == "exited-normally" else info.exit_code
                return replace(
                    state,
                    generation=gen,
                    process=ProcessState.EXITED,
                    stop=info,
                    exit_code=code if code is not None else state.exit_code,
                    exit_description=info.describe(),
                    threads=(),
                    frames=(),
                    locals=(),
                    locals_key=None,
                    more_frames=False,
                    activity="",
                    extras=MappingProxyType({}),
                )
            tid = info.thread_id or state.current_thread
            frames: tuple[Frame, ...] = ()
            if info.frame is not None:
                frames = (replace(info.frame, level=0),)
            return replace(
                state,
                generation=gen,
                process=ProcessState.STOPPED,
                stop=info,
                current_thread=tid,
                selected_thread=tid,
                selected_frame=0,
                frames=frames,
                frames_thread=tid,
                more_frames=False,
                locals=(),
                locals_key=None,
                threads=_set_thread_states(state.threads, "all", "stopped"),
                activity="",
                refreshed=False,
                extras=MappingProxyType({}),
            )
        return state

    if rec.kind != "notify":
        return state
    c = rec.cls
    if c == "thread-group-started":
        return replace(state, pid=to_int(p.get("pid")), exit_code=None, exit_description=None)
    if c == "thread-group-exited":
        if state.process in (ProcessState.RUNNING, ProcessState.STOPPED):
            code = exit_code(p.get("exit-code"))
            if state.exit_description:
                desc = state.exit_description
            elif code == 0:
                # the same words as the *stopped record that usually follows
                desc = "exited normally (code 0)"
            else:
                desc = f"exited with code {code}" if code is not None else "exited"
            process = ProcessState.DETACHED if state.process is ProcessState.DETACHED else ProcessState.EXITED
            return replace(
                state,
                process=process,
                exit_code=code if code is not None else state.exit_code,
                exit_description=desc,
                threads=(),
                frames=(),
                locals=(),
                pid=None,
            )
        return replace(state, pid=None, threads=())
    if c == "thread-created":
        tid = str(p.get("id", ""))
        if state.thread(tid) is not None:
            return state
        st = "running" if state.process is ProcessState.RUNNING else "stopped"
        return replace(state, threads=state.threads + (Thread(id=tid, state=st),))
    if c == "thread-exited":
        tid = str(p.get("id", ""))
        return replace(state, threads=tuple(t for t in state.threads if t.id != tid))
    if c == "thread-selected":
        tid = str(p.get("id", ""))
        fr = Frame.from_mi(p.get("frame"))
        return replace(
            state,
            current_thread=tid,
            selected_thread=tid,
            selected_frame=fr.level if fr else 0,
        )
    if c in ("breakpoint-created", "breakpoint-modified"):
        bkpt = p.get("bkpt")
        if isinstance(bkpt, Mapping):
            return replace(state, breakpoints=_upsert_bp(state.breakpoints, Breakpoint.from_mi(bkpt)))
        return state
    if c == "breakpoint-deleted":
        num = str(p.get("id", ""))
        return replace(state, breakpoints=tuple(b for b in state.breakpoints if b.number != num))
    if c == "library-loaded":
        lib = Library(
            id=str(p.get("id", "")),
            target_name=str(p.get("target-name", "")),
            host_name=str(p.get("host-name", "")),
            symbols_loaded=p.get("symbols-loaded") == "1",
        )
        libs = tuple(x for x in state.libraries if x.id != lib.id) + (lib,)
        activity = state.activity
        if state.process is ProcessState.RUNNING:
            activity = f"loading {lib.basename}"
        return replace(state, libraries=libs, activity=activity)
    if c == "library-unloaded":
        lid = str(p.get("id", ""))
        return replace(state, libraries=tuple(x for x in state.libraries if x.id != lid))
    return state


def set_breakpoints(state: DebuggerState, bps: Iterable[Breakpoint]) -> DebuggerState:
    internal = {b.number for b in state.breakpoints if b.internal}
    merged = tuple(replace(b, internal=b.internal or b.number in internal) for b in bps)
    return replace(state, breakpoints=tuple(sorted(merged, key=_bp_sort_key)))


def mark_internal(state: DebuggerState, number: str) -> DebuggerState:
    return replace(
        state,
        breakpoints=tuple(replace(b, internal=True) if b.number == number else b for b in state.breakpoints),
    )


def apply_refresh(
    state: DebuggerState,
    generation: int,
    *,
    threads: tuple[Thread, ...] | None = None,
    frames: tuple[Frame, ...] | None = None,
    frames_thread: str | None = None,
    more_frames: bool | None = None,
    locals_: tuple[Variable, ...] | None = None,
    locals_key: tuple[str, int] | None = None,
    done: bool = False,
) -> DebuggerState:
    """Apply results of a refresh, unless a newer stop made them stale.

    ``done`` marks the refresh after a stop as complete (``state.refreshed``).
    """
    if generation != state.generation or state.process is not ProcessState.STOPPED:
        return state
    changes: dict[str, Any] = {}
    if threads is not None:
        changes["threads"] = threads
    if frames is not None:
        changes["frames"] = frames
        changes["frames_thread"] = frames_thread
        if more_frames is not None:
            changes["more_frames"] = more_frames
    if locals_ is not None:
        changes["locals"] = locals_
        changes["locals_key"] = locals_key
    if done:
        changes["refreshed"] = True
    return replace(state, **changes)
