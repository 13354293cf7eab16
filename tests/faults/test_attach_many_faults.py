"""Nothing left behind with several attached processes (``tuidbg attach PID PID``): gdb killed while it
has a breakpoint in both, or hung when the session closes; each process runs on, untraced, without
gdb's int3 in its code."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess

import pytest
from conftest import requires_gdb
from helpers import wait_for, wait_stopped

from faults.procs import answers, assert_clean
from tuidbg.engine.state import ProcessState

pytestmark = requires_gdb


@pytest.fixture
def victims(victim_prog):
    procs = []
    for _ in range(2):
        p = subprocess.Popen([str(victim_prog)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        assert p.stdout is not None and p.stdout.readline().startswith(b"ready")
        procs.append(p)
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


async def _attach_both_running_with_breakpoint(victims, make_session):
    s = await make_session(mode="attach", pid=victims[0].pid, more_pids=[victims[1].pid])
    await s.launch()
    await wait_stopped(s)
    assert [inf.pid for inf in s.state.inferiors] == [v.pid for v in victims]
    bp = await s.break_insert(function="cold")
    assert len(bp.locations) == 2, bp  # in both processes
    await s.cont()
    await wait_for(lambda: all(i.process is ProcessState.RUNNING for i in s.state.inferiors), 10, "both to run")
    return s


async def test_gdb_killed_with_two_attached_leaves_both_running_without_its_breakpoints(victims, make_session):
    s = await _attach_both_running_with_breakpoint(victims, make_session)
    gdb = s.gdb_pid()
    os.kill(gdb, signal.SIGKILL)
    await wait_for(lambda: s.state.process is ProcessState.GDB_EXITED, 10, "gdb's death to be noticed")
    assert_clean({gdb}, tuple(v.pid for v in victims))
    for i, v in enumerate(victims):
        assert answers(v, "cold 1"), f"victim {i} did not survive (exit {v.poll()})"


async def test_close_with_a_hung_gdb_releases_both(victims, make_session):
    s = await _attach_both_running_with_breakpoint(victims, make_session)
    gdb = s.gdb_pid()
    hang = asyncio.ensure_future(s.cmd('-interpreter-exec console "python import time; time.sleep(3600)"', timeout=None))
    await wait_for(lambda: any("sleep(3600)" in c for c in s.client.pending_commands), 10, "the command written")
    await asyncio.wait_for(s.close(polite=2), 30)
    hang.cancel()
    assert_clean({gdb}, tuple(v.pid for v in victims))
    for i, v in enumerate(victims):
        assert answers(v, "cold 1"), f"victim {i} did not survive (exit {v.poll()})"


async def test_quit_detaches_both(victims, make_session):
    s = await _attach_both_running_with_breakpoint(victims, make_session)
    gdb = s.gdb_pid()
    await asyncio.wait_for(s.close(), 30)
    assert_clean({gdb}, tuple(v.pid for v in victims))
    for i, v in enumerate(victims):
        assert answers(v, "cold 1"), f"victim {i} did not survive (exit {v.poll()})"
