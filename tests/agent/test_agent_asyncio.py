"""Steps that understand asyncio (tuidbg/agent/_asyncio_steps.py): "next" over an ``await`` stops at
the next line of the same coroutine when its task resumes (other tasks run meanwhile, one of them in
the same function); "finish" out of a coroutine stops in its awaiter, also when the awaiter is another
task; a Python breakpoint limited to one task (``pybreak FILE:LINE task NAME``). sys.monitoring
(3.12+) and settrace (3.9-3.11) backends; the stop names its task (the engine's memory read)."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, cpython314_param, debian_py311_param, line_of, pyenv_python

from tuidbg.agent import protocol as P
from tuidbg.engine import pyagent
from tuidbg.engine.python import view as pyview
from tuidbg.engine.state import ProcessState

pytestmark = [requires_gdb, pytest.mark.slow]

STEPS = PROGRAMS / "py" / "tasks_steps.py"


def _interpreters():
    out = [debian_py311_param()]
    py = pyenv_python("3.9")
    out.append(pytest.param(py, id="pyenv-3.9", marks=pytest.mark.skipif(py is None, reason="pyenv has no CPython 3.9")))
    py = pyenv_python("3.12")
    out.append(pytest.param(py, id="pyenv-3.12", marks=pytest.mark.skipif(py is None, reason="pyenv has no CPython 3.12")))
    out.append(cpython314_param("3.14"))
    return out


async def _stop(ctl):
    st = await ctl.wait_stop(60)
    assert st.process is ProcessState.STOPPED, st.process
    assert st.python.stop is not None
    return st


def _at(st, mark: str, func: str) -> None:
    stop = st.python.stop
    assert (stop.func, stop.line) == (func, line_of(STEPS, mark)), (stop.func, stop.line, mark)
    assert not any(f.file.endswith(("events.py", "base_events.py")) for f in stop.frames[:1])


async def _task_here(ctl, st) -> str | None:
    """The task the stop is in, as the status line names it (read from memory after the stop)."""
    s = ctl.session
    await s.wait_refreshed(60)
    return pyview.task_here(s.state)


@pytest.mark.parametrize("python", _interpreters())
async def test_steps_over_await_and_out_of_coroutines(make_session, python):
    out = bytearray()
    s = await make_session(mode="run", program=str(python), args=[str(STEPS)], agent=True, python_target=True)
    s.on_program_output(out.extend)
    ctl = pyagent.controller(s)
    # only in task 'w': 'other' runs the same line first
    text = await ctl.handle_console(f"pybreak {STEPS}:{line_of(STEPS, 'worker_await')} task w")
    assert "in task 'w'" in text, text
    await s.launch()
    st = await _stop(ctl)
    _at(st, "worker_await", "worker")
    assert st.python.stop.reason == P.R_BREAKPOINT
    assert await _task_here(ctl, st) == "w"
    assert await ctl.evaluate("name") == "'w'" and await ctl.evaluate("i") == "0"
    await ctl.delete_all_breakpoints()
    # next over the await: the same coroutine's next line once 'w' resumes ('other' ran meanwhile)
    await ctl.step_over()
    st = await _stop(ctl)
    _at(st, "worker_after", "worker")
    assert st.python.stop.reason == P.R_STEP
    assert await ctl.evaluate("name") == "'w'" and await ctl.evaluate("x") == "0"
    assert await _task_here(ctl, st) == "w"
    for mark in ("worker_for", "worker_await", "worker_after", "worker_for", "worker_await"):  # the loop goes on
        await ctl.step_over()
        st = await _stop(ctl)
        _at(st, mark, "worker")
    assert await ctl.evaluate("name") == "'w'" and await ctl.evaluate("i") == "2"
    # into fetch, then finish out of it: fetch suspends in its sleep first; finish waits for its return
    await ctl.step_into()
    st = await _stop(ctl)
    _at(st, "fetch_sleep", "fetch")
    await ctl.step_out()
    st = await _stop(ctl)
    _at(st, "worker_await", "worker")  # in its awaiter (the coroutine that awaits it), on the await line
    assert await ctl.evaluate("name") == "'w'" and await ctl.evaluate("i") == "2"
    # finish out of worker, the coroutine of task 'w': in the task that awaits 'w', when it resumes
    await ctl.step_out()
    st = await _stop(ctl)
    _at(st, "boss_await", "boss")
    assert await _task_here(ctl, st) != "w"
    await ctl.step_over()
    st = await _stop(ctl)
    _at(st, "boss_after", "boss")
    assert await ctl.evaluate("r") == "6"
    await ctl.resume()
    st = await ctl.wait_stop(60)
    assert st.process is ProcessState.EXITED and st.exit_code == 0
    assert b"total w 6" in out
