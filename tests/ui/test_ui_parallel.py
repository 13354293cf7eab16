"""The Parallel Stacks tab at 80x24, keyboard only, on a real multiprocessing Pool of 8 (fork, under
``tuidbg run --children``, each worker with the agent; worker 5 waits in another function): interrupted,
the tab (from the command palette; p later) shows every process's stack as one tree with the odd
worker's branch first, and help lists its keys; Enter on a frame shows its first process with that
frame selected (the Processes tab follows); ``pyprint --all`` in that frame compares a value across the
workers by their agents (worker 5's differs), as A on a Watch row does; G makes a branch's processes
the run group, which the status line names; c runs the group alone, ctrl+c stops it (issue 33)."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, PROGRAMS, line_of
from textual.command import CommandPalette
from ui_helpers import make_app, until

from tuidbg.engine import procstacks
from tuidbg.ui.panes.parallel import ParallelPane
from tuidbg.ui.panes.processes import ProcessesPane
from tuidbg.ui.panes.variables import WatchPane
from tuidbg.ui.screens.modals import HelpScreen

pytestmark = [requires_gdb, pytest.mark.slow,
              pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="this machine has no /usr/bin/python3.11")]

POOL = PROGRAMS / "py" / "pool8.py"


def _console_text(app) -> str:
    from tuidbg.ui.panes.io import ConsolePane

    return "\n".join(app.query_one(ConsolePane).log_widget.lines())


async def test_parallel_stacks_of_a_pool_of_eight(tmp_path):
    app = make_app(program=str(DEBIAN_PY311), args=[str(POOL), str(tmp_path)], agent=True, python_target=True,
                   children="python")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: (tmp_path / "ready.json").exists(), 120, "the pool's workers")
        await until(pilot, lambda: len([i for i in app.state.inferiors if i.pid]) >= 9, 60, "nine processes")
        await pilot.press("ctrl+c")
        await until(pilot, lambda: app.state.is_stopped and app.state.refreshed, 60, "the interrupt's stop")
        await procstacks.controller(app.session).wait_read(60)
        # the tab from the command palette (p is tried below)
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette), 10, "the command palette")
        await pilot.press(*"parallel stacks")
        await until(pilot, lambda: _palette_offers(app, "Parallel stacks"), 10, "the palette's command")
        await pilot.press("enter")
        pane = app.query_one(ParallelPane)
        await until(pilot, lambda: not isinstance(app.screen, CommandPalette)
                    and app.focused is pane.query_one("#parallel-list"), 10, "the tab from the palette")
        call_odd, call_wait = line_of(POOL, "call_odd"), line_of(POOL, "call_wait")
        await until(pilot, lambda: any(r.text.startswith(f"work  pool8.py:{call_wait}") for r in pane.painted_rows),
                    30, "the tree")
        rows = pane.painted_rows
        texts = [r.text for r in rows]
        i_odd = next(i for i, r in enumerate(rows) if r.text.startswith(f"work  pool8.py:{call_odd}"))
        i_wait = next(i for i, r in enumerate(rows) if r.text.startswith(f"work  pool8.py:{call_wait}"))
        assert i_odd < i_wait, texts  # the odd branch (1 process) first
        parent = app.state.inferiors[0].pid
        assert rows[i_odd].label == f"worker {_pid_of(app, rows[i_odd].iids[0])} of {parent} · 1 proc", rows[i_odd]
        assert rows[i_wait].label == f"7 workers of {parent} · 7 procs", rows[i_wait]
        assert rows[i_odd + 1].text.startswith("odd_wait  pool8.py:") and rows[i_wait + 1].text.startswith("wait  pool8.py:")
        module = next(r for r in rows if r.text.startswith("<module>  pool8.py:"))
        assert module.label == f"pid {parent} + 8 workers · 9 procs", module  # (every process: forks of the parent)
        assert any(r.kind == "fold" for r in rows), texts  # (the trunk from the Pool's start to work, folded)
        # help lists the tab's key and the tree's own keys
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), 10, "help")
        keys = {bid: keys for keys, _desc, bid in app.screen.rows}
        assert keys["pane.parallel"] == "p" and keys["parallel.group"] == "G", keys
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen), 10, "help closed")
        # Enter on the 7 workers' frame of work: the first of them shown, in that frame
        assert app.focused is pane.query_one("#parallel-list")
        await pilot.press("home")
        for _ in range(i_wait):
            await pilot.press("down")
        await pilot.press("enter")
        first = rows[i_wait].iids[0]
        await until(pilot, lambda: app.state.selected_inferior == first and app.state.refreshed
                    and app.py_sel is not None and _frame_name(app) == "work", 30, "the worker shown in work")
        procs = app.query_one(ProcessesPane)
        assert procs.selected_id == first
        # pyall in that frame: every worker's task.size by its agent; worker 5's differs; the parent has no work
        app.query_one("#console-input").focus()
        await pilot.press(*"pyprint --all task.size", "enter")  # (pyall's other spelling)
        await until(pilot, lambda: "pyall task.size in work" in _console_text(app) and "holds" in _console_text(app),
                    60, "pyall's answer")
        text = _console_text(app)
        odd_pid = _pid_of(app, rows[i_odd].iids[0])
        assert f"task.size = 10  ×7  (7 workers of {parent})  · by the agent" in text, text
        assert f"task.size = 11  ×1  (worker {odd_pid} of {parent})  · by the agent" in text, text
        assert f"no frame of work: pid {parent}" in text, text
        # A on a Watch row: the same, for the watch's expression
        await pilot.press(*":watch task.size", "enter")
        watch = app.query_one(WatchPane)
        await until(pilot, lambda: app.focused is watch and watch.expressions == ["task.size"]
                    and len(watch.root.children) == 1, 20, "the watch")
        await pilot.press("home")
        await until(pilot, lambda: watch.cursor_node is watch.root.children[0], 10, "the watch's row")
        await pilot.press("A")
        await until(pilot, lambda: _console_text(app).count(f"task.size = 11  ×1  (worker {odd_pid} of {parent})") == 2,
                    60, "the watch across the processes")
        assert "(gdb) pyall task.size" in _console_text(app)
        app.query_one("#console-input").focus()
        # G on the 7 workers' row: they are the run group, and the status line says so
        await pilot.press("escape", "p")
        await until(pilot, lambda: app.focused is pane.query_one("#parallel-list"), 10, "the tree again")
        await pilot.press("home")
        for _ in range(i_wait):
            await pilot.press("down")
        await pilot.press("G")
        await until(pilot, lambda: len(app.state.run_group) == 7, 20, "the run group")
        await until(pilot, lambda: f"[group 7 workers of {parent}]" in str(app.query_one("#status").render()),
                    10, "the status line naming the group")
        # c continues the seven; the parent and worker 5 stay stopped; ctrl+c stops them again
        group = set(app.state.run_group)
        await pilot.press("c")
        await until(pilot, lambda: {i.id for i in app.state.inferiors if i.process.value == "running"} == group,
                    30, "the group running, the others stopped")
        assert app.state.find(rows[i_odd].iids[0]).process.value == "stopped"
        await pilot.press("ctrl+c")
        await until(pilot, lambda: all(i.process.value == "stopped" for i in app.state.inferiors if i.pid), 30,
                    "every process stopped again")


def _palette_offers(app, title: str) -> bool:
    """Whether the open command palette lists ``title`` among its matches (highlighted or not)."""
    from textual.command import CommandList

    try:
        options = app.screen.query_one(CommandList).options
    except Exception:  # (not mounted yet)
        return False
    return any(title in str(o.prompt) for o in options)


def _pid_of(app, iid: str) -> int:
    return app.state.find(iid).pid


def _frame_name(app) -> str | None:
    from tuidbg.engine.python import view as pyview

    f = pyview.selected_frame(app.state, app.py_sel)
    return f.name if f is not None else None
