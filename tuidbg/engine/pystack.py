"""Reading the Python stacks of a stopped process, after every stop and on demand.

- :func:`collect` walks every thread's Python frames (gdb's ``-tuidbg-pystack``,
  the console command on old gdb, or MI memory reads when gdb has no Python)
  into a ``PyStack`` (``tuidbg.engine.python.model``).
- :func:`python_locals` reads a Python frame's locals from memory.
- ``PystackExtension`` runs the walk after each stop (and when a thread is
  selected) and puts the result in the process's ``state.python.stack``
  (None when the process has no Python, or before the first walk; a
  ``PyStack`` with status "error" says why it cannot be read, e.g.
  "unsupported Python 3.8").

Merging them with the native frames and folding glue is in ``tuidbg.engine.python.merge``.
"""

from __future__ import annotations

import base64
import json
import logging
import weakref
import zlib
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tuidbg.engine import mi
from tuidbg.engine.errors import EngineError, MIError, Timeout
from tuidbg.engine.extensions import Extension
from tuidbg.engine.python.model import PyLocal, PyStack, stack_from_dict, with_thread_ids
from tuidbg.engine.state import ProcessState

if TYPE_CHECKING:
    from tuidbg.engine.session import DebugSession

log = logging.getLogger("tuidbg.engine")

JSON_MARK = "@@tuidbg-json "
JSONZ_MARK = "@@tuidbg-jsonz "
STAGE_MAX_FRAMES = 10000  # Python frames per thread read after each stop
STAGE_NATIVE_DEPTH = 2000  # native frames examined to place them
PROC_BACKEND = "proc"  # a PyStack read without gdb, from /proc/PID/mem (tuidbg.engine.procstacks)


class NoPython(EngineError):
    """The process has no CPython runtime."""


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
    return locals_from_result(res)


def locals_from_result(res: dict) -> tuple[PyLocal, ...]:
    """The locals of a walker's answer (``tuidbg-pylocals``, ``tuidbg-pytasks --locals``); EngineError with its
    reason when it read none."""
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
    """The refresh stage: fills ``state.python.stack``; also runs when the user selects a thread."""

    def __init__(self, ext: "PystackExtension") -> None:
        self.ext = ext

    async def __call__(self, session: "DebugSession", generation: int) -> None:
        await self.ext.refresh(session, generation)


class PystackExtension(Extension):
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
        stage = _Stage(self)
        session.refresh_stages.append(stage)
        session.select_stages.append(stage)

    def _key(self, session: "DebugSession") -> tuple:
        st = session.state
        # (per process: in a session of several, one where no Python was found says nothing of the others)
        return (session.config.program, st.pid, frozenset(lib.id for lib in st.libraries))

    async def refresh(self, session: "DebugSession", generation: int) -> None:
        st = session.state
        if st.generation != generation or st.process is not ProcessState.STOPPED:
            return
        key = self._key(session)
        if self._no_python_key == key:
            if not st.python.stack_read:
                session.set_state(st.with_python(stack_read=True))
            return
        sel = st.selected_thread or st.current_thread
        device = st.device_focus is not None
        native: Any = "none" if device or not sel else {sel}
        prev = st.python.stack
        if prev is not None and prev.backend == PROC_BACKEND:
            # read at the stop without gdb (tuidbg.engine.procstacks): its threads by gdb's ids, now known
            prev = with_thread_ids(prev, st.threads)
        try:
            if prev is not None and prev.generation == generation and prev.ok and sel and not device:
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
            session.set_state(cur.with_python(stack=None, stack_read=True))
            return
        self._no_python_key = None
        session.set_state(cur.with_python(stack=replace(ps, generation=generation), stack_read=True))
