"""A custom C++ operator (a torch C++ extension built with -g -O0) debugged end to end on the
stripped python3.11 with torch 2.13: a pending breakpoint on the op's C++ line, the at::Tensor
locals shown by tuidbg's gdb pretty-printer (tuidbg/gdbext/torch_printers.py), and the step out
back to the Python line that called the op. The extension is compiled once per source hash and checkout into
~/.cache/tuidbg-tests (about 20 s the first time); later runs only load it."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import requires_gdb
from helpers import line_of, machine_lock, wait_stopped
from pystack_helpers import PY_PROGRAMS, TORCH_PYTHON

from tuidbg.engine import pyagent
from tuidbg.engine.state import ProcessState

pytestmark = [
    pytest.mark.timeout(900),  # (the first test builds the C++ extension: minutes on a loaded machine)
    requires_gdb,
    pytest.mark.slow,
    pytest.mark.torch,
    pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="this machine has no .venv-torch (scripts/setup.sh builds it)"),
]

PROG = PY_PROGRAMS / "torch_custom_op.py"
CPP = PY_PROGRAMS / "torch_custom_op.cpp"
CHECKS = PY_PROGRAMS / "torch_op_checks.py"  # the op called from a pytest test (the README's screenshot)


@pytest.fixture(scope="session")
def op_build_dir() -> Path:
    # (per source and per checkout: torch's build writes the source's path into its build file, and two
    # checkouts building one folder rebuild it in turn, each waiting on the other's lock)
    digest = hashlib.sha256(CPP.read_bytes() + PROG.read_bytes() + str(CPP).encode()).hexdigest()[:16]
    build = Path(os.path.expanduser("~/.cache/tuidbg-tests")) / f"torch_custom_op-{digest}"
    env = dict(os.environ, PATH=f"{TORCH_PYTHON.parent}:{os.environ.get('PATH', '')}")
    with machine_lock(build.name):  # (one build at a time on this machine: the suite's workers, another checkout)
        # torch's own lock is a file made with O_EXCL: one left by a build that was killed (a run stopped
        # mid-way) makes every later build wait for ever. Under this lock no other build is running.
        (build / "lock").unlink(missing_ok=True)
        res = subprocess.run([str(TORCH_PYTHON), str(PROG), str(build), "build-only"], env=env,
                             capture_output=True, text=True, timeout=600)
    if res.returncode != 0 and "ninja" in res.stderr.lower() and "No module named" in res.stderr:
        pytest.skip("ninja is not in .venv-torch (scripts/setup.sh installs it)")
    assert res.returncode == 0, res.stderr[-3000:]
    return build


async def test_custom_op_breakpoint_tensor_locals_and_back(make_session, op_build_dir):
    out = bytearray()
    os.environ["PATH"] = f"{TORCH_PYTHON.parent}:{os.environ.get('PATH', '')}"
    s = await make_session(mode="run", program=str(TORCH_PYTHON), args=[str(PROG), str(op_build_dir)],
                           agent=True, python_target=True)
    s.on_program_output(out.extend)
    ctl = pyagent.controller(s)
    op_line = line_of(CPP, "op_line")
    bp = await s.break_insert(file=str(CPP), line=op_line)  # pending: the extension is not loaded yet
    assert bp.pending or not bp.locations, bp
    await s.launch()
    st = await wait_stopped(s, 280)
    assert st.stop.reason == "breakpoint-hit", (st.stop, bytes(out)[-2000:])
    assert st.frames[0].func.startswith("scale_add") and st.frames[0].line == op_line, st.frames[:2]
    locs = {v.name: v.value for v in await s.fetch_locals(st.stop.thread_id, 0)}
    assert locs["x"] == "Tensor float32 [4, 8] cpu", locs
    assert locs["y"] == "Tensor float32 [4, 8] cpu", locs
    assert locs["t"] == "Tensor float32 [8, 4] cpu strides=[1, 8]", locs
    assert locs["part"] == "Tensor float32 [2, 8] cpu offset=8", locs
    # the C++ frame is tied to the Python line that called the op
    ps = st.python.stack
    assert ps is not None and ps.ok, ps
    py = ps.thread(st.stop.thread_id)
    assert (py.frames[0].function, py.frames[0].line) == ("main", line_of(PROG, "op_call"))
    # one key back to Python: the op's frame is under pybind11's glue only, so f (finish) means back to the
    # Python line that called it; the stop is the agent's there, with that frame's locals
    from tuidbg.engine.python import view

    assert view.returns_into_python(st)
    await ctl.step_out_to_python()
    st = await ctl.wait_stop(280)
    stop = st.python.stop
    assert stop is not None and (stop.func, stop.line) == ("main", line_of(PROG, "op_call")), (st.stop, stop)
    assert not any(f.func.startswith("scale_add") for f in st.frames), [f.func for f in st.frames[:6]]
    assert await ctl.evaluate("x") == "Tensor float32 [4, 8] cpu"
    await ctl.step_over()
    st = await ctl.wait_stop(280)
    assert st.python.stop.line == line_of(PROG, "after_op") and await ctl.evaluate("float(out.sum())") == "96.0"
    await s.break_delete(bp.number)
    await ctl.resume()
    st = await wait_stopped(s, 280)
    assert st.process is ProcessState.EXITED and st.exit_code == 0, st
    assert b"sum 96.0" in out


async def test_custom_op_called_from_a_pytest_test(make_session, op_build_dir, monkeypatch, tmp_path):
    """python -m pytest torch_op_checks.py -k scale_add (screenshots/generate.py's torch scene): the stop in
    the op's C++ line, its tensors, and the test function the Python frame that called it. (The test file
    runs from a directory of its own: under tests/, pytest would take this project's configuration.)"""
    res = subprocess.run([str(TORCH_PYTHON), "-c", "import pytest"], capture_output=True)
    if res.returncode != 0:
        pytest.skip("pytest is not in .venv-torch (scripts/setup.sh --test installs it)")
    shutil.copy(CHECKS, tmp_path / CHECKS.name)
    monkeypatch.setenv("PATH", f"{TORCH_PYTHON.parent}:{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PYTHONPATH", str(PY_PROGRAMS))  # (torch_custom_op: the op built from its source there)
    monkeypatch.setenv("TUIDBG_OP_BUILD", str(op_build_dir))
    out = bytearray()
    s = await make_session(mode="run", program=str(TORCH_PYTHON), cwd=str(tmp_path),
                           args=["-m", "pytest", CHECKS.name, "-k", "scale_add", "-p", "no:cacheprovider"],
                           agent=True, python_target=True)
    s.on_program_output(out.extend)
    ctl = pyagent.controller(s)
    op_line = line_of(CPP, "op_line")
    bp = await s.break_insert(file=str(CPP), line=op_line)
    await s.launch()
    st = await wait_stopped(s, 280)
    assert st.stop.reason == "breakpoint-hit", (st.stop, bytes(out)[-2000:])
    assert st.frames[0].func.startswith("scale_add") and st.frames[0].line == op_line, st.frames[:2]
    locs = {v.name: v.value for v in await s.fetch_locals(st.stop.thread_id, 0)}
    assert locs["part"] == "Tensor float32 [2, 8] cpu offset=8", locs
    ps = st.python.stack
    assert ps is not None and ps.ok, ps
    py = ps.thread(st.stop.thread_id)
    assert (py.frames[0].function, py.frames[0].line) == ("test_scale_add", line_of(CHECKS, "op_call_in_test"))
    assert any(f.function == "pytest_pyfunc_call" for f in py.frames), [f.function for f in py.frames]
    await s.break_delete(bp.number)
    await ctl.resume()
    st = await wait_stopped(s, 280)
    assert st.process is ProcessState.EXITED and st.exit_code == 0, (st, bytes(out)[-2000:])
    assert b"1 passed" in out
