"""``finish`` out of C++ frames that throw (``engine.commands.finish``): gdb's own finish waits for a return
that never comes and the program runs to its end; tuidbg's stops where the exception is caught, in the
handler, and a catch inside the finished frame goes on unseen. A real C++ program (g++ -g -O0)."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, compile_c, line_of, wait_for

from tuidbg.engine.state import ProcessState

pytestmark = requires_gdb

SRC = PROGRAMS / "throws.cpp"


async def _stop(s, after: int = 0):
    """The next stop the user sees (the finish's catch on the way is not one), refreshed."""
    await wait_for(lambda: s.state.last_generation > after and not s.state.python.transient
                   and s.state.process in (ProcessState.STOPPED, ProcessState.EXITED), 60, "a stop")
    return await s.wait_refreshed()


@pytest.fixture(scope="module")
def throws(tmp_path_factory):
    return compile_c(SRC, tmp_path_factory.mktemp("throws") / "throws", "-O0", cxx=True)


async def test_finish_stops_where_the_exception_is_caught(make_session, throws):
    out = bytearray()
    s = await make_session(mode="run", program=str(throws))
    s.on_program_output(out.extend)
    await s.break_insert(function="handles")
    await s.launch()
    st = await _stop(s)
    assert st.frames[0].func.startswith("handles")
    # handles() catches its own exception: finish goes on through that catch, to handles' return
    await s.finish()
    st = await _stop(s, st.last_generation)
    assert st.stop.reason == "function-finished", st.stop
    assert st.frames[0].func == "main" and st.frames[0].line == line_of(SRC, "call_handles")
    # fail() throws from under mid(): the stop is main's catch, not the program's end
    await s.break_insert(function="fail")
    await s.cont()
    st = await _stop(s, st.last_generation)
    assert st.frames[0].func.startswith("fail") and st.frames[1].func.startswith("mid"), st.frames[:2]
    await s.select_frame(1)  # finish mid() itself: the exception leaves it too
    await s.finish()
    st = await _stop(s, st.last_generation)
    assert st.stop.describe() == "exception caught" and st.process is ProcessState.STOPPED, st.stop
    assert st.frames[0].func == "main" and st.frames[0].line == line_of(SRC, "main_catch"), st.frames[:2]
    # tuidbg's catchpoint is gone with the finish
    assert not any(b.type == "catchpoint" for b in st.breakpoints), st.breakpoints
    await s.cont()
    st = await _stop(s, st.last_generation)
    assert st.process is ProcessState.EXITED and st.exit_code == 0
    assert b"caught bad" in out
