"""Interpreters the Python-stack tests run on, and helpers shared by those tests."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from helpers import DEBIAN_PY311, PROGRAMS, cpython314, cpython314_missing, has_dwarf, pyenv_python, stripped_libpython, wait_asleep

PY_PROGRAMS = PROGRAMS / "py"
TORCH_PYTHON = Path(__file__).resolve().parents[1] / ".venv-torch" / "bin" / "python"

# (id, how to get it, where its struct offsets must come from)
INTERPRETERS = [
    ("pyenv-3.9", "pyenv", "dwarf"),
    ("pyenv-3.10", "pyenv", "dwarf"),
    ("pyenv-3.11", "pyenv", "dwarf"),
    ("pyenv-3.12", "pyenv", "dwarf"),
    ("pyenv-3.13", "pyenv", "dwarf"),
    ("debian-3.11", "debian", "table"),
    ("stripped-3.12", "stripped", "table"),
    ("stripped-3.13", "stripped", "debug_offsets"),
    # scripts/build-cpython314.sh's builds (the default one falls back to pyenv's 3.14); with
    # DWARF in libpython the walker takes it over _Py_DebugOffsets, as on 3.9-3.13
    ("cpython-3.14", "cpython314", "dwarf"),
    ("cpython-3.14-stripped", "cpython314", "debug_offsets"),
    ("cpython-3.14t", "cpython314", "dwarf"),
]


class Interp:
    def __init__(self, name: str, exe: Path, env: dict[str, str], offsets: str) -> None:
        self.name = name
        self.exe = exe
        self.env = env
        self.offsets = offsets
        self.minor = int(re.search(r"3\.(\d+)", name).group(1))
        self.free_threaded = name.endswith("t")

    def __repr__(self) -> str:
        return f"Interp({self.name})"


def interpreter_params(names: list[str] | None = None) -> list:
    out = []
    for name, _kind, _off in INTERPRETERS:
        if names is not None and name not in names:
            continue
        out.append(pytest.param(name, id=name))
    return out


def resolve(name: str, build_dir: Path) -> Interp:
    """The interpreter for a parameter id, or a pytest skip naming what this machine lacks."""
    kind, offsets = next((k, o) for n, k, o in INTERPRETERS if n == name)
    minor = name.rsplit("-", 1)[1]
    if kind == "cpython314":
        build = name[len("cpython-"):]
        exe = cpython314(build)
        if exe is None and build == "3.14":
            exe = pyenv_python("3.14")
        if exe is None:
            pytest.skip(cpython314_missing(build))
        if build != "3.14-stripped":
            lib = exe.parent.parent / "lib" / f"libpython{build}.so.1.0"
            if not has_dwarf(lib if lib.exists() else exe):
                pytest.skip(f"CPython {build} at {exe} was built without debug info")
        return Interp(name, exe, {}, offsets)
    if kind == "pyenv":
        exe = pyenv_python(minor)
        if exe is None:
            pytest.skip(f"pyenv has no CPython {minor} on this machine")
        lib = exe.parent.parent / "lib" / f"libpython{minor}.so.1.0"
        if not has_dwarf(lib if lib.exists() else exe):
            pytest.skip(f"pyenv's CPython {minor} on this machine was built without debug info")
        return Interp(name, exe, {}, offsets)
    if kind == "debian":
        if not DEBIAN_PY311.exists():
            pytest.skip("this machine has no /usr/bin/python3.11 (Debian's stripped build)")
        return Interp(name, DEBIAN_PY311, {}, offsets)
    got = stripped_libpython(minor, build_dir)
    if got is None:
        if shutil.which("objcopy") is None:
            pytest.skip("objcopy is not installed on this machine")
        pytest.skip(f"pyenv has no CPython {minor} with a shared libpython on this machine")
    exe, env = got
    return Interp(name, exe, env, offsets)


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def frames_of(t) -> list[list]:
    """A PyThread's frames as the traceback module lists them: (name, file, line), outermost first."""
    return [[f.function, f.file, f.line] for f in reversed(t.frames)]


def thread_with_lwp(ps, lwp: int):
    for t in ps.threads:
        if t.lwp == lwp:
            return t
    raise AssertionError(f"no Python thread with LWP {lwp}: {[(t.tid, t.lwp) for t in ps.threads]}")


def tracer_pid(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    raise AssertionError("no TracerPid line")


def env_with(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env


def wait_for_files(paths, procs, timeout=120):
    """Wait until every file in ``paths`` exists (the programs write them when ready); a program of
    ``procs`` that exits meanwhile fails the test with its stderr."""
    deadline = time.monotonic() + timeout
    while not all(Path(p).exists() for p in paths):
        for proc in procs:
            if proc.poll() is not None:
                raise AssertionError(f"{proc.args} exited: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
        if time.monotonic() > deadline:
            raise AssertionError(f"not ready: {[p for p in paths if not Path(p).exists()]}")
        time.sleep(0.05)
    wait_asleep(*(p.pid for p in procs), children=True)  # from writing the files to the sleeps


def kill_tree(proc):
    """Kill ``proc`` and all its descendants (multiprocessing's helpers and torchrun's ranks
    outlive a killed parent; the ranks are in sessions of their own)."""
    import psutil

    try:
        top = psutil.Process(proc.pid)
        kids = top.children(recursive=True)
    except psutil.Error:  # (it has ended, and been waited for)
        top, kids = None, []
    for p in [top, *kids] if top is not None else kids:
        try:
            p.kill()
        except psutil.Error:
            pass
    proc.wait(30)
    psutil.wait_procs(kids, timeout=30)


def running_untraced(pid):
    """The process runs on, untraced (left by a debugger unharmed)."""
    assert tracer_pid(pid) == 0, pid
    with open(f"/proc/{pid}/status") as f:
        state = next(line for line in f if line.startswith("State:")).split(None, 1)[1]
    assert not state.startswith(("t", "T", "Z")), (pid, state)


async def shows_its_python(s, st, stop, local_names: set[str], timeout: float = 60) -> None:
    """A Python stop in one process of several (``st``, a state of session ``s`` at ``stop``) shows that
    process's Python as a single process's would: the stopped thread's Python stack read from memory
    (through gdb) has the stop's function and line innermost, with ``local_names`` among its locals; and
    every other process that stopped with it has its stacks of this stop read (without gdb), so that where
    each one is in Python is known. The program (the first process) is in its main function."""
    from tuidbg.engine import procstacks, pystack
    from tuidbg.engine.python import view
    from tuidbg.engine.python.model import is_agent_file
    from tuidbg.engine.rescue import has_ended
    from tuidbg.engine.state import ProcessState

    pt = view.live_thread(st)
    assert pt is not None, (st.selected_inferior, st.python.stack)
    first = view.user_python_frame(pt)
    assert first is not None and (first.name, first.line) == (stop.func, stop.line), (first, stop)
    names = {v.name for v in await pystack.python_locals(s, pt.tid, first.index)}
    assert local_names <= names, names
    st = await procstacks.controller(s).wait_read(timeout)
    for inf in st.inferiors:
        if inf.process is not ProcessState.STOPPED or has_ended(inf.pid):  # (one that ended, its exit not said yet)
            continue
        assert inf.python.stack is not None and inf.python.stack.ok, (inf.id, inf.cmdline, inf.python.stack)
        if inf.id != st.selected_inferior:
            assert inf.python.stack.backend == "proc" and inf.python.stack.generation == inf.generation
        frames = [(t.lwp, [(f.name, f.line) for f in t.frames]) for t in inf.python.stack.threads]
        if inf.id == st.inferiors[0].id:
            # the program waits for its children in its main function
            assert any(name in ("main", "<module>") for _, fs in frames for name, _ in fs), frames
        # (a child being started, or ending, may run no Python frame at the moment)
        own = inf.python.agent.control_native_id if inf.python.agent is not None else None
        # (a user's frame: one outer to every frame of the agent's; what the agent's code calls, realpath in its
        # callback on a code object it has not seen, is the agent's doing)
        users = any(not is_agent_file(f.file) for t in inf.python.stack.threads if t.lwp != own
                    for f in t.frames[1 + max((i for i, g in enumerate(t.frames) if is_agent_file(g.file)), default=-1):])
        assert (view.process_line(inf) is not None) == users, (inf.id, frames)
