"""Python breakpoints and stepping in the TUI (tuidbg's agent), with the keyboard, on real
interpreters: Debian's stripped 3.11 (settrace backend), pyenv's 3.12 (sys.monitoring) and the free-threaded
3.14t (sys.monitoring, no GIL)."""

from __future__ import annotations

import sys

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, PROGRAMS, cpython314, cpython314_missing, line_of, pyenv_python
from ui_helpers import console_busy, log_text, make_app, until, until_shown

from tuidbg.engine import pyagent
from tuidbg.engine.python import view as pyview
from tuidbg.engine.python.model import AgentStop, is_agent_file
from tuidbg.engine.state import ProcessState
from tuidbg.ui.panes.frames import CppFramesPane, NativeRow
from tuidbg.ui.panes.source import SourceView
from tuidbg.ui.panes.tables import BreakpointsPane, ThreadsPane
from tuidbg.ui.panes.variables import LocalsPane, WatchPane

pytestmark = [requires_gdb, pytest.mark.slow]

PY = PROGRAMS / "py"
FOREVER = PY / "agent_forever.py"
STEPS = PY / "agent_steps.py"


def _interp(name: str):
    if name == "debian-3.11":
        return DEBIAN_PY311 if DEBIAN_PY311.exists() else None
    if name.startswith("cpython-"):
        return cpython314(name[len("cpython-"):])
    return pyenv_python(name.split("-")[1])


INTERPS = [
    pytest.param("debian-3.11", marks=pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="this machine has no /usr/bin/python3.11")),
    pytest.param("pyenv-3.12", marks=pytest.mark.skipif(pyenv_python("3.12") is None, reason="pyenv has no CPython 3.12 on this machine")),
    # free-threaded (no GIL), scripts/build-cpython314.sh's
    pytest.param("cpython-3.14t", marks=pytest.mark.skipif(cpython314("3.14t") is None, reason=cpython314_missing("3.14t"))),
]


def _steps_app(interp: str, *ex: str):
    """The app on agent_steps.py under the agent, with gdb commands run before its first line."""
    return make_app(program=str(_interp(interp)), args=[str(STEPS)], agent=True, python_target=True, ex=list(ex))


def locals_of(app) -> dict[str, str]:
    tree = app.query_one(LocalsPane)
    return {n.data.name: n.data.value for n in tree.root.children if n.data is not None}


def agent_stop(app):
    st = app.state
    if st.process is not ProcessState.STOPPED:
        return None
    stop = st.python.stop
    return stop if isinstance(stop, AgentStop) else None


async def until_py_stop(pilot, reason: str, line: int, timeout: float = 60.0):
    """A Python stop of this reason at this line, shown: the source pane is on it."""
    app = pilot.app
    src = app.query_one(SourceView)

    def shown() -> bool:
        stop = agent_stop(app)
        return (
            stop is not None
            and stop.reason == reason
            and stop.line == line
            and app.session.state is app.state
            and not app.session.refreshing  # (the stop's stacks read: a key now steps where it is shown)
            and src.pc_line == line
        )

    await until(pilot, shown, timeout, f"a Python {reason} stop at line {line}")
    await until_shown(pilot)
    return agent_stop(app)


async def goto(pilot, line: int) -> None:
    await pilot.press("ctrl+g")
    await pilot.press(*str(line), "enter")
    await pilot.pause()


@pytest.mark.parametrize("interp", INTERPS)
async def test_python_breakpoint_from_the_source_pane_then_step(interp, tmp_path):
    python = _interp(interp)
    app = make_app(program=str(python), args=[str(FOREVER), str(tmp_path / "count")], agent=True, python_target=True)
    async with app.run_test(size=(160, 48)) as pilot:
        ctl = pyagent.controller(app.session)
        await until(pilot, lambda: ctl.info.connected, 60, "the agent to connect")
        assert app.state.process is ProcessState.RUNNING
        # Open the program's file and press b on a line of tick(): a Python breakpoint, hit at once
        # (the program is running: the breakpoint reaches it over the agent's socket).
        app.show_file(str(FOREVER))
        await pilot.press("1")
        tick_ret = line_of(FOREVER, "tick_ret")
        await goto(pilot, tick_ret)
        await pilot.press("b")
        stop = await until_py_stop(pilot, "breakpoint", tick_ret)
        assert stop.func == "tick" and stop.bp_id == 1
        status = app.query_one("#status").render().plain
        assert f"Python breakpoint 1 at {FOREVER}:{tick_ret}" in status
        # The Python frames pane shows the user's frames only (not the agent's), tick selected.
        pt = app.state.python.stack.thread(app.state.selected_thread)
        shown = [f for f in pt.frames if not is_agent_file(f.file)]
        assert [f.function for f in shown[:3]] == ["tick", "main", "<module>"]
        assert app.py_sel is not None and pt.frames[app.py_sel].function == "tick"
        # and numbers them from 0 as shown (the agent's hidden frames are not counted)
        await until(pilot, lambda: app.query_one("#py-list").row_texts[:1] == [f"▶ 0  tick:{tick_ret}  {FOREVER}"], 10,
                    "the Python frames pane")
        rows = app.query_one("#py-list").row_texts
        assert rows[1].startswith(f"  1  main:{line_of(FOREVER, 'loop')}  ") and rows[2].startswith("  2  <module>:")
        # The C++ pane folds the agent's own frames on top (its stop function, ctypes, its Python) into
        # one row; the eval-loop frame of tick is the selected one, right under it.
        cpp = app.query_one("#cpp-list")
        level = pt.frames[app.py_sel].native_level
        assert level and app.state.selected_frame == level
        await until(pilot, lambda: cpp.row_texts[:1] == [f"  ▸ #0–#{level - 1}  tuidbg's agent stop ({level} frames)"], 10,
                    "the agent's frames folded")
        assert cpp.row_texts[1].startswith(f"▶ #{level:<3}") and f"⇠ py tick:{tick_ret}" in cpp.row_texts[1]
        # Enter on the fold shows them, from #0
        await pilot.press("3", "home", "enter")
        await until(pilot, lambda: cpp.row_texts[1].startswith("  #0 "), 10, "the agent's frames unfolded")
        await pilot.press("enter")
        await until(pilot, lambda: cpp.row_texts[1].startswith(f"▶ #{level:<3}"), 10, "folded again")
        # the merged view folds them the same way
        await pilot.press("m")
        await until(pilot, lambda: cpp.row_texts[:1] == [f"  ▸ tuidbg's agent stop ({level} frames)"]
                    and cpp.row_texts[1].startswith(f"▶ #{level:<3}py tick"), 10, "the merged view")
        await pilot.press("m")
        app.query_one(SourceView).focus()
        # The breakpoints pane lists it beside native ones, with its hit count.
        table = app.query_one(BreakpointsPane)
        await until(pilot, lambda: table.row_count == 1, 10, "the breakpoints pane")
        assert table.get_row_at(0)[0].plain == "py1" and table.get_row_at(0)[2].plain == f"{FOREVER}:{tick_ret}"
        assert tick_ret in app.query_one(SourceView).marks

        # n: Python step over; tick returns: back on the line that called it, then the next line.
        await pilot.press("n")
        await until_py_stop(pilot, "step", line_of(FOREVER, "loop"))
        assert agent_stop(app).func == "main"
        await pilot.press("n")
        await until_py_stop(pilot, "step", line_of(FOREVER, "loop") + 1)
        # Disable the breakpoint from the breakpoints pane (space), continue: the program runs on.
        await pilot.press("7")
        await pilot.press("space")
        await until(pilot, lambda: not ctl.breakpoint(1).enabled, 10, "the breakpoint disabled")
        app.query_one(SourceView).focus()
        await pilot.press("c")
        await until(pilot, lambda: app.state.process is ProcessState.RUNNING, 10, "running")
        # (a negative check: no stop comes, the breakpoint disabled; a slow machine can only make it miss
        # a stop, never fail for one that does not come)
        await pilot.pause(0.5)
        assert app.state.process is ProcessState.RUNNING
        # Enable it again from the pane: the next tick stops.
        await pilot.press("7")
        await pilot.press("space")
        stop = await until_py_stop(pilot, "breakpoint", tick_ret)
        assert stop.hits is not None and stop.hits >= 2, stop
        await until(pilot, lambda: ctl.breakpoint(1).hits == stop.hits, 10, "the hit count")
        await app.session.close()


@pytest.mark.parametrize("interp", INTERPS)
async def test_python_breakpoint_from_ex_and_console(interp):
    a_call = line_of(STEPS, "a_call")
    # gdb's own spelling for a .py line is a Python breakpoint, set before the program's first line.
    app = _steps_app(interp, f"break {STEPS}:{a_call} if n == 4")
    async with app.run_test(size=(160, 48)) as pilot:
        stop = await until_py_stop(pilot, "breakpoint", a_call)
        assert stop.func == "a"
        # s, s: into b(), into c(); f: out of c(), back on the line of b() that called it; n: next line.
        for key, func, mark in (("s", "b", "b_call"), ("s", "c", "c_body"), ("f", "b", "b_call"), ("n", "b", "b_ret")):
            await pilot.press(key)
            stop = await until_py_stop(pilot, "step", line_of(STEPS, mark))
            assert stop.func == func, (key, mark)
        assert [f.func for f in stop.frames[:3]] == ["b", "a", "main"]
        # The console: a Python expression in the stopped frame, and a second breakpoint.
        await pilot.press("8")
        for cmd in ("pyprint n * 10", f"pybreak {STEPS}:{line_of(STEPS, 'main_print')}"):
            await pilot.press(*[ch if ch != " " else "space" for ch in cmd], "enter")
        await until(pilot, lambda: "40" in log_text(app, "console-log").splitlines(), 10, "pyprint's answer")  # n == 4
        await until(pilot, lambda: "Python breakpoint 2 at" in log_text(app, "console-log"), 10, "pybreak's answer")
        app.query_one(SourceView).focus()
        await pilot.press("c")
        stop = await until_py_stop(pilot, "breakpoint", line_of(STEPS, "main_print"))
        assert stop.func == "main" and stop.bp_id == 2
        await pilot.press("c")
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 30, "the program to exit")
        assert app.state.exit_code == 0
        await app.session.close()


@pytest.mark.parametrize("interp", INTERPS)
async def test_sigtrap_break_in_then_python_next(interp):
    # The program stops itself with os.kill(SIGTRAP): the Python line that sent it is shown, and
    # n goes to the next Python line (not into gdb's native next).
    trap = PY / "agent_trap.py"
    app = make_app(program=str(_interp(interp)), args=[str(trap)], agent=True, python_target=True)
    async with app.run_test(size=(160, 48)) as pilot:
        src = app.query_one(SourceView)
        await until(pilot, lambda: app.state.process is ProcessState.STOPPED and app.py_sel is not None
                    and src.pc_line == line_of(trap, "trap"), 60, "the SIGTRAP at its Python line")
        assert "SIGTRAP" in app.query_one("#status").render().plain
        await pilot.press("n")
        stop = await until_py_stop(pilot, "step", line_of(trap, "after_trap"))
        assert stop.func == "inner"
        await pilot.press("f")
        await until_py_stop(pilot, "step", line_of(trap, "outer_call"))
        await app.session.close()


async def test_step_into_native_then_finish_back_to_python(libfoo):
    # S on a Python line that calls C through ctypes: the C function's first line, with a status that
    # does not name tuidbg's temporary breakpoint; f goes back to the Python line; n goes over it.
    # (ctypes calls report their C function from 3.12 on: sys.monitoring's CALL event.)
    python = pyenv_python("3.12")
    if python is None:
        pytest.skip("pyenv has no CPython 3.12 on this machine")
    mixed = PY / "agent_mixed.py"
    call = line_of(mixed, "ctypes_call")
    app = make_app(program=str(python), args=[str(mixed), str(libfoo)], agent=True, python_target=True,
                   ex=[f"break {mixed}:{call}"])
    async with app.run_test(size=(160, 48)) as pilot:
        await until_py_stop(pilot, "breakpoint", call)
        src = app.query_one(SourceView)
        await pilot.press("S")
        await until(pilot, lambda: app.state.is_stopped and app.state.frames and app.state.frames[0].func == "foo_add"
                    and src.pc_line is not None and (src.path or "").endswith("libfoo.c"), 60, "foo_add in libfoo.c")
        status = app.query_one("#status").render().plain
        assert "stepped into native code" in status and "breakpoint" not in status, status
        # the C++ pane ties the eval loop to the Python line that made the call (once the native stop's
        # Python stack is read: after the stop is shown)
        await until(pilot, lambda: any(f"py compute:{call}" in t for t in app.query_one("#cpp-list").row_texts),
                    30, "the Python line in the C++ frames")
        await pilot.press("f")
        await until_py_stop(pilot, "step", call)
        await pilot.press("n")
        await until_py_stop(pilot, "step", line_of(mixed, "after_ctypes"))


async def test_failing_pytest_test_shows_its_traceback_frames_and_locals():
    # --break-on-failure stops after the failing test has returned (pytest's exception hook): the
    # Python frames pane shows the traceback, test_fails first, with its locals (from the agent), its
    # source line, and the caller frames; choosing one shows that frame; the selection survives an
    # evaluation in the console, which runs in the selected frame.
    sample = PY / "agent_pytest" / "sample_checks.py"
    failing = line_of(sample, "failing_assert")
    app = make_app(program=sys.executable, args=["-m", "pytest", "-q", "-p", "no:cacheprovider", str(sample)],
                   agent=True, python_target=True, break_on_failure=True, cwd=str(sample.parent))
    async with app.run_test(size=(160, 48)) as pilot:
        await until_py_stop(pilot, "failure", failing)
        plist = app.query_one("#py-list")
        await until(pilot, lambda: plist.row_texts[:1] == [f"▶ 0  test_fails:{failing}  {sample}"], 10, "the traceback")
        assert plist.row_texts[1].startswith("  1  pytest_pyfunc_call:")
        assert "traceback" in str(app.query_one("#py-title").render())
        status = app.query_one("#status").render().plain
        assert "test failed" in status and "AssertionError: helper(1) should be 3" in status
        await until(pilot, lambda: locals_of(app).get("got") == "2", 20, "test_fails' locals")
        # each answer of the agent is a short stop of its own: none may ask for another
        gen = app.session.state.generation
        await pilot.pause(1.0)  # (a negative check: no state comes; a slow machine can only make it miss one)
        assert app.session.state.generation == gen
        # frame 1: pytest's caller of the test, its file and locals
        await pilot.press("2", "down", "enter")
        src = app.query_one(SourceView)
        await until(pilot, lambda: (src.path or "").endswith("_pytest/python.py")
                    and "pyfuncitem" in locals_of(app), 20, "frame 1")
        assert app.py_sel == 1
        await pilot.press("8")
        await until(pilot, lambda: app.focused is not None and app.focused.id == "console-input", 5, "the console")
        app.focused.value = "pyprint type(pyfuncitem).__name__"
        await pilot.press("enter")
        await until(pilot, lambda: "'Function'" in log_text(app, "console-log"), 20, "the evaluation in frame 1")
        await until(pilot, lambda: not console_busy(app), 20, "the evaluation's end")
        await pilot.pause(0.3)  # (a negative check: the evaluation moves nothing; a slow machine can only miss it)
        assert app.py_sel == 1 and (src.path or "").endswith("_pytest/python.py")
        assert app.state.process is ProcessState.STOPPED
        # back to the test's frame; continue: pytest reports the failure and exits 1
        await pilot.press("escape", "2", "up", "enter")
        await until(pilot, lambda: locals_of(app).get("got") == "2" and src.path == str(sample), 20, "frame 0 again")
        app.query_one(SourceView).focus()
        await pilot.press("c")
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 30, "the end of the run")
        assert app.state.exit_code == 1
        assert "1 failed, 1 passed" in log_text(app, "output-log")


def watch_rows(app) -> dict[str, tuple]:
    tree = app.query_one(WatchPane)
    return {n.data.name: (n.data.value, n.data.error) for n in tree.root.children if n.data is not None}


@pytest.mark.parametrize("interp", INTERPS)
async def test_python_watches_follow_the_selected_python_frame(interp):
    # At a Python stop the watches are Python expressions, evaluated by the agent in the selected Python
    # frame (a statement is refused, never run at each stop); in a native frame they go to gdb.
    c_body = line_of(STEPS, "c_body")
    app = _steps_app(interp, f"break {STEPS}:{c_body} if n == 3")
    async with app.run_test(size=(160, 48)) as pilot:
        await until_py_stop(pilot, "breakpoint", c_body)
        watch = app.query_one(WatchPane)
        for expr in ("n * 100", "total", "z = 1", "z", "zz"):
            watch.add_expression(expr)

        def shown(name, value=None, error=None):
            v, e = watch_rows(app).get(name, (None, None))
            return (v == value) if value is not None else (e is not None and error in e)

        await until(pilot, lambda: shown("n * 100", "300") and shown("total", error="NameError")
                    and shown("z = 1", error="SyntaxError") and shown("z", error="NameError"), 20, "the watches in c()")
        # Python run from the console at this stop: the watches are read again
        await pilot.press("8")
        await until(pilot, lambda: app.focused is not None and app.focused.id == "console-input", 5, "the console")
        app.focused.value = "pyeval globals().__setitem__('zz', 5)"
        await pilot.press("enter")
        await until(pilot, lambda: shown("zz", "5"), 20, "the watch after pyeval")
        await pilot.press("escape")
        # main(), three frames out: its locals, not c()'s
        await pilot.press("2", "down", "down", "down")
        await until(pilot, lambda: shown("total", "15") and shown("n * 100", error="NameError"), 20, "the watches in main()")
        assert shown("z", error="NameError")  # the statement never ran
        assert app.state.process is ProcessState.STOPPED and agent_stop(app) is not None
        # back in c(), a step: the watch follows the new stop
        await pilot.press("up", "up", "up")
        await until(pilot, lambda: shown("n * 100", "300"), 20, "c() again")
        app.query_one(SourceView).focus()
        # a step pressed while the watches are being read: it waits for the agent's answer, then steps
        watch.add_expression("y")
        await pilot.press("n")
        await until_py_stop(pilot, "step", line_of(STEPS, "c_ret"))
        await until(pilot, lambda: shown("y", "4"), 20, "y after the step")
        # a native frame selected: the same watch list goes to gdb
        level = app.state.selected_frame
        await pilot.press("3", "down")
        await until(pilot, lambda: app.state.selected_frame == level + 1 and app.py_sel is None, 10, "the native frame below")
        await until(pilot, lambda: watch_rows(app).get("y", (None, None))[1] == "not in scope here", 20,
                    "gdb's answer")


def _all_interps():
    out = [pytest.param(f"pyenv-{m}", marks=pytest.mark.skipif(pyenv_python(m) is None, reason=f"pyenv has no CPython {m} on this machine"))
           for m in ("3.9", "3.10", "3.11", "3.12", "3.13")]
    out.append(INTERPS[0])
    for b in ("3.14", "3.14-stripped", "3.14t"):
        out.append(pytest.param(f"cpython-{b}", marks=pytest.mark.skipif(cpython314(b) is None, reason=cpython314_missing(b))))
    return out


@pytest.mark.parametrize("interp", _all_interps())
async def test_threads_pane_names_python_threads_and_their_python_line(interp):
    # The threads pane shows the names the program's threading module gave its threads (the agent
    # reports them; the OS knows none) and the Python line each thread is on (read from memory).
    threads_py = PY / "agent_threads.py"
    body = line_of(threads_py, "work_body")
    app = make_app(program=str(_interp(interp)), args=[str(threads_py)], agent=True, python_target=True,
                   ex=[f"break {threads_py}:{body} if k == 7"])
    async with app.run_test(size=(160, 48)) as pilot:
        await until_py_stop(pilot, "breakpoint", body)
        table = app.query_one(ThreadsPane)

        def rows():
            return [[c.plain for c in table.get_row_at(i)] for i in range(table.row_count)]

        await until(pilot, lambda: any(r[2].startswith("worker-7 (LWP ") for r in rows()), 20, "the threading names")
        by_name = {r[2].split(" (LWP ")[0]: r for r in rows()}
        assert {"MainThread", "worker-7", "tuidbg-agent"} <= set(by_name)
        worker = by_name["worker-7"]
        assert worker[0] == "▶" and worker[1] == app.state.selected_thread
        assert worker[4] == f"work:{body} agent_threads.py"
        # the main thread is in work() or main(), or (under load) still in threading's start(): a frame of
        # its own stack, named with its line and file
        main = by_name["MainThread"]
        pt = app.state.python.stack.thread(main[1])
        assert main[4] in {f"{f.name}:{f.line} {f.file.rsplit('/', 1)[-1]}" for f in pt.frames}, (main, pt.frames)
        assert by_name["tuidbg-agent"][4] == "(tuidbg's agent)"
        assert agent_stop(app).thread_name == "worker-7"


@pytest.mark.parametrize("interp", INTERPS)
async def test_uncaught_exception_shows_the_traceback(interp):
    # --break-on-exception: an exception nobody catches stops in the agent's hook, after the stack has
    # unwound. The Python pane shows the traceback (parse first), the source its line; the C++ pane
    # folds the agent's frames.
    exc_py = PY / "agent_exceptions.py"
    raise_line = line_of(exc_py, "raise_valueerror")
    app = make_app(program=str(_interp(interp)), args=[str(exc_py)], agent=True, python_target=True,
                   break_on_exception=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await until_py_stop(pilot, "uncaught", raise_line)
        plist = app.query_one("#py-list")
        await until(pilot, lambda: plist.row_texts[:2] == [f"▶ 0  parse:{raise_line}  {exc_py}",
                                                         f"  1  main:{line_of(exc_py, 'call_parse')}  {exc_py}"], 10, "the traceback")
        assert "uncaught exception" in app.query_one("#status").render().plain
        assert "ValueError: bad input: xyz" in app.query_one("#status").render().plain
        await until(pilot, lambda: locals_of(app).get("text") == "'xyz'", 20, "parse()'s locals")
        cpp = app.query_one("#cpp-list")
        await until(pilot, lambda: bool(cpp.row_texts) and "tuidbg's agent stop" in cpp.row_texts[0], 10, "the agent's frames folded")


@pytest.mark.parametrize("interp", INTERPS)
async def test_run_to_cursor_on_a_python_line(interp):
    # t on a .py line: a temporary Python breakpoint there and continue; it is gone once hit.
    a_call = line_of(STEPS, "a_call")
    app = _steps_app(interp, f"break {STEPS}:{a_call} if n == 1")
    async with app.run_test(size=(160, 48)) as pilot:
        await until_py_stop(pilot, "breakpoint", a_call)
        ctl = pyagent.controller(app.session)
        await ctl.delete_all_breakpoints()
        app.query_one(SourceView).focus()
        target = line_of(STEPS, "main_print")
        await goto(pilot, target)
        await pilot.press("t")
        stop = await until_py_stop(pilot, "breakpoint", target)
        assert stop.func == "main"
        await until(pilot, lambda: ctl.breakpoints == (), 10, "the temporary breakpoint gone")
        assert app.query_one(BreakpointsPane).row_count == 0


@pytest.mark.parametrize("interp", INTERPS)
async def test_frame_up_and_down_go_between_python_frames(interp):
    # < and > with a Python frame selected move to its Python caller / callee (pdb's u and d), with
    # the source and the locals following; not to the interpreter's C frames in between.
    c_body = line_of(STEPS, "c_body")
    app = _steps_app(interp, f"break {STEPS}:{c_body} if n == 2")
    async with app.run_test(size=(160, 48)) as pilot:
        await until_py_stop(pilot, "breakpoint", c_body)
        app.query_one(SourceView).focus()
        src = app.query_one(SourceView)
        pt = pyview.python_thread(app.state)

        def on(func: str, mark: str) -> bool:
            f = pt.frames[app.py_sel] if app.py_sel is not None else None
            return f is not None and f.function == func and src.pc_line == line_of(STEPS, mark)

        await pilot.press("less_than_sign")
        await until(pilot, lambda: on("b", "b_call"), 10, "b()")
        await pilot.press("less_than_sign")
        await until(pilot, lambda: on("a", "a_call") and locals_of(app).get("n") == "2", 10, "a() and its locals")
        await pilot.press("greater_than_sign", "greater_than_sign")
        await until(pilot, lambda: on("c", "c_body"), 10, "back in c()")
        await pilot.press("greater_than_sign")  # nothing below the innermost frame
        await pilot.pause(0.2)  # (a negative check: nothing moves; a slow machine can only miss a move)
        assert on("c", "c_body")


async def test_frame_keys_from_a_python_frame_on_to_the_c_code_it_calls(libfoo):
    # A native breakpoint in C called through ctypes: choosing the Python caller, then > goes on down
    # to the native frames below it (not stuck at the innermost Python frame); < comes back up.
    if not DEBIAN_PY311.exists():
        pytest.skip("this machine has no /usr/bin/python3.11")
    mixed = PY / "agent_mixed.py"
    app = make_app(program=str(DEBIAN_PY311), args=[str(mixed), str(libfoo)], python_target=True, ex=["break foo_add"])
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.state.is_stopped and app.state.frames and app.state.frames[0].func == "foo_add"
                    and pyview.python_thread(app.state) is not None, 60, "foo_add with the Python stack")
        await pilot.press("2", "enter")
        await until(pilot, lambda: app.py_sel == 0, 10, "compute() chosen")
        level = pyview.python_thread(app.state).frames[0].native_level
        assert app.state.selected_frame == level
        app.query_one(SourceView).focus()
        await pilot.press("greater_than_sign")
        await until(pilot, lambda: app.py_sel is None and app.state.selected_frame == level - 1, 10, "the native frame below")
        await pilot.press("less_than_sign")
        await until(pilot, lambda: app.state.selected_frame == level and app.py_sel == 0, 10, "compute() again")


async def test_console_continue_after_a_python_breakpoint_set_at_a_native_stop(libfoo):
    # Stopped in C called through ctypes; in the console: a Python breakpoint on the next line, then
    # gdb's own "continue". It stops there (the breakpoint is in force before the program runs on).
    python = _interp("debian-3.11") or _interp("pyenv-3.12")
    if python is None:
        pytest.skip("neither Debian's python3.11 nor pyenv's 3.12 is on this machine")
    mixed = PY / "agent_mixed.py"
    after = line_of(mixed, "after_ctypes")
    app = make_app(program=str(python), args=[str(mixed), str(libfoo)], agent=True, python_target=True,
                   ex=["break foo_add"])
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.state.is_stopped and app.state.frames and app.state.frames[0].func == "foo_add",
                    60, "foo_add")
        await pilot.press("8")
        await until(pilot, lambda: app.focused is not None and app.focused.id == "console-input", 5, "the console")
        native = next(b.number for b in app.state.breakpoints if not b.internal)
        for cmd in (f"pybreak {mixed}:{after}", f"delete {native}", "continue"):
            app.focused.value = cmd
            await pilot.press("enter")
            await until(pilot, lambda: not console_busy(app), 30, f"{cmd!r} to be done")
        stop = await until_py_stop(pilot, "breakpoint", after)
        assert stop.func == "compute"


async def test_attach_shows_the_users_python_frame_and_reads_libcs_locals_only_when_asked(tmp_path):
    # At the attach stop, frame 0 is libc's sleep; the user came to see their Python line, so that is
    # selected and its locals shown. libc's locals (whose types cost gdb libc's debug info:
    # bench/gdb_memory.py) are read when its row is chosen, not before.
    import subprocess

    python = _interp("debian-3.11") or _interp("pyenv-3.12")
    if python is None:
        pytest.skip("neither Debian's python3.11 nor pyenv's 3.12 is on this machine")
    proc = subprocess.Popen([str(python), str(FOREVER), str(tmp_path / "counter")], stdout=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    try:
        assert proc.stdout.readline().strip() == b"ready"
        app = make_app(mode="attach", pid=proc.pid, agent=True, python_target=True)
        async with app.run_test(size=(160, 48)) as pilot:
            def python_shown() -> bool:
                pt = pyview.python_thread(app.state) if app.state.is_stopped else None
                return pt is not None and app.py_sel is not None and "n" in locals_of(app)

            await until(pilot, python_shown, 60, "the attach stop with the Python frame's locals")
            pt = pyview.python_thread(app.state)
            chosen = pt.frames[app.py_sel]
            assert chosen.file == str(FOREVER) and chosen.function in ("main", "tick")
            # (a negative check: libc's locals are not read, for longer than the app waits for Python stacks
            # before it reads native locals; a slow machine can only make it miss a read that comes later)
            await pilot.pause(0.8)
            tid = app.state.selected_thread
            assert app.state.selected_frame != 0 and app.state.locals_key != (tid, 0)  # libc's frame: not read
            cpp = app.query_one(CppFramesPane)
            idx = next(i for i, r in enumerate(cpp.rows) if isinstance(r, NativeRow) and r.frame.level == 0)
            await pilot.click("#cpp-list", offset=(5, idx))
            await until(pilot, lambda: app.state.selected_frame == 0 and app.state.locals_key == (tid, 0), 15,
                        "libc's frame chosen, its locals read")
            await app.session.close()  # (attach: detaches)
        assert proc.poll() is None  # left running
    finally:
        proc.kill()
        proc.wait(30)
