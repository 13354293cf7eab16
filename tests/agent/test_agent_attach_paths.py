"""``tuidbg attach`` on CPython 3.14: which path loads the agent, and that it says so (issue 16).

3.14 gets the agent through PEP 768 remote execution (the fields ``sys.remote_exec`` writes,
tests/test_agent.py checks that); a process started with remote debugging switched off
(``PYTHON_DISABLE_REMOTE_DEBUG=1`` or ``-X disable-remote-debug``) gets it through gdb's pending
call instead. 3.14t gets it through a thread of its own that gdb makes it start, beside the main
thread's pending call (issue 30 item 13:
PEP 768 reaches one thread state only, which may never run Python again; the thread needs none of
PEP 768's fields either way). The engine records the path and the reason, the log and the UI's
console say it.
"""

from __future__ import annotations

import logging
import os
import subprocess

import pytest
from conftest import requires_gdb
from helpers import cpython314, cpython314_missing, line_of
from test_agent import FOREVER, _stop, cpython314_param, requires_attach

from tuidbg.agent import protocol as P
from tuidbg.engine import pyagent

pytestmark = [requires_gdb, pytest.mark.slow, requires_attach]

PYTHONS = [cpython314_param(b) for b in ("3.14", "3.14-stripped", "3.14t")]
HOW = {
    "env": ({"PYTHON_DISABLE_REMOTE_DEBUG": "1"}, []),
    "xoption": ({}, ["-X", "disable-remote-debug"]),
    "allowed": ({}, []),
}


@pytest.mark.parametrize("how", list(HOW))
@pytest.mark.parametrize("python", PYTHONS)
async def test_attach_says_which_path_loaded_the_agent(make_session, python, how, tmp_path, caplog):
    env, opts = HOW[how]
    proc = subprocess.Popen([str(python), *opts, str(FOREVER), str(tmp_path / "counter")], stdout=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=dict(os.environ, **env))
    s = None
    caplog.set_level(logging.INFO, logger="tuidbg")
    try:
        assert proc.stdout.readline().strip() == b"ready"
        s = await make_session(mode="attach", pid=proc.pid, agent=True, python_target=True)
        ctl = pyagent.controller(s)
        said: list[str] = []
        ctl.on_message(said.append)
        await s.launch()
        inject = ctl.info.inject
        if python == cpython314("3.14t"):
            assert (ctl.info.inject, ctl.info.inject_note) == ("pending-call+thread", None)
            words = (f"Python agent injected into process {proc.pid} through gdb: the main thread's pending call or"
                     " a thread of its own, whichever runs Python first (inferior calls to Py_AddPendingCall and"
                     " pthread_create)")
        elif how == "allowed":
            assert (ctl.info.inject, ctl.info.inject_note) == ("pep768", None)
            words = (f"Python agent injected into process {proc.pid} through PEP 768 remote execution"
                     " (the fields sys.remote_exec writes)")
        else:
            assert ctl.info.inject == "pending-call"
            assert ctl.info.inject_note == ("remote debugging is disabled in it "
                                            "(PYTHON_DISABLE_REMOTE_DEBUG or -X disable-remote-debug)")
            words = (f"Python agent injected into process {proc.pid} through gdb (an inferior call to Py_AddPendingCall)"
                     f" (not PEP 768: {ctl.info.inject_note})")
        assert said == [words]  # what the UI's console shows (a "python agent:" line)
        assert words in caplog.text
        body = line_of(FOREVER, "tick_ret")
        bp = await ctl.add_breakpoint(str(FOREVER), body)
        await s.cont()
        stop = await _stop(ctl)
        assert ctl.info.connected and ctl.info.inject == inject
        assert (stop.reason, stop.bp_id, stop.func, stop.line) == (P.R_BREAKPOINT, bp.id, "tick", body)
        n = int(await ctl.evaluate("n"))
        await ctl.resume()
        await _stop(ctl)
        assert int(await ctl.evaluate("n")) == n + 1
    finally:
        if s is not None:
            await s.close()
        proc.kill()
        proc.wait(timeout=30)


@pytest.mark.parametrize("build,how", [("3.14", "env"), ("3.14", "allowed"), ("3.14t", "allowed")])
async def test_tui_console_says_which_path_loaded_the_agent(build, how, tmp_path):
    """The TUI: ``tuidbg attach PID`` on 3.14, with remote debugging switched off or not, and on 3.14t."""
    from ui_helpers import log_text, make_app, until, until_stopped

    python = cpython314(build)
    if python is None:
        pytest.skip(cpython314_missing(build))
    env, opts = HOW[how]
    proc = subprocess.Popen([str(python), *opts, str(FOREVER), str(tmp_path / "counter")], stdout=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=dict(os.environ, **env))
    app = None
    try:
        assert proc.stdout.readline().strip() == b"ready"
        app = make_app(mode="attach", pid=proc.pid, agent=True, python_target=True)
        async with app.run_test(size=(160, 48)) as pilot:
            await until_stopped(pilot)
            path = ("through gdb: the main thread's pending call or a thread of its own" if build == "3.14t" else
                    "through PEP 768 remote execution" if how == "allowed" else "through gdb (an inferior call")
            line = f"python agent: Python agent injected into process {proc.pid} {path}"
            await until(pilot, lambda: line in log_text(app, "console-log"), 20, "the console's line")
            if how == "env":
                assert "(not PEP 768: remote debugging is disabled in it" in log_text(app, "console-log")
    finally:
        if app is not None:
            await app.session.close()  # gdb lets go before the process can be reaped
        proc.kill()
        proc.wait(timeout=30)
