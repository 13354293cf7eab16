"""Breakpoints, watches and the layout remembered between runs (tuidbg.engine.remember), on real
gdb, a real compiled program and a real Python under tuidbg's agent; and the state file itself."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, PROGRAMS, line_of, pyenv_python
from tmux_term import Tmux
from ui_helpers import make_app, until

from tuidbg.engine import pyagent, remember
from tuidbg.engine.session import SessionConfig
from tuidbg.engine.state import ProcessState
from tuidbg.ui.panes.tables import BreakpointsPane
from tuidbg.ui.panes.variables import WatchPane

STEPS = PROGRAMS / "py" / "agent_steps.py"
PYTHON = DEBIAN_PY311 if DEBIAN_PY311.exists() else pyenv_python("3.12")


# -- the state file ---------------------------------------------------------------------------------


def test_relocate_finds_the_line_by_its_text_nearest_first():
    lines = ["a = 1", "x = f()", "b = 2", "x = f()", "c = 3"]
    assert remember.relocate(lines, 2, "x = f()") == 2
    assert remember.relocate(["# new"] * 3 + lines, 2, "x = f()") == 5  # moved down 3
    assert remember.relocate(lines[2:], 4, "x = f()") == 2  # moved up 2 (the nearer of two)
    assert remember.relocate(lines, 2, "y = g()") is None
    assert remember.relocate(["# pad"] * (remember.SEARCH + 5) + lines, 2, "x = f()") is None  # too far


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe\x00", b"[]", b'{"version": 99}',
                                     b'{"version": 1, "breakpoints": {}}', b'{"version": 1, "breakpoints": [3]}'])
def test_a_bad_state_file_is_one_line_and_a_clean_start(tmp_path, content):
    path = tmp_path / "s.json"
    path.write_bytes(content)
    data, why = remember.load(str(path))
    assert data is None and why is not None and "\n" not in why and str(path) in why and "starting without" in why


def test_save_is_atomic_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "deep" / "er" / "s.json"
    remember.save(str(path), {"version": 1, "breakpoints": [], "watches": ["x"]})
    remember.save(str(path), {"version": 1, "breakpoints": [], "watches": ["y"]})
    assert os.listdir(path.parent) == ["s.json"]
    data, why = remember.load(str(path))
    assert why is None and data["watches"] == ["y"]


def test_the_file_is_keyed_by_project_and_program(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    a = remember.state_file("/src/proj", "python /src/proj/train.py")
    assert a.startswith(str(tmp_path / "tuidbg" / "proj-"))
    assert a != remember.state_file("/src/proj", "python /src/proj/eval.py")
    assert a != remember.state_file("/src/other", "python /src/proj/train.py")
    run = SessionConfig(mode="run", program="/usr/bin/python3", python_target=True, cwd="/src/proj")
    run.args = ["-X", "dev", "train.py", "-k", "x"]
    assert remember.program_identity(run) == "python /src/proj/train.py"
    run.args = ["-u", "-m", "pytest", "-x", "tests"]
    assert remember.program_identity(run) == "python -m pytest"
    assert remember.program_identity(SessionConfig(mode="core", program="/bin/true", core="/tmp/c")) is None


# -- real runs ----------------------------------------------------------------------------------------


def rows(app) -> list[str]:
    t = app.query_one(BreakpointsPane)
    return [" | ".join(str(c) for c in t.get_row_at(i)) for i in range(t.row_count)]


needs_python = pytest.mark.skipif(PYTHON is None, reason="no /usr/bin/python3.11 and no pyenv 3.12 on this machine")


@requires_gdb
@needs_python
@pytest.mark.slow
async def test_python_breakpoints_watches_and_layout_come_back_moved_or_gone(tmp_path):
    steps = tmp_path / "steps.py"
    shutil.copy(STEPS, steps)
    other = tmp_path / "other.py"
    other.write_text("x = 1\ny = 2\n")
    state = str(tmp_path / "state.json")
    a_call, c_body = line_of(steps, "a_call"), line_of(steps, "c_body")
    cfg = dict(program=str(PYTHON), args=[str(steps)], agent=True, python_target=True, remember=state)

    # 1st run: the program runs to its end; then breakpoints, a watch and the merged stack are set.
    app = make_app(**cfg)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 60, "the program to end")
        ag = pyagent.controller(app.session)
        await ag.add_breakpoint(str(steps), a_call, condition="n == 4")
        await ag.add_breakpoint(str(steps), c_body, enabled=False, ignore_count=2)
        await ag.add_breakpoint(str(other), 2)
        app.query_one(WatchPane).expressions.append("total * 2")
        await pilot.press("m")
        # (the UI hands its watches and layout over once a second: one hand-over may come between the
        # watch and the key, so wait for the one that has both)
        await until(pilot, lambda: os.path.exists(state) and "total * 2" in open(state).read()
                    and json.load(open(state))["layout"].get("merged") is True, 10, "the state saved")
        await app.session.close()
    saved = json.load(open(state))
    assert saved["layout"]["merged"] is True and saved["watches"] == ["total * 2"]
    by_line = {b["line"]: b for b in saved["breakpoints"]}
    assert by_line[a_call]["condition"] == "n == 4" and by_line[a_call]["text"] == "w = b(n)  # MARK:a_call"
    assert by_line[c_body]["enabled"] is False and by_line[c_body]["ignore"] == 2

    # The code moves down three lines and other.py goes away.
    steps.write_text("# one\n# two\n# three\n" + steps.read_text())
    other.unlink()

    # 2nd run: stopped at the moved line with the condition kept; the pane says what happened.
    app = make_app(**cfg)
    async with app.run_test(size=(160, 48)) as pilot:
        stop_line = a_call + 3

        def stopped_there() -> bool:
            stop = app.state.python.stop
            return app.state.process is ProcessState.STOPPED and getattr(stop, "line", None) == stop_line

        await until(pilot, stopped_there, 60, "the Python breakpoint at its new line")
        await until(pilot, lambda: app.query_one(WatchPane).expressions == ["total * 2"], 5, "the watch back")
        assert app.merged
        ag = pyagent.controller(app.session)
        value = await ag.evaluate("n")
        assert value == "4"  # the condition came back with it
        shown = rows(app)
        assert any(f"steps.py:{a_call + 3}" in r and f"moved {a_call}→{a_call + 3}" in r for r in shown), shown
        assert any(f"steps.py:{c_body + 3}" in r and f"moved {c_body}→{c_body + 3}" in r and "○" in r for r in shown), shown
        assert any(f"{other}:2 (file gone)" in r for r in shown), shown
        # The row of the one not placed stays (in the file too) until it is deleted.
        assert any(b.get("file") == str(other) for b in json.load(open(state))["breakpoints"])
        app.post_message(BreakpointsPane.Action("delete", "gone0"))
        await until(pilot, lambda: not any("file gone" in r for r in rows(app)), 5, "the row deleted")
        await until(pilot, lambda: not any(b.get("file") == str(other) for b in json.load(open(state))["breakpoints"]),
                    5, "forgotten in the file")
        await app.session.close()

    # --fresh: nothing comes back (and what this run sets replaces what was remembered).
    app = make_app(**cfg, fresh_state=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 60, "the program to end, unstopped")
        assert not app.state.python_breakpoints and app.query_one(WatchPane).expressions == []
        await app.session.close()


@requires_gdb
async def test_native_breakpoints_keep_condition_ignore_count_and_enabled(tmp_path, deep_prog):
    state = str(tmp_path / "state.json")
    src = PROGRAMS / "deep.c"
    line = line_of(src, "stop_here")
    app = make_app(program=str(deep_prog), remember=state)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 60, "the program to end")
        s = app.session
        await s.break_insert(file=str(src), line=line, condition="depth == 0", ignore_count=1)
        await s.break_insert("recurse", enabled=False)
        await until(pilot, lambda: os.path.exists(state) and len(json.load(open(state))["breakpoints"]) == 2, 10,
                    "the state saved")
        await s.close()
    app = make_app(program=str(deep_prog), remember=state)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.state.process is ProcessState.STOPPED, 60, "the restored breakpoint hit")
        bps = {b.func or b.original_location: b for b in app.state.breakpoints if not b.internal}
        at_line = [b for b in app.state.breakpoints if (str(src), line) in b.source_lines()]
        assert at_line and at_line[0].condition == "depth == 0" and at_line[0].enabled
        assert any(b.original_location == "recurse" and not b.enabled for b in bps.values()), bps
        frame = app.state.frames[0] if app.state.frames else None
        assert frame is not None and frame.line == line
        assert at_line[0].times == 2  # the first hit was ignored: the ignore count came back too
        await app.session.close()


@requires_gdb
async def test_an_unreadable_state_file_is_one_line_then_a_clean_start(tmp_path, deep_prog):
    state = tmp_path / "state.json"
    state.write_text("{ this is not json")
    app = make_app(program=str(deep_prog), remember=str(state))
    notes: list[str] = []
    orig = app.notify
    app.notify = lambda message, *a, **k: (notes.append(str(message)), orig(message, *a, **k))[1]
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 60, "the program to end")
        assert any("were ignored (not JSON" in n and str(state) in n and "starting without them" in n for n in notes), notes
        await app.session.break_insert("main")
        await until(pilot, lambda: state.read_text().startswith("{\n"), 10, "a good file written over it")
        assert json.loads(state.read_text())["breakpoints"][0]["location"] == "main"
        await app.session.close()


@requires_gdb
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed on this machine")
def test_the_next_tuidbg_run_of_the_same_program_stops_at_the_remembered_breakpoint(threads_prog, tmp_path):
    """Through the real command line in a real terminal: run 1 sets a breakpoint with -ex and quits;
    run 2, without it, stops there (a remembered breakpoint is a breakpoint set: no stop at entry); run 3
    with --fresh has none, and stops at main, saying so (tuidbg.engine.entry)."""
    import sys

    def run(*opts: str, expect: str) -> str:
        tmux = Tmux(tmp_path)  # (a terminal of its own for each run)
        tmux.start([sys.executable, "-m", "tuidbg", "run", "--nx", *opts, "--", str(threads_prog)], width=120, height=30)
        screen = tmux.wait_for(expect, 60)
        tmux.keys("q")
        try:
            if expect != "program exited":  # a program still there: q asks, Enter kills it (the default)
                tmux.wait_for("Quit tuidbg?")
                tmux.keys("Enter")
            tmux.wait_for("TUIDBG_EXIT=0")
        finally:
            tmux.kill()
        return screen

    run("-ex", "break middle", expect="stopped: breakpoint")
    files = os.listdir(tmp_path / "xdg-state" / "tuidbg")  # (conftest points XDG_STATE_HOME there)
    assert len(files) == 1 and files[0].endswith(".json")
    screen = run(expect="stopped: breakpoint")
    assert "middle" in screen
    screen = run("--fresh", expect="stopped: at entry (main)")
    assert "in main at threads.c" in screen


@requires_gdb
@needs_python
@pytest.mark.slow
async def test_attach_puts_the_remembered_python_breakpoint_back(tmp_path):
    """attach 1 sets a Python breakpoint whose condition is false for now, then detaches; attach 2 to
    the same program (the same script, run again) gets it back, and it stops once the condition holds."""
    import subprocess

    forever = PROGRAMS / "py" / "agent_forever.py"
    body = line_of(forever, "tick_ret")
    flag = tmp_path / "go"
    state = str(tmp_path / "state.json")
    cond = f"__import__('os').path.exists({str(flag)!r})"

    def start():
        proc = subprocess.Popen([str(PYTHON), str(forever), str(tmp_path / "counter")], stdout=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
        assert proc.stdout.readline().strip() == b"ready"
        return proc

    cfg = dict(mode="attach", agent=True, python_target=True, remember=state)
    proc = start()
    try:
        app = make_app(pid=proc.pid, **cfg)
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, lambda: app.state.process is ProcessState.STOPPED, 30, "attached")
            ag = pyagent.controller(app.session)
            await ag.add_breakpoint(str(forever), body, condition=cond)
            await until(pilot, lambda: os.path.exists(state) and cond in open(state).read(), 10, "the state saved")
            await app.session.close()  # (attach: detaches)
    finally:
        proc.kill()
        proc.wait(30)
    flag.write_text("")
    proc = start()
    try:
        app = make_app(pid=proc.pid, **cfg)
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, lambda: app.state.process is ProcessState.STOPPED, 30, "attached")
            assert [(b.line, b.condition) for b in app.state.python_breakpoints] == [(body, cond)]
            ag = pyagent.controller(app.session)
            # (c before the agent's load is queued would make gdb refuse it: "Selected thread is running")
            await until(pilot, lambda: ag.info.status == "waiting" and ag.info.inject is not None, 30, "the agent's load queued")
            await pilot.press("c")  # the agent loads as the program runs on; the breakpoint is in its table

            def at_bp() -> bool:
                return app.state.process is ProcessState.STOPPED and getattr(app.state.python.stop, "line", None) == body

            await until(pilot, at_bp, 60, "the remembered breakpoint's stop")
            await app.session.close()
    finally:
        proc.kill()
        proc.wait(30)
