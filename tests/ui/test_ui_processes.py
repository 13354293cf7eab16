"""The Processes pane (``tuidbg run --children``): a Python breakpoint hit in a forked child selects
that child; the pane shows the tree (the program and its worker) at 80x24; choosing the parent there
makes every pane follow it."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, PROGRAMS, line_of
from ui_helpers import make_app, until

from tuidbg.ui.panes.processes import ProcessesPane, tree_rows

pytestmark = [requires_gdb, pytest.mark.slow,
              pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="this machine has no /usr/bin/python3.11")]

CHILDREN = PROGRAMS / "py" / "children.py"


def _cells(pane: ProcessesPane) -> list[list[str]]:
    return [[str(c) for c in pane.get_row_at(i)] for i in range(pane.row_count)]


async def test_processes_pane_follows_a_child_stop_and_selects_the_parent():
    line = line_of(CHILDREN, "child line")
    app = make_app(program=str(DEBIAN_PY311), args=[str(CHILDREN), "fork", "1"], agent=True, python_target=True,
                   children="python", ex=[f"break {CHILDREN}:{line}"])
    async with app.run_test(size=(80, 24)) as pilot:
        def child_stop() -> bool:
            st = app.state
            return (st.is_stopped and st.selected_inferior != "i1" and st.python.stop is not None
                    and st.python.stop.line == line and st.refreshed)

        await until(pilot, child_stop, 60, "a Python stop in a child")
        child_pid = app.state.pid
        parent = app.state.inferiors[0]
        await pilot.press("P")
        pane = app.query_one(ProcessesPane)
        await until(pilot, lambda: pane.row_count >= 2 and app.focused is pane, 10, "the Processes pane")
        rows = _cells(pane)
        # the tree: the program first, its worker under it; the stopped child is the selected row
        assert rows[0][1].strip() == str(parent.pid) and rows[0][2] == "children.py", rows
        assert rows[1][2] == f"worker 1 of {parent.pid}", rows
        chosen = next(r for r in rows if r[0] == "▶")
        assert chosen[1].strip() == str(child_pid) and "square" in chosen[4], rows
        assert any("with the others" in r[3] for r in rows), rows  # the parent stopped because the child did
        # choose the parent: every pane follows (its threads and Python stack, read now)
        await pilot.press("up")
        await until(pilot, lambda: app.state.selected_inferior == "i1" and app.state.refreshed
                    and app.state.python.stack is not None, 20, "the parent selected")
        names = [f.function for t in app.state.python.stack.threads for f in t.frames]
        assert "main" in names, names
        assert app.state.pid == parent.pid
        # quitting names every process that would be killed or let go
        app.query_one("#source").focus()
        await pilot.press("q")
        await until(pilot, lambda: type(app.screen).__name__ == "QuitScreen", 10, "the quit dialog")
        text = " ".join(str(w.render()) for w in app.screen.query("Static"))
        assert f"the 2 processes ({parent.pid}, {child_pid})" in text and "leaves them running" in text, text
        await pilot.press("escape")
        await until(pilot, lambda: type(app.screen).__name__ != "QuitScreen", 10, "the dialog closed")
        # go on to the end: every process exits
        for _ in range(10):
            if not app.state.live_inferiors():
                break
            gen = app.state.generation
            if app.state.is_stopped:
                app.query_one("#source").focus()
                await pilot.press("c")
            await until(pilot, lambda: app.state.generation != gen or not app.state.live_inferiors(), 60,
                        "the program to go on")
        await until(pilot, lambda: not app.state.live_inferiors(), 60, "every process to exit")
        assert app.state.inferiors[0].exit_code == 0
        assert len(tree_rows(app.state)) >= 2
