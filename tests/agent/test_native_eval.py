"""pyprint, the watches and pylocals at native stops (a native breakpoint in C that Python called through
ctypes, a SIGTRAP), with real gdb and real interpreters: evaluated in the selected Python frame where the
stopped thread holds the GIL (or nobody does); the GIL's holder named, and pyuntilgil, where another
thread holds it. Continuing afterwards, the program runs to its end (engine/pyagent/native_eval.py)."""

from __future__ import annotations

import asyncio
import subprocess

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, PROGRAMS, compile_c, cpython314_param, debian_py311_param, line_of, pyenv_params

from pystack_helpers import TORCH_PYTHON

from tuidbg.agent import protocol as P
from tuidbg.engine import pyagent
from tuidbg.engine.errors import EngineError
from tuidbg.engine.python.model import user_frames
from tuidbg.engine.state import ProcessState

pytestmark = [requires_gdb, pytest.mark.slow]

PY = PROGRAMS / "py"
PROG = PY / "native_eval.py"
TRAP = PY / "agent_trap.py"
STOP_TIMEOUT = 60


def _interpreters():
    out = pyenv_params()
    out.append(debian_py311_param())
    out.extend(cpython314_param(b) for b in ("3.14", "3.14t"))
    return out


INTERPRETERS = _interpreters()


@pytest.fixture(scope="session")
def native_lib(build_dir):
    return compile_c(PY / "native_eval_lib.c", build_dir / "libnative_eval.so", shared=True)


async def _start(make_session, python, *args: str):
    out = bytearray()
    s = await make_session(mode="run", program=str(python), args=[str(a) for a in args], agent=True, python_target=True)
    s.on_program_output(out.extend)
    ctl = pyagent.controller(s)
    return s, ctl, out


async def _native_stop(ctl, what: str):
    """The next stop, a native one, once its Python stacks are read."""
    st = await ctl.wait_stop(STOP_TIMEOUT)
    assert st.process is ProcessState.STOPPED and st.python.stop is None, what
    s = ctl.session
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STOP_TIMEOUT
    while s.state.python.stack is None or not s.state.python.stack.ok:
        assert loop.time() < deadline, f"the Python stack of {what}"
        await asyncio.sleep(0.05)
    return s.state


def _frame_of(st, tid, func):
    """The agent's index of ``func``'s frame in thread ``tid`` (user frames, innermost first)."""
    frames = user_frames(st.python.stack.thread(tid).frames)
    return next(i for i, f in enumerate(frames) if f.function == func)


async def _exit(ctl) -> int:
    st = await ctl.wait_stop(STOP_TIMEOUT)
    assert st.process is ProcessState.EXITED, st.stop.describe() if st.stop else st.process
    return st.exit_code


@pytest.mark.parametrize("python", INTERPRETERS)
async def test_pyprint_and_watches_at_a_native_breakpoint(make_session, python, native_lib):
    s, ctl, out = await _start(make_session, python, PROG, native_lib)
    await s.break_insert(function="native_point")
    await s.launch()
    # 1. ctypes.PyDLL: the thread that stopped in C holds the GIL; its Python frames evaluate.
    st = await _native_stop(ctl, "the native breakpoint under PyDLL")
    assert st.frames[0].func == "native_point"
    tid = st.selected_thread
    k = _frame_of(st, tid, "held")
    assert await ctl.evaluate("count", k) == "41"
    assert await ctl.evaluate("point", k) == "Point(x=3, y=4)"
    # an exception in the program's own code (a __repr__, the expression) is the answer, as at a Python stop
    assert await ctl.evaluate("broken", k) == "<repr failed: ValueError: repr of Broken failed>"
    with pytest.raises(EngineError, match="ZeroDivisionError"):
        await ctl.evaluate("count / 0", k)
    assert await ctl.handle_console("pyprint count * 2", k) == "82"
    watches = await ctl.evaluate_many(["count + 1", "point.y", "broken", "nope"], k)
    assert watches[0][0] == "42" and watches[1][0] == "4"
    assert watches[2][0] == "<repr failed: ValueError: repr of Broken failed>"
    assert watches[3][0] is None and "NameError" in watches[3][2]
    # the program is where it was: still stopped in native_point, same thread, nothing lost
    assert s.state.is_stopped and s.state.python.stop is None and s.state.selected_thread == tid
    # 2. ctypes.CDLL releases the GIL around the call, and the spinner thread runs Python: it holds it.
    await ctl.resume()
    st = await _native_stop(ctl, "the native breakpoint under CDLL")
    tid = st.selected_thread
    spinner = next(t.tid for t in st.python.stack.threads if any(f.function == "spin" for f in t.frames))
    k = _frame_of(st, tid, "released")
    if ctl.info.free_threaded:
        # no GIL: the stopped thread evaluates (it attaches to the interpreter, as a C callback does)
        assert await ctl.evaluate("label", k) == "'released'"
    else:
        with pytest.raises(EngineError, match=rf"thread {tid} does not hold the GIL: thread {spinner}\b.* holds it"
                                              r".*pyuntilgil"):
            await ctl.evaluate("label", k)
        # pyuntilgil: on to the holder's next Python line, an agent stop where everything evaluates
        assert "running until" in await ctl.handle_console("pyuntilgil")
        st = await ctl.wait_stop(STOP_TIMEOUT)
        stop = st.python.stop
        assert stop is not None and stop.thread_id == spinner and stop.thread_name == "spinner", st.stop.describe()
        assert await ctl.evaluate("__import__('threading').current_thread().name") == "'spinner'"
    # 3. ctypes.CDLL with no other thread: nobody holds the GIL; the call takes it, as a C callback does
    await ctl.resume()
    st = await _native_stop(ctl, "the native breakpoint under CDLL, alone")
    tid = st.selected_thread
    k = _frame_of(st, tid, "free")
    assert await ctl.evaluate("nobody", k) == "'holds it'"
    # a Python breakpoint in a function the expression calls does not stop it (nor wait for itself). (Here,
    # not at the first stop: there the stopped thread holds the GIL, so the agent's thread applies the
    # changed table only as the program runs on, and might hold the GIL at the second stop; here it applies
    # it alone before the program goes on.)
    pybp = await ctl.add_breakpoint(str(PROG), line_of(PROG, "doubled"))
    assert await ctl.evaluate("doubled(len(nobody))", k) == "16"
    await ctl.delete_breakpoint(pybp.id)
    for bp in list(s.state.breakpoints):
        await s.break_delete(bp.number)
    # 4. inside malloc (holding the GIL): Python would wait for the allocator's lock it holds; refused
    # (in the main thread only: another thread may call malloc meanwhile, the agent's above all, and without
    # a GIL, on 3.14t, at any moment)
    await s.break_insert(function="malloc", condition="native_seen == 99", thread="1")
    await ctl.resume()
    st = await _native_stop(ctl, "malloc")
    assert "malloc" in st.frames[0].func
    with pytest.raises(EngineError, match=r"is stopped inside \S*malloc\S* \(frame 0\): Python cannot run there safely"):
        await ctl.evaluate("size", _frame_of(st, st.selected_thread, "alloc"))
    for bp in list(s.state.breakpoints):
        await s.break_delete(bp.number)
    await ctl.resume()
    assert await _exit(ctl) == 0
    assert b"result 86 14 released 10 holds it" in out


@pytest.mark.parametrize("python", INTERPRETERS)
async def test_pyprint_at_a_sigtrap(make_session, python):
    # os.kill(getpid(), SIGTRAP): stopped inside kill(), called from Python with the GIL held
    s, ctl, out = await _start(make_session, python, TRAP)
    await s.launch()
    st = await _native_stop(ctl, "the SIGTRAP")
    assert st.stop.signal_name == "SIGTRAP"
    tid = st.selected_thread
    assert await ctl.evaluate("n", _frame_of(st, tid, "inner")) == "1"
    assert await ctl.handle_console("pylocals", _frame_of(st, tid, "inner")) == "n = 1  (int)"
    with pytest.raises(EngineError, match="NameError"):
        await ctl.evaluate("total", _frame_of(st, tid, "outer"))  # (not assigned yet there)
    # an expression that never ends is stopped by the agent, and the program is as it was
    with pytest.raises(EngineError, match="did not finish within 5 s, and was stopped"):
        await ctl.evaluate("next(x for x in iter(int, 1) if x)", _frame_of(st, tid, "inner"))
    assert await ctl.evaluate("n + 1", _frame_of(st, tid, "inner")) == "2"
    await ctl.resume()
    await _native_stop(ctl, "the second SIGTRAP")
    await ctl.resume()
    assert await _exit(ctl) == 0
    assert out.count(b"total 12") == 2


@pytest.mark.parametrize("python", [p for p in INTERPRETERS if p.id in ("debian-3.11-stripped", "pyenv-3.12", "cpython-3.14t")])
async def test_pyprint_after_ctrl_c_in_c(make_session, python, native_lib):
    # ctrl+c while Python waits in C (holding the GIL): the interrupt's stop evaluates in its Python frame
    s, ctl, out = await _start(make_session, python, PY / "native_eval_spin.py", native_lib)
    await s.launch()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STOP_TIMEOUT
    while b"ready" not in out:
        assert loop.time() < deadline, "the program's ready line"
        await asyncio.sleep(0.05)
    await s.interrupt()
    st = await _native_stop(ctl, "the interrupt")
    if st.selected_thread != "1":
        await s.select_thread("1")
    st = s.state
    assert await ctl.evaluate("waiting", _frame_of(st, "1", "wait_in_c")) == "['for', 'ctrl+c']"
    await s.cmd("-gdb-set var release_spin = 1")
    await ctl.resume()
    assert await _exit(ctl) == 0
    assert b"spun 2" in out


@pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="this machine has no /usr/bin/python3.11")
async def test_pyprint_at_the_attach_stop_before_the_agent_is_in(make_session, native_lib):
    # Attached while the main thread spins in C holding the GIL: the agent cannot load before it runs
    # Python, and pyprint says so (not "needs a Python stop"); released, the program ends normally.
    proc = subprocess.Popen([str(DEBIAN_PY311), str(PY / "native_eval_spin.py"), str(native_lib)],
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        assert proc.stdout.readline().strip() == b"ready"
        s = await make_session(mode="attach", pid=proc.pid, agent=True, python_target=True)
        ctl = pyagent.controller(s)
        await s.launch()
        st = await _native_stop(ctl, "the attach stop")
        assert ctl.info.status == "waiting"
        with pytest.raises(EngineError, match="not loaded in the program yet .*continue or step, then evaluate"):
            await ctl.evaluate("waiting", _frame_of(st, st.selected_thread, "wait_in_c"))
        await s.cmd("-gdb-set var release_spin = 1")
        await s.cont()
        assert await asyncio.get_running_loop().run_in_executor(None, proc.wait, STOP_TIMEOUT) == 0
        assert proc.stdout.read().strip() == b"spun 2"
        await s.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


@pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="this machine has no .venv-torch (scripts/setup.sh builds it)")
async def test_pyprint_at_a_breakpoint_in_torch_cpp(make_session):
    # A native breakpoint in libtorch's C++ (torch.matmul from Python; the binding releases the GIL around
    # the operator): the tensors of the Python caller evaluate there, metadata and values
    s, ctl, out = await _start(make_session, TORCH_PYTHON, PY / "torch_matmul.py")
    await s.console("break at::_ops::matmul::call")
    await s.launch()
    st = await _native_stop(ctl, "at::_ops::matmul::call")
    assert st.frames[0].func.startswith("at::_ops::matmul::call"), [f.func for f in st.frames[:2]]
    k = _frame_of(st, st.selected_thread, "product")
    assert await ctl.evaluate("list(b.shape)", k) == "[3, 3]"
    assert await ctl.evaluate("float(b.sum())", k) == "18.0"
    assert await ctl.evaluate("(a @ b)[0, 0].item()", k) == "6.0"  # (the operator again, from inside itself)
    for bp in list(s.state.breakpoints):
        await s.break_delete(bp.number)
    await ctl.resume()
    assert await _exit(ctl) == 0
    assert b"total 54.0" in out
