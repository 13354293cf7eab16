"""``tuidbg dump PID`` without gdb (tuidbg/procread): the same Python frames as through gdb, on
every interpreter, deep stacks exact, and the process always left running and untraced."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import requires_gdb
from helpers import REPO, line_of, run_tuidbg, tuidbg_cmd, wait_asleep, wait_released
from pystack_helpers import PY_PROGRAMS, env_with, interpreter_params, read_json, resolve, tracer_pid
from helpers import check_error

pytestmark = [pytest.mark.slow]

SLEEPERS = PY_PROGRAMS / "sleepers.py"
DEEP = PY_PROGRAMS / "deep_sleep.py"
ALL = ["pyenv-3.9", "pyenv-3.10", "pyenv-3.11", "pyenv-3.12", "pyenv-3.13", "debian-3.11", "stripped-3.12",
       "stripped-3.13", "cpython-3.14", "cpython-3.14-stripped", "cpython-3.14t"]


def _start(interp, args, ready: Path, cleanup, timeout=120):
    proc = subprocess.Popen([str(interp.exe), *map(str, args)], env=env_with(interp.env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    cleanup.append(proc)
    deadline = time.monotonic() + timeout
    while not ready.exists():
        if proc.poll() is not None:
            raise AssertionError(f"{args[0]} exited: {proc.stderr.read().decode()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{args[0]} did not get ready")
        time.sleep(0.02)
    wait_asleep(proc.pid)  # (from writing the file to its sleep)
    return proc, read_json(ready)


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _dump(pid, *opts, timeout=300) -> dict:
    res = run_tuidbg("dump", "--json", *opts, str(pid), timeout=timeout)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["format"] == "tuidbg-dump" and len(doc["processes"]) == 1 and doc["processes"][0]["pid"] == pid
    return doc["processes"][0]


def _state(pid) -> str:
    with open(f"/proc/{pid}/status") as f:
        return next(line for line in f if line.startswith("State:")).split(None, 1)[1].strip()


def _assert_running_untraced(proc):
    wait_released(proc.pid)
    assert proc.poll() is None, "the process died"
    assert tracer_pid(proc.pid) == 0
    state = _state(proc.pid)
    assert not state.startswith(("t", "T")), state


def _frames(thread) -> list[list]:
    """A dumped thread's Python frames as traceback.extract_stack lists them: outermost first."""
    return [[f["function"], f["file"], f["line"]] for f in reversed(thread["frames"])]


def _by_lwp(report) -> dict:
    return {t["tid"]: t for t in report["threads"]}


# ---------------------------------------------------------------------------------------------
# The same frames as through gdb


@requires_gdb
@pytest.mark.parametrize("name", interpreter_params(ALL))
def test_same_frames_as_gdb(build_dir, tmp_path, cleanup, name):
    interp = resolve(name, build_dir)
    proc, ready = _start(interp, [SLEEPERS, 6, tmp_path / "ready.json"], tmp_path / "ready.json", cleanup)

    fast = _dump(proc.pid)
    _assert_running_untraced(proc)
    slow = _dump(proc.pid, "--via-gdb")
    _assert_running_untraced(proc)

    assert fast["reader"] == "memory" and "fallback" not in fast, fast.get("fallback")
    assert slow["reader"] == "gdb"
    assert fast["python"] == slow["python"] and fast["python"].startswith(f"3.{interp.minor}")
    assert fast.keys() == slow.keys()
    # the same threads, numbered and named alike, and every Python frame alike (function, qualified
    # name, file, line, entry flag)
    assert [(t["id"], t["tid"], t["name"], t["main"]) for t in fast["threads"]] == \
        [(t["id"], t["tid"], t["name"], t["main"]) for t in slow["threads"]]
    assert fast["threads"] == slow["threads"]
    # and they are the right ones (not merely equal)
    threads = _by_lwp(fast)
    assert set(threads) == {lwp for _fn, _i, lwp in ready["threads"]} | {ready["main"]}
    assert [f["function"] for f in threads[ready["main"]]["frames"]] == ["main", "<module>"]
    for fn, _i, lwp in ready["threads"]:
        mine = next(f for f in threads[lwp]["frames"] if f["function"] == fn)
        assert (mine["file"], mine["line"]) == (str(SLEEPERS), line_of(SLEEPERS, "sleep_a" if fn == "sleeper_a" else "wait_b"))


def test_64_threads_text_and_json(tmp_path, cleanup):
    interp = resolve("debian-3.11", tmp_path)
    proc, ready = _start(interp, [SLEEPERS, 64, tmp_path / "ready.json"], tmp_path / "ready.json", cleanup)
    report = _dump(proc.pid)
    _assert_running_untraced(proc)
    assert report["reader"] == "memory"
    threads = _by_lwp(report)
    assert len(threads) == 65 and set(threads) == {lwp for _f, _i, lwp in ready["threads"]} | {ready["main"]}
    assert [t["id"] for t in report["threads"]] == [str(i) for i in range(1, 66)]
    comm = {lwp: Path(f"/proc/{proc.pid}/task/{lwp}/comm").read_text().strip() for lwp in threads}
    assert {lwp: t["name"] for lwp, t in threads.items()} == comm
    for fn, _i, lwp in ready["threads"]:
        names = [f["function"] for f in threads[lwp]["frames"]]
        assert fn in names and names[-1] == "_bootstrap", names

    res = run_tuidbg("dump", str(proc.pid), timeout=60)
    assert res.returncode == 0, res.stderr
    # identical stacks once each: the main thread's, and one for each kind of sleeper with its 32 threads
    heads = [line for line in res.stdout.splitlines() if line and not line.startswith(" ")]
    assert heads[0].startswith(f"Process {proc.pid}: ")
    by_fn = {fn: {lwp for f, _i, lwp in ready["threads"] if f == fn} for fn in ("sleeper_a", "sleeper_b")}
    groups = {frozenset(int(x) for x in h.split(": ")[1].rstrip(":").split()) for h in heads if " threads: " in h}
    assert groups == {frozenset(v) for v in by_fn.values()}, heads
    assert f"Thread 1 (LWP {ready['main']}) \"python3.11\" [main thread]:" in heads
    assert f"sleeper_a ({SLEEPERS}:{line_of(SLEEPERS, 'sleep_a')})" in res.stdout
    assert f"sleeper_b ({SLEEPERS}:{line_of(SLEEPERS, 'wait_b')})" in res.stdout
    _assert_running_untraced(proc)


def test_the_dump_path_imports_little(tmp_path, cleanup):
    """What keeps `tuidbg dump` within py-spy's time (bench/dump_fast.py measures it): none of the
    imports the other commands need on its path."""
    interp = resolve("debian-3.11", tmp_path)
    proc, _ready = _start(interp, [SLEEPERS, 2, tmp_path / "ready.json"], tmp_path / "ready.json", cleanup)
    code = (
        "import sys\n"
        "from tuidbg import cli\n"
        f"rc = cli.main(['dump', '{proc.pid}'])\n"
        "heavy = ('asyncio', 'argparse', 'dataclasses', 'shutil', 'subprocess', 'enum', 'typing', 'inspect', 'ctypes',\n"
        "         'signal', 'textual', 'rich', 'tuidbg.engine', 'tuidbg.ui')\n"
        "print(rc, sorted(m for m in sys.modules if m.startswith(heavy)), file=sys.stderr)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=60)
    assert res.stderr.strip() == "0 []", res.stderr
    assert res.stdout.count("\nThread ") == 3 and "sleeper_a" in res.stdout
    _assert_running_untraced(proc)


# ---------------------------------------------------------------------------------------------
# Deep stacks, exact


def _deep(interp, depth, tmp_path, cleanup):
    out = tmp_path / f"deep{depth}.json"
    proc, expect = _start(interp, [DEEP, depth, out], out, cleanup)
    report = _dump(proc.pid)
    _assert_running_untraced(proc)
    assert report["reader"] == "memory", report.get("fallback")
    t = _by_lwp(report)[expect["native_id"]]
    assert not t["truncated"] and "python_error" not in t
    got = _frames(t)
    assert len(got) == len(expect["frames"]) >= depth
    assert got == expect["frames"]
    assert got[-1] == ["record_and_sleep", str(DEEP), line_of(DEEP, "deep_sleep")]
    return proc


@pytest.mark.parametrize("name", interpreter_params(ALL))
def test_deep_stacks_exact(build_dir, tmp_path, cleanup, name):
    interp = resolve(name, build_dir)
    for depth in (2000, 10000):
        _deep(interp, depth, tmp_path, cleanup)
        proc = cleanup.pop()
        proc.kill()
        proc.wait(10)


@pytest.mark.parametrize("name", interpreter_params(["debian-3.11", "pyenv-3.9", "pyenv-3.13", "cpython-3.14",
                                                       "cpython-3.14-stripped", "cpython-3.14t"]))
def test_50000_frames_exact(build_dir, tmp_path, cleanup, name):
    _deep(resolve(name, build_dir), 50000, tmp_path, cleanup)


# ---------------------------------------------------------------------------------------------
# Stopped only while read; never left stopped or traced


def _when_traced(proc, dumper, timeout=60) -> bool:
    """Wait until ``dumper`` holds ``proc`` (its tracer); False if the dump ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if tracer_pid(proc.pid) == dumper.pid:
            return True
        if dumper.poll() is not None:
            return False
        time.sleep(0.0005)
    raise AssertionError("the dump never stopped the process")


def _task_status(pid, tid) -> tuple[int, str]:
    """(TracerPid, State) of one thread."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/task/{tid}/status").read_text().splitlines()
                  if ":" in line)
    return int(fields["TracerPid"]), fields["State"].strip()


def test_freeze_stops_every_thread_and_always_lets_go(tmp_path, cleanup):
    """In this process (the tracer stays alive, so nothing is let go by the kernel on its exit)."""
    from tuidbg.procread.freeze import Freeze, Signalled

    interp = resolve("debian-3.11", tmp_path)
    proc, ready = _start(interp, [SLEEPERS, 4, tmp_path / "ready.json"], tmp_path / "ready.json", cleanup)
    tids = [ready["main"]] + [lwp for _f, _i, lwp in ready["threads"]]
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)}

    def held(fz):
        assert sorted(fz.tids) == sorted(tids) and fz.tids[0] == proc.pid
        for tid in tids:
            tracer, state = _task_status(proc.pid, tid)
            assert tracer == os.getpid() and state.startswith("t"), (tid, tracer, state)

    def let_go():
        for tid in tids:
            tracer, state = _task_status(proc.pid, tid)
            assert tracer == 0 and not state.startswith(("t", "T")), (tid, tracer, state)
        assert {s: signal.getsignal(s) for s in handlers} == handlers

    with Freeze(proc.pid) as fz:
        held(fz)
    let_go()
    with pytest.raises(RuntimeError, match="inside"):
        with Freeze(proc.pid) as fz:
            held(fz)
            raise RuntimeError("inside")
    let_go()
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        with pytest.raises(Signalled) as info:
            with Freeze(proc.pid) as fz:
                held(fz)
                os.kill(os.getpid(), sig)
                time.sleep(5)
        assert info.value.signum == sig
        let_go()
    _assert_running_untraced(proc)


def _start_dump(pid, *opts):
    return subprocess.Popen(tuidbg_cmd("dump", *opts, str(pid)), env=_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "SIGHUP", "SIGKILL"])  # (SIGKILL: the kernel lets go)
def test_signal_to_the_dump_lets_the_process_go(tmp_path, cleanup, how):
    interp = resolve("debian-3.11", tmp_path)
    out = tmp_path / "deep.json"
    proc, _ = _start(interp, [DEEP, 50000, out], out, cleanup)
    for _attempt in range(5):
        dumper = _start_dump(proc.pid, "--json")
        if _when_traced(proc, dumper):
            dumper.send_signal(getattr(signal, how))
            _stdout, stderr = dumper.communicate(timeout=60)
            break
        dumper.communicate(timeout=60)
    else:
        pytest.fail("the dump of 50,000 frames never held the process long enough to be signalled")
    _assert_running_untraced(proc)
    assert "Traceback" not in stderr
    if how == "SIGINT":
        assert dumper.returncode == 130 and stderr.strip() == "tuidbg: interrupted", (dumper.returncode, stderr)
    else:
        assert dumper.returncode == -getattr(signal, how), (dumper.returncode, stderr)
    # and it can be read again
    report = _dump(proc.pid)
    assert report["reader"] == "memory"
    _assert_running_untraced(proc)


def test_process_that_exits_during_the_dump(tmp_path, cleanup):
    interp = resolve("debian-3.11", tmp_path)
    out = tmp_path / "deep.json"
    for _attempt in range(5):
        out.unlink(missing_ok=True)
        proc, _ = _start(interp, [DEEP, 50000, out], out, cleanup)
        dumper = _start_dump(proc.pid)
        if _when_traced(proc, dumper):
            proc.kill()
            stdout, stderr = dumper.communicate(timeout=60)
            if not (dumper.returncode == 0 and stdout):  # (else the kill came after the read: again)
                break
        dumper.communicate(timeout=60)
    else:
        pytest.fail("the dump of 50,000 frames never held the process long enough to kill it")
    check_error(subprocess.CompletedProcess(dumper.args, dumper.returncode, stdout, stderr),
                f"process {proc.pid} exited while its stacks were being read")
    assert stdout == ""


def test_nonblocking_reads_without_stopping(tmp_path, cleanup):
    interp = resolve("debian-3.11", tmp_path)
    proc, ready = _start(interp, [SLEEPERS, 4, tmp_path / "ready.json"], tmp_path / "ready.json", cleanup)
    stopped = _dump(proc.pid)
    running = _dump(proc.pid, "--nonblocking")
    assert running["reader"] == "memory-nonblocking"
    assert running["threads"] == stopped["threads"]  # (sleeping threads: nothing to tear)
    _assert_running_untraced(proc)
    res = run_tuidbg("dump", "--nonblocking", "--native", str(proc.pid))
    check_error(res, "--nonblocking", "not with --native")


# ---------------------------------------------------------------------------------------------
# gdb when it must


@requires_gdb
def test_native_direct_and_no_python_through_gdb(tmp_path, cleanup):
    interp = resolve("debian-3.11", tmp_path)
    proc, _ready = _start(interp, [SLEEPERS, 2, tmp_path / "ready.json"], tmp_path / "ready.json", cleanup)
    # --native reads without gdb too (tests/cli/test_dump_native.py compares it with gdb's)
    report = _dump(proc.pid, "--native")
    assert report["reader"] == "memory" and "fallback" not in report, report.get("fallback")
    for t in report["threads"]:  # whole stacks: native frames, the Python ones in their place
        kinds = {f["kind"] for f in t["frames"]}
        assert "native" in kinds and kinds <= {"python", "native"}, t
    main = _by_lwp(report)[proc.pid]["frames"]
    assert [f["function"] for f in main if f["kind"] == "python"] == ["main", "<module>"]
    assert main.index(next(f for f in main if f["kind"] == "python")) > 0  # (called from Python, into C)
    _assert_running_untraced(proc)

    # no CPython runtime where this reader looks: gdb looks further (debug info), and says so
    sleeper = subprocess.Popen(["sleep", "600"])
    cleanup.append(sleeper)
    wait_asleep(sleeper.pid)
    report = _dump(sleeper.pid)
    assert report["reader"] == "gdb" and "no CPython runtime" in report["fallback"], report
    assert report["note"] == "no CPython runtime in this process"
    _assert_running_untraced(sleeper)


def test_fallback_without_gdb_says_why(cleanup):
    sleeper = subprocess.Popen(["sleep", "600"])
    cleanup.append(sleeper)
    wait_asleep(sleeper.pid)
    res = run_tuidbg("dump", str(sleeper.pid), env={"PATH": "/nonexistent"})
    check_error(res, f"reading process {sleeper.pid} needs gdb (no CPython runtime found without gdb",
                "gdb is not installed")
    # what needs no gdb does not ask for it
    res = run_tuidbg("dump", "--nonblocking", str(sleeper.pid), env={"PATH": "/nonexistent"})
    assert res.returncode == 0 and "no CPython runtime in this process" in res.stdout, res.stderr
    _assert_running_untraced(sleeper)


# ---------------------------------------------------------------------------------------------
# Bad input


def test_bad_pid_one_line():
    check_error(run_tuidbg("dump", "abc"), "'abc' is not a process ID")
    check_error(run_tuidbg("dump", "4000000"), "no process with ID 4000000")
    check_error(run_tuidbg("dump", "--json", "0"), "'0' is not a process ID")
    check_error(run_tuidbg("dump", "--jobs", "0", "1"), "--jobs 0: at least 1")
    check_error(run_tuidbg("dump", str(os.getpid()), "--bogus"), "unrecognized arguments: --bogus")


def test_ptrace_refused_one_line(cleanup):
    """A user who may not trace the process: the gdb path's explanation (Yama, CAP_SYS_PTRACE)."""
    py = Path("/usr/bin/python3")
    if os.geteuid() != 0 or shutil.which("setpriv") is None or not py.exists():
        pytest.skip("needs root, setpriv and /usr/bin/python3 to run the dump as another user")
    proc = subprocess.Popen(["sleep", "600"])
    cleanup.append(proc)
    # The dump's direct path needs the standard library only: the system's Python runs a copy of
    # tuidbg that user nobody can read.
    os.chmod(tempfile.gettempdir(), 0o711)  # (the test's own folder, 0700: nobody may pass through to the copy)
    top = Path(tempfile.mkdtemp(prefix="tuidbg-nobody-"))
    try:
        shutil.copytree(REPO / "tuidbg", top / "tuidbg", ignore=shutil.ignore_patterns("__pycache__"))
        for root, dirs, _files in os.walk(top):
            os.chmod(root, 0o755)
        for root, _dirs, files in os.walk(top):
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)
        res = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", str(py), "-m",
                              "tuidbg", "dump", str(proc.pid)], capture_output=True, text=True, timeout=60, cwd="/",
                             env={"PYTHONPATH": str(top), "PATH": os.environ["PATH"], "PYTHONDONTWRITEBYTECODE": "1"})
    finally:
        shutil.rmtree(top)
    line = check_error(res, f"cannot attach to process {proc.pid}", "ptrace refused", "CAP_SYS_PTRACE")
    assert "ptrace_scope" in line
    _assert_running_untraced(proc)
