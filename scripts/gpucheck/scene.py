"""What a scene is given: ``SceneRun`` (its sessions, its programs, its marks and notes), the same
whether the scene records on a machine (``record=True``: a real cuda-gdb, ``RecordingTransport``)
or replays a transcript in a test (``gpucheck.replay.ObservedReplay``).

A scene is an ``async def scene(run: SceneRun)`` that drives tuidbg's engine through its public
API (``tuidbg.engine.cuda``, ``native``, ``machine``, ``pyagent``), one cuda-gdb per scene. It
asserts little: what the engine read is written down (``run.mark``: at this point the engine showed
this), and the replay tests assert what a user sees. Its ``run.step`` blocks are independent: one
that fails is written down with its error and the scene goes on with the next. What a scene cannot
go on without (the program did not stop) raises ``SceneFailed``; on a dry run (no GPU), where the
scene reaches what needs a device, ``NeedsDevice``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import re
import time
import traceback
from pathlib import Path
from types import MappingProxyType
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping

from tuidbg.engine.debugger import new_session
from tuidbg.engine.session import DebugSession, SessionConfig
from tuidbg.engine.state import DebuggerState, ProcessState
from tuidbg.engine.transport import Transport

NO_DEVICE_EXIT = 2  # the test programs' exit code when there is no CUDA device (or no CUDA torch)


class NeedsDevice(Exception):
    """The dry run reached a point that needs a GPU (everything before it ran for real)."""


class SceneFailed(Exception):
    """Something a scene cannot go on without did not happen."""


# -- the programs ------------------------------------------------------------------------------------


@dataclasses.dataclass
class Programs:
    """Where the scene's programs and sources are (JSON-able: the driver hands it to each scene's
    process and writes it into meta.json; the replay tests read it back)."""

    repo: str  # the checkout the sources are in
    work: str  # where the builds are
    gpucheck: str  # tests/programs/cuda/gpucheck.cu built with -g -G
    python: str  # the interpreter of the torch program (the one with torch)
    op_build: str  # the torch custom operator's build directory
    marks: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)  # file name -> MARK -> line

    SOURCES = ("gpucheck.cu", "gpucheck_op.cu", "gpucheck_op.cpp", "gpucheck_torch.py")

    def src(self, name: str) -> str:
        return str(Path(self.repo) / "tests" / "programs" / "cuda" / name)

    def line(self, name: str, mark: str) -> int:
        try:
            return self.marks[name][mark]
        except KeyError:
            raise SceneFailed(f"no MARK:{mark} in {name}") from None

    @staticmethod
    def read_marks(repo: str) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for name in Programs.SOURCES:
            marks: dict[str, int] = {}
            text = (Path(repo) / "tests" / "programs" / "cuda" / name).read_text()
            for i, line in enumerate(text.splitlines(), 1):
                for m in re.finditer(r"MARK:(\w+)", line):
                    marks[m.group(1)] = i
            out[name] = marks
        return out


# -- plain values for the record ----------------------------------------------------------------------


def plain(obj: Any, depth: int = 0, items: int = 64) -> Any:
    """A JSON-able copy of a value of the engine (frozen dataclasses, enums, tuples), bounded: at
    most ``items`` elements of a sequence (then a note of how many were left out), 4000 characters
    of a string, 8 levels deep."""
    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    if isinstance(obj, str):
        return obj if len(obj) <= 4000 else obj[:4000] + f"… ({len(obj)} characters)"
    if depth > 8:
        return repr(obj)[:200]
    if isinstance(obj, enum.Enum):
        return obj.name
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {"_type": type(obj).__name__}
        for f in dataclasses.fields(obj):
            if f.name.startswith("_"):
                continue
            out[f.name] = plain(getattr(obj, f.name), depth + 1, items)
        return out
    if isinstance(obj, (Mapping, MappingProxyType)):
        return {str(k): plain(v, depth + 1, items) for k, v in list(obj.items())[:items]}
    if isinstance(obj, (set, frozenset)):
        seq: list[Any] = sorted(obj, key=repr)
    elif isinstance(obj, (list, tuple)):
        seq = list(obj[:items])
    elif hasattr(obj, "__len__") and hasattr(obj, "__getitem__"):
        try:
            seq = [obj[i] for i in range(min(len(obj), items))]
        except Exception:
            return repr(obj)[:400]
    else:
        return repr(obj)[:400]
    out_l = [plain(v, depth + 1, items) for v in seq[:items]]
    if len(obj) > items:
        out_l.append(f"… {len(obj) - items} more")
    return out_l


def frame_facts(frames) -> list[dict[str, Any]]:
    return [{"level": f.level, "func": f.func, "file": f.file, "line": f.line, "arch": f.arch, "addr": f.addr,
             "library": f.library} for f in frames]


# -- the scene's run ----------------------------------------------------------------------------------


TransportFactory = Callable[[SessionConfig, str], Transport]  # (config, gdb argv[0]) -> transport


class SceneRun:
    """One scene's sessions, programs and record (see the module's docstring)."""

    def __init__(self, name: str, programs: Programs, *, cuda_gdb: str, dry: bool, record: bool,
                 transport: TransportFactory, comment: Callable[[str], None] | None = None,
                 on_mark: Callable[[str, "SceneRun"], Awaitable[None]] | None = None,
                 at_mark: Callable[[str], str | None] | None = None, wait_scale: float = 1.0) -> None:
        self.name = name
        self.programs = programs
        self.cuda_gdb = cuda_gdb
        self.dry = dry
        self.record = record
        self._transport = transport
        self._comment = comment or (lambda text: None)
        self._on_mark = on_mark
        self._at_mark = at_mark  # replay: checks that a mark comes where the recording had it
        self.wait_scale = wait_scale
        self.sessions: list[DebugSession] = []
        self.marks: list[dict[str, Any]] = []
        self.steps: list[dict[str, Any]] = []
        self.notes: dict[str, Any] = {}
        self.output = bytearray()
        self.mark_problems: list[str] = []
        self.agent_exchange: list[dict[str, Any]] = []
        self.kept: dict[str, Any] = {}  # live objects of a mark (a disassembly window) for a replay test

    # -- sessions --

    async def session(self, **config: Any) -> DebugSession:
        """A started session of cuda-gdb on ``config`` (SessionConfig's fields; mode "run")."""
        config.setdefault("mode", "run")
        cfg = SessionConfig(gdb=self.cuda_gdb, cuda=True, nx=True, **config)
        s = new_session(cfg, self._transport(cfg, self.cuda_gdb))
        self.sessions.append(s)
        s.on_program_output(self._output)
        await s.start()
        return s

    def _output(self, data: bytes) -> None:
        self.output.extend(data)
        if len(self.output) > 64 * 1024:
            del self.output[: len(self.output) - 64 * 1024]

    async def close(self) -> None:
        for s in self.sessions:
            try:
                await s.close()
            except Exception as exc:  # (a session that cannot close politely is abandoned)
                self.notes.setdefault("close_errors", []).append(f"{type(exc).__name__}: {exc}")
                s.abandon()

    # -- waiting --

    async def until(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        """Wait until ``predicate()`` (checked every 20 ms, as the tests' wait_for), at most ``timeout`` s."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout * self.wait_scale
        while not predicate():
            if loop.time() > deadline:
                raise SceneFailed(f"timed out after {timeout * self.wait_scale:.0f} s waiting for {what}")
            await asyncio.sleep(0.02)

    async def stopped(self, s: DebugSession, what: str, timeout: float = 60.0) -> DebuggerState:
        """The next stop of the program, refreshed. If the program exits instead: on a dry run with the
        test programs' "no CUDA device" code, ``NeedsDevice``; otherwise ``SceneFailed``."""
        await self.until(lambda: s.state.process in (ProcessState.STOPPED, ProcessState.EXITED, ProcessState.GDB_EXITED),
                         timeout, what)
        st = await s.wait_refreshed(timeout * self.wait_scale)
        if st.process is ProcessState.STOPPED:
            return st
        self.no_stop(st, what)
        return st  # (not reached)

    def no_stop(self, st: DebuggerState, what: str) -> None:
        tail = bytes(self.output[-400:]).decode("utf-8", "replace").strip()
        said = f"; the program said: {tail!r}" if tail else ""
        if st.process is ProcessState.EXITED and st.exit_code == NO_DEVICE_EXIT and self.dry:
            raise NeedsDevice(f"{what}: the program exited {NO_DEVICE_EXIT} (no CUDA device here){said}")
        if st.process is ProcessState.EXITED:
            raise SceneFailed(f"{what}: the program exited instead ({st.exit_description or st.exit_code}){said}")
        raise SceneFailed(f"{what}: cuda-gdb is gone ({st.process.name}){said}")

    async def exited(self, s: DebugSession, what: str = "the program's exit", timeout: float = 60.0) -> DebuggerState:
        """Wait for the program to end (after the last continue); its exit is written down."""
        await self.until(lambda: s.state.process in (ProcessState.EXITED, ProcessState.GDB_EXITED, ProcessState.STOPPED),
                         timeout, what)
        st = s.state
        await self.mark("exit", process=st.process.name, exit_code=st.exit_code, description=st.exit_description,
                        stop=st.stop.describe() if st.stop is not None and st.process is ProcessState.STOPPED else None)
        return st

    # -- the record --

    async def mark(self, name: str, **facts: Any) -> None:
        """What the engine showed at this point of the scene (``# mark: NAME`` in the transcript)."""
        if self._at_mark is not None:
            problem = self._at_mark(name)
            if problem:
                self.mark_problems.append(problem)
        self._comment(f"mark: {name}")
        self.marks.append({"name": name, "facts": plain(facts)})
        if self._on_mark is not None:
            await self._on_mark(name, self)

    def keep(self, name: str, obj: Any) -> None:
        """Keep a live object of this point (not written down: a replay test renders it in a pane)."""
        self.kept[name] = obj

    def note(self, key: str, value: Any) -> None:
        self.notes[key] = plain(value)

    @contextlib.asynccontextmanager
    async def step(self, name: str) -> AsyncIterator[None]:
        """A part of the scene that may fail on its own: its error is written down, the scene goes on.
        ``NeedsDevice`` and ``SceneFailed`` end the scene."""
        t0 = time.monotonic()
        entry: dict[str, Any] = {"name": name}
        self.steps.append(entry)
        try:
            yield
        except (NeedsDevice, SceneFailed, asyncio.CancelledError):
            entry["ok"] = False
            entry["error"] = "ended the scene"
            raise
        except Exception as exc:
            entry["ok"] = False
            entry["error"] = f"{type(exc).__name__}: {exc}"
            entry["traceback"] = traceback.format_exc(limit=6)[-3000:]
            self._comment(f"step {name} failed: {type(exc).__name__}: {str(exc)[:300]}")
        else:
            entry["ok"] = True
        finally:
            if self.record:
                entry["seconds"] = round(time.monotonic() - t0, 2)

    def result(self) -> dict[str, Any]:
        return {"marks": self.marks, "steps": self.steps, "notes": self.notes,
                "program_output_tail": bytes(self.output[-4000:]).decode("utf-8", "replace"),
                "agent_exchange": self.agent_exchange}
