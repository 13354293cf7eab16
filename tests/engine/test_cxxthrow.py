"""C++ errors stopped where libtorch throws them (issue 13, item 4), on torch 2.13 and Debian's
stripped python3.11: the type and message read from the thrown object, the throwing function, the
Python line that called into libtorch; a throw site skipped for the rest of the session; the
Python exception that follows linked to its throw."""

from __future__ import annotations

import asyncio

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, line_of
from pystack_helpers import TORCH_PYTHON

from tuidbg.engine import cxxthrow, pyagent
from tuidbg.engine.state import ProcessState

pytestmark = [
    requires_gdb,
    pytest.mark.slow,
    pytest.mark.torch,
    pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="this machine has no .venv-torch (scripts/setup.sh builds it)"),
]

PROG = PROGRAMS / "py" / "torch_throws.py"


async def _next_stop(s, gen: int, timeout: float = 90):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        st = s.state
        if st.generation > gen and st.process is not ProcessState.RUNNING and not st.python.transient:
            if st.process is not ProcessState.STOPPED or not s.refreshing:
                if st.process is not ProcessState.STOPPED or st.cxx_throw is not None or st.python.stop is not None:
                    return st
        if loop.time() > deadline:
            raise AssertionError(f"no stop after generation {gen}: {st.process} {st.stop}")
        await asyncio.sleep(0.05)


def _python_lines(st):
    ps = st.python.stack
    t = ps.thread(st.stop.thread_id) if ps is not None and ps.ok else None
    return [(f.name, f.line) for f in t.frames] if t is not None else []


async def test_c10_errors_stop_at_their_throw_with_message_and_python_line(make_session):
    out = bytearray()
    s = await make_session(mode="run", program=str(TORCH_PYTHON), args=[str(PROG)], agent=True,
                           python_target=True, break_on_exception=True)
    s.on_program_output(out.extend)
    throws, ctl = cxxthrow.get(s), pyagent.controller(s)
    assert throws is not None and ctl is not None
    await s.launch()
    st = await _next_stop(s, 0)
    th = st.cxx_throw
    assert th is not None, (st.stop, bytes(out)[-2000:])
    assert th.type_name == "c10::IndexError"
    assert th.message == "index 5 is out of bounds for dimension 0 with size 3"
    assert "applySelect" in th.site
    assert th.describe().startswith("C++ c10::IndexError thrown in at::indexing::impl::applySelect: index 5")
    assert ("index_twice", line_of(PROG, "index_throw")) in _python_lines(st)
    # skip this site: the second indexing error (same site) does not stop; the matmul's does
    await throws.skip_site(th.site)
    gen = s.state.generation
    await ctl.resume()
    st = await _next_stop(s, gen)
    th2 = st.cxx_throw
    assert th2 is not None and th2.type_name == "c10::Error", (st.stop, th2)
    assert "shapes cannot be multiplied" in th2.message
    assert th2.site != th.site
    assert ("bad_matmul", line_of(PROG, "matmul_throw")) in _python_lines(st)
    assert b"indexed" in bytes(out)  # (the second indexing error went by)
    # the Python exception it becomes stops as before, and knows its throw
    gen = s.state.generation
    await ctl.resume()
    st = await _next_stop(s, gen)
    stop = st.python.stop
    assert stop is not None and stop.exception is not None, st.stop
    assert stop.exception.message.splitlines()[0] == th2.message.splitlines()[0]
    assert st.cxx_throw is None and st.cxx_last_throw == th2


async def test_pycatch_switches_the_c10_throw_stops(make_session):
    s = await make_session(mode="run", program=str(TORCH_PYTHON), args=[str(PROG)], agent=True, python_target=True)
    throws, ctl = cxxthrow.get(s), pyagent.controller(s)
    assert not throws.enabled
    assert "uncaught exceptions: stop" in await ctl.handle_console("pycatch uncaught")
    assert throws.enabled
    bp = s.state.breakpoint(throws.number)
    assert bp is not None and bp.internal
    assert "uncaught exceptions: ignore" in await ctl.handle_console("pycatch off")
    assert not throws.enabled and s.state.breakpoint(bp.number) is None
