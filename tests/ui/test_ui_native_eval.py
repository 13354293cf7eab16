"""pyprint and Python watches at a native stop, in the TUI at 80x24 and 160x48 (issue 30 item 15): a native
breakpoint in C that Python called through ctypes; the Python caller chosen in the Python frames pane;
then a stop where another thread holds the GIL, which the console names, and pyuntilgil goes to it."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, PROGRAMS, compile_c, pyenv_python
from ui_helpers import console_busy, log_text, make_app, screen_rows, until

from tuidbg.engine.python import view as pyview
from tuidbg.engine.state import ProcessState
from tuidbg.ui.panes.variables import WatchPane

pytestmark = [requires_gdb, pytest.mark.slow]

PY = PROGRAMS / "py"
PROG = PY / "native_eval.py"


def _python():
    return DEBIAN_PY311 if DEBIAN_PY311.exists() else pyenv_python("3.12")


def watch_rows(app) -> dict[str, tuple]:
    tree = app.query_one(WatchPane)
    return {n.data.name: (n.data.value, n.data.error) for n in tree.root.children if n.data is not None}


async def _console(pilot, cmd: str) -> None:
    app = pilot.app
    await pilot.press("8")
    await until(pilot, lambda: app.focused is not None and app.focused.id == "console-input", 5, "the console")
    app.focused.value = cmd
    await pilot.press("enter")
    await until(pilot, lambda: not console_busy(app), 30, f"{cmd!r} to be done")
    await pilot.press("escape")  # (the keys are the panes' again)


def _on_screen(app, text: str) -> bool:
    return any(text in row for row in screen_rows(app))


async def _python_caller_chosen(pilot, what: str) -> None:
    app = pilot.app
    await until(pilot, lambda: app.state.is_stopped and app.state.frames and app.state.frames[0].func == "native_point"
                and pyview.python_thread(app.state) is not None and app.state.python.stop is None, 60, what)
    await pilot.press("2", "enter")
    await until(pilot, lambda: app.py_sel == 0, 10, "the Python caller chosen")


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
async def test_pyprint_and_watch_at_a_native_breakpoint(build_dir, size):
    python = _python()
    if python is None:
        pytest.skip("neither Debian's python3.11 nor pyenv's 3.12 is on this machine")
    lib = compile_c(PY / "native_eval_lib.c", build_dir / "libnative_eval.so", shared=True)
    app = make_app(program=str(python), args=[str(PROG), str(lib)], agent=True, python_target=True,
                   ex=["break native_point"])
    async with app.run_test(size=size) as pilot:
        await _python_caller_chosen(pilot, "native_point under PyDLL")
        await _console(pilot, "pyprint count * 1000")
        await until(pilot, lambda: "41000" in log_text(app, "console-log").splitlines(), 20, "pyprint's answer")
        app.query_one(WatchPane).add_expression("point")
        await until(pilot, lambda: watch_rows(app).get("point", (None,))[0] == "Point(x=3, y=4)", 20, "the watch")
        await until(pilot, lambda: _on_screen(app, "41000"), 10, "pyprint's answer on the screen")
        # the worker holds the GIL at the next stop: the console says which thread, and how to go on
        await _console(pilot, "continue")
        await _python_caller_chosen(pilot, "native_point under CDLL")
        # the watch says so too (evaluated in the selected Python frame, it cannot run there)
        await until(pilot, lambda: "does not hold the GIL" in (watch_rows(app).get("point", (None, None))[1] or ""),
                    20, "the watch's reason")
        await _console(pilot, "pyprint label")
        spinner = next(t.tid for t in app.state.python.stack.threads if any(f.function == "spin" for f in t.frames))
        await until(pilot, lambda: "does not hold the GIL" in log_text(app, "console-log"), 20, "the GIL's holder named")
        text = log_text(app, "console-log")
        assert f"does not hold the GIL: thread {spinner}" in text and "pyuntilgil" in text, text
        await until(pilot, lambda: _on_screen(app, "does not hold the GIL"), 10, "the message on the screen")
        await _console(pilot, "pyuntilgil")
        await until(pilot, lambda: app.state.is_stopped and app.state.python.stop is not None
                    and app.state.python.stop.thread_name == "spinner", 60, "the spinner's Python line")
        await _console(pilot, "delete")
        await _console(pilot, "continue")
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 60, "the program to exit")
        assert app.state.exit_code == 0
        await app.session.close()
