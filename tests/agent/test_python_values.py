"""Python values read from memory (gdbext's ValueFormatter and ObjectReader) read as their value, on every
interpreter (object layouts differ: dicts at tp_dictoffset on 3.9/3.10, managed dicts on 3.11/3.12, inline
values on 3.13+, a free-threaded build's longer headers): the value types as their own repr reads, an
instance of a class of the program as its class name and first attributes; and the agent, listing the
children of a dict of them, words each the same (no code of the program runs either way)."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, line_of, pyenv_python, wait_stopped
from pystack_helpers import PY_PROGRAMS, interpreter_params, read_json, resolve
from test_agent import _start, _stop

from tuidbg.engine import pystack as P

pytestmark = [requires_gdb, pytest.mark.slow]

PROG = PY_PROGRAMS / "value_types.py"

# the objects of the program's classes (they have no repr of their own)
OBJECTS = {
    "p": "Point(x=1, y=2)",
    "sv": "Slotted(a=1, _Slotted__hidden='h')",
    "e": "Empty()",
    "many": "Many(f0=0, f1=1, f2=2, f3=3, f4=4, …)",
    "nest": "Point(x=Point(x=1, y=[… 2 items]), y={'k': Point(…)})",
}


@pytest.mark.parametrize("name", interpreter_params())
async def test_values_read_from_memory_read_as_their_repr(make_session, build_dir, tmp_path, name):
    interp = resolve(name, build_dir)
    out = tmp_path / "reprs.json"
    s = await make_session(mode="run", program=str(interp.exe), args=[str(PROG), str(out), "trap"],
                           program_env=interp.env)
    await s.launch()
    st = await wait_stopped(s, 120)
    assert st.stop.signal_name == "SIGTRAP"
    own = read_json(out)
    locs = {v.name: v for v in await P.python_locals(s, st.stop.thread_id, 0)}
    got = {k: locs[k].value for k in own}
    assert got == own
    assert {k: locs[k].value for k in OBJECTS} == OBJECTS
    assert locs["dt"].type == "datetime.datetime" and locs["p"].type == "Point"


@pytest.mark.parametrize("python", [
    pytest.param(DEBIAN_PY311, id="debian-3.11", marks=pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="no /usr/bin/python3.11")),
    pytest.param(pyenv_python("3.13"), id="pyenv-3.13", marks=pytest.mark.skipif(pyenv_python("3.13") is None, reason="no pyenv 3.13")),
])
async def test_the_agent_words_the_children_as_memory_reads_the_locals(make_session, tmp_path, python):
    out = tmp_path / "reprs.json"
    s, ctl, _ = await _start(make_session, python, PROG, str(out), "agent")
    await ctl.add_breakpoint(str(PROG), line_of(PROG, "stop"))
    await s.launch()
    stop = await _stop(ctl)
    assert stop.line == line_of(PROG, "stop")
    st = s.state
    from tuidbg.engine.python import view as pyview

    frame = next(f.index for f in pyview.python_thread(st).frames if f.function == "values")
    memory = {v.name: v.value for v in await P.python_locals(s, stop.thread_id, frame)}
    children = {n[2:-2]: v for n, _t, v, _e in await ctl.python_children("bag", [], 0)}
    assert set(children) == set(memory) - {"own", "bag", "f"}
    assert {k: children[k] for k in children} == {k: memory[k] for k in children}
    assert children["p"] == "Point(x=1, y=2)" and children["en"] == "<Color.RED: 1>"
    # and at an exception's frames (read by the agent, not from memory): the same words
    assert dict((n, v) for n, _t, v in await ctl.python_locals(0))["p"] == "Point(x=1, y=2)"

    # One breakpoint a line: a second adds nothing and says so, also one that moves onto the line (a
    # line with no code moves to the next that has some)
    said = await ctl.handle_console(f"pybreak {PROG}:{line_of(PROG, 'stop')}")
    assert said.startswith("Python breakpoint 1 is already at") and "nothing added" in said
    call = line_of(PROG, "module_call")
    assert (await ctl.handle_console(f"pybreak {PROG}:{call}")).startswith("Python breakpoint 2 at ")
    said = await ctl.handle_console(f"pybreak {PROG}:{call - 1}")
    assert said == (f"Python breakpoint 2 is already at {PROG}:{call}: nothing added "
                    "(pycondition 2 EXPR gives it a condition, pydelete 2 removes it)")
    assert [(b.id, b.effective_line) for b in ctl.breakpoints] == [(1, line_of(PROG, "stop")), (2, call)]
    await ctl.resume()
