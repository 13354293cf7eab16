"""Shared test helpers: building the test programs, finding interpreters, driving sessions."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
PROGRAMS = REPO / "tests" / "programs"
DATA = REPO / "tests" / "data"
PYENV_ROOT = Path(os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv")))
DEBIAN_PY311 = Path("/usr/bin/python3.11")


# The least time any wait for a condition allows: a condition that holds within milliseconds on an idle
# machine can take many seconds on one loaded by the suite's other workers or scripts/test-under-load.sh's
# hogs. (A wait only fails after it; a condition that holds ends the wait at once.)
LOADED_FLOOR = 30.0


LOCKS = Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "tuidbg" / "test-locks"


@contextlib.contextmanager
def machine_lock(name: str):
    """Held by one process of this machine at a time (the suite's parallel workers, another test run):
    around an expensive set-up that several would otherwise build at once, each then finding the
    first one's result."""
    LOCKS.mkdir(parents=True, exist_ok=True)
    with open(LOCKS / f"{name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _thread_states(pid: int) -> list[str]:
    """The state letter of each thread of ``pid`` (none for a process that has ended)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return []
    states = []
    for tid in tids:
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue  # (a thread that ended)
        states.append(stat[stat.rindex(")") + 2])
    return states


def wait_asleep(*pids: int, timeout: float = LOADED_FLOOR, children: bool = False) -> None:
    """Wait until every thread of ``pids`` (and, with ``children``, of their descendants) is blocked in
    the kernel (state S or D), twice in a row 20 ms apart: a program that said it is ready just before
    its sleep, read or wait is in it then (a thread with anything left to do is R, running or
    runnable). A process that has ended is not waited for. Instead of a fixed pause after "ready"."""
    import psutil

    def all_pids() -> list[int]:
        out = list(pids)
        if children:
            for pid in pids:
                try:
                    out += [c.pid for c in psutil.Process(pid).children(recursive=True)]
                except psutil.NoSuchProcess:
                    pass
        return out

    def quiet() -> bool:
        return all(s in "SD" for pid in all_pids() for s in _thread_states(pid))

    deadline = time.monotonic() + timeout
    while True:
        if quiet():
            time.sleep(0.02)
            if quiet():
                return
        if time.monotonic() > deadline:
            raise AssertionError(f"{pids} never went to sleep: {[(p, _thread_states(p)) for p in all_pids()]}")
        time.sleep(0.02)


def _held(pid: int) -> str | None:
    """A thread of ``pid`` that is traced or stopped (``tid: TracerPid, State``), or None."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return None
    for tid in tids:
        try:
            status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
        except OSError:
            continue  # (a thread that ended)
        tracer = re.search(r"^TracerPid:\s+(\d+)", status, re.M)
        state = re.search(r"^State:\s+(\S)", status, re.M)
        if state and state.group(1) in "ZX":
            return None  # (ended: the caller's own check says so)
        if (tracer and tracer.group(1) != "0") or (state and state.group(1) in "tT"):
            return f"{tid}: TracerPid {tracer and tracer.group(1)}, State {state and state.group(1)}"
    return None


def wait_released(*pids: int, timeout: float = LOADED_FLOOR) -> None:
    """Wait until no thread of ``pids`` is traced or stopped (state t or T): the debugger or dump that held
    them has let go and every thread was resumed. Instead of a fixed pause after the holder ended (its
    helpers, or the kernel's detach at a tracer's death, may finish a moment later). A process that has
    ended is not waited for: the caller's own check (is it alive?) says so."""
    deadline = time.monotonic() + max(timeout, LOADED_FLOOR)
    while True:
        held = [h for pid in pids if (h := _held(pid))]
        if not held:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"still traced or stopped: {held}")
        time.sleep(0.02)


def line_of(path: Path | str, marker: str) -> int:
    """The 1-based line holding ``MARK:<marker>`` (tests never hard-code line numbers)."""
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        if f"MARK:{marker}" in line:
            return i
    raise AssertionError(f"no MARK:{marker} in {path}")


def compile_c(src: Path, out: Path, *flags: str, shared: bool = False, cxx: bool = False) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists() and out.stat().st_mtime >= src.stat().st_mtime:
        return out
    cc = "g++" if cxx else "gcc"
    cmd = [cc, "-g", "-O0", "-fno-omit-frame-pointer", *flags, str(src), "-o", str(out)]
    if shared:
        cmd[1:1] = ["-shared", "-fPIC"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out


def build_native(build_dir: Path) -> Path:
    """native.c at -O2 -g, linked against a stripped libstripped_mix.so (no symbols but its exports)."""
    src = PROGRAMS / "native.c"
    out = build_dir / "native-O2"
    lib = build_dir / "libstripped_mix.so"
    if not lib.exists() or lib.stat().st_mtime < (PROGRAMS / "stripped_mix.c").stat().st_mtime:
        subprocess.run(["gcc", "-shared", "-fPIC", "-O2", str(PROGRAMS / "stripped_mix.c"), "-o", str(lib)], check=True)
        subprocess.run(["strip", str(lib)], check=True)
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        subprocess.run(["gcc", "-O2", "-g", str(src), "-o", str(out), f"-L{build_dir}", "-lstripped_mix",
                        f"-Wl,-rpath,{build_dir}"], check=True)
    return out


def pyenv_python(minor: str) -> Path | None:
    """pyenv's CPython ``minor`` (e.g. "3.12"), highest patch release, or None."""
    vdir = PYENV_ROOT / "versions"
    if not vdir.is_dir():
        return None
    cands = []
    for d in vdir.iterdir():
        m = re.fullmatch(rf"{re.escape(minor)}\.(\d+)", d.name)
        exe = d / "bin" / f"python{minor}"
        if m and exe.exists():
            cands.append((int(m.group(1)), exe))
    return max(cands)[1] if cands else None


# scripts/build-cpython314.sh's builds (cached outside the checkout): build name -> interpreter
CPYTHON314_CACHE = Path(
    os.environ.get("TUIDBG_CPYTHON314_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "tuidbg" / "cpython-3.14"
)
CPYTHON314_BUILDS = {"3.14": ("default", "python3.14"), "3.14-stripped": ("stripped", "python3.14"),
                     "3.14t": ("freethreaded", "python3.14t")}


def cpython314(build: str) -> Path | None:
    """The interpreter of a 3.14 build ("3.14", "3.14-stripped", "3.14t") by scripts/build-cpython314.sh, or None."""
    sub, exe = CPYTHON314_BUILDS[build]
    path = CPYTHON314_CACHE / sub / "bin" / exe
    return path if path.exists() and (CPYTHON314_CACHE / sub / ".tuidbg-built").exists() else None


def cpython314_missing(build: str) -> str:
    """Why ``cpython314(build)`` is None: the build script's own reason when it skipped."""
    status = CPYTHON314_CACHE / "STATUS"
    why = status.read_text().strip() if status.exists() else ""
    if why.startswith("skipped: "):
        return f"no CPython {build} build: scripts/build-cpython314.sh {why}"
    return f"no CPython {build} build in {CPYTHON314_CACHE} (run scripts/build-cpython314.sh)"


def cpython314_param(build: str):
    """A 3.14 build as a pytest parameter (id "cpython-<build>"), skipped with the reason where absent."""
    import pytest

    exe = cpython314(build)
    return pytest.param(exe, id=f"cpython-{build}",
                        marks=pytest.mark.skipif(exe is None, reason=cpython314_missing(build)))


def stripped_libpython(minor: str, build_dir: Path) -> tuple[Path, dict[str, str]] | None:
    """pyenv's python ``minor`` run against a copy of its libpython with the DWARF stripped.

    Returns (interpreter, environment for the program) or None when pyenv lacks it.
    """
    exe = pyenv_python(minor)
    if exe is None or shutil.which("objcopy") is None:
        return None
    lib = exe.parent.parent / "lib" / f"libpython{minor}.so.1.0"
    if not lib.exists():
        return None
    outdir = build_dir / f"stripped-{minor}"
    outdir.mkdir(parents=True, exist_ok=True)
    out = outdir / lib.name
    if not out.exists():
        subprocess.run(["objcopy", "--strip-debug", str(lib), str(out)], check=True)
    return exe, {"LD_LIBRARY_PATH": str(outdir)}


def has_dwarf(path: Path) -> bool:
    out = subprocess.run(["readelf", "-S", str(path)], capture_output=True, text=True).stdout
    return ".debug_info" in out




async def wait_for(predicate: Callable[[], bool], timeout: float = 20.0, what: str = "condition",
                   floor: float | None = None) -> None:
    """Wait until ``predicate()`` holds; fail after ``timeout`` seconds, never sooner than ``floor``
    (default LOADED_FLOOR)."""
    timeout = max(timeout, LOADED_FLOOR if floor is None else floor)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)


async def wait_stopped(session, timeout: float = 30.0):
    """Wait for the program to stop (or exit) and the refresh after the stop to finish."""
    from tuidbg.engine.state import ProcessState

    await wait_for(
        lambda: session.state.process in (ProcessState.STOPPED, ProcessState.EXITED, ProcessState.GDB_EXITED),
        timeout,
        "the program to stop",
    )
    return await session.wait_refreshed(timeout)


async def stopped_in_middle(make_session, program):
    """A session of ``program`` (tests/programs/threads.c) stopped at a breakpoint in ``middle``."""
    s = await make_session(mode="run", program=str(program))
    await s.console("break middle")
    await s.launch()
    await wait_stopped(s)
    return s


def tuidbg_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "tuidbg", *args]


def run_tuidbg(*args: str, env: dict[str, str] | None = None, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    if env:
        full_env.update(env)
    return subprocess.run(
        tuidbg_cmd(*args), capture_output=True, text=True, timeout=timeout, env=full_env, stdin=subprocess.DEVNULL, **kw
    )


def pyenv_params(minors=("3.9", "3.10", "3.11", "3.12", "3.13")) -> list:
    """pyenv's CPythons as pytest parameters (ids "pyenv-3.X"), each skipped (with the reason) where absent."""
    import pytest

    return [pytest.param(py, id=f"pyenv-{minor}",
                         marks=pytest.mark.skipif(py is None, reason=f"pyenv has no CPython {minor} on this machine"))
            for minor in minors for py in [pyenv_python(minor)]]


def debian_py311_param(id: str = "debian-3.11-stripped"):
    """Debian's stripped /usr/bin/python3.11 as a pytest parameter, skipped (with the reason) where absent."""
    import pytest

    present = DEBIAN_PY311.exists()
    return pytest.param(
        DEBIAN_PY311 if present else None,
        id=id,
        marks=pytest.mark.skipif(not present, reason="this machine has no /usr/bin/python3.11"),
    )


def check_error(res: subprocess.CompletedProcess, *needles: str) -> str:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, res.stderr
    line = lines[0]
    assert line.startswith("tuidbg: "), line
    for n in needles:
        assert n in line, (n, line)
    return line


def _cores_on() -> None:
    """(in the child, before exec) core files as large as the hard limit allows"""
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (resource.getrlimit(resource.RLIMIT_CORE)[1],) * 2)


class BlockedMain:
    """``tests/programs/py/blocked_main.py`` started with ``python`` and ``args`` (its main thread blocked in
    C: reading stdin, a join or a lock), once it says it is ready; killed at the end of the with-block."""

    def __init__(self, python, *args: str, stderr=None) -> None:
        # (a crash leaves its core in a folder of the test's own, named by ``crashed``: a harm seen once under
        # load is then readable with gdb)
        self.dir = tempfile.mkdtemp(prefix="blocked-")
        self.proc = subprocess.Popen([str(python), str(PROGRAMS / "py" / "blocked_main.py"), *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=self.dir,
                                     preexec_fn=_cores_on)
        self.proc.crashed = self.crashed  # type: ignore[attr-defined]
        assert self.proc.stdout.readline().strip() == b"ready"

    def crashed(self) -> str:
        """What the program's end was, and where its core is if it left one (for a failing assertion): moved
        out of the test's temporary folder, which is removed, into the machine's tuidbg-test-cores (0700)."""
        kept = []
        for name in os.listdir(self.dir):
            if name.startswith("core"):
                keep = os.path.join(tempfile.gettempdir().rsplit("/tt-", 1)[0], "tuidbg-test-cores")
                os.makedirs(keep, mode=0o700, exist_ok=True)
                kept.append(shutil.move(os.path.join(self.dir, name), os.path.join(keep, f"{name}.{self.proc.pid}")))
        return f"exit {self.proc.poll()}; cores: {kept or 'none'} (python {self.proc.args[0]})"

    def __enter__(self) -> subprocess.Popen:
        return self.proc

    def __exit__(self, *exc) -> None:
        self.proc.kill()
        self.proc.wait(30)
