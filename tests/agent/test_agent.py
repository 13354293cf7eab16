"""tuidbg's Python agent with real gdb and real interpreters: breakpoints, stepping, threads, mixed
Python/C stepping, attach, tuidbg.breakpoint(), pytest, exceptions.

Every test runs on each CPython 3.9-3.13 that pyenv has here, on Debian's stripped
/usr/bin/python3.11 (no DWARF, no .symtab) and on scripts/build-cpython314.sh's 3.14 (with
debug information, stripped, free-threaded): the agent needs no debug information.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import requires_gdb
from helpers import (
    DEBIAN_PY311,
    LOADED_FLOOR,
    PROGRAMS,
    REPO,
    compile_c,
    cpython314_param,
    debian_py311_param,
    line_of,
    pyenv_params,
    pyenv_python,
    wait_for,
)

from tuidbg.agent import protocol as P
from tuidbg.engine import pyagent
from tuidbg.engine.pyagent import AgentStop
from tuidbg.engine.state import ProcessState

pytestmark = [requires_gdb, pytest.mark.slow]

PY = PROGRAMS / "py"
STEPS = PY / "agent_steps.py"
THREADS = PY / "agent_threads.py"
MIXED = PY / "agent_mixed.py"
EXC = PY / "agent_exceptions.py"
FOREVER = PY / "agent_forever.py"
SET_TRACE = PY / "agent_set_trace.py"
PYTEST_SAMPLE = PY / "agent_pytest" / "sample_checks.py"
TESTEXT = PY / "agent_testext.c"

STOP_TIMEOUT = 60


def _interpreters():
    out = pyenv_params()
    out.append(debian_py311_param())
    # scripts/build-cpython314.sh's builds: with debug info, stripped, free-threaded
    out.extend(cpython314_param(b) for b in ("3.14", "3.14-stripped", "3.14t"))
    return out


INTERPRETERS = _interpreters()

# The agent's own mechanisms: sys.settrace before 3.12 (3.9: the oldest frames; Debian's stripped 3.11:
# no DWARF, the Python most people run), sys.monitoring from 3.12, and the free-threaded 3.14t (no GIL).
# A test of the agent's logic runs on one interpreter of each (CORE); a test that also goes through the
# interpreter's native side (native stops and steps, the frames the walker reads, injection into an
# attached process) runs on every interpreter (INTERPRETERS), so that each is in an end-to-end test.
CORE = [p for p in INTERPRETERS if p.id in ("pyenv-3.9", "debian-3.11-stripped", "pyenv-3.12", "cpython-3.14t")]


def _version(python: Path) -> tuple[int, int]:
    out = subprocess.run([str(python), "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), int(out[1])


async def _start(make_session, python, script: Path, *args: str, **kw):
    out = bytearray()
    s = await make_session(mode="run", program=str(python), args=[str(script), *args], agent=True,
                           python_target=True, **kw)
    s.on_program_output(out.extend)
    ctl = pyagent.controller(s)
    assert ctl is not None, "SessionConfig(agent=True) must create the PyAgent extension"
    OUTS[id(ctl)] = out
    return s, ctl, out


OUTS = {}


async def _stop(ctl) -> AgentStop:
    st = await ctl.wait_stop(STOP_TIMEOUT)
    if st.process is not ProcessState.STOPPED:
        print("program output:", bytes(OUTS.get(id(ctl), b""))[-3000:])
    assert st.process is ProcessState.STOPPED, f"expected a stop, got {st.process} ({st.exit_description}) {ctl.info} {ctl.breakpoints} {ctl.session.state.breakpoints}"
    stop = st.python.stop
    assert isinstance(stop, AgentStop), f"expected a Python stop, got {st.stop.describe() if st.stop else None}"
    return stop


async def _exit(s, ctl) -> int:
    st = await ctl.wait_stop(STOP_TIMEOUT)
    assert st.process is ProcessState.EXITED, f"expected the program to exit, got {st.stop.describe() if st.stop else st.process}"
    return st.exit_code


# ---------------------------------------------------------------------------------------------


async def test_notes_from_before_anyone_listens_reach_the_first_listener(make_session):
    """tuidbg run starts the program before the screen listens: the agent's note of a moved breakpoint
    (sent once the program's agent checked it) waits for the screen, and goes to it alone."""
    s, ctl, out = await _start(make_session, DEBIAN_PY311, STEPS)
    blank, c_body = line_of(STEPS, "blank"), line_of(STEPS, "c_body")
    await ctl.add_breakpoint(str(STEPS), blank)
    await ctl.add_breakpoint(str(STEPS), c_body)
    await s.launch()
    await _stop(ctl)
    screen, later = [], []
    ctl.on_message(screen.append)
    ctl.on_message(later.append)
    assert any(f"line {blank} has no code; moved to line {blank + 1}" in m for m in screen), screen
    assert later == []


@pytest.mark.parametrize("python", CORE)
async def test_breakpoint_condition_hit_count_and_moved_line(make_session, python):
    s, ctl, out = await _start(make_session, python, STEPS)
    c_body = line_of(STEPS, "c_body")
    text = await ctl.handle_console(f"pybreak {STEPS}:{c_body} if n >= 2")
    assert f"Python breakpoint 1 at {STEPS}:{c_body} if n >= 2" in text
    await ctl.set_ignore_count(1, 1)  # skip the first hit that passes the condition (n == 2)
    blank = line_of(STEPS, "blank")
    moved = await ctl.add_breakpoint(str(STEPS), blank, enabled=False)
    await s.launch()
    stop = await _stop(ctl)
    assert (stop.reason, stop.file, stop.line, stop.func, stop.bp_id) == (P.R_BREAKPOINT, str(STEPS), c_body, "c", 1)
    assert await ctl.evaluate("n") == "3"
    bp = ctl.breakpoint(1)
    assert bp.hits == 2 and bp.verified and bp.resolved_line == c_body
    # The breakpoint on a line without code moved to the next line with code, and says so.
    moved = ctl.breakpoint(moved.id)
    assert moved.resolved_line == blank + 1 and moved.verified
    assert f"line {blank} has no code; moved to line {blank + 1}" in moved.message
    assert [b.number for b in s.state.python_breakpoints] == ["py1", "py2"]
    # The stop function's gdb breakpoint is internal (hidden from the breakpoints pane).
    assert [b.internal for b in s.state.breakpoints] == [True]
    info = await ctl.handle_console("pyinfo")
    assert "Python agent: connected" in info and "hit 2 times" in info
    # pyprint and pylocals act in the frame the user selected (the UI passes it), frame 0 by default
    assert await ctl.handle_console("pyprint n") == "3"
    assert await ctl.handle_console("pyprint total", 3) == "15"  # main(): a(0) + a(1) + a(2) = 3 + 5 + 7
    with pytest.raises(pyagent.EngineError, match="NameError"):
        await ctl.handle_console("pyprint total")
    # (pyprint --all is pyall, for several processes: one here, said in one line)
    with pytest.raises(pyagent.EngineError, match="pyprint --all: one process is under the debugger"):
        await ctl.handle_console("pyprint --all n")
    assert "total = 15  (int)" in await ctl.handle_console("pylocals", 3)
    assert await ctl.handle_console("pylocals 0", 3) == "n = 3  (int)"
    assert await ctl.handle_console("pydelete 1") == "deleted Python breakpoint 1"
    await ctl.resume()
    assert await _exit(s, ctl) == 0
    assert b"total 48" in out
    # Run it again: a new process, a new agent, the same Python breakpoints (the moved one enabled now).
    await ctl.enable_breakpoint(moved.id)
    await s.run()
    stop = await _stop(ctl)
    assert (stop.bp_id, stop.line) == (moved.id, blank + 1)
    assert [b.internal for b in s.state.breakpoints] == [True]  # only the new process's stop function
    await ctl.resume()
    stop = await _stop(ctl)
    assert stop.line == blank + 1  # the loop line runs once per iteration
    await ctl.delete_all_breakpoints()
    await ctl.resume()
    assert await _exit(s, ctl) == 0


@pytest.mark.parametrize("python", INTERPRETERS)
async def test_step_into_over_out_across_three_functions(make_session, python):
    s, ctl, out = await _start(make_session, python, STEPS)
    await ctl.add_breakpoint(str(STEPS), line_of(STEPS, "a_call"), condition="n in (2, 3)")
    await s.launch()
    stop = await _stop(ctl)
    assert (stop.func, stop.line) == ("a", line_of(STEPS, "a_call"))
    expected = [
        (ctl.step_into, "b", "b_call"),
        (ctl.step_into, "c", "c_body"),
        (ctl.step_over, "c", "c_ret"),
        (ctl.step_over, "b", "b_call"),  # c returned: back on the line that called it
        (ctl.step_over, "b", "b_ret"),
        (ctl.step_out, "a", "a_call"),
        (ctl.step_over, "a", "a_after"),
    ]
    for action, func, mark in expected:
        await action()
        stop = await _stop(ctl)
        assert (stop.reason, stop.func, stop.line) == (P.R_STEP, func, line_of(STEPS, mark)), action.__name__
        if mark == "c_body":
            assert [f.func for f in stop.frames[:5]] == ["c", "b", "a", "main", "<module>"]
    assert await ctl.evaluate("w") == "6"
    # Second hit (n == 3): step out of a function with lines left runs them all and returns.
    await ctl.resume()
    stop = await _stop(ctl)
    assert (stop.reason, stop.func, stop.line) == (P.R_BREAKPOINT, "a", line_of(STEPS, "a_call"))
    for action, func, mark in [
        (ctl.step_into, "b", "b_call"),
        (ctl.step_into, "c", "c_body"),
        (ctl.step_out, "b", "b_call"),
        (ctl.step_out, "a", "a_call"),
        (ctl.step_over, "a", "a_after"),
    ]:
        await action()
        stop = await _stop(ctl)
        assert (stop.reason, stop.func, stop.line) == (P.R_STEP, func, line_of(STEPS, mark)), action.__name__
    assert await ctl.evaluate("w") == "8"
    await ctl.delete_all_breakpoints()
    await ctl.resume()
    assert await _exit(s, ctl) == 0
    assert b"total 48" in out


TRAP = PY / "agent_trap.py"


async def _native_stop_with_python(ctl, what: str):
    st = await ctl.wait_stop(STOP_TIMEOUT)
    assert st.process is ProcessState.STOPPED and st.python.stop is None, what
    s = ctl.session
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while s.state.python.stack is None or not s.state.python.stack.ok:
        assert loop.time() < deadline, "the Python stack of the native stop"
        await asyncio.sleep(0.05)
    return s.state


@pytest.mark.parametrize("python", INTERPRETERS)
async def test_python_steps_from_a_sigtrap_break_in(make_session, python):
    # The program stops itself with SIGTRAP (a native stop, inside kill()); n/s/f at the Python level
    # go on from the Python line that sent it.
    s, ctl, out = await _start(make_session, python, TRAP)
    await s.launch()
    st = await _native_stop_with_python(ctl, "the SIGTRAP")
    assert st.stop.signal_name == "SIGTRAP"
    await ctl.step_over()  # frame 0: inner(), on the os.kill line
    stop = await _stop(ctl)
    assert (stop.reason, stop.func, stop.line) == (P.R_STEP, "inner", line_of(TRAP, "after_trap"))
    await ctl.step_out()
    stop = await _stop(ctl)
    assert (stop.reason, stop.func, stop.line) == (P.R_STEP, "outer", line_of(TRAP, "outer_call"))
    await ctl.step_over()
    stop = await _stop(ctl)
    assert (stop.func, stop.line) == ("outer", line_of(TRAP, "outer_after"))
    assert await ctl.evaluate("total") == "2"
    await ctl.resume()
    # Second call: step over in the caller's frame (frame 1) from the SIGTRAP runs inner() to its end
    # and stops at the caller's next line.
    st = await _native_stop_with_python(ctl, "the second SIGTRAP")
    assert st.stop.signal_name == "SIGTRAP"
    await ctl.step_over(frame=1)
    stop = await _stop(ctl)
    assert (stop.reason, stop.func, stop.line) == (P.R_STEP, "outer", line_of(TRAP, "outer_after"))
    assert await ctl.evaluate("total") == "2"
    await ctl.resume()
    assert await _exit(s, ctl) == 0
    assert out.count(b"total 12") == 2


@pytest.mark.parametrize("python", CORE)
async def test_breakpoint_in_a_module_imported_later(make_session, python):
    late = PY / "agent_latemod.py"
    s, ctl, out = await _start(make_session, python, PY / "agent_lateimport.py", str(PY))
    bp = await ctl.add_breakpoint(str(late), line_of(late, "late_body"))
    await s.launch()
    stop = await _stop(ctl)
    assert (stop.reason, stop.func, stop.line, stop.bp_id) == (P.R_BREAKPOINT, "late", line_of(late, "late_body"), bp.id)
    assert await ctl.evaluate("n") == "21"
    await ctl.resume()
    assert await _exit(s, ctl) == 0
    assert b"late 42" in out


@pytest.mark.parametrize("python", CORE)
async def test_breakpoint_set_while_stopped_hits_next_execution(make_session, python):
    s, ctl, out = await _start(make_session, python, STEPS)
    await ctl.add_breakpoint(str(STEPS), line_of(STEPS, "a_call"), condition="n == 0", temporary=True)
    await s.launch()
    stop = await _stop(ctl)
    assert stop.line == line_of(STEPS, "a_call")
    assert ctl.breakpoints == ()  # temporary: gone after it stopped the program
    # Set while stopped: in code not started yet (c) and in the frame that is running (a).
    bc = await ctl.add_breakpoint(str(STEPS), line_of(STEPS, "c_body"))
    ba = await ctl.add_breakpoint(str(STEPS), line_of(STEPS, "a_after"))
    assert bc.verified and ba.verified
    await ctl.resume()
    stop = await _stop(ctl)
    assert (stop.bp_id, stop.func, stop.line) == (bc.id, "c", line_of(STEPS, "c_body"))
    assert await ctl.evaluate("n") == "0"
    await ctl.resume()
    stop = await _stop(ctl)
    assert (stop.bp_id, stop.func, stop.line) == (ba.id, "a", line_of(STEPS, "a_after"))
    assert await ctl.evaluate("n") == "0"
    await ctl.enable_breakpoint(bc.id, False)
    await ctl.delete_breakpoint(ba.id)
    await ctl.resume()
    assert await _exit(s, ctl) == 0


@pytest.mark.parametrize("python", CORE)
async def test_breakpoint_on_second_thread_stops_with_that_thread(make_session, python):
    s, ctl, out = await _start(make_session, python, THREADS)
    body = line_of(THREADS, "work_body")
    await ctl.add_breakpoint(str(THREADS), body, condition="k == 7")
    await s.launch()
    stop = await _stop(ctl)
    st = s.state
    assert stop.thread_name == "worker-7"
    assert stop.native_id != ctl.info.main_native_id
    assert st.selected_thread == stop.thread_id == st.stop.thread_id
    assert st.thread(st.selected_thread).lwp == stop.native_id
    worker = stop.native_id
    # The main thread runs the same function meanwhile (k == 1): the steps stay on the worker.
    await ctl.delete_all_breakpoints()
    for mark in ("work_next", "work_loop", "work_body"):
        await ctl.step_over()
        stop = await _stop(ctl)
        assert (stop.native_id, stop.line) == (worker, line_of(THREADS, mark))
        assert await ctl.evaluate("k") == "7"
    assert stop.line == body
    # Step the main thread instead (selected in the threads pane): it stops at the next line it runs.
    main = next(t.id for t in s.state.threads if t.lwp == ctl.info.main_native_id)
    await ctl.step_over(thread=main)
    stop = await _stop(ctl)
    assert stop.native_id == ctl.info.main_native_id and stop.thread_id == main
    assert s.state.selected_thread == main
    await ctl.resume()
    assert await _exit(s, ctl) == 0
    assert b"done" in out


@pytest.mark.parametrize("python", INTERPRETERS)
async def test_python_breakpoint_set_at_a_native_stop_is_in_force_for_the_next_line(make_session, python, libfoo):
    # Stopped in C (a native breakpoint in the function a Python line calls through ctypes), a Python
    # breakpoint on the very next line: continue stops there. (The agent's thread is let run alone
    # first to apply the table; the program's own thread would otherwise run the line before it.)
    s, ctl, out = await _start(make_session, python, MIXED, str(libfoo))
    bp = await s.break_insert(function="foo_add")
    await s.launch()
    st = await ctl.wait_stop(STOP_TIMEOUT)
    assert st.stop.reason == "breakpoint-hit" and st.frames[0].func == "foo_add"
    after = line_of(MIXED, "after_ctypes")
    await ctl.add_breakpoint(str(MIXED), after, temporary=True)
    await s.break_delete(bp.number)
    await ctl.resume()
    stop = await _stop(ctl)
    assert (stop.reason, stop.func, stop.line) == (P.R_BREAKPOINT, "compute", after)
    assert await ctl.evaluate("r") == "5"
    assert ctl.breakpoints == ()  # temporary: gone once hit
    await ctl.resume()
    assert await _exit(s, ctl) == 0
    assert b"result 50" in out


@pytest.mark.parametrize("python", INTERPRETERS)
async def test_native_breakpoint_then_back_to_python(make_session, python, libfoo):
    s, ctl, out = await _start(make_session, python, MIXED, str(libfoo))
    call = line_of(MIXED, "ctypes_call")
    nbp = await s.break_insert(function="foo_add")
    await ctl.add_breakpoint(str(MIXED), call)
    await s.launch()
    stop = await _stop(ctl)
    assert stop.line == call
    # Python "step over" the line: the native breakpoint in the C function it calls stops first.
    await ctl.step_over()
    st = await ctl.wait_stop(STOP_TIMEOUT)
    assert st.stop.reason == "breakpoint-hit" and st.stop.bkptno == nbp.number
    assert st.frames[0].func == "foo_add"
    assert st.python.stop is None
    # Finish out of C: back on the Python line that made the call.
    await ctl.step_out_to_python()
    stop = await _stop(ctl)
    assert (stop.reason, stop.func, stop.line) == (P.R_STEP, "compute", call)
    await ctl.step_over()
    stop = await _stop(ctl)
    assert stop.line == line_of(MIXED, "after_ctypes")
    assert await ctl.evaluate("r") == "5"
    await ctl.delete_all_breakpoints()
    await ctl.resume()
    assert await _exit(s, ctl) == 0
    assert b"result 50" in out


def _build_testext(python: Path, build_dir: Path) -> Path | None:
    info = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['include']); print(sysconfig.get_config_var('EXT_SUFFIX'))"],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()
    include, suffix = info[0], info[1]
    if not (Path(include) / "Python.h").exists():
        return None
    out = build_dir / f"testext-{python.name}-{abs(hash(str(python)))}"
    compile_c(TESTEXT, out / f"tuidbg_testext{suffix}", f"-I{include}", shared=True)
    return out


@pytest.mark.parametrize("python", INTERPRETERS)
async def test_step_into_native_and_back(make_session, python, libfoo, build_dir):
    ext_dir = _build_testext(python, build_dir)
    if ext_dir is None:
        pytest.skip(f"no Python.h for {python} on this machine (its -dev package is not installed)")
    s, ctl, out = await _start(make_session, python, MIXED, str(libfoo), str(ext_dir))
    call = line_of(MIXED, "ext_call")
    await ctl.add_breakpoint(str(MIXED), call)
    await s.launch()
    stop = await _stop(ctl)
    assert stop.line == call
    await ctl.step_into_native()
    st = await ctl.wait_stop(STOP_TIMEOUT)
    assert st.stop.reason == "breakpoint-hit" and st.python.stop is None
    assert st.frames[0].func == "testext_add"
    assert st.frames[0].fullname and st.frames[0].fullname.endswith("agent_testext.c")
    assert all(b.internal for b in s.state.breakpoints)  # the temporary native breakpoint was tuidbg's
    await ctl.step_out_to_python()
    stop = await _stop(ctl)
    assert (stop.reason, stop.func, stop.line) == (P.R_STEP, "compute_ext", call)
    await ctl.step_over()
    stop = await _stop(ctl)
    assert stop.line == line_of(MIXED, "after_ext")
    assert await ctl.evaluate("r") == "9"
    await ctl.delete_all_breakpoints()
    await ctl.resume()
    assert await _exit(s, ctl) == 0
    assert b"ext 900" in out


@pytest.mark.parametrize("python", INTERPRETERS)
async def test_step_into_native_through_ctypes(make_session, python, libfoo):
    if _version(python) < (3, 12):
        # Before 3.12 only builtins report the C function they call (profile 'c_call' events);
        # ctypes calls do not, so "step into native" steps over them (covered by the extension test).
        s, ctl, out = await _start(make_session, python, MIXED, str(libfoo))
        await ctl.add_breakpoint(str(MIXED), line_of(MIXED, "ctypes_call"))
        await s.launch()
        await _stop(ctl)
        await ctl.step_into_native()
        stop = await _stop(ctl)
        assert (stop.reason, stop.line) == (P.R_STEP, line_of(MIXED, "after_ctypes"))
        return
    s, ctl, out = await _start(make_session, python, MIXED, str(libfoo))
    call = line_of(MIXED, "ctypes_call")
    await ctl.add_breakpoint(str(MIXED), call)
    await s.launch()
    await _stop(ctl)
    await ctl.step_into_native()
    st = await ctl.wait_stop(STOP_TIMEOUT)
    assert st.frames[0].func == "foo_add"
    await ctl.step_out_to_python()
    stop = await _stop(ctl)
    assert (stop.func, stop.line) == ("compute", call)


NATIVE_OPS = PY / "native_ops.py"


def _mapped_file(pid: int, addr: int) -> str:
    """The base name of the file mapped at ``addr`` in process ``pid`` (a stripped library's function has
    no name: where it is tells which)."""
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if lo <= addr < hi:
                return os.path.basename(parts[5].strip()) if len(parts) > 5 else ""
    return ""


@pytest.mark.parametrize("python", CORE)
async def test_step_into_native_through_operators_subscripts_and_attributes(make_session, python):
    """"Step into native" on a line whose first native function is no call: a subscript (ctypes' Array), an
    attribute's getter (a ctypes Structure's field) and an operator (the C decimal's *, where the build has it) stop in the
    C function the operand's type runs; a line that runs only the interpreter's own says so at its next
    line."""
    c_decimal = subprocess.run([str(python), "-c", "import decimal, sys; print('_decimal' in sys.modules)"],
                               capture_output=True, text=True, check=True).stdout.strip() == "True"
    s, ctl, out = await _start(make_session, python, NATIVE_OPS)
    # (a build without libmpdec has the pure-Python decimal: its * is a Python method, stepped into)
    marks = ("op_subscript", "op_attribute") + (("op_mul",) if c_decimal else ()) + ("op_python",)
    for mark in marks:
        await ctl.add_breakpoint(str(NATIVE_OPS), line_of(NATIVE_OPS, mark))
    await s.launch()
    landed = {}
    for mark in marks:
        stop = await _stop(ctl)
        assert stop.line == line_of(NATIVE_OPS, mark), (mark, stop)
        await ctl.step_into_native()
        st = await ctl.wait_stop(STOP_TIMEOUT)
        if st.python.stop is None:
            assert st.stop.reason == "breakpoint-hit" and all(b.internal for b in s.state.breakpoints), st.stop
            landed[mark] = _mapped_file(st.pid, int(st.frames[0].addr, 16))
            await ctl.resume()  # (on to the next line's breakpoint)
        else:
            # nothing native on the way: the step ends at the next line, and says why
            assert st.python.stop.line == line_of(NATIVE_OPS, mark) + 1, (mark, st.python.stop)
            assert "went into an extension module" in (st.python.stop.message or ""), st.python.stop
            landed[mark] = None
            await ctl.resume()
    assert await _exit(s, ctl) == 0
    assert landed["op_subscript"].startswith("_ctypes") and landed["op_attribute"].startswith("_ctypes"), landed
    assert not c_decimal or landed["op_mul"].startswith("_decimal"), landed
    assert landed["op_python"] is None


@pytest.mark.parametrize("python", CORE)
async def test_exceptions_raised_uncaught_and_native_crash(make_session, python):
    s, ctl, out = await _start(make_session, python, EXC)
    await ctl.set_exception_breaks(uncaught=True, raised=["KeyError"])
    await s.launch()
    stop = await _stop(ctl)
    assert (stop.reason, stop.func, stop.line) == (P.R_EXCEPTION, "lookup", line_of(EXC, "raise_keyerror"))
    assert stop.exception.type == "builtins.KeyError" and "missing" in stop.exception.message
    await ctl.step_over()  # the exception propagates to main: back on the call line, or in the handler
    stop = await _stop(ctl)
    call = line_of(EXC, "call_lookup")
    assert stop.func == "main" and stop.line in {call, call + 1, line_of(EXC, "handler")}
    await ctl.resume()
    stop = await _stop(ctl)
    assert (stop.reason, stop.func, stop.line) == (P.R_UNCAUGHT, "parse", line_of(EXC, "raise_valueerror"))
    assert stop.exception.describe() == "ValueError: bad input: xyz"
    assert [f.func for f in stop.frames[:3]] == ["parse", "main", "<module>"]
    await ctl.resume()
    assert await _exit(s, ctl) == 1


async def test_native_crash_is_a_native_stop(make_session):
    python = DEBIAN_PY311 if DEBIAN_PY311.exists() else Path(sys.executable)
    s, ctl, out = await _start(make_session, python, EXC, "segv")
    await ctl.set_exception_breaks(uncaught=True)
    await s.launch()
    st = await ctl.wait_stop(STOP_TIMEOUT)
    assert st.stop.reason == "signal-received" and st.stop.signal_name == "SIGSEGV"
    assert st.python.stop is None


# -- tuidbg.breakpoint() -----------------------------------------------------------------------


def _program_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)  # how a user without tuidbg installed in the program's env finds it
    env.pop("TUIDBG_ON_BREAK", None)
    env.pop("PYTHONBREAKPOINT", None)
    env.update(extra)
    return env


@pytest.mark.parametrize("python", INTERPRETERS)
def test_tuidbg_breakpoint_without_debugger_does_not_kill(python):
    res = subprocess.run([str(python), str(SET_TRACE), "5"], capture_output=True, text=True, timeout=60,
                         env=_program_env(PYTHONBREAKPOINT="tuidbg.set_trace"), stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    assert "value 16" in res.stdout and "survived" in res.stdout
    lines = res.stderr.splitlines()
    assert len(lines) == 2, res.stderr  # tuidbg.breakpoint() and breakpoint(): one line each
    assert f"tuidbg: breakpoint at {SET_TRACE}:{line_of(SET_TRACE, 'tuidbg_breakpoint')} ignored" in lines[0]
    assert f"{SET_TRACE}:{line_of(SET_TRACE, 'builtin_breakpoint')} ignored" in lines[1]


@pytest.mark.parametrize("python", CORE)
async def test_set_trace_and_breakpoint_under_tuidbg(make_session, python):
    s, ctl, out = await _start(make_session, python, SET_TRACE, "5")
    await s.launch()
    stop = await _stop(ctl)
    # at the line after the call, where pdb stops: the call has returned, the caller's next line is due
    assert (stop.reason, stop.func, stop.line) == (P.R_SET_TRACE, "f", line_of(SET_TRACE, "after_tuidbg_breakpoint"))
    assert [f.func for f in stop.frames[:2]] == ["f", "<module>"]  # (nothing of the call left on the stack)
    assert await ctl.evaluate("y") == "15"
    await ctl.step_over()
    stop = await _stop(ctl)
    assert (stop.reason, stop.line) == (P.R_STEP, line_of(SET_TRACE, "builtin_breakpoint"))
    await ctl.resume()
    stop = await _stop(ctl)  # builtin breakpoint(): PYTHONBREAKPOINT is unset, so it stops in tuidbg
    assert (stop.reason, stop.line) == (P.R_SET_TRACE, line_of(SET_TRACE, "after_builtin"))
    assert await ctl.evaluate("z") == "16"
    await ctl.resume()
    assert await _exit(s, ctl) == 0
    assert b"value 16" in out and b"survived" in out


# -- attach ---------------------------------------------------------------------------------------


def _tracer(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    raise AssertionError("no TracerPid line")


async def _read_counter(path: Path) -> int:
    for _ in range(100):  # the program rewrites the file: an empty read is a truncation in progress
        text = path.read_text().strip()
        if text:
            return int(text)
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} stays empty")


def _ptrace_scope_allows() -> bool:
    try:
        scope = int(Path("/proc/sys/kernel/yama/ptrace_scope").read_text())
    except (OSError, ValueError):
        return True
    return scope == 0 or os.geteuid() == 0


requires_attach = pytest.mark.skipif(not _ptrace_scope_allows(), reason="ptrace attach to a non-child is not permitted here (yama ptrace_scope)")


@requires_attach
@pytest.mark.parametrize("python", INTERPRETERS)
async def test_attach_inject_breakpoint_and_detach(make_session, python, tmp_path):
    counter = tmp_path / "counter"
    proc = subprocess.Popen([str(python), str(FOREVER), str(counter)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    s = None
    try:
        assert proc.stdout.readline().strip() == b"ready"
        s = await make_session(mode="attach", pid=proc.pid, agent=True, python_target=True)
        ctl = pyagent.controller(s)
        await s.launch()
        assert ctl.info.status == "waiting"
        body = line_of(FOREVER, "tick_ret")
        bp = await ctl.add_breakpoint(str(FOREVER), body)
        await s.cont()  # the injected bootstrap runs in the main thread; the agent connects
        stop = await _stop(ctl)
        assert ctl.info.connected and ctl.info.how == "attach"
        # 3.14: PEP 768's remote execution; free-threaded 3.14: a thread of its own; 3.12/3.13: gdb's pending
        # call; before: the main thread's pending call beside a thread of its own (issue 30 item 13)
        v = _version(python)
        want = ("pending-call+thread" if python.name.endswith("t") else "pep768") if v >= (3, 14) else (
            "pending-call" if v >= (3, 12) else "pending-call+thread")
        assert ctl.info.inject == want, ctl.info
        assert (stop.reason, stop.bp_id, stop.func, stop.line) == (P.R_BREAKPOINT, bp.id, "tick", body)
        n = int(await ctl.evaluate("n"))
        await ctl.resume()
        stop = await _stop(ctl)
        assert int(await ctl.evaluate("n")) == n + 1
        await ctl.enable_breakpoint(bp.id, False)
        await ctl.resume()
        await wait_for(lambda: s.state.is_running, 10, "the program to run")
        # (a negative check: no stop comes, the breakpoint disabled; a slow machine can only make it miss
        # a stop, never fail for one that does not come)
        await asyncio.sleep(0.2)
        assert s.state.is_running
        await s.detach()  # what quitting an attached session does (here while the program runs)
        assert s.state.process is ProcessState.DETACHED
        deadline = time.monotonic() + 10
        while _tracer(proc.pid) != 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert _tracer(proc.pid) == 0
        before = await _read_counter(counter)
        deadline = time.monotonic() + LOADED_FLOOR
        while await _read_counter(counter) <= before:  # it runs on after the detach
            assert proc.poll() is None, "the process must run on after the detach"
            assert time.monotonic() < deadline, "the process stopped counting after the detach"
            await asyncio.sleep(0.05)
    finally:
        if s is not None:
            await s.close()  # gdb must let go before the process can be reaped
        proc.kill()
        proc.wait(timeout=30)


@requires_attach
async def test_wait_for_attach_then_stop(make_session, tmp_path):
    python = DEBIAN_PY311 if DEBIAN_PY311.exists() else Path(sys.executable)
    proc = subprocess.Popen([str(python), str(SET_TRACE), "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL,
                            env=_program_env(TUIDBG_ON_BREAK="wait", PYTHONBREAKPOINT="tuidbg.set_trace"))
    s = None
    try:
        line = proc.stderr.readline().decode()
        assert "waiting for the debugger" in line and f"tuidbg attach {proc.pid}" in line
        s = await make_session(mode="attach", pid=proc.pid, agent=True, python_target=True)
        ctl = pyagent.controller(s)
        await s.launch()
        await s.cont()
        stop = await _stop(ctl)
        assert (stop.reason, stop.func, stop.line) == (P.R_SET_TRACE, "f", line_of(SET_TRACE, "after_tuidbg_breakpoint"))
        await s.close()  # detaches: the program runs on, to its next breakpoint(), where it waits again
        line = await asyncio.get_running_loop().run_in_executor(None, proc.stderr.readline)
        assert f"{SET_TRACE}:{line_of(SET_TRACE, 'builtin_breakpoint')}: waiting for the debugger" in line.decode()
        assert _tracer(proc.pid) == 0
    finally:
        if s is not None:
            await s.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


# -- pytest ---------------------------------------------------------------------------------------


def _pytest_libs(build_dir: Path) -> Path:
    """pytest and its pure-Python dependencies from the venv running the tests, for other interpreters."""
    site = Path(pytest.__file__).resolve().parent.parent
    out = build_dir / "pytest-libs"
    out.mkdir(exist_ok=True)
    for name in ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py.py"):
        if (site / name).exists() and not (out / name).exists():
            (out / name).symlink_to(site / name)
    return out


def _pytest_pythons():
    out = [pytest.param(Path(sys.executable), id="tests-python")]
    for p in [pyenv_python(m) for m in ("3.12", "3.13")] + [DEBIAN_PY311 if DEBIAN_PY311.exists() else None]:
        if p is not None:
            out.append(pytest.param(p, id=f"{p.name}-{'debian' if str(p).startswith('/usr/') else 'pyenv'}"))
    out.extend(cpython314_param(b) for b in ("3.14", "3.14-stripped", "3.14t"))
    return out


@pytest.mark.parametrize("python", _pytest_pythons())
async def test_pytest_breakpoint_and_break_on_failure(make_session, python, build_dir):
    env = {"PYTHONPATH": str(_pytest_libs(build_dir))}
    if subprocess.run([str(python), "-c", "import pytest"], capture_output=True, env=dict(os.environ, **env)).returncode:
        pytest.skip(f"pytest cannot be imported by {python} here (before 3.11 it needs exceptiongroup and tomli)")
    s, ctl, out = await _start(make_session, python, Path("-m"), "pytest", "-q", "-p", "no:cacheprovider",
                               str(PYTEST_SAMPLE), cwd=str(PYTEST_SAMPLE.parent), program_env=env)
    body = line_of(PYTEST_SAMPLE, "test_passes_body")
    await ctl.add_breakpoint(str(PYTEST_SAMPLE), body)
    await ctl.set_break_on_failure(True)
    await s.launch()
    stop = await _stop(ctl)
    assert (stop.reason, stop.func, stop.line) == (P.R_BREAKPOINT, "test_passes", body)
    funcs = [f.func for f in stop.frames]
    assert "pytest_pyfunc_call" in funcs  # the test's frames, down through pytest
    await ctl.step_over()
    stop = await _stop(ctl)
    assert await ctl.evaluate("value") == "42"
    await ctl.resume()
    stop = await _stop(ctl)
    assert (stop.reason, stop.func, stop.line) == (P.R_FAILURE, "test_fails", line_of(PYTEST_SAMPLE, "failing_assert"))
    assert stop.exception.type == "builtins.AssertionError" and "helper(1) should be 3" in stop.exception.message
    assert stop.test and stop.test.endswith("::test_fails")
    await ctl.resume()
    assert await _exit(s, ctl) == 1
    assert b"1 failed, 1 passed" in out


# -- robustness ---------------------------------------------------------------------------------


async def test_gdb_delete_all_keeps_python_breakpoints_working(make_session):
    python = DEBIAN_PY311 if DEBIAN_PY311.exists() else Path(sys.executable)
    s, ctl, out = await _start(make_session, python, STEPS)
    await ctl.add_breakpoint(str(STEPS), line_of(STEPS, "c_body"))
    await s.launch()
    stop = await _stop(ctl)
    assert await ctl.evaluate("n") == "0"
    await s.console("delete")  # the user's "delete" also removes tuidbg's own breakpoint: it comes back
    for _ in range(200):
        if [b.internal for b in s.state.breakpoints] == [True]:
            break
        await asyncio.sleep(0.02)
    assert [b.internal for b in s.state.breakpoints] == [True]
    await ctl.resume()
    stop = await _stop(ctl)
    assert await ctl.evaluate("n") == "1"


async def test_agent_that_cannot_start_says_why(make_session):
    python = DEBIAN_PY311 if DEBIAN_PY311.exists() else Path(sys.executable)
    out = bytearray()
    s = await make_session(mode="run", program=str(python), args=["-I", str(STEPS)], agent=True, python_target=True)
    s.on_program_output(out.extend)
    ctl = pyagent.controller(s)
    await ctl.add_breakpoint(str(STEPS), line_of(STEPS, "c_body"))
    await s.launch()
    assert await _exit(s, ctl) == 0  # isolated mode ignores PYTHONPATH: no agent, the program just runs
    assert ctl.info.status == "failed" and "-I" in ctl.info.message
    assert s.state.python.agent.status == "failed"


@pytest.mark.parametrize("python", CORE)
async def test_program_environment_is_the_users(make_session, python, tmp_path):
    """The agent loads through PYTHONPATH, then puts the user's PYTHONPATH back and runs their sitecustomize."""
    user = tmp_path / "userlib"
    user.mkdir()
    (user / "sitecustomize.py").write_text("MARK = 'ran'\n")
    script = PY / "agent_env.py"
    s, ctl, out = await _start(make_session, python, script, program_env={"PYTHONPATH": str(user)})
    await ctl.add_breakpoint(str(script), line_of(script, "env_bp"))
    await s.launch()
    stop = await _stop(ctl)
    assert stop.line == line_of(script, "env_bp")
    text = bytes(out).decode()
    assert f"PYTHONPATH={user}" in text
    assert "TUIDBG_VARS=[]" in text
    assert "USER_SITECUSTOMIZE=ran" in text
    assert "BOOT_ON_PATH=False" in text
    await ctl.resume()
    assert await _exit(s, ctl) == 0


@pytest.mark.parametrize("python", CORE)
def test_breakpoint_shim_without_tuidbg_importable(python, tmp_path):
    """PYTHONBREAKPOINT=tuidbg_breakpoint.set_trace with only the shim directory on PYTHONPATH."""
    prog = tmp_path / "prog.py"
    prog.write_text("x = 41\nbreakpoint()\nprint('answer', x + 1, flush=True)\n")
    env = _program_env(PYTHONPATH=str(REPO / "tuidbg" / "agent" / "shim"), PYTHONBREAKPOINT="tuidbg_breakpoint.set_trace")
    res = subprocess.run([str(python), str(prog)], capture_output=True, text=True, timeout=60, env=env,
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    assert "answer 42" in res.stdout
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and f"tuidbg: breakpoint at {prog}:2 ignored: no debugger attached" in lines[0], res.stderr


@pytest.mark.parametrize("python", [p for p in INTERPRETERS if p.id in ("pyenv-3.12", "pyenv-3.13", "debian-3.11-stripped",
                                                                        "cpython-3.14", "cpython-3.14-stripped", "cpython-3.14t")])
def test_native_exec_audit_hook_sees_only_code_about_to_run(python):
    # The 3.12+ backend learns of code as it is executed from the audit hook's "exec" event; on x86-64
    # the hook is native and calls back into Python for that event only.
    code = (
        "import sys, platform; sys.path.insert(0, sys.argv[1])\n"
        "from tuidbg.agent import _auditexec\n"
        "seen = []\n"
        "kind = _auditexec.install(lambda args: seen.append(args[0].co_name))\n"
        "exec(compile('x = 1', '<one>', 'exec'))\n"
        "open('/dev/null').close()\n"
        "import colorsys\n"
        "print(kind, platform.machine(), seen)\n"
    )
    out = subprocess.run([str(python), "-c", code, str(REPO)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    kind, machine, seen = out.stdout.split(" ", 2)
    assert kind == ("native" if machine in ("x86_64", "amd64") else "python")
    assert seen.strip() == "['<module>', '<module>']"  # the exec() and the import; not the open()
