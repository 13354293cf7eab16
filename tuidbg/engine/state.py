"""The debugger's state as immutable snapshots, and the pure reducer that updates it.

``reduce(state, record)`` applies one async MI record (``*running``,
``*stopped``, ``=thread-*``, ``=breakpoint-*``, ``=library-*``,
``=thread-group-*``) and returns a new ``DebuggerState``; it never does I/O.
MI values are strings; they become ints and bools here and nowhere else.

The state is typed throughout: each process under the debugger is an
``Inferior`` (threads, frames, locals, libraries, its ``PythonView`` and
``CudaView``), and ``DebuggerState`` holds them with what belongs to the session
(gdb's breakpoints, the Python breakpoint table, gdb's activity). Records go to
the process they name (thread group, or the process that has the thread); a stop
selects its process (a child's exit does not: ``tuidbg.engine.children`` lets the others go
on unseen). gdb runs in all-stop mode: a stop of one
process stops every other (``stopped-threads="all"``); those are STOPPED with no stop
of their own (``stop`` None) and a new generation, so that selecting one refreshes it.

Each ``*stopped`` gives its process a new ``generation``: the session's next
(``last_generation``), so that one number names one stop of one process. The
session's refresh after a stop (threads, frames, locals) is stamped with the
generation it started under, and ``apply_refresh`` drops it if another stop came
in between, or if it was another process's.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from tuidbg.engine.mi import MIRecord, exit_code, to_int
from tuidbg.engine.python.model import AgentInfo, AgentStop, PyBreakpoint, PyStack
from tuidbg.engine.python.tasks import PyTasks, TaskView
from tuidbg.engine.records import (  # noqa: F401  (the words of the state, importable from here too)
    Breakpoint,
    BreakpointLocation,
    CxxThrow,
    Frame,
    Library,
    StopInfo,
    Thread,
    Variable,
)

if TYPE_CHECKING:  # (imported where used: the dump's merge, which needs this module's words, does without it)
    from tuidbg.engine.cuda_model import CudaFocus, CudaSnapshot, WarpWatch


class ProcessState(enum.Enum):
    NOT_STARTED = "not started"
    RUNNING = "running"
    STOPPED = "stopped"
    EXITED = "exited"
    DETACHED = "detached"
    GDB_EXITED = "gdb exited"


@dataclass(frozen=True)
class PythonView:
    """The Python side of one process at its current stop (empty while it runs or has no Python)."""

    stack: PyStack | None = None  # every thread's Python frames, read from memory after the stop
    stack_read: bool = False  # the read of ``stack`` at this stop is over (``stack`` None: no Python)
    agent: AgentInfo | None = None  # tuidbg's agent in this process (None: not asked for)
    stop: AgentStop | None = None  # the Python side of a stop the agent made
    # Which stop the user sees: an agent request (an evaluation, a frame's locals) makes short stops
    # of its own with new generations; ``stop_generation`` stays the generation of the user's stop.
    stop_generation: int = 0
    stop_pending: bool = False  # the agent made this stop; its ``stop`` is on its way
    transient: bool = False  # a short internal stop (or run) of an agent request: nothing to repaint
    native_step: bool = False  # the stop is "step into native", arriving in the C function
    tasks: PyTasks | None = None  # the asyncio tasks at this stop (those running now, or all: engine.pytasks)
    task_view: TaskView | None = None  # a task whose coroutines the Python frames pane shows (the user's)


@dataclass(frozen=True)
class CudaView:
    """What cuda-gdb reports of one process at its current stop (None: not cuda-gdb, or not read yet)."""

    snapshot: CudaSnapshot | None = None
    # cuda-gdb's focus on a device thread, once tuidbg read or changed it at this stop (before that,
    # the stop record's CudaFocus counts: see ``tuidbg.engine.cuda.focus``); None: a host thread
    focus: CudaFocus | None = None
    focus_known: bool = False
    warp_watch: WarpWatch | None = None


@dataclass(frozen=True)
class Inferior:
    """One process under the debugger (gdb's inferior ``id``), and its current stop."""

    id: str = "i1"
    generation: int = 0  # this process's last stop's (new at each: the session's next, see last_generation)
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
    libraries: tuple[Library, ...] = ()
    # The refresh after the current stop (threads, frames, locals) has arrived.
    refreshed: bool = False
    python: PythonView = PythonView()
    cuda: CudaView = CudaView()
    cxx_throw: CxxThrow | None = None  # the C++ exception this stop is the throw of (tuidbg.engine.cxxthrow)
    cxx_last_throw: CxxThrow | None = None  # the last one caught, kept for the stops that follow
    # What the Processes pane says of it (tuidbg.engine.children fills them in as processes appear):
    ppid: int | None = None
    executable: str | None = None  # the program it runs (gdb's new-exec after an exec)
    cmdline: tuple[str, ...] = ()
    role_env: tuple[tuple[str, str], ...] = ()  # RANK, LOCAL_RANK, WORLD_SIZE... as it was started with
    left: str | None = None  # why tuidbg let it go (detached untouched): "not a Python program"
    os_pid: int | None = None  # the process ID it had (``pid`` is None once it has exited)


_INFERIOR_FIELDS = frozenset(f.name for f in fields(Inferior))


@dataclass(frozen=True)
class DebuggerState:
    """Everything the UI shows, as one immutable value: the processes under the debugger (one today;
    the selected one is what the panes show) and what belongs to the session as a whole.

    The selected process's fields read as the state's own (``state.frames`` is
    ``state.inferior.frames``); ``evolve`` changes them."""

    inferiors: tuple[Inferior, ...] = (Inferior(),)
    selected_inferior: str = "i1"
    breakpoints: tuple[Breakpoint, ...] = ()  # gdb's, for every process
    python_breakpoints: tuple[PyBreakpoint, ...] = ()  # the agent's table, pushed to every process
    activity: str = ""  # what gdb is busy with ("reading symbols of …")
    gdb_exit: str | None = None
    stopped_inferior: str = "i1"  # the process the last *stopped record was about
    last_generation: int = 0  # the newest generation given to any process (each stop takes the next)
    exited_last: str | None = None  # the process of the last =thread-group-exited
    # The run group (DebugSession.set_run_group): the processes continue moves while the others stay
    # stopped; () every process. Its name as the user gave it ("rank 3").
    run_group: tuple[str, ...] = ()
    run_group_name: str = ""

    @property
    def inferior(self) -> Inferior:
        """The selected process."""
        for inf in self.inferiors:
            if inf.id == self.selected_inferior:
                return inf
        return self.inferiors[0]

    def evolve(self, **changes: Any) -> DebuggerState:
        """A copy with ``changes`` applied: the state's own fields, and the selected process's."""
        own = {k: v for k, v in changes.items() if k not in _INFERIOR_FIELDS}
        mine = {k: v for k, v in changes.items() if k in _INFERIOR_FIELDS}
        if mine:
            cur = self.inferior
            new = replace(cur, **mine)
            own["inferiors"] = tuple(new if inf is cur else inf for inf in self.inferiors)
        return replace(self, **own) if own else self

    def find(self, iid: str) -> Inferior | None:
        for inf in self.inferiors:
            if inf.id == iid:
                return inf
        return None

    def with_inferior(self, iid: str, **changes: Any) -> DebuggerState:
        """A copy with fields of process ``iid`` changed (unchanged if there is none)."""
        infs = tuple(replace(inf, **changes) if inf.id == iid else inf for inf in self.inferiors)
        return replace(self, inferiors=infs)

    def showing(self, iid: str) -> DebuggerState:
        """A copy that shows process ``iid`` instead (the one shown has ended or was let go). The Python view
        is the shown process's: a stop the session goes on from (marked transient) stays unseen."""
        st = replace(self, selected_inferior=iid)
        return st.with_python(transient=True) if self.python.transient else st

    def live_thread(self) -> str | None:
        """A thread gdb can continue from: the selected one if it is still there, else another of the
        selected process, else one of any process that lives (the others may be exiting meanwhile)."""
        inf = self.inferior
        for t in inf.threads:
            if t.id == inf.selected_thread:
                return t.id
        for cand in (inf, *self.live_inferiors()):
            if cand.threads and cand.process in (ProcessState.RUNNING, ProcessState.STOPPED):
                return cand.threads[0].id
        return None

    def live_inferiors(self) -> tuple[Inferior, ...]:
        return tuple(inf for inf in self.inferiors if inf.process in (ProcessState.RUNNING, ProcessState.STOPPED))

    def with_python(self, **changes: Any) -> DebuggerState:
        """A copy with fields of the selected process's ``PythonView`` changed."""
        return self.evolve(python=replace(self.inferior.python, **changes))

    def with_cuda(self, **changes: Any) -> DebuggerState:
        """A copy with fields of the selected process's ``CudaView`` changed."""
        return self.evolve(cuda=replace(self.inferior.cuda, **changes))

    # -- the selected process's fields, read as the state's own ----------------------------------

    generation = property(lambda self: self.inferior.generation)
    process = property(lambda self: self.inferior.process)
    pid = property(lambda self: self.inferior.pid)
    stop = property(lambda self: self.inferior.stop)
    exit_code = property(lambda self: self.inferior.exit_code)
    exit_description = property(lambda self: self.inferior.exit_description)
    threads = property(lambda self: self.inferior.threads)
    current_thread = property(lambda self: self.inferior.current_thread)
    selected_thread = property(lambda self: self.inferior.selected_thread)
    selected_frame = property(lambda self: self.inferior.selected_frame)
    frames = property(lambda self: self.inferior.frames)
    frames_thread = property(lambda self: self.inferior.frames_thread)
    more_frames = property(lambda self: self.inferior.more_frames)
    locals = property(lambda self: self.inferior.locals)
    locals_key = property(lambda self: self.inferior.locals_key)
    libraries = property(lambda self: self.inferior.libraries)
    refreshed = property(lambda self: self.inferior.refreshed)
    python = property(lambda self: self.inferior.python)
    cuda = property(lambda self: self.inferior.cuda)
    cxx_throw = property(lambda self: self.inferior.cxx_throw)
    cxx_last_throw = property(lambda self: self.inferior.cxx_last_throw)

    @property
    def device_focus(self) -> CudaFocus | None:
        """cuda-gdb's focus when it is on a device thread of the stopped process, else None."""
        if self.process is not ProcessState.STOPPED:
            return None
        if self.cuda.focus_known:
            return self.cuda.focus
        if self.stop is not None:
            from tuidbg.engine.cuda_model.coords import CudaFocus

            return CudaFocus.from_mi(self.stop.payload.get("CudaFocus"))
        return None

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


@dataclass(frozen=True)
class StopSeen:
    """A stop as gdb's ``*stopped`` record names it, before the state is built from it
    (``DebugSession.on_stop_seen``): the stop's reason, thread, and its frame's file and line as the
    state will have them (``Frame.from_mi``)."""

    reason: str
    thread_id: str | None
    fullname: str | None
    line: int | None


def stop_seen(rec: MIRecord) -> StopSeen:
    p = rec.results
    frame = p.get("frame")
    frame = frame if isinstance(frame, Mapping) else {}
    tid = p.get("thread-id")
    return StopSeen(str(p.get("reason", "") or ""), str(tid) if tid is not None else None,
                    frame.get("fullname"), to_int(frame.get("line")))


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


def _running_already(inf: Inferior, tid: str) -> bool:
    """Process ``inf`` runs, and so does its thread ``tid`` (or every thread: "all")."""
    return inf.process is ProcessState.RUNNING and all(t.state == "running" for t in inf.threads
                                                       if tid == "all" or t.id == tid)


def _set_thread_states(threads: Iterable[Thread], tid: str, state: str) -> tuple[Thread, ...]:
    return tuple(replace(t, state=state) if tid == "all" or t.id == tid else t for t in threads)


def _inferior_of(state: DebuggerState, rec: MIRecord) -> str:
    """Which process a record is about: its thread group, or the process that has its thread
    (the selected one when the record does not say)."""
    p = rec.results
    c = rec.cls
    if rec.kind == "notify" and c.startswith("thread-group-"):
        gid = p.get("id")
    else:
        gid = p.get("group-id") or p.get("thread-group")
    if isinstance(gid, str) and gid:
        return gid
    tid = p.get("thread-id") if rec.kind == "exec" else (p.get("id") if c in ("thread-exited", "thread-selected") else None)
    if isinstance(tid, str) and tid != "all":
        for inf in state.inferiors:
            if any(t.id == tid for t in inf.threads):
                return inf.id
    return state.selected_inferior


def _on(state: DebuggerState, iid: str, select: bool = False, **changes: Any) -> DebuggerState:
    """``changes`` applied to process ``iid`` (added when new); with ``select`` it becomes the selected one."""
    infs = state.inferiors
    cur = next((inf for inf in infs if inf.id == iid), None)
    if cur is None:
        infs = infs + (replace(Inferior(id=iid), **changes),)
    else:
        new = replace(cur, **changes) if changes else cur
        infs = tuple(new if inf is cur else inf for inf in infs)
    return replace(state, inferiors=infs, selected_inferior=iid if select else state.selected_inferior)


def _others_stopped(state: DebuggerState, iid: str) -> DebuggerState:
    """All-stop: the processes that were running besides ``iid`` are stopped too, with no stop of their
    own and a new generation (their refresh comes when one is selected)."""
    infs = []
    last = state.last_generation
    for inf in state.inferiors:
        if inf.id != iid and inf.process is ProcessState.RUNNING:
            last += 1
            inf = replace(
                inf, generation=last, process=ProcessState.STOPPED, stop=None,
                threads=_set_thread_states(inf.threads, "all", "stopped"), frames=(), locals=(), locals_key=None,
                more_frames=False, refreshed=False, python=PythonView(agent=inf.python.agent), cuda=CudaView(),
            )
        infs.append(inf)
    return replace(state, inferiors=tuple(infs), last_generation=last)


def reduce(state: DebuggerState, rec: MIRecord) -> DebuggerState:
    """Apply one exec/notify record. Records of other kinds leave the state unchanged."""
    p = rec.results
    if rec.kind not in ("exec", "notify"):
        return state
    iid = _inferior_of(state, rec)
    inf = next((x for x in state.inferiors if x.id == iid), None) or Inferior(id=iid)
    if rec.kind == "exec":
        if rec.cls == "running":
            tid = str(p.get("thread-id", "all"))
            runs = []  # the processes it is about
            for t_inf in (state.inferiors if tid == "all" else [inf]):
                if tid == "all" and t_inf.process is not ProcessState.STOPPED and t_inf is not inf:
                    continue  # (a process not started or gone does not run because another does)
                runs.append(t_inf)
            if not state.activity and all(_running_already(t_inf, tid) for t_inf in runs):
                return state  # (gdb's *running after its ^running of the same step: nothing new)
            state = replace(state, activity="")
            for t_inf in runs:
                state = _on(state, t_inf.id, process=ProcessState.RUNNING,
                            threads=_set_thread_states(t_inf.threads, tid, "running"))
            return state
        if rec.cls == "stopped":
            info = _stop_info(p)
            exiting = info.reason in ("exited-normally", "exited", "exited-signalled")
            if exiting and not p.get("thread-id") and state.exited_last and state.find(state.exited_last):
                iid = state.exited_last  # (gdb names no process in an exit's *stopped)
                inf = state.find(iid) or inf
            state = replace(state, stopped_inferior=iid)
            if exiting or p.get("stopped-threads") == "all":
                state = _others_stopped(state, iid)
            gen = state.last_generation + 1
            state = replace(state, last_generation=gen)
            if exiting:
                code = 0 if info.reason == "exited-normally" else info.exit_code
                others = [x.id for x in state.live_inferiors() if x.id != iid]
                if iid == state.selected_inferior and others:
                    state = replace(state, selected_inferior=others[0])  # the user goes on with a live one
                elif not others:
                    # the last one: what is shown is the program's end (a helper it left, such as a resource
                    # tracker, may end after it)
                    state = replace(state, selected_inferior=state.inferiors[0].id)
                return _on(
                    replace(state, activity=""), iid,
                    generation=gen,
                    process=ProcessState.EXITED,
                    stop=info,
                    exit_code=code if code is not None else inf.exit_code,
                    exit_description=info.describe(),
                    threads=(),
                    frames=(),
                    locals=(),
                    locals_key=None,
                    more_frames=False,
                    python=PythonView(agent=inf.python.agent),
                    cuda=CudaView(),
                )
            tid = info.thread_id or inf.current_thread
            frames: tuple[Frame, ...] = ()
            if info.frame is not None:
                frames = (replace(info.frame, level=0),)
            # a stop selects its process
            return _on(
                replace(state, activity=""), iid, select=True,
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
                threads=_set_thread_states(inf.threads, "all", "stopped"),
                refreshed=False,
                python=PythonView(agent=inf.python.agent),
                cuda=CudaView(),
            )
        return state

    c = rec.cls
    if c == "thread-group-started":
        return _on(state, iid, pid=to_int(p.get("pid")), exit_code=None, exit_description=None)
    if c == "thread-group-exited":
        state = replace(state, exited_last=iid)
        if state.selected_inferior == iid and not any(x.id != iid for x in state.live_inferiors()):
            state = replace(state, selected_inferior=state.inferiors[0].id)  # (the last one: the program's end shown)
        if inf.process in (ProcessState.RUNNING, ProcessState.STOPPED):
            code = exit_code(p.get("exit-code"))
            if inf.exit_description:
                desc = inf.exit_description
            elif code == 0:
                # the same words as the *stopped record that usually follows
                desc = "exited normally (code 0)"
            else:
                desc = f"exited with code {code}" if code is not None else "exited"
            return _on(
                state, iid,
                process=ProcessState.EXITED,
                exit_code=code if code is not None else inf.exit_code,
                exit_description=desc,
                threads=(),
                frames=(),
                locals=(),
                pid=None,
            )
        return _on(state, iid, pid=None, threads=())
    if c == "thread-created":
        tid = str(p.get("id", ""))
        if any(t.id == tid for t in inf.threads):
            return state
        st = "running" if inf.process is ProcessState.RUNNING else "stopped"
        return _on(state, iid, threads=inf.threads + (Thread(id=tid, state=st),))
    if c == "thread-exited":
        tid = str(p.get("id", ""))
        return _on(state, iid, threads=tuple(t for t in inf.threads if t.id != tid))
    if c == "thread-selected":
        tid = str(p.get("id", ""))
        fr = Frame.from_mi(p.get("frame"))
        return _on(state, iid, select=True, current_thread=tid, selected_thread=tid,
                   selected_frame=fr.level if fr else 0)
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
        libs = tuple(x for x in inf.libraries if x.id != lib.id) + (lib,)
        activity = state.activity
        if inf.process is ProcessState.RUNNING:
            activity = f"loading {lib.basename}"
        return _on(replace(state, activity=activity), iid, libraries=libs)
    if c == "library-unloaded":
        lid = str(p.get("id", ""))
        return _on(state, iid, libraries=tuple(x for x in inf.libraries if x.id != lid))
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


def gdb_gone(state: DebuggerState, reason: str) -> DebuggerState:
    """gdb exited: every process it had is out of reach."""
    infs = tuple(replace(inf, process=ProcessState.GDB_EXITED) for inf in state.inferiors)
    return replace(state, inferiors=infs, gdb_exit=reason, activity="")


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
    """Apply results of a refresh of the selected process, unless a newer stop made them stale.

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
    return state.evolve(**changes)
