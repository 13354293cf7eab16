"""The Processes pane (``tuidbg run --children``): a Python breakpoint hit in a forked child selects
that child; the pane shows the tree (the program and its worker) at 80x24, with every process's Python
line; choosing the parent there makes every pane follow it."""

from __future__ import annotations

import re

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, PROGRAMS, line_of
from pystack_helpers import TORCH_PYTHON
from ui_helpers import log_text, make_app, until

from tuidbg.engine.python.view import stacks_read
from tuidbg.ui.panes.processes import ProcessesPane, tree_rows
from tuidbg.ui.panes.source import SourceView
from tuidbg.ui.panes.variables import LocalsPane
from tuidbg.ui.screens.modals import HelpScreen

pytestmark = [requires_gdb, pytest.mark.slow,
              pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="this machine has no /usr/bin/python3.11")]

CHILDREN = PROGRAMS / "py" / "children.py"
LOADER = PROGRAMS / "py" / "torch_loader.py"


def _cells(pane: ProcessesPane) -> list[list[str]]:
    return [[str(c) for c in pane.get_row_at(i)] for i in range(pane.row_count)]


def _locals(app) -> dict[str, str | None]:
    tree = app.query_one(LocalsPane)
    return {n.data.name: n.data.value for n in tree.root.children if n.data is not None}


def _where(app, last: int) -> str:
    """What the session is at (a test's failure says it)."""
    st = app.state
    return (f"{st.process} gen {st.generation} (last {last}) stop {st.stop and st.stop.describe()} python {st.python.stop} "
            f"transient {st.python.transient} refreshed {st.refreshed} read {stacks_read(st)} "
            + repr([(i.id, i.pid, i.process.value, i.generation, i.python.stack_read, i.stop and i.stop.describe(),
                     i.cmdline[-2:]) for i in st.inferiors])
            + f"\nfocused {app.focused!r} screen {app.screen!r} status {app.query_one('#status').render().plain!r}"
            + f"\nworkers {[(w.name, w.state.name) for w in app.workers]} gdb's pending {app.session.client.pending_commands()}"
            + "\noutput: " + log_text(app, "output-log")[-1500:]
            + "\nconsole: " + log_text(app, "console-log")[-3000:])


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
        # and where the parent is in Python, read at the stop without selecting it (it waits for its child)
        await until(pilot, lambda: re.search(r"\S:\d+$", _cells(pane)[0][4]), 10, "the parent's Python line")
        # the help says which signals stop: a job's shutdown signals pass without a stop in such a session
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen)
                    and "passed to it without a stop" in str(app.screen.query_one("#help-signals").render()), 10, "help")
        text = str(app.screen.query_one("#help-signals").render())
        passed = text.split("passed to it without a stop: ")[1].split(".")[0].split(", ")
        assert {"SIGTERM", "SIGHUP", "SIGCHLD"} <= set(passed) and "SIGINT" not in passed, text
        assert "handle SIGTERM stop" in text
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen), 5, "help closed")
        pane.focus()
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


@pytest.mark.torch
@pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="this machine has no .venv-torch (scripts/setup.sh builds it)")
async def test_dataloader_workers_show_their_python_then_R_runs_it_again():
    """tuidbg run -ex 'break loader.py:N' with a DataLoader of two workers: every stop in a worker shows that
    worker's Python as a single process would (the status line's function and file, the line in the source
    pane, its Python frames and locals), and the Processes tab has every process's Python line. R then
    runs the job again: every process of the old run ends, none is left traced or stopped, and the new
    run stops at the breakpoint again."""
    line = line_of(LOADER, "getitem line")
    app = make_app(program=str(TORCH_PYTHON), args=[str(LOADER), "2"], agent=True, python_target=True,
                   children="python", ex=[f"break {LOADER}:{line}"])
    async with app.run_test(size=(160, 48)) as pilot:
        seen = []
        last = 0

        def worker_stop() -> bool:
            st = app.state
            return (st.is_stopped and st.python.stop is not None and st.generation != last and st.refreshed
                    and st.python.stack is not None and stacks_read(st))

        for _ in range(3):  # (a stop in each worker, then one more in either)
            try:
                await until(pilot, worker_stop, 120, "a stop in a worker")
            except AssertionError:
                raise AssertionError(_where(app, last)) from None
            st = app.state
            last = st.generation
            assert st.selected_inferior != "i1"
            await until(pilot, lambda: "in Squares.__getitem__ at torch_loader.py:" in app.query_one("#status").render().plain,
                        10, "the status line")
            src = app.query_one(SourceView)
            await until(pilot, lambda: src.path == str(LOADER) and src.pc_line == line, 10, "the source pane")
            await until(pilot, lambda: {"i", "self"} <= set(_locals(app)), 20, "the worker's Python locals")
            assert app.query_one("#py-list").row_texts[0].startswith(f"▶ 0  Squares.__getitem__:{line}")
            pane = app.query_one(ProcessesPane)
            try:
                await until(pilot, lambda: pane.row_count == 3 and all(re.search(r"\S:\d+$", r[4]) for r in _cells(pane)),
                        10, "every process's Python line")
            except AssertionError:
                raise AssertionError(repr(_cells(pane)) + repr([(i.id, i.process, i.python.stack_read, i.python.stack and i.python.stack.status, i.python.stack and [(t.lwp, t.tid, [f.function for f in t.frames][:3]) for t in i.python.stack.threads]) for i in app.state.inferiors]))
            seen.append((st.pid, _locals(app)["i"]))
            app.query_one(SourceView).focus()
            await pilot.press("c")
        assert len({pid for pid, _ in seen}) == 2, seen  # each worker stopped
        old = {inf.os_pid or inf.pid for inf in app.state.inferiors}
        gdb = app.session.gdb_pid()
        try:
            await until(pilot, worker_stop, 120, "the last stop")
        except AssertionError:
            raise AssertionError(_where(app, last)) from None
        last = app.state.generation
        await pilot.press("R")
        try:
            await until(pilot, worker_stop, 120, "a stop in a worker of the new run")
        except AssertionError:
            raise AssertionError(_where(app, last)) from None
        st = app.state
        assert not old & {inf.pid for inf in st.inferiors}, (old, st.inferiors)
        from faults.procs import assert_clean

        assert_clean(old)  # every process of the old run ended: none traced, stopped or left a zombie
        assert st.python.stop.line == line and st.inferiors[0].pid not in old
        assert "Invalid thread" not in log_text(app, "console-log")
        await app.session.close()
        assert_clean({gdb, *(inf.os_pid for inf in st.inferiors if inf.os_pid)})
