"""Python frames while tuidbg's agent is not active in the process (issue 30, "Python everywhere it is
shown"): after ``tuidbg attach`` to a program whose main thread is blocked in C, the agent's load waits
for that thread's next Python line. Real gdb, real interpreters (Debian's stripped 3.11 first, pyenv's
3.12), at 80x24 and 160x48, asserting what is on the screen."""

from __future__ import annotations


import pytest
from conftest import requires_gdb
from helpers import BlockedMain as Blocked, DEBIAN_PY311, line_of, PROGRAMS, pyenv_python
from ui_helpers import make_app, screen_rows, toasts_text, until

from tuidbg.engine import pyagent
from tuidbg.engine.python import view as pyview
from tuidbg.engine.state import ProcessState

pytestmark = [requires_gdb, pytest.mark.slow]

BLOCKED = PROGRAMS / "py" / "blocked_main.py"


def _python(name: str):
    if name == "debian-3.11":
        return DEBIAN_PY311 if DEBIAN_PY311.exists() else None
    return pyenv_python(name.split("-")[1])


SIZES_INTERPS = [
    pytest.param((80, 24), "debian-3.11", id="80x24-debian-3.11",
                 marks=pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="this machine has no /usr/bin/python3.11")),
    pytest.param((160, 48), "debian-3.11", id="160x48-debian-3.11",
                 marks=pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="this machine has no /usr/bin/python3.11")),
    pytest.param((160, 48), "pyenv-3.12", id="160x48-pyenv-3.12",
                 marks=pytest.mark.skipif(pyenv_python("3.12") is None, reason="pyenv has no CPython 3.12 on this machine")),
]


def _status_row(app) -> str:
    return next((r for r in screen_rows(app) if "■" in r), "")


async def _attach_stop_on_python(pilot, app) -> None:
    """The attach stop shown with the main thread's Python frame selected, the agent's load queued."""
    blocked = line_of(BLOCKED, "blocked")

    def ready() -> bool:
        st = app.state
        f = pyview.selected_frame(st, app.py_sel) if st.is_stopped else None
        ag = pyagent.controller(app.session)
        return (f is not None and f.line == blocked and ag is not None and ag.info.status == "waiting"
                and ag.info.inject is not None and not app.session.refreshing)

    await until(pilot, ready, 60, "the attach stop on main's Python line, the agent's load queued")


@pytest.mark.parametrize("size,interp", SIZES_INTERPS)
async def test_python_step_without_the_agent_is_refused_with_its_reason(size, interp):
    # n and f on a Python frame while the agent waits for the main thread's next Python line: before,
    # a native next ran the interpreter from its read() (the program ran on, the Python line lost).
    python = _python(interp)
    with Blocked(python) as proc:
        app = make_app(mode="attach", pid=proc.pid, agent=True, python_target=True)
        async with app.run_test(size=size, notifications=True) as pilot:
            await _attach_stop_on_python(pilot, app)
            gen = app.state.generation
            for key, word in (("n", "next"), ("f", "finish")):
                await pilot.press(key)
                # the whole reason and what to do in a toast (80 columns cut it in the status line) ...
                await until(pilot, lambda: f"Python {word} refused: the Python agent is not loaded yet" in toasts_text(app)
                            and "choose a C frame for a native step" in toasts_text(app), 15, "the reason in a toast")
                # ... and in the status line until the next stop (at 80x24 once the toast, over it, is gone)
                await until(pilot, lambda: f"Python {word} refused: the Python agent is not loaded yet" in _status_row(app),
                            15, f"the refusal of {key} in the status line")
                assert app.state.process is ProcessState.STOPPED and app.state.generation == gen
            assert app.key_plan is None  # (no fast native step is planned for the keys either)
            await app.session.close()  # (attach: detaches)
        assert proc.poll() is None  # left running
