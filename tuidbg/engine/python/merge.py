"""Merging Python frames into native stacks, and folding glue: pure functions over frozen values.

- :func:`merge` puts Python frames in place of the eval-loop frame that runs
  them and hides interpreter plumbing between Python frames;
- :func:`fold` collapses glue (CPython internals, PyTorch dispatcher, pybind11,
  pytest/pluggy, tuidbg's agent) into expandable rows, by rules given as data
  (:data:`DEFAULT_FOLD_RULES`);
- :func:`traceback_thread` is the stack to show at an exception stop of the agent
  (the frames that raised have returned: the agent's traceback, joined to the live stack).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from tuidbg.engine.python.model import (
    EXCEPTION_STOPS, AgentStop, PyFrame, PyFrameInfo, PyStack, PyThread, _fast, user_frames,
)
from tuidbg.engine.records import Frame

if TYPE_CHECKING:  # (not imported at run time: ``tuidbg dump --native`` merges without the engine's state and CUDA model)
    from tuidbg.engine.state import DebuggerState


# ---------------------------------------------------------------------------------------------
# Merging Python frames into native stacks (pure)


@dataclass(frozen=True)
class StackRow:
    """One row of a merged stack, innermost first.

    - kind "python": ``python`` is the frame; ``native`` the eval-loop frame that runs it
      (None when unmerged); ``elided`` the interpreter frames hidden under it.
    - kind "native": ``native`` is the frame; ``internal`` marks interpreter plumbing.
    - kind "fold": ``children`` are the rows it stands for, ``rule`` the fold rule's id,
      ``label`` what to show ("PyTorch dispatcher (7 frames)").
    - kind "note": a line of text (``label``), e.g. "Python frames below could not be placed".
    """

    kind: str
    native: Frame | None = None
    python: PyFrame | None = None
    internal: bool = False
    elided: tuple[Frame, ...] = ()
    children: tuple["StackRow", ...] = ()
    rule: str = ""
    label: str = ""

    @property
    def level(self) -> int | None:
        """The native level this row stands on (a fold row: its first child's)."""
        if self.native is not None:
            return self.native.level
        for c in self.children:
            if c.level is not None:
                return c.level
        return None

    @property
    def function(self) -> str:
        if self.python is not None:
            return self.python.name
        if self.native is not None:
            return self.native.func
        return self.label

    def frames(self) -> tuple[Frame, ...]:
        """Native frames this row covers (a fold row: all of its children's)."""
        if self.kind == "fold":
            out: list[Frame] = []
            for c in self.children:
                for f in c.frames():
                    if not out or out[-1] is not f:
                        out.append(f)
            return tuple(out)
        return (self.native,) if self.native is not None else ()


def _row(kind: str, native: Frame | None = None, python: PyFrame | None = None, internal: bool = False) -> StackRow:
    return _fast(StackRow, kind=kind, native=native, python=python, internal=internal, elided=(), children=(),
                 rule="", label="")


def _rx(*patterns: str) -> tuple[re.Pattern, ...]:
    return tuple(re.compile(p) for p in patterns)


# Native frames of the eval loop itself.
EVAL_FRAME = re.compile(r"^_PyEval_EvalFrameDefault\b|^_PyEval_EvalFrame\b|^_TAIL_CALL_")

# Builtin C functions worth showing even though they live in the interpreter (checked first).
KEEP_FRAMES = _rx(
    r"^(?:time|sys|gc|os|posix|select|signal|thread|lock|rlock|_thread|sock|math|_io|buffered|fileio|"
    r"textiowrapper|sre|_sre|pattern|builtin_(?!exec|eval))_",
    r"^(?:take_gil|drop_gil)$",
    r"^PyThread_",
    r"^PyGILState_",
    r"^PyEval_(?:RestoreThread|SaveThread|AcquireThread)$",
    r"^PySys_",
)

# Interpreter plumbing, whatever library the frame is in: CPython's exported API and internals.
INTERNAL_FRAMES = _rx(r"^_Py", r"^Py[A-Z][A-Za-z]*_", r"^Py_")

# Interpreter plumbing by its static names: only trusted for frames inside the interpreter's code.
INTERNAL_STATIC_FRAMES = _rx(
    r"vectorcall",
    r"^(?:cfunction_|method_vectorcall|slot_tp_|wrapper_call$|type_call$|function_code_fastcall$|call_function$|"
    r"do_call_core$|run_mod$|run_eval_code_obj$|pymain_|pyrun_|gen_send_ex|builtin_exec|builtin_eval|"
    r"exec_code_in_module$|object_vacall$|method_vectorcall|vectorcall_|_call_)",
    r"^main$",
)


def _addr(frame: Frame) -> int:
    try:
        return int(frame.addr, 16)
    except (TypeError, ValueError):
        return 0


def classify(frame: Frame, stack: PyStack | None = None) -> str:
    """'eval' (the eval loop), 'keep' (a builtin worth showing), 'internal' (plumbing) or 'other'."""
    name = frame.func or ""
    if EVAL_FRAME.search(name):
        return "eval"
    if any(p.search(name) for p in KEEP_FRAMES):
        return "keep"
    if any(p.search(name) for p in INTERNAL_FRAMES):
        return "internal"
    inside = stack is not None and stack.in_interpreter(_addr(frame))
    if inside:
        # a static helper of the interpreter (or, in a build without a symbol table, a frame
        # named after the nearest exported symbol): plumbing unless it is a builtin we keep
        return "internal"
    if stack is not None and not stack.interp_text and any(p.search(name) for p in INTERNAL_STATIC_FRAMES):
        return "internal"
    return "other"


def merge(
    native_frames: Sequence[Frame],
    py_thread: PyThread | None,
    stack: PyStack | None = None,
    *,
    show_internal: bool = False,
) -> list[StackRow]:
    """One list, innermost first: Python frames in place of the eval-loop frame that runs them.

    Interpreter plumbing between two Python frames is hidden (kept in the upper Python
    row's ``elided``) unless ``show_internal``; plumbing elsewhere (between a Python frame
    and the C/C++ it calls, at the top or the bottom of the stack) stays as native rows with
    ``internal=True``, which :func:`fold` collapses. Python frames whose native frame is not
    in ``native_frames`` (not loaded yet, or not placed) come last, after a note row.
    """
    rows: list[StackRow] = []
    if py_thread is None or not py_thread.frames:
        for f in native_frames:
            cls = classify(f, stack) if py_thread is not None else "other"
            rows.append(_row("native", native=f, internal=cls in ("internal", "eval")))
        return rows
    by_level: dict[int, list[PyFrame]] = {}
    for p in py_thread.frames:
        if p.native_level is not None:
            by_level.setdefault(p.native_level, []).append(p)
    levels = {f.level for f in native_frames}
    placed: set[int] = set()
    for f in native_frames:
        pys = by_level.get(f.level)
        if pys:
            for p in pys:
                rows.append(_row("python", native=f, python=p))
                placed.add(p.index)
            continue
        cls = classify(f, stack)
        rows.append(_row("native", native=f, internal=cls in ("internal", "eval")))
    # hide plumbing between two Python rows
    if not show_internal:
        out: list[StackRow] = []
        i = 0
        while i < len(rows):
            r = rows[i]
            if r.kind == "native" and r.internal:
                j = i
                while j < len(rows) and rows[j].kind == "native" and rows[j].internal:
                    j += 1
                above_py = bool(out) and out[-1].kind == "python"
                below_py = j < len(rows) and rows[j].kind == "python"
                if above_py and below_py:
                    run = tuple(x.native for x in rows[i:j] if x.native is not None)
                    last = out[-1]
                    out[-1] = replace(last, elided=last.elided + run)
                    i = j
                    continue
                out.extend(rows[i:j])
                i = j
                continue
            out.append(r)
            i += 1
        rows = out
    rest = [p for p in py_thread.frames if p.index not in placed]
    if rest:
        if not py_thread.merged:
            why = py_thread.merge_note or "they could not be matched with native frames"
            rows.append(StackRow("note", label=f"Python stack (unmerged: {why})"))
        elif any(p.native_level is not None and p.native_level not in levels for p in rest):
            rows.append(StackRow("note", label="Python frames of native frames not loaded yet"))
        else:
            rows.append(StackRow("note", label="Python frames not placed in the native stack"))
        rows.extend(_row("python", python=p) for p in rest)
    return rows


def python_rows(py_thread: PyThread) -> list[StackRow]:
    """The Python-only view: one row per Python frame."""
    return [StackRow("python", python=p) for p in py_thread.frames]


# ---------------------------------------------------------------------------------------------
# Folding glue (rules as data)


@dataclass(frozen=True)
class FoldRule:
    """Consecutive rows that match one rule collapse into one fold row.

    A native row matches when its function name matches one of ``native`` (regexes, searched),
    or when ``internal`` is set and merge() marked it as interpreter plumbing. A Python row
    matches when its file matches one of ``python_files``. Runs shorter than ``min_run`` stay.
    """

    id: str
    label: str
    native: tuple[str, ...] = ()
    python_files: tuple[str, ...] = ()
    internal: bool = False
    min_run: int = 2
    _compiled: tuple = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        def one(patterns: tuple[str, ...]):
            return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None

        object.__setattr__(self, "_compiled", (one(self.native), one(self.python_files)))

    def matches(self, row: StackRow) -> bool:
        native_rx, file_rx = self._compiled
        if row.kind == "native" and row.native is not None:
            if self.internal and row.internal:
                return True
            return native_rx is not None and native_rx.search(row.native.func or "") is not None
        if row.kind == "python" and row.python is not None:
            return file_rx is not None and file_rx.search(row.python.file) is not None
        return False


DEFAULT_FOLD_RULES: tuple[FoldRule, ...] = (
    FoldRule("cpython", "CPython internals", internal=True, min_run=1),
    FoldRule(
        "torch-dispatch",
        "PyTorch dispatcher",
        native=(
            r"^c10::impl::",
            r"^c10::Dispatcher::",
            r"^c10::OperatorHandle::",
            r"^c10::TypedOperatorHandle<",
            r"^c10::KernelFunction::",
            r"^c10::BoxedKernel::",
            r"^c10::callUnboxedKernelFunction",
            r"^c10::detail::",
            r"^c10::function_ref<",
            r"^at::_ops::[\w:]+::(?:redispatch|call)\b",
            r"^at::redispatch::",
            r"^at::\(anonymous namespace\)::",
            r"^torch::autograd::VariableType::",
            r"^torch::ADInplaceOrView::",
            r"^torch::TraceType::",
            r"^at::functionalization::",
            r"^at::native::\(anonymous namespace\)::.*wrapper",
            r"wrap_kernel_functor_unboxed_",
            r"make_boxed_from_unboxed_functor",
            r"^std::_Function_handler<.*c10::",
            r"^void c10::",
        ),
    ),
    FoldRule("torch-binding", "PyTorch's Python binding", native=(r"TypeError_to_NotImplemented_<",)),
    FoldRule("pybind11", "pybind11 glue", native=(r"^pybind11::", r"^void pybind11::",
                                                   r"(?:^|\s)std::(?:__)?invoke(?:_impl|_r)?<")),
    FoldRule(
        "pytest",
        "pytest / pluggy",
        python_files=(r"[/\\]_pytest[/\\]", r"[/\\]pluggy[/\\]", r"[/\\]pytest[/\\]__main__\.py$"),
    ),
    FoldRule("tuidbg", "tuidbg agent", python_files=(r"[/\\]tuidbg[/\\]agent[/\\]",), min_run=1),
    FoldRule("startup", "process and thread start", native=(r"^__libc_start", r"^_start$", r"^start_thread$",
                                                             r"^clone3?$", r"^__clone")),
)


def fold(rows: Iterable[StackRow], rules: Sequence[FoldRule] = DEFAULT_FOLD_RULES) -> list[StackRow]:
    """Collapse runs of rows matched by the same rule into one ``fold`` row (children kept)."""
    rows = list(rows)
    file_rule: dict[str, FoldRule | None] = {}  # Python files repeat: match each once

    def rule_of(row: StackRow) -> FoldRule | None:
        if row.kind == "python" and row.python is not None:
            f = row.python.file
            if f not in file_rule:
                file_rule[f] = next((r for r in rules if r.matches(row)), None)
            return file_rule[f]
        if row.kind == "native":
            return next((r for r in rules if r.matches(row)), None)
        return None

    matched = [rule_of(r) for r in rows]
    out: list[StackRow] = []
    i = 0
    while i < len(rows):
        rule = matched[i]
        if rule is None:
            out.append(rows[i])
            i += 1
            continue
        j = i + 1
        while j < len(rows) and matched[j] is rule:
            j += 1
        run = tuple(rows[i:j])
        if len(run) >= rule.min_run:
            n = len(run)
            out.append(StackRow("fold", children=run, rule=rule.id, label=f"{rule.label} ({n} frame{'s' if n != 1 else ''})"))
        else:
            out.extend(run)
        i = j
    return out


def merged_stack(state: DebuggerState, tid: str | None = None, *, folded: bool = True,
                 show_internal: bool = False, rules: Sequence[FoldRule] = DEFAULT_FOLD_RULES) -> list[StackRow]:
    """The merged (and folded) stack of a thread of the current stop, from ``state.frames``.

    ``state.frames`` belong to ``state.frames_thread``; for another thread pass its frames to
    :func:`merge` yourself.
    """
    tid = tid or state.frames_thread
    ps = state.python.stack
    py = ps.thread(tid) if ps is not None and ps.ok else None
    frames = state.frames if state.frames_thread == tid else ()
    gone: list[StackRow] = []
    stop = state.python.stop
    if py is not None and stop is not None and stop.reason in EXCEPTION_STOPS and stop.thread_id == tid:
        # an uncaught exception or a failed test: the frames it left have returned, and are on top (the
        # traceback's innermost first), the frames still running below them
        tb = traceback_thread(stop, py)
        if tb is not None:
            n = next((k for k, f in enumerate(tb.frames) if f.native_level is not None), len(tb.frames))
            if n:
                gone = [StackRow("note", label=f"{n} frame{'s' if n != 1 else ''} the exception left (returned)")]
                gone += [_row("python", python=f) for f in tb.frames[:n]]
                py = replace(tb, frames=tb.frames[n:])
    rows = gone + merge(frames, py, ps, show_internal=show_internal)
    return fold(rows, rules) if folded else rows


def stop_python_frame(state: DebuggerState) -> PyFrame | None:
    """The Python frame that caused the stop: the innermost Python frame of the stopped thread.

    For a SIGTRAP from ``os.kill(os.getpid(), signal.SIGTRAP)`` this is the frame that called
    ``os.kill`` (not ``kill()``); its ``native_level`` is the eval-loop frame to select.
    """
    ps = state.python.stack
    if ps is None or not ps.ok:
        return None
    tid = (state.stop.thread_id if state.stop is not None else None) or state.current_thread
    t = ps.thread(tid)
    return t.innermost if t is not None else None


def traceback_thread(stop: AgentStop, live: Any = None) -> Any:
    """The Python stack to show for an exception stop: the agent's frames (the traceback, innermost
    first, then its callers), as a ``PyThread`` whose frame ``index`` is the agent's frame
    number (what ``evaluate``/``python_locals`` take).

    An uncaught exception or a failed pytest test stops after the frames that raised have returned:
    the stack in memory (``live``, the walker's thread) no longer holds them. The outer frames that
    are still running get ``native_level`` from their partner in ``live``; the rest have none.
    Returns None for other stops.
    """
    if stop.reason not in EXCEPTION_STOPS or not stop.frames:
        return None
    ours = list(stop.frames)
    levels: list[int | None] = [None] * len(ours)
    if live is not None:
        walked = [f for f in user_frames(live.frames)]

        def same(a: PyFrameInfo, w: Any) -> bool:
            return a.file == w.file and a.func.rsplit(".", 1)[-1] == w.function

        # from the outermost frame in; when one list was cut short (the agent sends 256 frames at most,
        # the walk may stop early), from the innermost running frame out
        i, j = len(ours) - 1, len(walked) - 1
        while i >= 0 and j >= 0 and same(ours[i], walked[j]):
            levels[i] = walked[j].native_level
            i, j = i - 1, j - 1
        if i == len(ours) - 1 and walked:
            start = next((k for k, a in enumerate(ours) if same(a, walked[0]) and a.line == walked[0].line), None)
            if start is not None:
                for k, w in zip(range(start, len(ours)), walked):
                    if not same(ours[k], w):
                        break
                    levels[k] = w.native_level
    frames = tuple(
        PyFrame(index=k, function=f.func.rsplit(".", 1)[-1], qualname=f.func, file=f.file, line=f.line,
                native_level=levels[k])
        for k, f in enumerate(ours)
    )
    if live is not None:
        return replace(live, frames=frames, truncated=False, error=None)
    return PyThread(tid=stop.thread_id, frames=frames, lwp=stop.native_id, name=stop.thread_name,
                    thread_id=stop.python_thread or 0)
