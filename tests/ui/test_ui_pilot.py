"""The TUI driven with Pilot against real gdb on the compiled test program."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, compile_c, line_of, wait_released
from ui_helpers import log_text, make_app, press_and_stop, until, until_stopped

from tuidbg.engine.state import ProcessState
from tuidbg.ui.panes.frames import CppFramesPane, NativeRow
from tuidbg.ui.panes.source import SourceView
from tuidbg.ui.panes.tables import BreakpointsPane, ThreadsPane
from tuidbg.ui.panes.variables import LocalsPane, WatchPane
from tuidbg.ui.screens.modals import GdbExitedScreen, HelpScreen, OpenFileScreen, QuitScreen

pytestmark = requires_gdb

SRC = PROGRAMS / "threads.c"


def locals_names(app) -> set[str]:
    tree = app.query_one(LocalsPane)
    return {n.data.name for n in tree.root.children if n.data is not None}


async def goto(pilot, line: int) -> None:
    await pilot.press("ctrl+g")
    await pilot.press(*str(line), "enter")
    await pilot.pause()


async def test_debug_a_c_program_with_the_keyboard(threads_prog):
    app = make_app(program=str(threads_prog), ex=["break main"])
    async with app.run_test(size=(160, 48)) as pilot:
        await until_stopped(pilot)
        src = app.query_one(SourceView)
        assert src.path == str(SRC)
        assert src.pc_line == app.state.frames[0].line
        assert app.query_one("#source-title").render().plain == str(SRC)

        # press b on a source line (cursor moved with ctrl+g)
        call_line = line_of(SRC, "main_call")
        await pilot.press("1")
        await goto(pilot, call_line)
        assert src.cursor_line == call_line
        await pilot.press("b")
        await until(pilot, lambda: any(b.line == call_line for b in app.state.breakpoints), 10, "breakpoint")
        await until(pilot, lambda: call_line in src.marks, 5, "gutter mark")

        # click in the gutter of another line
        leaf_line = line_of(SRC, "leaf_body")
        await goto(pilot, leaf_line)
        row = leaf_line - 1 - src.scroll_offset.y
        await pilot.click(SourceView, offset=(0, row))
        await until(pilot, lambda: any(b.line == leaf_line for b in app.state.breakpoints), 10, "clicked breakpoint")

        # continue to the breakpoint, step into middle, next stops at leaf's breakpoint
        await press_and_stop(pilot, "c")
        assert app.state.stop.reason == "breakpoint-hit" and app.state.frames[0].line == call_line
        assert src.pc_line == call_line
        await press_and_stop(pilot, "s")
        assert app.state.frames[0].func == "middle"
        assert src.pc_line == line_of(SRC, "middle_call")
        await until(pilot, lambda: {"v", "r"} <= locals_names(app), 10, "middle's locals")
        await press_and_stop(pilot, "n")
        assert app.state.frames[0].func == "leaf" and app.state.stop.reason == "breakpoint-hit"
        # finish back to middle, the return value in the status line
        await press_and_stop(pilot, "f")
        assert app.state.frames[0].func == "middle"
        assert "returned 8" in app.query_one("#status").render().plain

        # select the caller frame: source and locals follow
        await pilot.press("less_than_sign")
        await until(pilot, lambda: app.state.selected_frame == 1 and {"pt", "numbers"} <= locals_names(app), 10, "frame 1")
        assert src.pc_line == call_line and src.pc_is_top is False
        # and back by clicking frame #0 in the C++ frames pane
        cpp = app.query_one(CppFramesPane)
        idx = next(i for i, r in enumerate(cpp.rows) if isinstance(r, NativeRow) and r.frame.level == 0)
        await pilot.click("#cpp-list", offset=(5, idx))
        await until(pilot, lambda: app.state.selected_frame == 0, 10, "frame 0")
        await until(pilot, lambda: src.pc_line == app.state.frames[0].line and src.pc_is_top, 5, "source back at frame 0")

        # program output reached its pane
        await pilot.press("9")
        await until(pilot, lambda: "hello from main" in log_text(app, "output-log"), 5, "program output")

        # run to the end
        await pilot.press("b")  # (the cursor is in the source? no: output has focus; b goes nowhere harmful)
        app.query_one(SourceView).focus()
        await pilot.press("c")
        await until(pilot, lambda: app.state.process is ProcessState.EXITED or app.state.is_stopped, 20, "end")


async def test_ctrl_c_interrupts_a_busy_loop(threads_prog):
    app = make_app(program=str(threads_prog), args=["busy"])
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.state.process is ProcessState.RUNNING, 20, "running")
        assert "running" in app.query_one("#status").render().plain
        await until(pilot, lambda: "busy" in log_text(app, "output-log").splitlines(), 30, "the busy loop")
        await press_and_stop(pilot, "ctrl+c")
        assert app.state.stop.signal_name == "SIGINT"
        assert any(f.func == "busy" for f in app.state.frames)
        assert app.query_one(SourceView).pc_line == line_of(SRC, "busy_loop")


async def test_console_command_history_and_completion(threads_prog):
    app = make_app(program=str(threads_prog), ex=["break leaf"])
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        await pilot.press("8")
        assert app.focused.id == "console-input"
        for ch in "print v * 7":
            await pilot.press(ch if ch != " " else "space")
        await pilot.press("enter")
        await until(pilot, lambda: "= 28" in log_text(app, "console-log"), 10, "print output")
        # an error is shown, not raised
        await pilot.press(*"frobnicate", "enter")
        await until(pilot, lambda: 'Undefined command: "frobnicate"' in log_text(app, "console-log"), 10, "error")
        # history
        await pilot.press("up", "up")
        assert app.focused.value == "print v * 7"
        # completion through -complete
        app.focused.value = "info breakp"
        app.focused.cursor_position = len(app.focused.value)
        await pilot.press("tab")
        await until(pilot, lambda: app.focused.value.startswith("info breakpoints"), 10, "completion")
        # tuidbg's own commands
        app.focused.value = ""
        await pilot.press(*":w", "space", *"v", "enter")
        await until(pilot, lambda: "v" in app.query_one(WatchPane).expressions, 5, "watch")


async def test_program_output_with_escape_sequences_and_bad_utf8(threads_prog):
    app = make_app(program=str(threads_prog), args=["escapes"])
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 20, "exit")
        await until(pilot, lambda: "after escapes" in log_text(app, "output-log"), 5, "output")
        text = log_text(app, "output-log")
        assert "\\x1b[2J\\x1b[H\\x1b]0;HACKED TITLE\\x07\\x1b[?1049h" in text
        assert "bad utf8: \ufffd\ufffd end" in text
        assert "\x1b" not in text and "\x07" not in text
        assert app.title == "tuidbg"
        assert app.query_one(SourceView) and app.query_one(CppFramesPane)
        # gdb sends =thread-group-exited and *stopped,reason="exited-normally" in either order
        await until(pilot, lambda: "exited normally" in app.query_one("#status").render().plain, 5, "status")


async def test_gdb_dies_the_ui_stays_up_and_restarts(threads_prog):
    app = make_app(program=str(threads_prog), ex=["break leaf"])
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        os.kill(app.session.client.transport.pid, signal.SIGKILL)
        await until(pilot, lambda: isinstance(app.screen, GdbExitedScreen), 10, "the gdb-exited dialog")
        assert app.state.process is ProcessState.GDB_EXITED
        assert "SIGKILL" in app.query_one("#status").render().plain
        assert "SIGKILL" in log_text(app, "console-log")
        old = app.session
        await until(pilot, lambda: app.screen.focused is not None and app.screen.focused.id == "restart", 5, "restart focused")
        await pilot.press("enter")
        await until(pilot, lambda: app.session is not old and app.state.is_stopped, 30, "a new session stopped at leaf")
        assert app.state.frames[0].func == "leaf"


async def test_breakpoints_pane_toggle_condition_delete(threads_prog):
    app = make_app(program=str(threads_prog), ex=["break leaf", "break middle"])
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        assert app.state.frames[0].func == "middle"
        await pilot.press("7")
        table = app.query_one(BreakpointsPane)
        assert app.focused is table and table.row_count == 2
        await pilot.press("space")  # disable breakpoint 1 (leaf)
        await until(pilot, lambda: app.state.breakpoint("1").enabled is False, 10, "disabled")
        await pilot.press("e")
        await pilot.press(*"v > 100", "enter")
        await until(pilot, lambda: app.state.breakpoint("1").condition == "v > 100", 10, "condition")
        await pilot.press("down", "d")
        await until(pilot, lambda: app.state.breakpoint("2") is None, 10, "deleted")
        assert table.row_count == 1


async def test_locals_expand_and_watch(threads_prog):
    app = make_app(program=str(threads_prog), ex=[f"break {SRC}:{line_of(SRC, 'main_call')}"])
    async with app.run_test(size=(160, 48)) as pilot:
        await until_stopped(pilot)
        tree = app.query_one(LocalsPane)
        await until(pilot, lambda: "pt" in locals_names(app), 10, "locals")
        pt = next(n for n in tree.root.children if n.data and n.data.name == "pt")
        pt.expand()
        await until(pilot, lambda: len(pt.children) == 3, 10, "pt's children")
        assert [c.data.name for c in pt.children] == ["x", "y", "label"]
        assert pt.children[0].data.value == "3"
        await pilot.press("w")
        await pilot.press(*"pt.x", "plus", *"pt.y", "enter")
        watch = app.query_one(WatchPane)
        await until(pilot, lambda: any(n.data and n.data.value == "7" for n in watch.root.children), 10, "watch value")
        # after a step the watch is re-evaluated; a changed local is highlighted
        await press_and_stop(pilot, "n")
        await until(pilot, lambda: any(n.data and n.data.name == "result" and n.data.changed for n in tree.root.children), 10, "changed result")


async def test_threads_pane_selects_a_thread(threads_prog):
    app = make_app(program=str(threads_prog), ex=[f"break {SRC}:{line_of(SRC, 'main_call')}"])
    async with app.run_test(size=(160, 48)) as pilot:
        await until_stopped(pilot)
        await pilot.press("4")
        threads = app.query_one(ThreadsPane)
        await until(pilot, lambda: app.focused is threads, 5, "the threads pane focused")
        await until(pilot, lambda: threads.row_count == 3, 10, "the three threads listed")
        await pilot.press("down")
        await until(pilot, lambda: app.state.selected_thread != app.state.current_thread, 10, "other thread")
        # the stack shown is that thread's own (a worker may still be starting: clone3)
        def shows_its_stack() -> bool:
            st = app.state
            t = st.thread(st.selected_thread)
            return bool(st.frames) and st.frames_thread == st.selected_thread and t is not None and t.frame is not None and st.frames[0].addr == t.frame.addr
        await until(pilot, shows_its_stack, 10, "the other thread's frames")
        assert app.query_one(CppFramesPane).rows[0].frame.addr == app.state.thread(app.state.selected_thread).frame.addr


async def test_quit_asks_and_kills_in_run_mode(threads_prog):
    app = make_app(program=str(threads_prog), ex=["break leaf"])
    async with app.run_test(size=(100, 30)) as pilot:
        await until_stopped(pilot)
        pid = app.state.pid
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, QuitScreen), 5, "quit dialog")
        assert app.screen.focused.id == "kill"  # run mode: kill is the default
        await pilot.press("enter")
        await until(pilot, lambda: not app.is_running, 15, "exit")
    await until_gone(pid)


async def until_gone(pid: int) -> None:
    import asyncio

    for _ in range(100):
        if not os.path.exists(f"/proc/{pid}") or "State:\tZ" in open(f"/proc/{pid}/status").read():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"process {pid} still alive")


async def test_resizing_never_crashes(threads_prog):
    app = make_app(program=str(threads_prog), ex=["break middle"])
    async with app.run_test(size=(160, 48)) as pilot:
        await until_stopped(pilot)
        for size in [(80, 24), (40, 12), (200, 60), (100, 30), (99, 29), (20, 5), (80, 24)]:
            await pilot.resize_terminal(*size)
            await pilot.pause()
        assert app.narrow
        assert app.query_one("#main").has_class("-narrow")
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        assert not app.narrow


async def test_small_terminal_switches_groups(threads_prog):
    app = make_app(program=str(threads_prog), ex=["break middle"])
    async with app.run_test(size=(80, 24)) as pilot:
        await until_stopped(pilot)
        main = app.query_one("#main")
        assert main.has_class("-show-stack")
        await pilot.press("5")
        assert main.has_class("-show-vars") and not main.has_class("-show-stack")
        assert app.focused.id == "locals"
        await pilot.press("8")
        assert main.has_class("-show-io") and app.focused.id == "console-input"
        assert app.query_one("#source").region.height >= 8


async def test_open_file_find_and_a_100000_line_file(tmp_path, threads_prog):
    big = tmp_path / "big file.c"
    big.write_text("".join(f"int v{i} = {i}; /* line {i + 1} */\n" for i in range(100_000)))
    app = make_app(program=str(threads_prog), ex=["break middle"])
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, OpenFileScreen) and app.screen.query("#open-input"), 30,
                    "the open dialog")
        assert str(SRC) in app.screen.known  # the program's source files are offered
        inp = app.screen.query_one("#open-input")
        inp.value = str(big)
        await pilot.press("enter")
        src = app.query_one(SourceView)
        await until(pilot, lambda: src.path == str(big), 5, "file open")
        assert len(src.lines) == 100_000
        await pilot.press("end")
        assert src.cursor_line == 100_000
        await pilot.pause()
        last_row = src.cursor_line - 1 - src.scroll_offset.y
        assert "line 100000" in src.render_line(last_row).text
        await pilot.press("slash")
        await pilot.press(*"line 50000 ", "enter")
        await until(pilot, lambda: src.cursor_line == 50_000, 5, "find")
        await until(pilot, lambda: src.highlighted, 60, "highlighting in the background")


async def test_help_lists_the_active_keymap(threads_prog):
    app = make_app(program=str(threads_prog), ex=["break middle"], keymap="vscode")
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), 5, "help")
        rows = {bid: keys for keys, desc, bid in app.screen.rows}
        assert rows["exec.next"] == "f10" and rows["exec.continue"] == "f5"
        await pilot.press("escape")
        # vscode keymap: F10 steps, n does nothing
        gen = app.state.generation
        await pilot.press("n")
        await pilot.pause(0.3)  # (a negative check: no step comes; a slow machine can only make it miss one)
        assert app.state.generation == gen
        await press_and_stop(pilot, "f10")


async def test_ui_answers_keys_while_gdb_is_busy(threads_prog):
    # A gdb command that takes 4 s: the UI still switches panes while it runs.
    app = make_app(program=str(threads_prog), ex=["break middle"])
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        busy = asyncio.ensure_future(app.session.console("python import time; time.sleep(4)"))
        await until(pilot, lambda: any("time.sleep(4)" in c for c in app.session.client.pending_commands), 10,
                    "the command sent to gdb")
        await pilot.press("5")
        await until(pilot, lambda: app.focused.id == "locals", 3, "the locals pane focused")
        assert not busy.done()
        await busy


async def test_quit_in_attach_mode_detaches_by_default(threads_prog):
    proc = subprocess.Popen([str(threads_prog), "sleep"], stdout=subprocess.PIPE)
    proc.stdout.readline()
    try:
        app = make_app(mode="attach", pid=proc.pid)
        async with app.run_test(size=(120, 40)) as pilot:
            await until_stopped(pilot)
            assert f"stopped: attached to process {proc.pid}" in app.query_one("#status").render().plain
            await pilot.press("q")
            await until(pilot, lambda: isinstance(app.screen, QuitScreen), 5, "the quit question")
            assert app.screen.focused.id == "detach"
            await pilot.press("enter")
            await until(pilot, lambda: not app.is_running, 15, "the app to end")
        wait_released(proc.pid)
        assert proc.poll() is None
        assert "TracerPid:\t0" in Path(f"/proc/{proc.pid}/status").read_text()
    finally:
        proc.kill()
        proc.wait()


async def test_typing_in_the_output_pane_goes_to_the_program(tmp_path):
    src = tmp_path / "echo.c"
    src.write_text('#include <stdio.h>\nint main(void){char b[64]; if(fgets(b,64,stdin)) printf("got:%s", b); return 0;}\n')
    exe = compile_c(src, tmp_path / "echo")
    app = make_app(program=str(exe))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.state.process is ProcessState.RUNNING, 20, "running")
        await pilot.press("9")
        await pilot.press(*"hello", "enter")
        await until(pilot, lambda: "got:hello" in log_text(app, "output-log"), 10, "the program's answer")
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 10, "exit")


def _status_lines(app) -> list[str]:
    """Every text the status line is given from now on (its updates, spied), in order."""
    status = app.query_one("#status")
    shown: list[str] = []
    update = status.update

    def spy(content, **kw):
        shown.append(content.plain)
        return update(content, **kw)

    status.update = spy
    return shown


async def test_a_step_shows_the_next_stop_without_the_run_between(threads_prog, monkeypatch):
    """A `next` runs the program for about a millisecond: the screen goes from one stop to the next,
    without painting the run in between (emptied stacks, "running", then everything again: twice the
    work and a flicker). A run that goes on is shown as running once it has run RUN_SHOWN seconds."""
    import tuidbg.ui.app as app_module

    monkeypatch.setattr(app_module, "RUN_SHOWN", 30.0)  # no step here may take that long
    app = make_app(program=str(threads_prog), args=["busy"], ex=[f"break threads.c:{line_of(SRC, 'busy_loop')}"])
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        shown = _status_lines(app)
        rows: list[int] = []
        cpp = app.query_one(CppFramesPane)
        for _ in range(4):
            await press_and_stop(pilot, "n")
            rows.append(len(cpp.query_one("#cpp-list").row_texts))
        assert shown and all(s.startswith("■ stopped") for s in shown), shown
        assert all(n > 0 for n in rows), rows
        # a continue that runs on: shown as running after RUN_SHOWN
        monkeypatch.setattr(app_module, "RUN_SHOWN", 0.2)
        await app.session.console("delete")
        await pilot.press("c")
        await until(pilot, lambda: "running" in app.query_one("#status").render().plain, 10, "the run shown")
        assert app.state.process is ProcessState.RUNNING
        await press_and_stop(pilot, "ctrl+c")


async def test_a_step_shows_its_new_line_before_the_refresh(threads_prog):
    """A `next`: the source pane shows the new line from gdb's *stopped record at once (a screen
    update of its own), before the refresh after the stop (threads, frames, locals) is in; the other
    panes and the status line keep the last stop until then, then show this one."""
    app = make_app(program=str(threads_prog), ex=["break main"])
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        src = app.query_one(SourceView)
        cpp = app.query_one("#cpp-list")
        status = app.query_one("#status")
        seen: list[tuple] = []
        set_pc = src.set_pc

        def spy(line, top=True, on_screen=None):
            st = app.session.state
            seen.append((line, st.generation, st.refreshed, tuple(cpp.row_texts), status.render().plain))
            return set_pc(line, top, on_screen)

        src.set_pc = spy
        for _ in range(4):
            gen, rows, status_before = app.state.generation, tuple(cpp.row_texts), status.render().plain
            seen.clear()
            await press_and_stop(pilot, "n")
            line = app.state.frames[0].line
            assert seen, "the source pane did not move"
            first_line, first_gen, refreshed, cpp_rows, status_text = seen[0]
            # shown from the stop record: before the stop's state (app_source._on_stop_seen), or with the
            # state and before its refresh (_show_stop_line)
            assert first_line == line and (first_gen == gen or (first_gen, refreshed) == (gen + 1, False)), seen[0][:3]
            assert (cpp_rows, status_text) == (rows, status_before)  # (the other panes: the last stop)
            # then the whole stop
            assert src.pc_line == line and f"threads.c:{line}" in status.render().plain
            assert tuple(cpp.row_texts) != rows and any(f":{line}" in r for r in cpp.row_texts[:1]), cpp.row_texts[:2]


async def test_a_run_reaches_the_panes_though_gdb_keeps_sending_states(threads_prog):
    """A run that begins at a shown stop waits RUN_QUIET before it reaches the panes (app_source): a
    run whose states keep coming closer together than that (threads starting and ending, libraries
    loading) still reaches them by then, and the keys see it at once (app.state)."""
    from tuidbg.ui.app_source import RUN_QUIET

    app = make_app(program=str(threads_prog), ex=["break middle"])
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        stop = app.state
        seen: list = []  # the states the app took in
        real = app.take_state
        app.take_state = lambda state: (seen.append(state), real(state))[1]
        iid = stop.inferiors[0].id
        runs = [stop.with_inferior(iid, process=ProcessState.RUNNING, exit_description=f"run {i}")
                for i in range(int(RUN_QUIET * 1000) * 6)]  # one every ms, for 6 RUN_QUIETs
        for run in runs:
            app.session.set_state(run)  # (as the engine hands the app its states)
            # what the keys read: a run, at once (this very state while the screen still shows the stop;
            # once a run is on the screen, a later run's state is taken in through the app's queue)
            assert app.state.process is ProcessState.RUNNING
            await asyncio.sleep(0.001)
        assert any(s.process is ProcessState.RUNNING for s in seen)  # not held back while they came
        app.session.set_state(stop)  # (the engine's own state again)
        await until(pilot, lambda: seen and seen[-1] is stop, 5, "the stop back")


async def test_a_stop_is_taken_at_once_unless_a_state_waits_before_it(threads_prog):
    """The engine's stop reaches the panes in the engine's own call, past the app's queue, when no state
    waits in that queue (app_source._on_engine_state); a stop after a state still queued waits its turn."""
    app = make_app(program=str(threads_prog), ex=["break middle"])
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        await pilot.pause()
        stop = app.state
        seen: list = []  # the states the app took in, in order
        real = app.take_state
        app.take_state = lambda state: (seen.append(state), real(state))[1]
        again = stop.evolve(activity="again")  # (another stop state: a new object)
        assert app.state_queued is None
        app.session.set_state(again)
        assert seen and seen[-1] is again  # taken in the engine's call
        iid = stop.inferiors[0].id
        run = stop.with_inferior(iid, process=ProcessState.RUNNING)
        app.post_state(run)  # a state queued (the app's own message)...
        app.session.set_state(stop)  # ... and a stop after it
        assert stop not in seen  # waits behind the queued run
        await until(pilot, lambda: stop in seen, 5, "the stop after the run")
        assert app.state is stop and app.state_queued is None  # (the next stop is taken at once again)


async def test_gdbs_health_changing_during_a_run_not_shown_yet_keeps_the_stop_shown(threads_prog, monkeypatch):
    """gdb's health (busy, silent) is named in the status line, which is redrawn when it changes: during a run
    not shown yet (RUN_SHOWN), with what the screen shows, the stop, not the run the screen keeps back."""
    import tuidbg.ui.app as app_module
    from tuidbg.engine import watchdog

    monkeypatch.setattr(app_module, "RUN_SHOWN", 600.0)  # (the run is never shown here)
    app = make_app(program=str(threads_prog), args=["busy"], ex=[f"break threads.c:{line_of(SRC, 'busy_loop')}"])
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        shown = _status_lines(app)
        await app.session.console("delete")
        await pilot.press("c")
        await until(pilot, lambda: app.state.process is ProcessState.RUNNING, 30, "the run")
        busy = watchdog.GdbHealth(kind=watchdog.BUSY, command="-exec-continue", waited=3.0)
        monkeypatch.setattr(app.session, "health", lambda: busy)
        await until(pilot, lambda: any("⚠ gdb busy" in s for s in shown), 30, "the health in the status line")
        assert all(s.startswith("■ stopped") for s in shown), shown
        await pilot.press("ctrl+c")
        await until_stopped(pilot)
