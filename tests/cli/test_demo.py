"""The bundled demo works with and without a debugger."""

from __future__ import annotations

import subprocess
import sys

from conftest import requires_gdb
from helpers import REPO, compile_c, wait_for, wait_stopped

from tuidbg.engine.state import ProcessState

DEMO = REPO / "demo"


def build_lib(build_dir):
    out = build_dir / "demo" / "libvecmath.so"
    out.parent.mkdir(exist_ok=True)
    subprocess.run(["gcc", "-g", "-O0", "-shared", "-fPIC", str(DEMO / "vecmath.c"), "-o", str(out), "-lm"], check=True)
    return out


def test_demo_runs_without_a_debugger(build_dir):
    lib = build_lib(build_dir)
    res = subprocess.run([sys.executable, str(DEMO / "demo.py")], capture_output=True, text=True, env={"VECMATH_LIB": str(lib), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "noisy: similarity" in res.stdout and "flat: similarity" in res.stdout
    assert "no debugger attached" in res.stderr


@requires_gdb
async def test_demo_under_the_debugger(make_session, build_dir):
    lib = build_lib(build_dir)
    s = await make_session(mode="run", program=sys.executable, args=[str(DEMO / "demo.py")], program_env={"VECMATH_LIB": str(lib)}, ex=["break accumulate"])
    await s.launch()
    st = await wait_stopped(s)
    assert st.stop.signal_name == "SIGTRAP"  # the break-in at the "noisy" series
    await s.cont()
    st = await wait_stopped(s)
    assert st.stop.reason == "breakpoint-hit" and st.frames[0].func == "accumulate"
    assert [f.func for f in st.frames[:2]] == ["accumulate", "vm_stddev"]
    await s.break_delete(st.stop.bkptno)
    await s.cont()
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 30, "exit")
    assert s.state.exit_code == 0
