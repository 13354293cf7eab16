"""Python breakpoints after ``tuidbg attach`` to a program whose main thread is blocked in C (issue 30,
item 13): the agent loads through a thread that runs Python (3.12/3.13: the interpreter's own pending-call
queue, which any thread takes; 3.14: PEP 768 in the thread that last held the GIL; 3.9-3.11 while main does
not hold the GIL, and 3.14t: a thread of its own that gdb makes the program start), so that a breakpoint in
a worker's code fires at once; where nothing can run Python (main holds the GIL in C), the status line and
``pybreak`` say that the breakpoints wait, and they take effect when the load happens. Real gdb, real
interpreters, at 80x24."""

from __future__ import annotations

import subprocess

import pytest
from conftest import requires_gdb
from helpers import BlockedMain as Blocked, cpython314, DEBIAN_PY311, line_of, PROGRAMS, pyenv_python
from ui_helpers import log_text, make_app, screen_rows, until

from tuidbg.engine import pyagent
from tuidbg.engine.python.model import AgentStop
from tuidbg.engine.state import ProcessState
from tuidbg.ui.panes.source import SourceView

pytestmark = [requires_gdb, pytest.mark.slow]

BLOCKED = PROGRAMS / "py" / "blocked_main.py"


def _interp(name: str):
    if name == "debian-3.11":
        return DEBIAN_PY311 if DEBIAN_PY311.exists() else None
    if name in ("3.14", "3.14t"):
        return cpython314(name)
    return pyenv_python(name.split("-")[1])


INTERPS = [pytest.param(n, id=n) for n in
           ("pyenv-3.9", "pyenv-3.10", "pyenv-3.11", "debian-3.11", "pyenv-3.12", "pyenv-3.13", "3.14", "3.14t")]


def _python(name: str):
    python = _interp(name)
    if python is None:
        pytest.skip(f"{name} is not on this machine")
    return python


def _status_row(app) -> str:
    return next((r for r in screen_rows(app) if "■ " in r or "● running" in r), "")


def _agent_stop(app):
    st = app.state
    stop = st.python.stop if st.process is ProcessState.STOPPED else None
    return stop if isinstance(stop, AgentStop) else None


async def _attached(pilot, app) -> None:
    def ready() -> bool:
        ag = pyagent.controller(app.session)
        return (app.state.is_stopped and ag is not None and ag.info.status == "waiting" and ag.info.inject is not None
                and not app.session.refreshing)

    await until(pilot, ready, 60, "the attach stop, the agent's load queued")


async def _console(pilot, app, cmd: str) -> None:
    await pilot.press("8")
    await pilot.press(*[ch if ch != " " else "space" for ch in cmd], "enter")


async def _continue(pilot, app) -> None:
    app.query_one(SourceView).focus()
    await pilot.press("c")


def _still_fine(proc: subprocess.Popen) -> None:
    """Left running unharmed: it answers a line as it would have without tuidbg."""
    assert proc.poll() is None, proc.crashed()
    proc.stdin.write(b"bye\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == b"got bye"
    assert proc.wait(30) == 0


# the main thread blocked in a read (on every interpreter), in a join and in a lock (on one interpreter of
# each way of loading: the main thread's pending call beside a thread of its own, the interpreter's queue,
# PEP 768, and a free-threaded build's thread of its own)
BLOCKED_IN = {"read": ("worker",), "join": ("worker", "join"), "lock": ("worker", "lock")}
EACH_WAY = ("debian-3.11", "pyenv-3.12", "3.14", "3.14t")
# (at 80x24; and the read on one interpreter of each way that makes a thread of its own at 160x48)
WORKER_CASES = [pytest.param(p.values[0], args, (80, 24), id=f"{p.id}-{how}", marks=p.marks)
                for how, args in BLOCKED_IN.items() for p in INTERPS if how == "read" or p.id in EACH_WAY] + [
    pytest.param(p.values[0], BLOCKED_IN["read"], (160, 48), id=f"{p.id}-read-160x48", marks=p.marks)
    for p in INTERPS if p.id in ("debian-3.11", "3.14t")]


@pytest.mark.parametrize("interp,args,size", WORKER_CASES)
async def test_breakpoint_in_worker_fires_while_main_is_blocked_in_c(interp, args, size):
    python = _python(interp)
    body = line_of(BLOCKED, "work_body")
    with Blocked(python, *args) as proc:
        app = make_app(mode="attach", pid=proc.pid, agent=True, python_target=True)
        async with app.run_test(size=size, notifications=True) as pilot:
            try:
                await _attached(pilot, app)
                await _console(pilot, app, f"pybreak {BLOCKED}:{body}")
                await until(pilot, lambda: "Python breakpoint 1 at" in log_text(app, "console-log"), 15, "pybreak's answer")
                assert "it takes effect when the Python agent loads" in log_text(app, "console-log")
                await _continue(pilot, app)
                # a thread other than main takes the load (3.12/3.13: the worker, at its next line; 3.14: the
                # worker's state, the GIL's last holder; 3.9-3.11 and 3.14t: a thread of its own), and the
                # breakpoint fires in the worker at once
                await until(pilot, lambda: (s := _agent_stop(app)) is not None and s.line == body
                            and s.reason == "breakpoint", 60, "the breakpoint in the worker")
                assert "stopped: Python breakpoint 1" in _status_row(app)
                assert _agent_stop(app).func == "work"
            finally:
                await app.session.close()  # (attach: detaches)
        _still_fine(proc)


async def _b_after_mains_line(pilot, app, after: int) -> None:
    """b in the source pane, on the line after main's (where its Python frame shows it)."""
    src = app.query_one(SourceView)
    await until(pilot, lambda: src.path == str(BLOCKED) and src.cursor_line == after - 1, 30, "main's line shown")
    src.focus()
    await pilot.press("down", "b")
    await until(pilot, lambda: "Python breakpoint 1 set; it takes effect when the Python agent loads"
                in _status_row(app), 15, "the breakpoint's wait in the status line")


async def _line_read_then_breakpoint(pilot, app, proc, after: int) -> None:
    """A line for main's read: main runs Python again, and the breakpoint after its read fires; then the
    program, detached, ends as it would have."""
    proc.stdin.write(b"x\n")
    proc.stdin.flush()
    await until(pilot, lambda: (s := _agent_stop(app)) is not None and s.line == after, 60,
                "the breakpoint after main's read")
    await app.session.close()
    assert proc.poll() is None or proc.wait(30) == 0, proc.crashed()
    assert proc.stdout.readline().strip() == b"got x"
    assert proc.wait(30) == 0


# Interpreters with a GIL: main can hold it in C
GIL_INTERPS = [p for p in INTERPS if p.id != "3.14t"]


@pytest.mark.parametrize("interp", GIL_INTERPS)
async def test_nothing_runs_python_the_breakpoint_says_it_waits(interp):
    # main holds the GIL in C (a read through ctypes.PyDLL): no thread can run Python, the load waits for
    # main's next line (its pending call, or PEP 768 in its state, the GIL's last holder)
    python = _python(interp)
    after = line_of(BLOCKED, "blocked") + 1  # (stop.set(), once the read returns)
    with Blocked(python, "held") as proc:
        app = make_app(mode="attach", pid=proc.pid, agent=True, python_target=True)
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await _attached(pilot, app)
            await _b_after_mains_line(pilot, app, after)
            await _continue(pilot, app)
            await until(pilot, lambda: "Python breakpoints wait" in _status_row(app), 30, "the wait in the status line")
            assert pyagent.controller(app.session).info.status == "waiting"
            # once the main thread runs Python (a line read), the agent loads and the breakpoint fires
            await _line_read_then_breakpoint(pilot, app, proc, after)


@pytest.mark.parametrize("interp", INTERPS)
async def test_every_thread_blocked_in_c_with_the_gil_free(interp):
    # main blocked in a read with the GIL released, no other thread: 3.9-3.11 and 3.14t load the agent at
    # once through a thread of its own; 3.12-3.14 (a pending call, PEP 768) wait for main's next line
    python = _python(interp)
    at_once = interp in ("pyenv-3.9", "pyenv-3.10", "pyenv-3.11", "debian-3.11", "3.14t")
    after = line_of(BLOCKED, "blocked") + 1
    with Blocked(python) as proc:
        app = make_app(mode="attach", pid=proc.pid, agent=True, python_target=True)
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await _attached(pilot, app)
            await _b_after_mains_line(pilot, app, after)
            await _continue(pilot, app)
            ctl = pyagent.controller(app.session)
            if at_once:
                assert ctl.info.inject == "pending-call+thread"
                await until(pilot, lambda: ctl.info.connected and "● running" in _status_row(app), 30,
                            "the agent loaded while main is still blocked")
                assert "wait" not in _status_row(app)
            else:
                await until(pilot, lambda: "Python breakpoints wait" in _status_row(app), 30,
                            "the wait in the status line")
                assert ctl.info.status == "waiting"
            await _line_read_then_breakpoint(pilot, app, proc, after)
