"""Quitting ``tuidbg attach`` of a Python program with 500 threads (tests/programs/py/many_threads.py): the
screen detaches it within seconds (it took 23-40 s when every one of gdb's 500 thread exits repainted the
threads pane), and the program runs on, untraced. The issue's bound is 3 s, met in bench/quit_threads.py
(1.1 s median); here 10 s, for a loaded machine."""

from __future__ import annotations

import asyncio
import subprocess
import time

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, PROGRAMS
from ui_helpers import make_app, until, until_stopped

from faults.procs import proc, wait_until
from tuidbg.ui.screens.modals import QuitScreen

pytestmark = [requires_gdb, pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="needs Debian's python3.11")]

PROG = PROGRAMS / "py" / "many_threads.py"


@pytest.fixture
def many(tmp_path):
    d = tmp_path / "many"
    d.mkdir()
    p = subprocess.Popen([str(DEBIAN_PY311), str(PROG), str(d), "500"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    wait_until(lambda: (d / "ready").exists() or p.poll() is not None, 60, "the 500 threads to start")
    assert p.poll() is None
    yield p, d
    p.kill()
    p.wait()


def _beat(d) -> int:
    try:
        return int((d / "beat").read_text())
    except (OSError, ValueError):
        return -1


async def test_quit_of_a_500_thread_program_detaches_it_within_seconds(many, monkeypatch, tmp_path):
    p, d = many
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    app = make_app(mode="attach", pid=p.pid, agent=True, python_target=True)
    states = []
    app.session.on_state(states.append)
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot, 60)
        await until(pilot, lambda: len(app.state.threads) == 501, 60, "the 501 threads to be read")
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, QuitScreen), 10, "the quit dialog")
        before = len(states)
        t0 = time.monotonic()
        await pilot.press("d")
        while app.is_running and time.monotonic() - t0 < 60:
            await asyncio.sleep(0.02)
        took = time.monotonic() - t0
    # gdb's 500 thread exits reach the screen as a few states, not one each
    assert len(states) - before < 100, len(states) - before
    assert took <= 10, f"the quit took {took:.1f} s"
    info = proc(p.pid)
    assert info is not None and info.tracer == 0 and info.state not in ("T", "t"), info
    beat = _beat(d)
    wait_until(lambda: _beat(d) > beat, 10, "the program to go on")
