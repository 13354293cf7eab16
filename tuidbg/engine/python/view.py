"""The Python view of a stop: which Python stack a thread shows, which frame is selected, which
frames fold, what each thread and eval-loop frame is labelled with. Pure functions over the state.

These are the rules the panes render (the app keeps only the user's choices between states):

- :func:`python_thread`: the Python stack of the selected thread: read from memory, or at an
  exception stop of the agent, the traceback (frames that returned since they raised) joined to
  the callers still running, or the coroutines of the asyncio task the user chose to see
  (:func:`shown_task`, until another thread or the next stop).
- :func:`task_here`: the asyncio task the selected thread runs at the stop (its name).
- :func:`stop_generation`: which stop the user sees (an agent request's short stops are the same).
- :func:`next_selection`: which Python frame is selected after a state change: kept per stop and
  thread; at a stop Python code made on purpose (a SIGTRAP it sent, the agent's stop) or one that
  caught the program wherever it was (attach, interrupt), the user's innermost frame; otherwise
  the partner of the selected native frame.
- :func:`agent_top` and :func:`fold_agent_top`: the agent's own native frames above the user's code
  at its stop, folded into one row.
- :func:`eval_frame_notes` and :func:`thread_python`: the labels of eval-loop frames and threads.
- :func:`returns_into_python`: whether finishing the selected native frame lands in Python.
- :func:`agent_inactive_reason`: why a Python step is refused while the agent is not active.
- :func:`process_line` and :func:`stacks_read`: where each process of a session is in Python at an
  all-stop stop (the Processes pane, views across processes), from each one's stacks of the stop.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from tuidbg.agent import protocol as P
from tuidbg.agent.protocol import AGENT_THREAD_NAME
from tuidbg.engine.python.merge import DEFAULT_FOLD_RULES, StackRow, merged_stack, traceback_thread
from tuidbg.engine.python.model import (
    EXCEPTION_STOPS, AgentInfo, AgentStop, PyFrame, PyFrameInfo, PyThread, is_agent_file, user_frames,
)
from tuidbg.engine.python.tasks import TaskView
from tuidbg.engine.state import DebuggerState, Frame, Inferior, ProcessState


def stop_generation(state: DebuggerState) -> int:
    """Which stop the user sees: the state's generation, except that a request answered by the
    agent (an evaluation, the locals of a frame) makes a short stop of its own with a new generation,
    and that stop is still the same one for the user."""
    py = state.python
    if py.stop is not None and py.stop_generation:
        return py.stop_generation
    return state.generation


def agent_stop_here(state: DebuggerState) -> AgentStop | None:
    """The agent's stop, when the program is stopped there and its thread is the selected one."""
    stop = state.python.stop
    if stop is not None and state.is_stopped and stop.thread_id == state.selected_thread:
        return stop
    return None


def exception_stop(state: DebuggerState) -> AgentStop | None:
    """The agent's stop on an exception or a failed test, when its thread is the selected one."""
    stop = agent_stop_here(state)
    return stop if stop is not None and stop.reason in EXCEPTION_STOPS and stop.frames else None


def live_thread(state: DebuggerState, tid: str | None = None) -> PyThread | None:
    """A thread's Python stack as read from memory at this stop (the selected thread by default)."""
    ps = state.python.stack
    return ps.thread(tid or state.selected_thread) if ps is not None and ps.ok else None


_last_traceback: list = [None, None, None]  # [stop, live, result]: repaints of one stop ask again and again


def _traceback(stop: AgentStop, live: PyThread | None) -> PyThread | None:
    # by identity: hashing or comparing a 10,000-frame stack on every repaint would cost more than joining it
    if _last_traceback[0] is not stop or _last_traceback[1] is not live:
        _last_traceback[:] = [stop, live, traceback_thread(stop, live)]
    return _last_traceback[2]


def shown_task(state: DebuggerState) -> TaskView | None:
    """The asyncio task whose coroutines the Python frames pane shows (chosen in the Tasks pane, in
    the selected thread, at this stop), or None."""
    tv = state.python.task_view
    return tv if tv is not None and state.is_stopped and tv.tid == state.selected_thread else None


def task_key(state: DebuggerState) -> int:
    """What tells the Python stack shown apart from another of the same stop and thread: the shown
    task's address, 0 for the thread's own stack."""
    tv = shown_task(state)
    return tv.task.addr if tv is not None else 0


_last_task: list = [None, None]  # [TaskView, PyThread]: the same stack object for every repaint


def _task_thread(tv: TaskView) -> PyThread:
    if _last_task[0] is not tv:
        _last_task[:] = [tv, PyThread(tid=tv.tid, frames=tv.task.frames)]
    return _last_task[1]


def task_here(state: DebuggerState) -> str | None:
    """The name of the asyncio task the selected thread runs at this stop (its coroutine's frame is
    on the thread's stack), or of the task shown; None when none."""
    tv = shown_task(state)
    if tv is not None:
        return tv.task.name
    tasks = state.python.tasks
    live = live_thread(state)
    if tasks is None or not tasks.ok or live is None or not state.is_stopped:
        return None
    running = [t for t in tasks.tasks if t.executing and t.tid == state.selected_thread]
    if running:  # (one that runs inside another, started eagerly: the loop's current one)
        return next((t.name for t in running if t.current), running[0].name)
    addrs = {f.frame_addr for f in live.frames}
    return next((name for _addr, name, frame in tasks.current if frame and frame in addrs), None)


def python_thread(state: DebuggerState, tasks: bool = True) -> PyThread | None:
    """The Python stack of the selected thread (see the module's docstring); ``tasks`` False: never a
    task's (the thread's own, or its traceback)."""
    if tasks:
        tv = shown_task(state)
        if tv is not None:
            return _task_thread(tv)
    live = live_thread(state)
    stop = exception_stop(state)
    if stop is None:
        return live
    tb = _traceback(stop, live)
    return tb if tb is not None else live


def user_python_frame(pt: PyThread) -> PyFrame | None:
    """The innermost Python frame that is not tuidbg's agent."""
    return next(iter(user_frames(pt.frames)), None)


def failed_test_frame(state: DebuggerState, pt: PyThread) -> PyFrame | None:
    """At the stop of a failed pytest test (``--break-on-failure``), the test function's frame (the
    innermost one that runs it), which the stop is about: not the assertion helper that raised
    (``assert_close``), nor pytest's own frames. None at other stops, or when no frame runs the test."""
    stop = exception_stop(state)
    if stop is None or stop.reason != P.R_FAILURE or not stop.test:
        return None
    path, _, rest = stop.test.partition("::")
    name = rest.rsplit("::", 1)[-1].split("[", 1)[0]
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    return next((f for f in pt.frames if name and f.function == name
                 and (f.file.replace("\\", "/").endswith("/" + path) or f.file.rsplit("/", 1)[-1] == base)), None)


# Stops that catch a program wherever it is: the attach (its *stopped record gives no reason) and
# an interrupt. In a thread running Python, the user's Python line is what they came to see (the
# libc call under it is a sleep or a lock; its locals, with their types, also cost gdb libc's
# whole debug info: bench/gdb_memory.py).
CATCH_STOP_REASONS = ("",)
CATCH_STOP_SIGNALS = ("SIGINT",)


def auto_python_stop(state: DebuggerState) -> bool:
    """A stop where the Python frame is shown first: one Python code caused on purpose (SIGTRAP, the
    agent), or one that caught the program wherever it was (attach, interrupt)."""
    stop = state.stop
    if stop is None or state.selected_thread != (stop.thread_id or state.current_thread):
        return False
    return (stop.signal_name in ("SIGTRAP", *CATCH_STOP_SIGNALS) or state.python.stop is not None
            or (stop.reason in CATCH_STOP_REASONS and stop.signal_name is None))


@dataclass(frozen=True)
class PySelection:
    """The selected Python frame (``index`` into :func:`python_thread`'s frames, None: none), the
    (stop, thread) it belongs to, and the stops whose automatic selection was made already."""

    key: tuple = ()
    index: int | None = None
    auto_done: frozenset[int] = frozenset()
    # a native frame the selection asks the session to select (its eval loop), or None
    select_native: int | None = None


def next_selection(state: DebuggerState, prev: PySelection) -> PySelection:
    """The Python selection after a state change (see the module's docstring)."""
    sel = replace(prev, select_native=None)
    task = task_key(state)
    key = (stop_generation(state), state.selected_thread) + ((task,) if task else ())
    if key != sel.key:
        sel = replace(sel, key=key, index=None)
        if task:  # (a task's coroutines: its innermost first)
            pt = python_thread(state)
            return replace(sel, index=0 if pt is not None and pt.frames else None)
    pt = python_thread(state)
    if state.is_stopped and pt is None and state.python.stack is None and exception_stop(state) is None:
        return sel  # the Python stacks of this stop are not decoded yet: keep the selection until they are
    if pt is None or not pt.frames or not state.is_stopped:
        return replace(sel, index=None)
    if sel.index is not None and sel.index >= len(pt.frames):
        sel = replace(sel, index=None)
    gen = stop_generation(state)
    if gen not in sel.auto_done and auto_python_stop(state):
        sel = replace(sel, auto_done=sel.auto_done | {gen})
        f = failed_test_frame(state, pt) or user_python_frame(pt)
        if f is not None:
            native = f.native_level if f.native_level is not None and f.native_level != state.selected_frame else None
            return replace(sel, index=f.index, select_native=native)
    if sel.index is None:
        partners = pt.frames_at(state.selected_frame)
        if partners:
            sel = replace(sel, index=partners[0].index)
    return sel


def selected_frame(state: DebuggerState, index: int | None) -> PyFrame | None:
    pt = python_thread(state) if state.is_stopped else None
    return pt.frames[index] if pt is not None and index is not None and index < len(pt.frames) else None


def agent_frame_index(state: DebuggerState, index: int | None) -> int:
    """The selected Python frame counted the way the agent counts (its own frames left out)."""
    pt = python_thread(state)
    if pt is None or index is None:
        return 0
    return len(user_frames(pt.frames[:index]))


def agent_top(state: DebuggerState) -> int:
    """At a stop of tuidbg's agent, in the thread that stopped: how many native frames on top are
    the agent's (its stop function, ctypes, the agent's Python), above the user's innermost frame."""
    if agent_stop_here(state) is None:
        return 0
    live = live_thread(state)
    if live is None:
        return 0
    first = next((f for f in user_frames(live.frames) if f.native_level is not None), None)
    if first is not None:
        return first.native_level
    # no frame of the user's runs (an uncaught exception: the agent's hook on an unwound stack):
    # down to the outermost eval-loop frame that runs the agent
    levels = [f.native_level for f in live.frames if f.native_level is not None and is_agent_file(f.file)]
    return max(levels) + 1 if levels else 0


def fold_agent_top(rows: Sequence[StackRow], top: int) -> list[StackRow]:
    """The merged stack with its first rows, the frames of tuidbg's agent stop above native level
    ``top``, in one fold row."""
    rows = list(rows)
    n = 0
    while n < len(rows) and all(f.level < top for f in rows[n].frames()) and rows[n].frames():
        n += 1
    if n == 0:
        return rows
    # (native levels 0 to top - 1, some of them hidden under the agent's Python rows)
    fold = StackRow(kind="fold", rule="tuidbg-stop", children=tuple(rows[:n]),
                    label=f"tuidbg's agent stop ({top} frame{'s' if top != 1 else ''})")
    return [fold] + rows[n:]


def eval_frame_notes(pt: PyThread | None) -> dict[int, str]:
    """For the C++ pane: what each eval-loop frame runs, named after its innermost user frame, with
    how many more it runs (one pass: a 10,000-frame stack may run on one eval-loop frame)."""
    notes: dict[int, str] = {}
    if pt is None:
        return notes
    at: dict[int, list[PyFrame]] = {}
    for f in pt.frames:
        if f.native_level is not None:
            at.setdefault(f.native_level, [])
            if not is_agent_file(f.file):
                at[f.native_level].append(f)
    for level, runs in at.items():
        if not runs:
            notes[level] = "(tuidbg's agent)"
            continue
        more = f" (+{len(runs) - 1})" if len(runs) > 1 else ""
        notes[level] = f"⇠ py {runs[0].name}:{runs[0].line}{more}"
    return notes


def thread_python(state: DebuggerState, names: dict[int, str]) -> dict[str, str]:
    """For the threads pane: each thread's innermost Python frame (read from memory), below the
    agent's own frames; the agent's thread (named so in ``names``, LWP → threading name) says so."""
    where: dict[str, str] = {}
    ps = state.python.stack if state.is_stopped else None
    if ps is None or not ps.ok:
        return where
    for pt in ps.threads:
        if not pt.tid:
            continue
        if pt.lwp and names.get(pt.lwp) == AGENT_THREAD_NAME:
            where[pt.tid] = "(tuidbg's agent)"
            continue
        f = _below_agent(pt)  # (a callback of the agent on top of this thread's code)
        if f is not None:
            where[pt.tid] = f"{f.name}:{f.line} {f.file.rsplit('/', 1)[-1]}"
    return where


def is_call_glue(frame: Frame) -> bool:
    """libffi and ctypes' own C code, between Python and the C function ctypes calls."""
    lib = (frame.library or "").rsplit("/", 1)[-1]
    path = frame.fullname or frame.file or ""
    func = frame.func or ""
    return (
        lib.startswith(("libffi", "_ctypes"))
        or "/_ctypes/" in path
        or "libffi" in path
        or func.startswith(("ffi_", "_ctypes_"))
    )


# The fold rules (``python.merge``) whose frames are glue between Python and the C++ it calls: finishing
# through them is finishing back into Python.
GLUE_RULES = ("cpython", "pybind11", "torch-dispatch", "torch-binding")


def returns_into_python(state: DebuggerState) -> bool:
    """Whether the selected native frame was called from Python through glue only (the interpreter,
    ffi, pybind11, the PyTorch dispatcher): then finish means "back to the Python line that called it"
    (a custom op's function, a C extension's)."""
    seen = False
    for r in merged_stack(state, folded=True):
        if not seen:
            seen = any(f.level == state.selected_frame for f in r.frames())
            continue
        if r.kind == "python":
            return True
        if r.kind == "fold" and r.rule in GLUE_RULES:
            continue
        if r.kind == "native" and r.native is not None and (
                r.internal or is_call_glue(r.native) or any(g.matches(r) for g in _GLUE)):
            continue  # (glue, one frame of it: a run too short to fold)
        return False
    return False


_GLUE = tuple(rule for rule in DEFAULT_FOLD_RULES if rule.id in GLUE_RULES)


# ---------------------------------------------------------------------------------------------
# Every process at an all-stop stop


@dataclass(frozen=True)
class ProcessLine:
    """Where a process is in Python: its thread (gdb's id, when known; its LWP) and the frame, the
    innermost of the user's (below the agent's own frames on top of that thread)."""

    tid: str | None
    lwp: int | None
    frame: PyFrame | PyFrameInfo


def _below_agent(pt: PyThread) -> PyFrame | None:
    """A thread's innermost Python frame below the agent's own."""
    inner = max((g.index for g in pt.frames if is_agent_file(g.file)), default=-1)
    return next((g for g in pt.frames if g.index > inner), None)


def process_line(inf: Inferior) -> ProcessLine | None:
    """Where a stopped process is in Python: at the agent's stop, its line; otherwise from the stacks read
    at this stop, the thread gdb stopped in if it runs Python, else the main thread, else the first thread
    that runs Python (the agent's own thread left out). None: running, no Python, or not read yet."""
    if inf.process is not ProcessState.STOPPED:
        return None
    stop = inf.python.stop
    if stop is not None and stop.frame is not None:
        return ProcessLine(stop.thread_id, stop.native_id, stop.frame)
    ps = inf.python.stack
    if ps is None or not ps.ok:
        return None
    agent = inf.python.agent
    own = agent.control_native_id if agent is not None else None
    found = [(pt, f) for pt in ps.threads if not (own and pt.lwp == own) for f in (_below_agent(pt),) if f is not None]
    if not found:
        return None
    stopped = inf.stop.thread_id if inf.stop is not None else None
    pid = inf.pid or inf.os_pid
    pt, f = next((x for x in found if stopped and x[0].tid == stopped), None) or next(
        (x for x in found if pid and x[0].lwp == pid), None) or found[0]
    return ProcessLine(pt.tid, pt.lwp, f)


def stacks_read(state: DebuggerState) -> bool:
    """Whether the Python stacks of this stop are in for every stopped process (``python.stack_read``)."""
    return all(inf.python.stack_read for inf in state.inferiors
               if inf.process is ProcessState.STOPPED and (inf.pid or inf.os_pid))


def breakpoint_waits_note(info: AgentInfo | None, running: bool) -> str | None:
    """What a Python breakpoint set while the agent is not loaded says where it was set (the status
    line, ``pybreak``'s answer): that it waits for the agent, and why; None once the agent is active.
    ``running``: the program runs on since the load was queued, and no thread has taken it yet, i.e.
    every thread that could is blocked in C (a join, a lock, a read, a sleep)."""
    if info is None or info.connected or info.status != "waiting" or info.how != "attach" or not info.inject:
        return None
    where = info.message or "it loads when the main thread runs Python code"
    text = f"it takes effect when the Python agent loads: {where}"
    if running:
        if "no thread holds the GIL" in where:
            text += ", and neither has come since the attach (a thread holds the GIL in C)"
        elif "main thread" in where:
            text += ", and the main thread has not run any since the attach (it is blocked in C)"
        elif "thread of its own" not in where:
            text += ", and no thread has run any since the attach (all are blocked in C)"
    return text


def agent_inactive_reason(info: AgentInfo | None) -> str:
    """Why a Python step (``n``/``s``/``f`` on a Python frame) cannot be taken now: the agent of the
    selected process is not active (``info`` None: the session has no agent at all). A native step
    instead would run the interpreter's C code from wherever the thread is (a futex wait, the eval
    loop) and lose the Python line, so the step is refused with this reason (issue 30)."""
    if info is None:
        return "Python steps need tuidbg's Python agent, which this session does not load"
    if info.status == "waiting":
        if info.how == "attach" and info.inject:
            # (its load is queued in the program: it runs when that thread next runs Python)
            # (the message says which thread: tuidbg.engine.pyagent.inject)
            where = info.message or "it loads when the main thread runs Python code"
            return f"the Python agent is not loaded yet: {where} (c runs on until then)"
        if info.how == "attach":
            return "the Python agent is being loaded into the process"
        return "the Python agent has not started yet (c runs on until it does)"
    why = info.message or info.status
    return f"the Python agent is not active ({why})"
