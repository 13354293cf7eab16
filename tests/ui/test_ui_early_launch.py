"""The screen of ``tuidbg run``, which starts the program before the screen is up (cli.run_ui): what
happened meanwhile is shown as if the screen had watched it: the program's output, its exit or its
stop, in order."""

from __future__ import annotations

from conftest import requires_gdb
from helpers import PROGRAMS, line_of, wait_for
from ui_helpers import launched_session, log_text, make_app, until, until_stopped

from tuidbg.engine.state import ProcessState
from tuidbg.ui.panes.source import SourceView

pytestmark = requires_gdb

SRC = PROGRAMS / "threads.c"


async def test_a_program_that_ended_before_the_screen_shows_its_output_and_its_end(threads_prog):
    s = await launched_session(program=str(threads_prog), args=["output", "3"])
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 20, "the program's end")
    app = make_app(session=s)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: "exited normally" in log_text(app, "output-log"), 10, "the end noted")
        text = log_text(app, "output-log")
        order = [text.index(t) for t in ("── starting", "line 0 of program output", "line 2 of program output",
                                         "── the program exited normally")]
        assert order == sorted(order), text
        assert text.count("── starting") == 1 and text.count("line 2 of program output") == 1
        assert "exited normally" in log_text(app, "console-log")  # (gdb's console from before, replayed)


async def test_a_program_that_stopped_before_the_screen_is_shown_stopped_there(threads_prog):
    s = await launched_session(program=str(threads_prog), ex=["break leaf"])
    await wait_for(lambda: s.state.process is ProcessState.STOPPED and s.state.refreshed, 20, "the stop")
    app = make_app(session=s)
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        src = app.query_one(SourceView)
        await until(pilot, lambda: src.pc_line == line_of(SRC, "leaf_body"), 10, "the stop's line")
        assert app.state.frames[0].func == "leaf"
        await until(pilot, lambda: "hello from main" in log_text(app, "output-log"), 10, "the output before it")
