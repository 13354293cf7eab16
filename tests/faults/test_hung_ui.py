"""A gdb that does not answer, seen from the TUI: the status says so, a dialog offers to wait, wake,
kill or restart, and killing it releases the attached process unharmed."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess

import pytest
from conftest import requires_gdb
from ui_helpers import make_app, until, until_stopped

from faults.procs import answers, proc
from tuidbg.engine.state import ProcessState
from tuidbg.ui.screens.modals import GdbExitedScreen, GdbHungScreen

pytestmark = requires_gdb


@pytest.fixture
def victim(victim_prog):
    p = subprocess.Popen([str(victim_prog)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert p.stdout.readline().startswith(b"ready")
    yield p
    p.kill()
    p.wait()


async def _ready(pilot) -> None:
    """The dialog is mounted and laid out (a click before that lands nowhere)."""
    app = pilot.app
    await until(pilot, lambda: app.screen.focused is not None, 5, "the dialog's focus")
    await until(pilot, lambda: all(b.region.area for b in app.screen.query("Button")), 5, "the dialog laid out")


def _status(app) -> str:
    return app.query_one("#status").render().plain


async def test_a_stopped_gdb_is_reported_and_woken(victim):
    app = make_app(mode="attach", pid=victim.pid)
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        gdb = app.session.gdb_pid()
        os.kill(gdb, signal.SIGSTOP)
        await pilot.press("c")  # a command gdb cannot answer now
        await until(pilot, lambda: "gdb is stopped" in _status(app), 15, "the status to say gdb is stopped")
        await until(pilot, lambda: isinstance(app.screen, GdbHungScreen), 20, "the dialog")
        await _ready(pilot)
        assert app.screen.focused.id == "wake"
        await pilot.press("enter")
        await until(pilot, lambda: app.state.is_running, 15, "the continue to go through once gdb runs again")
        await until(pilot, lambda: "gdb is stopped" not in _status(app), 5, "the warning to go")


async def test_killing_a_hung_gdb_releases_the_attached_process(victim):
    app = make_app(mode="attach", pid=victim.pid, ex=["break cold"])
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        await pilot.press("c")
        await until(pilot, lambda: app.state.is_running, 10, "the program to run")
        gdb = app.session.gdb_pid()
        # gdb busy forever in its own Python: it answers nothing, uses no CPU
        asyncio.ensure_future(app.session.cmd('-interpreter-exec console "python import time; time.sleep(3600)"',
                                              timeout=None))
        await until(pilot, lambda: "not answered" in _status(app), 20, "the status to say gdb does not answer")
        await until(pilot, lambda: isinstance(app.screen, GdbHungScreen), 20, "the dialog")
        await _ready(pilot)
        await pilot.click("#kill")
        await until(pilot, lambda: app.state.process is ProcessState.GDB_EXITED, 20, "gdb to be gone")
        await until(pilot, lambda: isinstance(app.screen, GdbExitedScreen), 10, "the gdb-is-gone dialog")
        await until(pilot, lambda: proc(gdb) is None, 10, "gdb to be reaped")
        info = proc(victim.pid)
        assert info is not None and info.tracer == 0 and info.state not in ("T", "t")
        assert answers(victim, "cold 1"), f"the process did not survive (exit {victim.poll()})"
