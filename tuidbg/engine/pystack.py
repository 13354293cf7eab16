"""Python stacks: reading them after every stop, and merging them with the native frames.

Data (frozen dataclasses, in ``state.extras``):

- ``state.extras["pystack"]``: a :class:`PyStack` after a stop of a process that
  runs CPython (absent when the process has no Python, or before the first walk).
  ``PyStack.status`` is "ok" or "error" (then ``reason`` says why, e.g.
  "unsupported Python 3.8").

Reading (async, on a stopped session):

- :func:`collect` walks every thread's Python frames (gdb's ``-tuidbg-pystack``,
  the console command on old gdb, or MI memory reads when gdb has no Python).
- :func:`python_locals` reads a Python frame's locals from memory.

Pure functions for the UI:

- :func:`merge` puts Python frames in place of the eval-loop frame that runs
  them and hides interpreter plumbing between Python frames;
- :func:`fold` collapses glue (CPython internals, PyTorch dispatcher, pybind11,
  pytest/pluggy, tuidbg's agent) into expandable rows, by rules given as data
  (:data:`DEFAULT_FOLD_RULES`);
- :func:`stop_python_frame` is the Python frame that caused a stop (a SIGTRAP
  sent with ``os.kill``): the innermost Python frame of the stopped thread.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import weakref
import zlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from tuidbg.engine import mi
from tuidbg.engine.errors import EngineError, MIError, Timeout
from tuidbg.engine.state import DebuggerState, Frame, ProcessState

if TYPE_CHECKING:
    from tuidbg.engine.session import DebugSession

log = logging.getLogger("tuidbg.engine")

EXTRA_KEY = "pystack"
JSON_MARK = "@@tuidbg-json "
JSONZ_MARK = "@@tuidbg-jsonz "
STAGE_MAX_FRAMES = 10000  # Python frames per thread read after each stop
STAGE_NATIVE_DEPTH = 2000  # native frames examined to place them


# ---------------------------------------------------------------------------------------------
# Data


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


class NoPython(EngineError):
    """The process has no CPython runtime."""


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


# ---------------------------------------------------------------------------------------------
# Reading


_BACKENDS: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()


def _choose_backend(session: "DebugSession", backend: str) -> str:
    if backend != "auto":
        return backend
    known = _BACKENDS.get(session)
    if known:
        return known
    if not session.gdbext_loaded:
        return "memory"
    if session.info.version and session.info.version >= (13,):
        return "mi"
    return "console"


def _args(thread: str | None, max_frames: int | None, native: Any, native_depth: int | None, runtime_from: str) -> str:
    parts = ["--jsonz"]
    if thread is not None:
        parts += ["--tid", str(thread)]
    if max_frames:
        parts += ["--max", str(int(max_frames))]
    if native not in ("all", "none"):
        native = ",".join(str(x) for x in native) or "none"
    parts += ["--native", str(native)]
    if native_depth:
        parts += ["--native-depth", str(int(native_depth))]
    if runtime_from != "auto":
        parts += ["--runtime-from", runtime_from]
    return " ".join(parts)


def _unz(text: str) -> dict:
    return json.loads(zlib.decompress(base64.b64decode(text)).decode("ascii"))


def _json_from_console(text: str) -> dict:
    for line in text.splitlines():
        if line.startswith(JSONZ_MARK):
            return _unz(line[len(JSONZ_MARK):])
        if line.startswith(JSON_MARK):
            return json.loads(line[len(JSON_MARK):])
    raise MIError(f"tuidbg's gdb extension gave no result ({text.strip()[:200]!r})")


async def _run_command(session: "DebugSession", backend: str, name: str, args: str, timeout: float) -> dict:
    if backend == "mi":
        try:
            res = await session.cmd(f"-{name} {args}", timeout=timeout)
        except MIError as exc:
            if "Undefined MI command" in exc.message:  # gdb.MICommand missing or not registered
                _BACKENDS[session] = "console"
                return await _run_command(session, "console", name, args, timeout)
            raise
        if "jsonz" in res.payload:
            return _unz(str(res.get("jsonz")))
        return json.loads(str(res.get("json", "{}")))
    res = await session.cmd(f"-interpreter-exec console {mi.quote(name + ' ' + args)}", timeout=timeout)
    return _json_from_console(res.console_text())


async def collect(
    session: "DebugSession",
    *,
    thread: str | None = None,
    native: Any = "all",
    max_frames: int | None = None,
    native_depth: int | None = None,
    backend: str = "auto",
    runtime_from: str = "auto",
    timeout: float = 120.0,
) -> PyStack | None:
    """Walk the Python stacks of a stopped process (None: the process has no Python).

    ``thread``: only that gdb thread; ``native``: "all", "none" or gdb thread ids whose
    Python frames get ``native_level``; ``backend``: "auto", "mi", "console" or "memory".
    """
    generation = session.state.generation
    chosen = _choose_backend(session, backend)
    if chosen == "memory":
        from tuidbg.engine import pystack_mi

        res = await pystack_mi.walk(session, thread=thread, max_frames=max_frames, native=native,
                                    native_depth=native_depth, runtime_from=runtime_from)
    else:
        args = _args(thread, max_frames, native, native_depth, runtime_from)
        res = await _run_command(session, chosen, "tuidbg-pystack", args, timeout)
        chosen = _BACKENDS.get(session, chosen) if backend == "auto" else chosen
    if backend == "auto":
        _BACKENDS.setdefault(session, chosen)
    return stack_from_dict(res, chosen, generation)


async def python_locals(
    session: "DebugSession", tid: str, index: int, *, backend: str = "auto", max_items: int = 10, max_str: int = 200
) -> tuple[PyLocal, ...]:
    """Locals of Python frame ``index`` (0 = innermost) of gdb thread ``tid``, read from memory.

    Raises NoPython, or EngineError with the reason the frame cannot be read.
    """
    chosen = _choose_backend(session, backend)
    if chosen == "memory":
        from tuidbg.engine import pystack_mi

        res = await pystack_mi.walk(session, locals_of=(str(tid), int(index)), max_items=max_items, max_str=max_str)
    else:
        args = f"--jsonz --tid {tid} --index {int(index)} --max-items {int(max_items)} --max-str {int(max_str)}"
        res = await _run_command(session, chosen, "tuidbg-pylocals", args, 60.0)
    if res.get("status") == "no-python":
        raise NoPython(str(res.get("reason", "no Python in this process")))
    if res.get("status") != "ok":
        raise EngineError(str(res.get("reason", "cannot read the locals")))
    return tuple(
        PyLocal(name=str(r["name"]), type=str(r["type"]), value=r.get("value"), kind=str(r.get("kind", "local")),
                address=r.get("addr"), error=r.get("error"))
        for r in res.get("locals") or []
    )


# ---------------------------------------------------------------------------------------------
# After every stop


class _Stage:
    """The refresh stage: fills ``state.extras["pystack"]``; also runs when the user selects a thread."""

    on_select = True

    def __init__(self, ext: "PystackExtension") -> None:
        self.ext = ext

    async def __call__(self, session: "DebugSession", generation: int) -> None:
        await self.ext.refresh(session, generation)


class PystackExtension:
    """Reads the Python stacks after each stop; skips processes without Python cheaply.

    "No Python" is decided once per set of loaded object files: a plain C program pays
    one command at its first stop, and nothing more until a library is loaded.
    """

    def __init__(self, max_frames: int = STAGE_MAX_FRAMES, native_depth: int = STAGE_NATIVE_DEPTH) -> None:
        self.max_frames = max_frames
        self.native_depth = native_depth
        self._no_python_key: tuple | None = None
        self.walks = 0  # how many walks ran (tests and benchmarks look)

    async def on_configure(self, session: "DebugSession") -> None:
        session.refresh_stages.append(_Stage(self))

    def _key(self, session: "DebugSession") -> tuple:
        st = session.state
        return (session.config.program, frozenset(lib.id for lib in st.libraries))

    async def refresh(self, session: "DebugSession", generation: int) -> None:
        st = session.state
        if st.generation != generation or st.process is not ProcessState.STOPPED:
            return
        key = self._key(session)
        if self._no_python_key == key:
            return
        from tuidbg.engine import cuda

        sel = st.selected_thread or st.current_thread
        device = cuda.device_focus(st)
        native: Any = "none" if device or not sel else {sel}
        prev = st.extras.get(EXTRA_KEY)
        try:
            if isinstance(prev, PyStack) and prev.generation == generation and prev.ok and sel and not device:
                # a thread was selected in this stop: only its native placement is new
                self.walks += 1
                part = await collect(session, thread=sel, native={sel}, max_frames=self.max_frames,
                                     native_depth=self.native_depth)
                if part is None or not part.ok:
                    return
                new_t = part.thread(sel)
                threads = tuple(new_t if (t.tid == sel and new_t is not None) else t for t in prev.threads)
                ps = replace(prev, threads=threads)
            else:
                self.walks += 1
                ps = await collect(session, native=native, max_frames=self.max_frames, native_depth=self.native_depth)
        except (MIError, Timeout, ValueError, zlib.error) as exc:
            log.info("python stack walk failed: %s", exc)
            ps = PyStack(status="error", reason=str(exc), generation=generation)
        cur = session.state
        if cur.generation != generation or cur.process is not ProcessState.STOPPED:
            return
        if ps is None:
            self._no_python_key = key
            return
        self._no_python_key = None
        session.set_state(cur.with_extra(EXTRA_KEY, replace(ps, generation=generation)))


def pystack_of(state: DebuggerState) -> PyStack | None:
    """The PyStack of the current stop, if any."""
    ps = state.extras.get(EXTRA_KEY)
    return ps if isinstance(ps, PyStack) else None


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
    FoldRule("pybind11", "pybind11 glue", native=(r"^pybind11::", r"^void pybind11::")),
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
    ps = pystack_of(state)
    py = ps.thread(tid) if ps is not None and ps.ok else None
    frames = state.frames if state.frames_thread == tid else ()
    rows = merge(frames, py, ps, show_internal=show_internal)
    return fold(rows, rules) if folded else rows


def stop_python_frame(state: DebuggerState) -> PyFrame | None:
    """The Python frame that caused the stop: the innermost Python frame of the stopped thread.

    For a SIGTRAP from ``os.kill(os.getpid(), signal.SIGTRAP)`` this is the frame that called
    ``os.kill`` (not ``kill()``); its ``native_level`` is the eval-loop frame to select.
    """
    ps = pystack_of(state)
    if ps is None or not ps.ok:
        return None
    tid = (state.stop.thread_id if state.stop is not None else None) or state.current_thread
    t = ps.thread(tid)
    return t.innermost if t is not None else None
