"""Python stacks of a core file: a Python process killed by SIGABRT, its core written by gdb."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import line_of, wait_stopped
from pystack_helpers import PY_PROGRAMS, frames_of, interpreter_params, read_json, resolve, thread_with_lwp

from tuidbg.engine import mi
from tuidbg.engine.python import merge as M
from tuidbg.engine import pystack as P
from tuidbg.engine.state import ProcessState

pytestmark = [requires_gdb, pytest.mark.slow]

TRAP = PY_PROGRAMS / "trap.py"


async def _make_core(make_session, interp, tmp_path):
    """Run trap.py to its os.abort() under gdb and write a core file there (gcore)."""
    out = tmp_path / "record.json"
    core = tmp_path / "python.core"
    s = await make_session(mode="run", program=str(interp.exe), args=[str(TRAP), str(out), "abort"],
                           program_env=interp.env)
    await s.launch()
    st = await wait_stopped(s, 120)
    assert st.stop.signal_name == "SIGABRT"
    await s.cmd(f"-interpreter-exec console {mi.quote('generate-core-file ' + str(core))}", timeout=120)
    await s.close()
    assert core.stat().st_size > 0
    return core, read_json(out)


async def _open_core(make_session, interp, core):
    """A session on the core, stopped the way ``DebugSession.launch`` stops on a core.

    The core is opened with gdb's ``core-file`` and the session makes its synthesized stop
    (see test_core_mode_launch for ``SessionConfig(mode="core")``'s own path).
    """
    s = await make_session(mode="none", program=str(interp.exe))
    await s.cmd(f"-file-exec-and-symbols {mi.quote(str(interp.exe))}", timeout=120)
    await s.cmd(f"-interpreter-exec console {mi.quote('core-file ' + str(core))}", timeout=120)
    await s.stop_at_selection("core file")
    return s


@pytest.mark.parametrize("name", interpreter_params())
async def test_core_file_python_frames(make_session, build_dir, tmp_path, name):
    interp = resolve(name, build_dir)
    core, rec = await _make_core(make_session, interp, tmp_path)
    s = await _open_core(make_session, interp, core)
    st = await wait_stopped(s, 120)
    assert st.process is ProcessState.STOPPED and st.stop.reason == "core file"
    ps = st.python.stack
    assert ps is not None and ps.ok, ps
    main = thread_with_lwp(ps, rec["main"]["native_id"])
    worker = thread_with_lwp(ps, rec["worker"]["native_id"])
    assert frames_of(main) == rec["main"]["frames"]
    assert frames_of(worker) == rec["worker"]["frames"]
    assert main.frames[0].line == line_of(TRAP, "stop")
    # placed on the native frames of the core's threads, and merged
    full = await P.collect(s, native="all")
    for t in (full.thread(main.tid), full.thread(worker.tid)):
        assert t.merged and all(f.native_level is not None for f in t.frames), t.merge_note
    assert s.state.frames_thread == main.tid  # the thread that aborted
    rows = M.merged_stack(s.state, main.tid)
    assert [r.python.function for r in rows if r.kind == "python"] == [f.function for f in main.frames]
    # locals come out of the core too
    locs = {v.name: v.value for v in await P.python_locals(s, main.tid, 0)}
    assert locs["an_int"] == "7" and locs["text"] == rec["locals"]["text"]
    # and the MI-memory backend reads the core the same way
    mem = await P.collect(s, native="all", backend="memory")
    assert frames_of(mem.thread(main.tid)) == rec["main"]["frames"]


async def test_core_mode_launch(make_session, build_dir, tmp_path):
    interp = resolve("debian-3.11", build_dir)
    odd = tmp_path / "a core's \"dir\""  # spaces and quotes in the path
    odd.mkdir()
    core, rec = await _make_core(make_session, interp, odd)
    s = await make_session(mode="core", program=str(interp.exe), core=str(core))
    await s.launch()
    st = await wait_stopped(s, 120)
    ps = st.python.stack
    assert frames_of(thread_with_lwp(ps, rec["main"]["native_id"])) == rec["main"]["frames"]
