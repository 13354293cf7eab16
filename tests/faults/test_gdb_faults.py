"""Faults of gdb itself, on real gdb and a real victim process: killed, stopped, hung mid-command.

Whatever happens to gdb, the process tuidbg was asked to debug must come out of it unharmed
(attach: running, untraced, no breakpoint left in its code) or ended (run), and no gdb, zombie or
stopped process may be left behind.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess

import pytest
from conftest import requires_gdb
from helpers import wait_for, wait_stopped

from faults.procs import answers, assert_clean, descendants, proc
from tuidbg.engine import mi, watchdog
from tuidbg.engine.errors import GdbExited
from tuidbg.engine.state import ProcessState

pytestmark = requires_gdb


@pytest.fixture
def victim(victim_prog):
    p = subprocess.Popen([str(victim_prog)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert p.stdout is not None
    assert p.stdout.readline().startswith(b"ready")
    yield p
    if p.poll() is None:
        p.kill()
    p.wait()


async def _attach_running_with_breakpoint(victim, make_session):
    s = await make_session(mode="attach", pid=victim.pid)
    await s.launch()
    await wait_stopped(s)
    await s.break_insert(function="cold")
    await s.cont()
    await wait_for(lambda: s.state.is_running, 10, "the victim to run")
    return s


async def test_gdb_killed_while_attached_leaves_the_target_running_without_its_breakpoints(victim, make_session):
    s = await _attach_running_with_breakpoint(victim, make_session)
    gdb = s.gdb_pid()
    os.kill(gdb, signal.SIGKILL)  # gdb dies with its int3 still in cold()
    await wait_for(lambda: s.state.process is ProcessState.GDB_EXITED, 10, "gdb's death to be noticed")
    assert_clean({gdb}, (victim.pid,))
    # the breakpoint's int3 is gone from cold(): calling it does not kill the victim with SIGTRAP
    assert answers(victim, "cold 1"), f"the victim did not survive (exit {victim.poll()})"


async def test_gdb_failing_an_assertion_quits_without_a_core_and_the_target_runs_on(victim, make_session, tmp_path,
                                                                                    monkeypatch):
    monkeypatch.chdir(tmp_path)  # (gdb's working directory: where a core of it would go)
    s = await _attach_running_with_breakpoint(victim, make_session)
    gdb = s.gdb_pid()
    await s.interrupt()
    await wait_stopped(s)
    # what gdb 13 does when it trips over its own assertion (as in "detach" of a half-exited process)
    with pytest.raises(GdbExited):
        await s.cmd(f"-interpreter-exec console {mi.quote('maint internal-error tuidbg test')}", check=False, timeout=10)
    await wait_for(lambda: s.state.process is ProcessState.GDB_EXITED, 10, "gdb's exit to be noticed")
    assert_clean({gdb}, (victim.pid,))
    assert answers(victim, "cold 1"), f"the victim did not survive (exit {victim.poll()})"
    assert not list(tmp_path.iterdir()), list(tmp_path.iterdir())  # no core file of gdb


async def test_close_with_a_stopped_gdb_detaches_properly(victim, make_session):
    s = await _attach_running_with_breakpoint(victim, make_session)
    gdb = s.gdb_pid()
    os.kill(gdb, signal.SIGSTOP)
    await asyncio.wait_for(s.close(), 30)
    assert_clean({gdb}, (victim.pid,))
    assert answers(victim, "cold 1")


async def test_close_with_a_hung_gdb_releases_the_target_without_it(victim, make_session):
    """gdb busy forever in a command (its Python sleeping): nothing it could be asked would be answered.
    close() must give up on it, put the code under its breakpoint back, kill it and let the victim run."""
    s = await _attach_running_with_breakpoint(victim, make_session)
    gdb = s.gdb_pid()
    hang = asyncio.ensure_future(s.cmd('-interpreter-exec console "python import time; time.sleep(3600)"', timeout=None))
    await wait_for(lambda: any("sleep(3600)" in c for c in s.client.pending_commands), 10, "the command written")
    await asyncio.wait_for(s.close(polite=2), 30)
    hang.cancel()
    assert_clean({gdb}, (victim.pid,))
    assert answers(victim, "cold 1"), f"the victim did not survive (exit {victim.poll()})"


async def test_close_with_a_hung_gdb_while_the_target_sits_at_a_breakpoint(victim, make_session):
    """The worst moment for gdb to hang: a thread of the attached program has run into gdb's int3 and
    waits in its trap stop, the SIGTRAP still pending for it. Killing gdb then would deliver that
    SIGTRAP (the kernel restarts a tracee with the signal it stopped for) and end the program; the
    session must get gdb to let go of it properly instead, and the program must run on."""
    s = await _attach_running_with_breakpoint(victim, make_session)
    gdb = s.gdb_pid()
    os.kill(victim.pid, signal.SIGUSR1)  # the victim calls cold(): gdb stops it at the breakpoint
    while True:
        st = await wait_stopped(s)
        if st.stop is not None and st.stop.reason == "breakpoint-hit":
            break
        await s.cont()  # (gdb stops for SIGUSR1 first, and passes it on)
    assert proc(victim.pid).state == "t"
    hang = asyncio.ensure_future(s.cmd('-interpreter-exec console "python import time; time.sleep(3600)"', timeout=None))
    await wait_for(lambda: any("sleep(3600)" in c for c in s.client.pending_commands), 10, "the command written")
    await asyncio.wait_for(s.close(polite=2), 30)
    hang.cancel()
    assert_clean({gdb}, (victim.pid,))
    assert answers(victim, "cold 2"), f"the victim did not survive (exit {victim.poll()})"


async def test_close_with_a_hung_gdb_in_run_mode_ends_the_program(make_session, victim_prog):
    s = await make_session(mode="run", program=str(victim_prog))
    await s.break_insert(function="cold")
    await s.launch()
    await wait_for(lambda: s.state.is_running and s.state.pid, 10, "the program to start")
    pid = s.state.pid
    left = descendants(s.gdb_pid()) | {s.gdb_pid()}
    asyncio.ensure_future(s.cmd('-interpreter-exec console "python import time; time.sleep(3600)"', timeout=None))
    await wait_for(lambda: any("sleep(3600)" in c for c in s.client.pending_commands), 10, "the command written")
    await asyncio.wait_for(s.close(polite=2), 30)
    assert pid in left
    assert_clean(left)


async def test_watchdog_tells_busy_silent_and_stopped_gdb_apart(victim, make_session):
    s = await make_session(mode="attach", pid=victim.pid)
    await s.launch()
    await wait_stopped(s)
    assert s.health().kind == watchdog.OK
    busy = asyncio.ensure_future(
        s.cmd('-interpreter-exec console "python import time\\nt=time.time()\\nwhile time.time()-t<9: pass"', timeout=None)
    )
    await wait_for(lambda: s.health().kind == watchdog.BUSY, 10, "gdb to be seen busy")
    await asyncio.sleep(watchdog.SILENT_AFTER + 1)
    assert s.health().kind == watchdog.BUSY  # working: it uses CPU
    await busy
    silent = asyncio.ensure_future(s.cmd('-interpreter-exec console "python import time; time.sleep(12)"', timeout=None))
    await wait_for(lambda: s.health().kind == watchdog.SILENT, 15, "gdb to be seen silent")
    h = s.health()
    assert h.hung and "python import time" in h.command and "not answered" in h.describe()
    await silent
    assert s.health().kind == watchdog.OK
    os.kill(s.gdb_pid(), signal.SIGSTOP)
    await wait_for(lambda: proc(s.gdb_pid()).state == "T", 10, "gdb to stop")
    slow = asyncio.ensure_future(s.cmd("-thread-info", timeout=None))  # it cannot answer now
    await wait_for(lambda: s.health().kind == watchdog.STOPPED, 10, "gdb to be seen stopped")
    s.wake_gdb()
    await asyncio.wait_for(slow, 10)
    assert s.health().kind == watchdog.OK


async def test_library_activity_leaves_the_status_once_loading_is_over(make_session, victim_prog):
    s = await make_session(mode="run", program=str(victim_prog))
    seen = []
    s.on_state(lambda st: seen.append(st.activity))
    await s.launch()
    await wait_for(lambda: any(a.startswith("loading ") for a in seen), 10, "a library load to show")
    await wait_for(lambda: s.state.activity == "", 10, "the loading note to go")
    assert s.state.is_running
