"""The Tasks tab at 80x24 (tuidbg/ui/panes/tasks.py, tuidbg/ui/app_tasks.py): an asyncio program
interrupted while a task blocks its loop names that task in the status line; the tab shows the tasks
by who awaits whom; Enter on one shows its coroutines in the Python frames pane, the source and the
locals follow; backspace shows the thread's own stack again. And a core file of a crashed asyncio
program shows the task that crashed it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, PROGRAMS, cpython314, cpython314_missing, wait_stopped
from svg_text import svg_rows
from ui_helpers import make_app, until

from tuidbg.engine import mi
from tuidbg.engine.state import ProcessState
from tuidbg.ui.panes.frames import PyFramesPane
from tuidbg.ui.panes.tasks import TasksPane

pytestmark = [requires_gdb, pytest.mark.slow,
              pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="this machine has no /usr/bin/python3.11")]

DEMO = PROGRAMS / "py" / "tasks_demo.py"


def screen(app) -> str:
    return "\n".join(svg_rows(app.export_screenshot())).replace("\xa0", " ")


def rows(pane: TasksPane) -> list[list[str]]:
    return [[str(c) for c in pane.get_row_at(i)] for i in range(pane.row_count)]


def wait_file(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)


async def test_tasks_tab_and_a_task_in_the_frames_pane(tmp_path):
    ready = tmp_path / "ready.json"
    app = make_app(program=str(DEBIAN_PY311), args=[str(DEMO), str(ready), "--block"], python_target=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: Path(str(ready) + ".blocked").exists(), 60, "the program to block")
        marks = json.loads(ready.read_text())["marks"]
        app.query_one("#source").focus()
        await pilot.press("ctrl+c")
        await until(pilot, lambda: app.state.is_stopped and app.state.refreshed and app.state.python.tasks is not None,
                    60, "the stop and its running task")
        # the stop is in the task that blocks the loop
        await until(pilot, lambda: "in task 'blocker'" in app.query_one("#status").render().plain, 10, "the status")
        await pilot.press("W")
        pane = app.query_one(TasksPane)
        await until(pilot, lambda: app.focused is pane and pane.row_count > 5, 30, "the tasks")
        table = rows(pane)
        names = [r[1] for r in table]
        # by who awaits whom: the gather's three tasks under it, the TaskGroup's two under it
        i = names.index("parent-gather")
        assert names[i + 1:i + 4] == ["  gather-0", "  gather-1", "  gather-2"], names
        j = names.index("parent-tg")
        assert names[j + 1:j + 3] == ["  tg-0", "  tg-1"], names
        k = names.index("Task-1")
        assert names[k + 1] == "  blocker" and table[k + 1][2] == "running" and table[k + 1][0] == "●", table
        sw = table[names.index("stuck-waiter")]
        assert sw[2] == "pending" and sw[3].startswith("Event.wait ") and sw[4] == "Future (pending)", sw
        # (on the screen once the pane's rows are painted: the next screen update after they came)
        await until(pilot, lambda: all(w in screen(app) for w in ("Tasks", "parent-gather", "Event.wait locks.py:")),
                    10, lambda: f"the tasks on the screen:\n{screen(app)}")
        # New rows are whole in the very next screen update, whenever it comes: a screen update between the
        # rows and the table's idle (when Textual's DataTable measures its columns) once drew the cells cut
        # to the columns' titles ("pare", "Event.w…"), and the table kept those cells until its rows changed
        # again. The rows given again (another task marked as shown, then none), the screen drawn at once:
        awaits = next(t.addr for t in app.state.python.tasks.tasks if t.name == "awaits-task")
        for shown in (awaits, 0):
            pane.update_state(app.state, shown)
            text = screen(app)
            assert all(w in text for w in ("parent-gather", "Event.wait locks.py:", "awaits_task tasks_demo.py:")), text
        # Enter on 'awaits-task': its coroutine in the Python frames pane, the source and locals follow
        pane.move_cursor(row=names.index("awaits-task"))
        await pilot.press("enter")
        frames = app.query_one(PyFramesPane)
        await until(pilot, lambda: app.state.python.task_view is not None and app.focused is not pane, 10,
                    "the task shown")
        await until(pilot, lambda: "task 'awaits-task'" in app.query_one("#py-title").render().plain, 10, "the title")
        await until(pilot, lambda: f"tasks_demo.py  (Python, awaits_task)" in app.query_one("#source-title").render().plain,
                    10, "the source")
        assert app.query_one("#source").pc_line == marks["awaits_task"]
        await until(pilot, lambda: "other=" in _locals(app), 20, "its locals")
        assert "CountingTask" in _locals(app)
        assert "in task 'awaits-task'" in app.query_one("#status").render().plain
        assert frames.is_attached
        # backspace in the Tasks pane: the thread's own stack again
        await pilot.press("W")
        await until(pilot, lambda: app.focused is pane, 10, "the Tasks pane")
        await pilot.press("backspace")
        await until(pilot, lambda: app.state.python.task_view is None, 10, "the thread's stack")
        await until(pilot, lambda: "in task 'blocker'" in app.query_one("#status").render().plain, 10, "the status")


def _locals(app) -> str:
    from tuidbg.ui.panes.variables import LocalsPane

    return " ".join(f"{n.data.name}={n.data.value}" for n in app.query_one(LocalsPane).root.children if n.data)


@pytest.mark.parametrize("build", ["3.11", "3.14"])
async def test_core_of_a_crashed_asyncio_program(make_session, tmp_path, build):
    """The core of a program that aborted in a task: the task that crashed is the running one, every other
    task waits where it did (the engine's read, then the Tasks tab of ``tuidbg core``)."""
    exe = DEBIAN_PY311 if build == "3.11" else cpython314("3.14")
    if exe is None:
        pytest.skip(cpython314_missing("3.14"))
    from tuidbg.engine import pytasks

    ready = tmp_path / "ready.json"
    core = tmp_path / "asyncio.core"
    s = await make_session(mode="run", program=str(exe), args=[str(DEMO), str(ready), "--crash"])
    await s.launch()
    st = await wait_stopped(s, 120)
    assert st.stop.signal_name == "SIGABRT"
    await s.cmd(f"-interpreter-exec console {mi.quote('generate-core-file ' + str(core))}", timeout=120)
    await s.close()
    marks = json.loads(ready.read_text())["marks"]

    app = make_app(mode="core", program=str(exe), core=str(core))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.state.process is ProcessState.STOPPED and app.state.refreshed
                    and app.state.python.tasks is not None, 120, "the core's stop")
        await until(pilot, lambda: "in task 'crasher'" in app.query_one("#status").render().plain, 10, "the status")
        tasks = await pytasks.load(app.session)
        crasher = next(t for t in tasks.tasks if t.name == "crasher")
        assert crasher.executing and crasher.current
        assert [(f.name, f.line) for f in crasher.frames] == [("crasher", marks["crasher"])]
        assert {t.name for t in tasks.tasks} >= {"stuck-waiter", "gather-0", "leaf-task", "awaits-task"}
        # gdb without Python (MI memory reads) reads the same tasks
        mem = await pytasks.collect(app.session, backend="memory")
        assert sorted((t["name"], t["state"], len(t["frames"])) for t in mem["tasks"]) == \
            sorted((t.name, t.state, len(t.frames)) for t in tasks.tasks)
        locs = await pytasks.frame_locals(app.session, crasher.frames[0].frame_addr, crasher.frames[0].code_addr)
        assert locs == ()  # (crasher has no locals; its frame is read)
        await pilot.press("W")
        pane = app.query_one(TasksPane)
        await until(pilot, lambda: pane.row_count > 5, 30, "the tasks")
        crow = next(r for r in rows(pane) if r[1].strip() == "crasher")
        assert crow[2] == "running" and crow[3].startswith("crasher ")
    assert os.path.getsize(core) > 0


async def test_next_over_an_await_in_the_tui():
    """At 80x24: a breakpoint limited to task 'w' (another task runs the same line first), then n over
    the await: the next line of the same coroutine, the status line naming the task both times."""
    from helpers import line_of

    steps = PROGRAMS / "py" / "tasks_steps.py"
    at, after = line_of(steps, "worker_await"), line_of(steps, "worker_after")
    app = make_app(program=str(DEBIAN_PY311), args=[str(steps)], agent=True, python_target=True,
                   ex=[f"pybreak {steps}:{at} task w"])
    async with app.run_test(size=(80, 24)) as pilot:
        src = app.query_one("#source")

        def stopped_at(reason: str, line: int) -> bool:
            st = app.state
            stop = st.python.stop if st.is_stopped else None
            return (stop is not None and stop.reason == reason and stop.line == line and src.pc_line == line
                    and st.python.tasks is not None and app.session.state is st)

        await until(pilot, lambda: stopped_at("breakpoint", at), 60, "the breakpoint in task 'w'")
        await until(pilot, lambda: "in task 'w': worker at tasks_steps.py:" in app.query_one("#status").render().plain,
                    10, "the status line")
        src.focus()
        await pilot.press("n")
        await until(pilot, lambda: stopped_at("step", after), 60, "the next line of the same coroutine")
        await until(pilot, lambda: "in task 'w': worker at tasks_steps.py:" in app.query_one("#status").render().plain,
                    10, "the status line")
        rows = [r.replace(" ", "") for r in screen(app).splitlines()]
        assert any(r[:len(str(after)) + 1] in (f"{after}▶", f"{after}▷") and "total+=x" in r for r in rows), rows
