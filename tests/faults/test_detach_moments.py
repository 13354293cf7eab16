"""Detach from an attached Python process at every moment of the attach: the process must come out
as it went in: alive, running, untraced, answering, and without anything of tuidbg's that costs it
anything (no agent thread, no trace or monitoring hook, hooks and import finders as they were).

Before the fix, detaching before the agent had loaded killed the process every time: the load
queued in it read a file tuidbg had deleted, and a failed pending call kills the main thread.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time

import pytest
from conftest import requires_gdb
from helpers import LOADED_FLOOR, PROGRAMS, cpython314_param, debian_py311_param, line_of, pyenv_python, wait_for, wait_stopped

from faults.procs import proc
from tuidbg.engine import pyagent

pytestmark = [requires_gdb, pytest.mark.slow]

STEADY = PROGRAMS / "py" / "steady.py"
INTERPRETERS = [
    debian_py311_param(),
    pytest.param(pyenv_python("3.12"), id="pyenv-3.12",
                 marks=pytest.mark.skipif(pyenv_python("3.12") is None, reason="pyenv has no CPython 3.12 here")),
    cpython314_param("3.14"),  # PEP 768 attach
    cpython314_param("3.14t"),  # free-threaded
]


def _report(p: subprocess.Popen, timeout: float = 5.0) -> dict:
    os.kill(p.pid, signal.SIGUSR1)
    deadline = time.monotonic() + timeout
    assert p.stdout is not None
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        if line.startswith(b"REPORT "):
            return json.loads(line[7:])
        if not line and p.poll() is not None:
            break
    err = p.stderr.read().decode(errors="replace") if p.poll() is not None and p.stderr else ""
    raise AssertionError(f"the process did not answer (exit {p.poll()}): {err[-2000:]}")


def _start(python) -> tuple[subprocess.Popen, dict]:
    p = subprocess.Popen([str(python), str(STEADY)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    assert p.stdout.readline().strip() == b"ready"
    return p, _report(p)


KEPT = ("threads", "trace", "profile", "thread_trace", "excepthook", "threading_excepthook", "breakpointhook",
        "monitoring", "finders")


def _assert_as_before(p: subprocess.Popen, before: dict) -> None:
    """Untraced, running, and, once anything queued in it (the agent's load, which gdb may have let go
    midway) has run its course, as it was: what it reports comes back to ``before`` and stays."""
    deadline = time.monotonic() + LOADED_FLOOR
    while True:
        info = proc(p.pid)
        assert info is not None and info.state != "Z", f"the process died: exit {p.poll()}: {p.stderr.read()[-2000:]!r}"
        if info.tracer == 0 and info.state not in ("T", "t"):
            break
        assert time.monotonic() < deadline, f"still traced or stopped: {info}"
        time.sleep(0.05)
    deadline = time.monotonic() + LOADED_FLOOR
    while True:
        after = _report(p)
        changed = [f"{key}: {before[key]} -> {after[key]}" for key in KEPT if after[key] != before[key]]
        if after["calls"] > before["calls"] and not changed:
            break
        assert time.monotonic() < deadline, changed or "it must keep running"
        time.sleep(0.1)
    assert p.poll() is None


async def _attached(make_session, p):
    s = await make_session(mode="attach", pid=p.pid, agent=True, python_target=True)
    await s.launch()
    await wait_stopped(s)
    return s, pyagent.controller(s)


@pytest.mark.parametrize("python", INTERPRETERS)
async def test_detach_before_the_agent_loads(python, make_session):
    p, before = _start(python)
    try:
        s, ctl = await _attached(make_session, p)
        assert ctl.info.status == "waiting"  # the load is queued in the stopped process
        await s.close("detach")
        _assert_as_before(p, before)
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize("delay", [0.0, 0.01, 0.03, 0.1, 0.3])
@pytest.mark.parametrize("python", INTERPRETERS)
async def test_detach_while_the_agent_loads(python, delay, make_session):
    p, before = _start(python)
    try:
        s, ctl = await _attached(make_session, p)
        await s.cont()
        await asyncio.sleep(delay)
        await s.close("detach")
        _assert_as_before(p, before)
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize("python", INTERPRETERS)
async def test_detach_at_a_python_breakpoint(python, make_session):
    p, before = _start(python)
    try:
        s, ctl = await _attached(make_session, p)
        await ctl.add_breakpoint(str(STEADY), line_of(STEADY, "work"))
        await s.cont()
        st = await ctl.wait_stop(60)
        assert st.python.stop is not None
        await s.close("detach")
        _assert_as_before(p, before)
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize("python", INTERPRETERS)
async def test_detach_while_running_with_the_agent_loaded(python, make_session):
    p, before = _start(python)
    try:
        s, ctl = await _attached(make_session, p)
        bp = await ctl.add_breakpoint(str(STEADY), line_of(STEADY, "work"))
        await s.cont()
        await ctl.wait_stop(60)
        await ctl.enable_breakpoint(bp.id, False)
        await ctl.resume()
        await wait_for(lambda: s.state.is_running, 10, "the program to run")
        await wait_for(lambda: proc(p.pid).state not in ("t", "T"), 10, "the program to be resumed")
        await s.close("detach")
        _assert_as_before(p, before)
    finally:
        p.kill()
        p.wait()
