"""A native step's line shown from gdb's ``*stopped`` record, before the engine's state of the stop
(app_source._on_stop_seen): the same line the state's own way then shows; not for a stop the state
may show otherwise."""

from __future__ import annotations

from conftest import requires_gdb
from helpers import PROGRAMS, line_of
from ui_helpers import make_app, press_and_stop, until, until_stopped

from tuidbg.engine.state import StopSeen, stop_seen
from tuidbg.engine import mi
from tuidbg.ui.panes.source import SourceView

pytestmark = requires_gdb

SRC = PROGRAMS / "threads.c"


def test_the_stop_seen_is_what_the_state_will_hold():
    rec = mi.parse_line('*stopped,reason="end-stepping-range",frame={addr="0x1",func="f",args=[],file="a.c",'
                        'fullname="/src/a b.c",line="12",arch="i386:x86-64"},thread-id="3",stopped-threads="all"')
    assert stop_seen(rec) == StopSeen("end-stepping-range", "3", "/src/a b.c", 12)
    assert stop_seen(mi.parse_line('*stopped,reason="signal-received",thread-id="1"')) == \
        StopSeen("signal-received", "1", None, None)


async def test_a_steps_line_comes_before_its_state_and_others_wait_for_theirs(threads_prog):
    app = make_app(program=str(threads_prog), ex=["break middle"])
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot)
        src = app.query_one(SourceView)
        early: list[tuple[int, int]] = []
        real = src.show_stop_early

        def spy(line, on_screen=None):
            early.append((line, app.session.state.generation))
            return real(line, on_screen)

        src.show_stop_early = spy
        gen = app.state.generation
        await press_and_stop(pilot, "n")
        line = app.state.frames[0].line
        assert early == [(line, gen)]  # (before the stop's state: its generation not yet the session's)
        assert src.pc_line == line
        early.clear()
        # the disassembly in the source pane's place: the state's own way only
        await pilot.press("a")  # (the keys' way: pane.disassembly)
        await until(pilot, lambda: app.disasm_shown, 5, "the disassembly")
        await press_and_stop(pilot, "n")
        assert app.state.stop.reason == "end-stepping-range" and app.state.frames[0].fullname == str(SRC)
        assert early == []
        await pilot.press("a")
        await until(pilot, lambda: not app.disasm_shown, 5, "the source again")
        gen = app.state.generation
        await press_and_stop(pilot, "n")
        assert early == [(app.state.frames[0].line, gen)]
        early.clear()
        # a breakpoint's stop: the state's own way only (a breakpoint may be tuidbg's, or say more)
        await app.session.console(f"break {SRC}:{line_of(SRC, 'main_return')}")
        await press_and_stop(pilot, "c")
        assert app.state.stop.reason == "breakpoint-hit" and early == []
