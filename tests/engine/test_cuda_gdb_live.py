"""The engine against the real cuda-gdb (11.8 from Debian non-free on the test machines), without a GPU.

What a machine without a GPU can show: start-up, version and feature detection,
the 11.8 Python workaround (and that it is needed), host programs (C and Python)
at breakpoints and signals, empty CUDA tables and cuda-gdb's "no focus" answers,
and a CUDA binary built here whose kernel breakpoint is accepted.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import DEBIAN_PY311, PROGRAMS, line_of, wait_for, wait_stopped

from tuidbg.engine import cuda
from tuidbg.engine.cuda import CudaError, CudaFilterError
from tuidbg.engine.state import ProcessState


def _find_cuda_gdb() -> str | None:
    path = shutil.which("cuda-gdb")
    if path:
        return path
    for cand in ("/usr/local/cuda/bin/cuda-gdb", "/usr/bin/cuda-gdb", "/opt/cuda/bin/cuda-gdb"):
        if os.access(cand, os.X_OK):
            return cand
    return None


def _find_nvcc() -> str | None:
    path = shutil.which("nvcc")
    if path:
        return path
    for cand in ("/usr/local/cuda/bin/nvcc", "/opt/cuda/bin/nvcc"):
        if os.access(cand, os.X_OK):
            return cand
    return None


CUDA_GDB = _find_cuda_gdb()
NVCC = _find_nvcc()

pytestmark = [
    pytest.mark.cudagdb,
    pytest.mark.skipif(CUDA_GDB is None, reason="cuda-gdb is not installed (scripts/setup.sh --test installs Debian's nvidia-cuda-gdb)"),
]

CUDA_SRC = PROGRAMS / "cuda"


@pytest.fixture(scope="module")
def host_prog(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cuda-live") / "host"
    subprocess.run(["gcc", "-g", "-O0", str(CUDA_SRC / "host.c"), "-o", str(out)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def vecadd_prog(tmp_path_factory) -> Path:
    if NVCC is None:
        pytest.skip("nvcc is not installed")
    out = tmp_path_factory.mktemp("cuda-live") / "vecadd"
    # -g -G: host and device debug info. sm_75 is the oldest target nvcc 13 builds and one cuda-gdb
    # 11.8 knows; the device DWARF nvcc writes is version 2, the host's (gcc 12) version 5, which
    # cuda-gdb 11.8's gdb 10.2 reads (the test below checks it resolves source lines).
    res = subprocess.run([NVCC, "-g", "-G", "-arch=sm_75", str(CUDA_SRC / "vecadd.cu"), "-o", str(out)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.fail(f"nvcc failed: {res.stderr[-2000:]}")
    return out


async def cuda_session(make_session, **kw):
    kw.setdefault("load_gdbext", False)
    return await make_session(gdb=CUDA_GDB, cuda=True, **kw)


async def test_startup_detects_version_features_and_applies_the_workaround(make_session):
    # the default configuration, tuidbg's gdb-side package included, must start cleanly
    s = await make_session(gdb=CUDA_GDB, cuda=True)
    info = s.info
    assert info.is_cuda and info.cuda_version >= (11, 0) and info.version >= (10, 0)
    ext = cuda.get(s)
    caps = ext.caps
    assert caps is not None and caps.probed
    for c in ("cuda-info-devices", "cuda-info-kernels", "cuda-info-blocks", "cuda-info-threads", "cuda-focus-switch", "cuda-focus-query"):
        assert caps.has(c), c
    assert caps.has_python == info.has_python
    if info.cuda_version == (11, 8):
        assert not caps.has("cuda-info-launch-children")  # only the CLI has it on 11.8
        assert caps.order is cuda.LogicalOrder.Z_FASTEST
        assert set(ext.settings.values) == {"break_on_launch", "api_failures", "memcheck"}
    if caps.python_none_broken:
        assert s.cuda_workaround_applied and caps.workaround_applied
    snap = cuda.snapshot(s.state)
    assert snap is not None and snap.caps == caps and not snap.on_device
    assert not any("does not report itself as cuda-gdb" in m for m in s.startup_messages)


async def test_plain_gdb_leaves_the_extension_inert_and_says_so_for_cuda_flag(make_session):
    if shutil.which("gdb") is None:
        pytest.skip("gdb is not installed")
    s = await make_session(gdb="gdb", cuda=True, load_gdbext=False)
    assert not s.info.is_cuda and cuda.get(s).caps is None and cuda.snapshot(s.state) is None
    assert any("does not report itself as cuda-gdb" in m for m in s.startup_messages)
    with pytest.raises(CudaError, match="not running cuda-gdb"):
        await cuda.get(s).read_settings()


async def test_host_c_program_breakpoint_locals_and_sigtrap(make_session, host_prog):
    s = await cuda_session(make_session, mode="run", program=str(host_prog))
    src = CUDA_SRC / "host.c"
    bp = await s.break_insert(function="add")
    await s.launch()
    st = await wait_stopped(s)
    assert st.stop.reason == "breakpoint-hit" and st.stop.bkptno == bp.number
    assert [f.func for f in st.frames[:2]] == ["add", "main"]
    assert st.frames[0].line == line_of(src, "add_body") and st.frames[0].arch == "i386:x86-64"
    # values print: the pretty-printer part of the workaround works (without it they are empty)
    assert {(v.name, v.value) for v in st.locals if v.is_arg} == {("a", "1"), ("b", "2")}
    snap = cuda.snapshot(st)
    assert snap.loaded and snap.stop_kind == cuda.STOP_HOST and snap.focus is None
    assert snap.devices == () and snap.kernels == () and snap.errors == {}
    await s.cont()
    st = await wait_stopped(s)
    assert st.stop.reason == "signal-received" and st.stop.signal_name == "SIGTRAP"
    main = next(f for f in st.frames if f.func == "main")
    assert main.line == line_of(src, "trap")
    await s.cont()
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 20, "exit")
    assert s.state.exit_code == 3


async def test_without_the_workaround_the_11_8_host_stack_breaks(make_session, host_prog, monkeypatch):
    s0 = await cuda_session(make_session)
    if not cuda.get(s0).caps.python_none_broken:
        pytest.skip("this cuda-gdb's Python handles None correctly; nothing to work around")

    async def not_broken(session):
        return False

    monkeypatch.setattr(cuda.workaround, "probe_python_none", not_broken)
    s = await cuda_session(make_session, mode="run", program=str(host_prog))
    assert not s.cuda_workaround_applied
    await s.break_insert(function="add")
    await s.launch()
    st = await wait_stopped(s)
    # the stop comes without frame= and -stack-list-frames fails: no frames at all
    assert st.stop.reason == "breakpoint-hit" and st.stop.frame is None and st.frames == ()


async def test_python_program_sigtrap_has_a_usable_host_stack(make_session, tmp_path):
    if not DEBIAN_PY311.exists():
        pytest.skip("this machine has no /usr/bin/python3.11")
    script = tmp_path / "trap.py"
    script.write_text("import os, signal\ndef inner():\n    os.kill(os.getpid(), signal.SIGTRAP)\ninner()\nprint('after', flush=True)\n")
    out = bytearray()
    s = await cuda_session(make_session, mode="run", program=str(DEBIAN_PY311), args=[str(script)])
    s.on_program_output(out.extend)
    await s.launch()
    st = await wait_stopped(s)
    assert st.stop.reason == "signal-received" and st.stop.signal_name == "SIGTRAP"
    funcs = [f.func for f in st.frames]
    assert len(funcs) >= 5 and funcs[0] in ("kill", "__GI_kill", "__kill")
    assert any("EvalFrame" in f or f.startswith("PyEval") for f in funcs), funcs
    assert any(f in ("Py_RunMain", "Py_BytesMain", "main", "__libc_start_main") for f in funcs), funcs
    await s.cont()
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 20, "exit")
    assert b"after" in out


async def test_cuda_tables_are_empty_without_a_gpu_and_no_focus_answers_are_handled(make_session, host_prog):
    s = await cuda_session(make_session, mode="run", program=str(host_prog))
    ext = cuda.get(s)
    with pytest.raises(CudaError, match="not running|not started|program"):
        await ext.fetch_kernels()  # no process yet
    await s.break_insert(function="add")
    await s.launch()
    await wait_stopped(s)
    assert await ext.fetch_devices() == ()
    assert await ext.fetch_kernels() == ()
    assert await ext.fetch_contexts() == ()
    assert await ext.fetch_sms(0) == () and await ext.fetch_warps(0, 0) == () and await ext.fetch_lanes(0, 0, 0) == ()
    assert await ext.fetch_blocks(0) == ()
    assert await ext.fetch_launch_trace(0) == ()
    assert len(await ext.fetch_threads(0)) == 0
    assert len(await ext.info("threads", "kernel 0 block (1,0,0)")) == 0
    with pytest.raises(CudaError, match="Focus not set on any active CUDA kernel"):
        await ext.info("threads")  # the default filter needs a focus
    assert await ext.query_focus() is None  # 11.x: a bare-string ^done
    with pytest.raises(CudaError, match="Invalid coordinates"):
        await ext.switch_focus("kernel 0 block (0,0,0) thread (0,0,0)")
    with pytest.raises(CudaError, match="device thread"):
        await ext.warp_watch("a")
    with pytest.raises(CudaFilterError, match="given twice"):
        await ext.info("threads", "kernel 0 kernel 1")
    with pytest.raises(CudaFilterError, match="at most 3"):
        await ext.switch_focus("block (1,2,3,4)")
    if not ext.caps.has("cuda-info-launch-children"):
        with pytest.raises(CudaError, match="has no -cuda-info-launch-children"):
            await ext.info("launch-children")
    # toggles round-trip through cuda-gdb
    for name, value in (("break_on_launch", "application"), ("api_failures", "stop_all"), ("break_on_launch", "none")):
        assert (await ext.set_option(name, value)).get(name) == value
    if "memcheck" in ext.caps.options:
        assert (await ext.set_option("memcheck", "on")).get("memcheck") == "on"
        assert (await ext.set_option("memcheck", "auto")).get("memcheck") == "auto"
    assert cuda.snapshot(s.state).settings.get("api_failures") == "stop_all"
    # cuda-gdb 11.8 on Debian 12 prints BFD warnings about .relr.dyn; they arrive beside MI, harmlessly
    tail = " ".join(s.client.transport.stderr_tail())
    assert s.state.process is ProcessState.STOPPED
    if "BFD:" in tail:
        assert ".relr.dyn" in tail


async def test_cuda_binary_loads_and_kernel_breakpoints_are_accepted(make_session, vecadd_prog):
    src = CUDA_SRC / "vecadd.cu"
    out = bytearray()
    s = await cuda_session(make_session, mode="run", program=str(vecadd_prog))
    s.on_program_output(out.extend)
    ext = cuda.get(s)
    bp = await s.break_insert(function="vecAdd")
    assert bp.addr == "<MULTIPLE>" and bp.locations and not bp.locations[0].enabled
    view = ext.breakpoint_view(bp.number)
    assert view.pending_on_device and view.source_lines() == []
    # a line inside the kernel: accepted, resolved for now to the disabled host stub only
    bp2 = await s.break_insert(file=str(src), line=line_of(src, "kernel_store"))
    assert ext.breakpoint_view(bp2.number).pending_on_device
    # host lines resolve to the line asked for: cuda-gdb reads nvcc's host debug info
    bp3 = await s.break_insert(file=str(src), line=line_of(src, "main_first"))
    assert bp3.line == line_of(src, "main_first") and ext.breakpoint_view(bp3.number).shown
    await s.launch()
    st = await wait_stopped(s)
    assert st.stop.bkptno == bp3.number and st.frames[0].func == "main"
    assert cuda.snapshot(st).kernels == () and not cuda.device_focus(st)
    await s.cont()
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 30, "exit")
    # no GPU and no driver here: the runtime fails, the program says so and returns 0
    assert b"cudaMallocManaged -> " in out and s.state.exit_code == 0


async def test_python_agent_stops_and_answers_under_cuda_gdb(make_session, tmp_path):
    """tuidbg's Python agent under cuda-gdb 11.8 (gdb 10.2): its stop function's breakpoint cannot be
    written while the program runs, so the engine interrupts it for that, and that interrupt is not a
    stop the user sees; the breakpoint gdb made before it failed is the one used (a second at the same
    place would leave the agent's stops unrecognized). cuda-gdb refuses scheduler-locking, so the
    agent answers a request with the program's threads running (found by scripts/gpu-check.sh's dry run)."""
    from tuidbg.engine import pyagent

    if not DEBIAN_PY311.exists():
        pytest.skip("this machine has no /usr/bin/python3.11")
    script = tmp_path / "prog.py"
    script.write_text("import threading\n"
                      "def work(n):\n"
                      "    total = n * 2  # MARK:stop\n"
                      "    return total\n"
                      "t = threading.Thread(target=lambda: None)\n"
                      "t.start(); t.join()\n"
                      "print('result', work(21), flush=True)\n")
    out = bytearray()
    s = await cuda_session(make_session, mode="run", program=str(DEBIAN_PY311), args=[str(script)], agent=True,
                           python_target=True)
    s.on_program_output(out.extend)
    ctl = pyagent.controller(s)
    await ctl.add_breakpoint(str(script), line_of(script, "stop"))
    await s.launch()
    st = await ctl.wait_stop(60)
    assert st.process is ProcessState.STOPPED and st.python.stop is not None, (st.stop.describe() if st.stop else st.process, bytes(out))
    assert st.python.stop.line == line_of(script, "stop")
    stubs = [b for b in s.state.breakpoints if b.internal]
    assert len(stubs) == 1 and not [b for b in s.state.breakpoints if not b.internal]  # one stop-function breakpoint
    assert {name: value for name, _t, value in await ctl.python_locals(0)} == {"n": "21"}
    assert await ctl.evaluate("n * 3") == "63"
    await ctl.resume()
    st = await ctl.wait_stop(60)
    assert st.process is ProcessState.EXITED and st.exit_code == 0
    assert b"result 42" in out
