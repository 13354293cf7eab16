"""``rescue.wake_born``: a process forked while gdb followed the program (gdb traces a child from its birth,
a SIGSTOP its first signal) and let go as gdb detached or died is left stopped once that SIGSTOP is delivered;
tuidbg's end continues it. A process that was stopped before the session stays as it was. Real processes,
no debugger (what gdb leaves behind is made here by hand: a SIGSTOP)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from faults.procs import kill_group, proc, wait_until
from tuidbg.engine import rescue

FORKER = """
import os, sys, time
pid = os.fork()
if pid == 0:
    time.sleep(600)
    os._exit(0)
print(pid, flush=True)
time.sleep(600)
"""


def _stopped(pid: int) -> bool:
    return (p := proc(pid)) is not None and p.state == "T"


def test_a_process_forked_under_the_session_and_left_stopped_runs_on_and_an_older_one_stays():
    older = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    parent = None
    try:
        os.kill(older.pid, signal.SIGSTOP)  # (stopped by its user before the session)
        wait_until(lambda: _stopped(older.pid), 10, "the older process to stop")
        born = rescue.proc_info(older.pid).start_time
        wait_until(lambda: rescue.boot_ticks() > born, 10, "a clock tick after the older process's birth")
        since = rescue.boot_ticks()
        parent = subprocess.Popen([sys.executable, "-c", FORKER], stdout=subprocess.PIPE, text=True,
                                  start_new_session=True)
        child = int(parent.stdout.readline())
        os.kill(child, signal.SIGSTOP)  # (what gdb's end left: the fork's first SIGSTOP, delivered)
        wait_until(lambda: _stopped(child), 10, "the forked child to stop")

        woken = rescue.wake_born({parent.pid, older.pid}, since)

        assert woken == [child], woken
        assert not _stopped(child) and proc(child).tracer == 0
        assert _stopped(older.pid)  # (not born under the session: its stop is its user's)
        assert rescue.wake_born({parent.pid}, since) == []  # (nothing left to wake: it returns at once)
    finally:
        kill_group(older)
        if parent is not None:
            kill_group(parent)
