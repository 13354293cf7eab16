"""Python stacks on an old gdb without gdb.MICommand: cuda-gdb 11.8 (gdb 10.2), through the console command."""

from __future__ import annotations

import os
import shutil

import pytest
from helpers import wait_stopped
from pystack_helpers import PY_PROGRAMS, frames_of, read_json, resolve, thread_with_lwp

from tuidbg.engine import pystack as P

CUDA_GDB = shutil.which("cuda-gdb") or next(
    (p for p in ("/usr/local/cuda/bin/cuda-gdb", "/usr/bin/cuda-gdb") if os.access(p, os.X_OK)), None)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.cudagdb,
    pytest.mark.skipif(CUDA_GDB is None, reason="cuda-gdb is not installed on this machine"),
]


async def test_console_command_on_cuda_gdb_118(make_session, build_dir, tmp_path):
    interp = resolve("debian-3.11", build_dir)
    out = tmp_path / "record.json"
    s = await make_session(mode="run", gdb=CUDA_GDB, program=str(interp.exe), args=[str(PY_PROGRAMS / "trap.py"), str(out)])
    if s.info.version >= (13,):
        pytest.skip(f"this cuda-gdb is based on gdb {s.info.version_text}, which has gdb.MICommand")
    assert s.gdbext_loaded, s.startup_messages
    await s.launch()
    st = await wait_stopped(s, 120)
    assert st.stop.signal_name == "SIGTRAP"
    rec = read_json(out)
    ps = st.python.stack
    assert ps is not None and ps.ok and ps.backend == "console", ps
    main = thread_with_lwp(ps, rec["main"]["native_id"])
    assert frames_of(main) == rec["main"]["frames"]
    assert frames_of(thread_with_lwp(ps, rec["worker"]["native_id"])) == rec["worker"]["frames"]
    assert main.merge == "anchor" and all(f.native_level is not None for f in main.frames)
    locs = {v.name: v.value for v in await P.python_locals(s, main.tid, 0)}
    assert locs["an_int"] == "7" and locs["lst"] == rec["locals"]["lst"]
    # without Python in gdb at all, the MI-memory backend reads the same
    mem = await P.collect(s, native="all", backend="memory")
    assert frames_of(thread_with_lwp(mem, rec["main"]["native_id"])) == rec["main"]["frames"]
