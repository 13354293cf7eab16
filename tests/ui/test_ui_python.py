"""The TUI's Python panes on real interpreters: the stripped Debian 3.11 first."""

from __future__ import annotations

import re

import pytest
from conftest import requires_gdb
from helpers import line_of
from pystack_helpers import PY_PROGRAMS, resolve
from ui_helpers import log_text, make_app, until, until_stopped

from tuidbg.engine import mi
from tuidbg.ui.panes.frames import CppFramesPane, FoldRow, NativeRow, PythonRow
from tuidbg.ui.panes.source import SourceView
from tuidbg.ui.panes.variables import LocalsPane

pytestmark = requires_gdb

TRAP = PY_PROGRAMS / "trap.py"


def names(app) -> dict[str, str | None]:
    tree = app.query_one(LocalsPane)
    return {n.data.name: n.data.value for n in tree.root.children if n.data is not None}


@pytest.mark.parametrize("interp_name", ["debian-3.11", "pyenv-3.12", "pyenv-3.9", "cpython-3.14", "cpython-3.14-stripped",
                                         "cpython-3.14t"])
async def test_sigtrap_selects_the_python_frame_and_panes_follow(interp_name, build_dir, tmp_path):
    interp = resolve(interp_name, build_dir)
    app = make_app(program=str(interp.exe), args=[str(TRAP), str(tmp_path / "rec.json")], program_env=interp.env, python_target=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await until_stopped(pilot, 60)
        await until(pilot, lambda: app.state.python.stack is not None, 60, "the Python stack")
        # the frame that sent SIGTRAP, not kill()
        await until(pilot, lambda: app.py_sel == 0, 10, "the SIGTRAP frame selected")
        st = app.state
        pt = st.python.stack.thread(st.selected_thread)
        assert pt.frames[0].function == "stop_here"
        src = app.query_one(SourceView)
        await until(pilot, lambda: src.path == str(TRAP) and src.pc_line == line_of(TRAP, "stop"), 10, "the .py source")
        assert "(Python, stop_here)" in app.query_one("#source-title").render().plain
        status = app.query_one("#status").render().plain
        assert "SIGTRAP" in status and "stop_here at trap.py" in status
        # the eval-loop frame that runs it is selected on the native side and marked
        assert st.selected_frame == pt.frames[0].native_level
        cpp = app.query_one(CppFramesPane)
        assert cpp.notes.get(pt.frames[0].native_level, "").startswith("⇠ py stop_here")
        # Python locals, read from memory
        await until(pilot, lambda: "an_int" in names(app), 20, "Python locals")
        loc = names(app)
        assert loc["an_int"] == "7" and loc["flt"] == "2.5" and loc["nothing"] == "None"
        # the Python frames pane lists full paths; choosing the caller selects its eval frame
        from tuidbg.ui.panes.frames import PyFramesPane
        from tuidbg.ui.panes.lists import RowList

        rows = [c.plain for c in app.query_one(PyFramesPane).query_one(RowList)._contents]
        assert rows and str(TRAP) in rows[0] and "stop_here" in rows[0]
        await pilot.press("2")
        await pilot.press("down")
        await until(pilot, lambda: app.py_sel == 1, 10, "the caller selected")
        caller = pt.frames[1]
        assert caller.function == "method"
        await until(pilot, lambda: src.pc_line == line_of(TRAP, "method_leaf"), 10, "the caller's line")
        await until(pilot, lambda: app.state.selected_frame == caller.native_level, 10, "its native partner")
        await until(pilot, lambda: "n" in names(app), 20, "the caller's locals")
        # merged view: Python rows in place of eval frames, glue folded, folds expand
        await pilot.press("m")
        await until(pilot, lambda: any(isinstance(r, PythonRow) for r in cpp.rows), 10, "the merged view")
        rows = cpp.rows
        assert any(isinstance(r, PythonRow) and r.frame.function == "stop_here" for r in rows)
        folds = [r for r in rows if isinstance(r, FoldRow)]
        assert folds, rows
        n_before = len(rows)
        cpp.toggle_fold(folds[0])
        assert len(cpp.rows) == n_before + len(folds[0].children)
        await app.session.close()


async def test_choosing_a_native_eval_frame_highlights_its_python_partner(build_dir, tmp_path):
    interp = resolve("debian-3.11", build_dir)
    app = make_app(program=str(interp.exe), args=[str(TRAP), str(tmp_path / "rec.json")], program_env=interp.env, python_target=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await until_stopped(pilot, 60)
        await until(pilot, lambda: app.py_sel == 0, 60, "the SIGTRAP frame selected")
        # (and its eval frame selected in gdb: that selection, still on its way, would land after frame 0's)
        await until(pilot, lambda: app.state.selected_frame == app.state.python.stack.thread(
            app.state.selected_thread).frames[0].native_level, 60, "the SIGTRAP frame's eval frame selected")
        # frame 0 (kill) has no Python partner: the native source is shown, no Python frame selected
        cpp = app.query_one(CppFramesPane)
        app.post_message(CppFramesPane.FrameChosen(0, True))
        await until(pilot, lambda: app.state.selected_frame == 0 and app.py_sel is None, 10, "frame 0")
        assert app.query_one("#source-title").render().plain in ("Source — not available",) or "syscall" in app.query_one("#source-title").render().plain
        # back to the eval frame: its innermost Python frame is the partner again
        pt = app.state.python.stack.thread(app.state.selected_thread)
        lvl = pt.frames[0].native_level
        app.post_message(CppFramesPane.FrameChosen(lvl, True))
        await until(pilot, lambda: app.state.selected_frame == lvl and app.py_sel == 0, 10, "the partner")
        await app.session.close()


async def test_plain_c_program_hides_the_python_pane(threads_prog):
    app = make_app(program=str(threads_prog), ex=["break leaf"])
    async with app.run_test(size=(160, 48)) as pilot:
        await until_stopped(pilot)
        await until(pilot, lambda: app.query_one("#stack-box").has_class("-nopython"), 10, "the Python pane hidden")
        assert not app.query_one("#py-box").display


async def test_core_file_in_the_tui(build_dir, tmp_path):
    from helpers import wait_stopped
    from tuidbg.engine.debugger import new_session
    from tuidbg.engine.session import SessionConfig

    interp = resolve("debian-3.11", build_dir)
    core = tmp_path / "py core"
    s = new_session(SessionConfig(mode="run", program=str(interp.exe), args=[str(TRAP), str(tmp_path / "rec.json"), "abort"], program_env=interp.env, nx=True))
    await s.start()
    await s.launch()
    st = await wait_stopped(s, 120)
    assert st.stop.signal_name == "SIGABRT"
    await s.cmd(f"-interpreter-exec console {mi.quote('generate-core-file ' + str(core))}", timeout=120)
    await s.close()
    app = make_app(mode="core", program=str(interp.exe), core=str(core))
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.state.python.stack is not None, 60, "the Python stack of the core")
        pt = app.state.python.stack.thread(app.state.selected_thread)
        assert pt.frames[0].function == "stop_here"
        rows = app.query_one("#py-list").payloads
        assert [r.frame.function for r in rows[:3]] == ["stop_here", "method", "method"]
        # the signal gdb reads from the core is in the status line, gdb's words in the console
        status = app.query_one("#status").render().plain
        assert re.search(r"stopped: core file: the program got SIG[A-Z]+ \(", status), status
        await until(pilot, lambda: "Program terminated with signal" in log_text(app, "console-log"), 10, "gdb's words")


async def test_enter_in_the_python_pane_chooses_a_frame_when_none_was_selected(libfoo):
    # A native breakpoint in C called from Python: no Python frame is selected (the selected native
    # frame runs none). Focusing the Python pane puts the cursor on its first row, so Enter chooses it.
    from helpers import DEBIAN_PY311, PROGRAMS

    if not DEBIAN_PY311.exists():
        pytest.skip("this machine has no /usr/bin/python3.11")
    mixed = PROGRAMS / "py" / "agent_mixed.py"
    app = make_app(program=str(DEBIAN_PY311), args=[str(mixed), str(libfoo)], python_target=True, ex=["break foo_add"])
    async with app.run_test(size=(80, 24)) as pilot:
        await until_stopped(pilot, 60)
        await until(pilot, lambda: app.state.frames and app.state.frames[0].func == "foo_add"
                    and app.state.python.stack is not None, 60, "foo_add with the Python stack")
        assert app.py_sel is None
        await pilot.press("2")
        await pilot.press("enter")
        src = app.query_one(SourceView)
        await until(pilot, lambda: app.py_sel == 0 and src.path == str(mixed)
                    and src.pc_line == line_of(mixed, "ctypes_call"), 10, "compute() chosen")
