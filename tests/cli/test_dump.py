"""``tuidbg dump PID``: every thread's stack of a running process, then the process runs on untraced."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from conftest import requires_gdb
from helpers import line_of, run_tuidbg, wait_asleep, wait_released
from pystack_helpers import PY_PROGRAMS, env_with, interpreter_params, read_json, resolve, tracer_pid
from helpers import check_error

pytestmark = [requires_gdb, pytest.mark.slow]

SLEEPERS = PY_PROGRAMS / "sleepers.py"


def _start_sleepers(interp, tmp_path, n=6):
    ready = tmp_path / "ready.json"
    proc = subprocess.Popen([str(interp.exe), str(SLEEPERS), str(n), str(ready)], env=env_with(interp.env),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not ready.exists():
        if proc.poll() is not None:
            raise AssertionError(f"sleepers.py exited: {proc.stderr.read().decode()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("sleepers.py did not get ready")
        time.sleep(0.05)
    wait_asleep(proc.pid)
    return proc, read_json(ready)


def _tids_in_group_heads(text: str) -> set[int]:
    """The threads named in a one-process dump's group heads ("Thread 2 (LWP 123)...", "32 threads: 123 124")."""
    tids = set()
    for line in text.splitlines():
        if m := re.match(r"^Thread \d+ \(LWP (\d+)\)", line):
            tids.add(int(m.group(1)))
        elif m := re.match(r"^\d+ threads: ([\d ]+):?$", line):
            tids |= {int(x) for x in m.group(1).split()}
    return tids


def _assert_untraced_and_running(proc):
    wait_released(proc.pid)
    assert proc.poll() is None, "the process died"
    assert tracer_pid(proc.pid) == 0
    with open(f"/proc/{proc.pid}/status") as f:
        state = next(line for line in f if line.startswith("State:"))
    assert "t (tracing stop)" not in state and "T (stopped)" not in state, state


@pytest.mark.parametrize("name", interpreter_params(["debian-3.11", "stripped-3.12", "stripped-3.13", "pyenv-3.9",
                                                       "cpython-3.14", "cpython-3.14-stripped", "cpython-3.14t"]))
async def test_dump_sleeping_threads(build_dir, tmp_path, cleanup, name):
    interp = resolve(name, build_dir)
    proc, ready = _start_sleepers(interp, tmp_path)
    cleanup.append(proc)
    by_lwp = {lwp: fn for fn, _i, lwp in ready["threads"]}

    res = run_tuidbg("dump", "--json", str(proc.pid), timeout=120)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert len(doc["processes"]) == 1 and "errors" not in doc
    report = doc["processes"][0]
    assert report["pid"] == proc.pid and report["host"] == os.uname().nodename and report["env"] == {}
    assert report["ppid"] == os.getpid()
    assert report["python"].startswith(f"3.{interp.minor}")
    threads = {t["tid"]: t for t in report["threads"]}
    assert set(threads) == set(by_lwp) | {ready["main"]}
    comm = {lwp: Path(f"/proc/{proc.pid}/task/{lwp}/comm").read_text().strip() for lwp in threads}
    assert {lwp: t["name"] for lwp, t in threads.items()} == comm  # each thread's name, as the system knows it
    main = threads[ready["main"]]
    assert main["main"] and [f["function"] for f in main["frames"]] == ["main", "<module>"]
    assert main["frames"][0]["line"] == line_of(SLEEPERS, "sleep_main")
    for lwp, fn in by_lwp.items():
        frames = threads[lwp]["frames"]
        names = [f["function"] for f in frames]
        assert fn in names, (lwp, names)
        mine = frames[names.index(fn)]
        assert mine["file"] == str(SLEEPERS)
        assert mine["line"] == line_of(SLEEPERS, "sleep_a" if fn == "sleeper_a" else "wait_b")
        assert names[-1] == "_bootstrap"
    _assert_untraced_and_running(proc)

    # text, and the native frames around the Python ones
    res = run_tuidbg("dump", "--native", str(proc.pid), timeout=120)
    assert res.returncode == 0, res.stderr
    text = res.stdout
    assert _tids_in_group_heads(text) == set(threads)  # every thread, in one group or another
    assert f"[py] sleeper_a ({SLEEPERS}:{line_of(SLEEPERS, 'sleep_a')})" in text
    assert ("nanosleep" in text or "select" in text) and "[main thread]" in text
    assert "_PyEval_EvalFrameDefault" not in text  # replaced by the Python frames it runs
    _assert_untraced_and_running(proc)

    res = run_tuidbg("dump", str(proc.pid), timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"sleeper_b ({SLEEPERS}:{line_of(SLEEPERS, 'wait_b')})" in res.stdout
    _assert_untraced_and_running(proc)


async def test_dump_process_without_python(tmp_path, cleanup):
    proc = subprocess.Popen(["sleep", "600"])
    cleanup.append(proc)
    wait_asleep(proc.pid)
    res = run_tuidbg("dump", str(proc.pid), timeout=120)
    assert res.returncode == 0, res.stderr
    assert "no CPython runtime in this process" in res.stdout
    res = run_tuidbg("dump", "--native", str(proc.pid), timeout=120)
    assert res.returncode == 0 and "nanosleep" in res.stdout, res.stdout
    _assert_untraced_and_running(proc)


def test_dump_bad_input():
    check_error(run_tuidbg("dump", "abc"), "'abc' is not a process ID")
    check_error(run_tuidbg("dump", "4000000"), "no process with ID 4000000")
    check_error(run_tuidbg("dump"), "the following arguments are required: PID")
    check_error(run_tuidbg("dump", "1", "--gdb", "/nonexistent/gdb"), "--gdb /nonexistent/gdb: no such program")
