"""Python stacks read from real interpreters under gdb: frames, threads, native placement, locals.

Every interpreter the machine has among pyenv 3.9-3.14 (with DWARF), Debian's stripped
/usr/bin/python3.11 and copies of pyenv's 3.12/3.13 with libpython's DWARF stripped.
The reference is the interpreter's own ``traceback.extract_stack()``.
"""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import line_of, wait_for, wait_stopped
from pystack_helpers import PY_PROGRAMS, frames_of, interpreter_params, read_json, resolve, thread_with_lwp

from tuidbg.engine import pystack as P
from tuidbg.engine.python import merge as M
from tuidbg.engine.state import ProcessState

pytestmark = [requires_gdb, pytest.mark.slow]

TRAP = PY_PROGRAMS / "trap.py"


def _placement(t):
    return [(f.function, f.file, f.line, f.qualname, f.native_level) for f in t.frames]


async def _start_trap(make_session, interp, out, how="trap", **kw):
    s = await make_session(mode="run", program=str(interp.exe), args=[str(TRAP), str(out), how],
                           program_env=interp.env, **kw)
    await s.launch()
    st = await wait_stopped(s, 120)
    return s, st


@pytest.mark.parametrize("name", interpreter_params())
async def test_frames_equal_traceback(make_session, build_dir, tmp_path, name):
    interp = resolve(name, build_dir)
    out = tmp_path / "record.json"
    s, st = await _start_trap(make_session, interp, out)
    assert st.stop.reason == "signal-received" and st.stop.signal_name == "SIGTRAP"
    rec = read_json(out)

    # the refresh stage filled the state after the stop
    ps = st.python.stack
    assert ps is not None and ps.ok, ps
    assert ps.python.startswith(f"3.{interp.minor}")
    assert ps.offsets == interp.offsets
    main = thread_with_lwp(ps, rec["main"]["native_id"])
    worker = thread_with_lwp(ps, rec["worker"]["native_id"])
    assert main.tid == st.stop.thread_id
    assert frames_of(main) == rec["main"]["frames"]
    assert frames_of(worker) == rec["worker"]["frames"]
    if interp.minor >= 11:
        assert [f.qualname for f in reversed(main.frames)] == rec["main"]["qualnames"]
        assert [f.qualname for f in reversed(worker.frames)] == rec["worker"]["qualnames"]
        assert main.frames[2].qualname == "Outer.Inner.method"
    assert main.frames[0].line == line_of(TRAP, "stop")
    assert worker.frames[0].function == "blocked_in_worker"
    assert worker.frames[0].line == line_of(TRAP, "worker_block")
    assert main.thread_id == rec["main"]["ident"] and worker.thread_id == rec["worker"]["ident"]

    # the SIGTRAP came from stop_here (through os.kill): that is the Python frame to show
    trap = M.stop_python_frame(st)
    assert trap is not None and trap.function == "stop_here" and trap.index == 0

    # native placement of the stopped thread: every Python frame sits on an eval-loop frame
    assert main.merge == ("count" if interp.minor == 9 else "anchor"), main.merge_note
    frames, _ = await s.fetch_frames(main.tid, 0, 400)
    by_level = {f.level: f for f in frames}
    for f in main.frames:
        assert f.native_level is not None, f
        assert by_level[f.native_level].func.startswith("_PyEval_EvalFrameDefault"), (f, by_level[f.native_level])
    # several C calls of the eval loop: sorted() -> <lambda>, next() -> <genexpr>
    assert len({f.native_level for f in main.frames}) >= 3
    entries = [f.function for f in main.frames if f.is_entry]
    assert "<module>" in entries and "<lambda>" in entries and "<genexpr>" in entries

    # the merged view: kill() on top, Python frames in order, the eval frames gone
    rows = M.merged_stack(s.state)
    py_rows = [r.python.function for r in rows if r.kind == "python"]
    assert py_rows == [f.function for f in main.frames]
    assert rows[0].kind == "native" and "kill" in rows[0].native.func
    assert not any(r.kind == "native" and r.native.func.startswith("_PyEval_EvalFrameDefault") for r in rows)

    # every backend gives the same stacks: MI command, console command (old gdb), MI memory reads
    selected = (s.state.selected_thread, s.state.selected_frame)
    full = await P.collect(s, native="all")
    assert full.backend == "mi"
    # unwinding every thread inside gdb leaves the user's selection alone
    assert (s.state.selected_thread, s.state.selected_frame) == selected
    sel = await s.cmd("-thread-info")
    assert sel.get("current-thread-id") == selected[0]
    console = await P.collect(s, native="all", backend="console")
    memory = await P.collect(s, native="all", backend="memory")
    assert memory.backend == "memory" and memory.offsets in ("table", "debug_offsets")
    for other in (console, memory):
        assert other.ok, other.reason
        assert other.python == full.python
        for t in full.threads:
            o = other.thread(t.tid)
            assert o is not None and _placement(o) == _placement(t), (other.backend, t.tid)
    w = full.thread(worker.tid)
    assert w.merged and all(f.native_level is not None for f in w.frames)

    # the .PyRuntime section finds the same runtime (3.11+ has the section)
    if interp.minor >= 11:
        by_section = await P.collect(s, native="none", runtime_from="section")
        assert by_section.ok and by_section.runtime == full.runtime
        assert frames_of(by_section.thread(main.tid)) == rec["main"]["frames"]

    # locals, read from memory, against the program's own repr()
    locs = {v.name: v for v in await P.python_locals(s, main.tid, 0)}
    want = rec["locals"]
    for nm in ("an_int", "big", "flt", "yes", "nothing", "text", "raw", "lst", "tup", "dct", "st", "captured"):
        assert locs[nm].value == want[nm], (nm, locs[nm], want[nm])
    assert locs["captured"].kind == "cell"
    assert locs["obj"].type == "Outer" and locs["obj"].value == "Outer()"  # (an object: its attributes, none)
    assert locs["closure"].type == "function"
    lt = locs["long_text"].value
    assert lt.startswith("'xxxx") and lt.endswith("(1000 characters)") and len(lt) < 400
    assert locs["big"].type == "int" and locs["flt"].type == "float" and locs["dct"].type == "dict"
    # a caller's frame: method's arguments
    m = {v.name: v for v in await P.python_locals(s, main.tid, 1)}
    assert m["n"].value == "0" and m["n"].kind == "arg" and m["self"].value == "Inner()"
    # the memory backend reads the same values
    mem_locs = {v.name: v.value for v in await P.python_locals(s, main.tid, 0, backend="memory")}
    assert mem_locs == {k: v.value for k, v in locs.items()}

    await s.cont()
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 30, "exit")
    assert s.state.exit_code == 0


@pytest.mark.parametrize("name", interpreter_params())
@pytest.mark.parametrize("depth", [2000, 10000])
async def test_deep_recursion(make_session, build_dir, tmp_path, name, depth):
    interp = resolve(name, build_dir)
    out = tmp_path / "deep.json"
    s = await make_session(mode="run", program=str(interp.exe), args=[str(PY_PROGRAMS / "deep.py"), str(depth), str(out)],
                           program_env=interp.env)
    await s.launch()
    st = await wait_stopped(s, 240)
    assert st.stop.signal_name == "SIGTRAP"
    rec = read_json(out)
    assert len(rec["frames"]) == depth
    # after the stop (the refresh stage): complete and in order
    t = thread_with_lwp(st.python.stack, rec["native_id"])
    assert not t.truncated and t.error is None
    assert frames_of(t) == rec["frames"]
    assert t.frames[0].line == line_of(PY_PROGRAMS / "deep.py", "deep_trap")
    if depth == 2000:
        # every Python frame placed on its native frame
        full = await P.collect(s, thread=t.tid, native="all")
        ft = full.thread(t.tid)
        assert frames_of(ft) == rec["frames"]
        assert ft.merge in ("anchor", "count"), ft.merge_note
        assert all(f.native_level is not None for f in ft.frames)
    # a bounded read says it is bounded
    part = await P.collect(s, thread=t.tid, native="none", max_frames=100)
    pt = part.thread(t.tid)
    assert pt.truncated and len(pt.frames) == 100 and frames_of(pt) == rec["frames"][-100:]


async def test_mi_shapes_and_errors(make_session, build_dir, tmp_path):
    """The MI commands without --json: tuples a plain MI client can read; bad input: one-line errors."""
    interp = resolve("debian-3.11", build_dir)
    s, st = await _start_trap(make_session, interp, tmp_path / "r.json")
    rec = read_json(tmp_path / "r.json")
    res = await s.cmd("-tuidbg-pystack --native all")
    assert res.get("status") == "ok" and res.get("python") == "3.11.2"
    threads = res.get("threads")
    main = next(t for t in threads if int(t["lwp"]) == rec["main"]["native_id"])
    got = [[f["func"], f["file"], int(f["line"])] for f in reversed(main["frames"])]
    assert got == rec["main"]["frames"]
    assert all("native-level" in f for f in main["frames"])
    res = await s.cmd(f"-tuidbg-pylocals --tid {main['id']} --index 0")
    locs = {v["name"]: v for v in res.get("locals")}
    assert locs["an_int"]["value"] == "7" and locs["an_int"]["type"] == "int"
    # errors
    from tuidbg.engine.errors import MIError

    with pytest.raises(MIError, match="unknown argument '--bogus'"):
        await s.cmd("-tuidbg-pystack --bogus")
    with pytest.raises(MIError, match="--max needs a number"):
        await s.cmd("-tuidbg-pystack --max lots")
    res = await s.cmd(f"-tuidbg-pylocals --tid {main['id']} --index 99")
    assert res.get("status") == "error" and "no frame 99" in res.get("reason")
    res = await s.cmd("-tuidbg-pylocals --tid 999 --index 0")
    assert res.get("status") == "error" and "runs no Python code" in res.get("reason")
    # the console command (old gdb): readable text, and errors without a Python traceback
    out = (await s.console("tuidbg-pystack --thread 1")).all_text()
    assert "stop_here (" in out and "Traceback" not in out
    bad = await s.cmd('-interpreter-exec console "tuidbg-pystack --native"', check=False)
    assert bad.cls == "error" and "--native needs a value" in bad.get("msg") and "Traceback" not in bad.all_text()


async def test_plain_c_program_is_walked_once(make_session, threads_prog):
    """A program without Python costs one probe at the first stop, none at the next ones."""
    from helpers import PROGRAMS

    s = await make_session(mode="run", program=str(threads_prog))
    ext = next(e for e in s.extensions if isinstance(e, P.PystackExtension))
    src = PROGRAMS / "threads.c"
    await s.break_insert(file=str(src), line=line_of(src, "main_call"))
    await s.launch()
    st = await wait_stopped(s)
    assert st.python.stack is None
    assert ext.walks == 1
    for _ in range(3):
        await s.next()
        st = await wait_stopped(s)
        assert st.process is ProcessState.STOPPED
        assert st.python.stack is None
    assert ext.walks == 1
    # no Python: the merged stack is the native stack
    rows = M.merged_stack(st)
    assert [r.kind for r in rows] == ["native"] * len(st.frames)


async def test_selecting_a_thread_places_its_frames(make_session, build_dir, tmp_path):
    """After a stop only the stopped thread's Python frames are placed; selecting another places its."""
    interp = resolve("debian-3.11", build_dir)
    s, st = await _start_trap(make_session, interp, tmp_path / "r.json")
    rec = read_json(tmp_path / "r.json")
    worker = thread_with_lwp(st.python.stack, rec["worker"]["native_id"])
    assert worker.merge == "not-requested" and all(f.native_level is None for f in worker.frames)
    await s.select_thread(worker.tid)
    await s.wait_refreshed()
    w2 = s.state.python.stack.thread(worker.tid)
    assert w2.merge == "anchor" and all(f.native_level is not None for f in w2.frames)
    rows = M.merged_stack(s.state)
    assert [r.python.function for r in rows if r.kind == "python"] == [f.function for f in w2.frames]


def test_line_tables_decode_like_the_interpreter():
    """The 3.11+ location-table decoder against this interpreter's own co_lines()."""
    import sys

    from tuidbg.gdbext import cpython_walk as W

    if sys.version_info < (3, 11):
        pytest.skip("the Python running the tests is older than 3.11 (no location tables)")
    src = (PY_PROGRAMS / "trap.py").read_text()
    codes = [compile(src, "trap.py", "exec")]
    seen = 0
    while codes:
        co = codes.pop()
        codes.extend(c for c in co.co_consts if hasattr(c, "co_lines"))
        ranges = W.line_ranges("locations", bytearray(co.co_linetable), co.co_firstlineno)
        for start, end, line in co.co_lines():
            for off in range(start, end, 2):
                assert W.line_at(ranges, off) == line, (co.co_name, off)
                seen += 1
    assert seen > 100


@pytest.mark.parametrize("minor", ["3.8", "3.7"])
async def test_older_python_is_reported_unsupported(make_session, tmp_path, minor):
    from helpers import pyenv_python

    exe = pyenv_python(minor)
    if exe is None:
        pytest.skip(f"pyenv has no CPython {minor} on this machine")
    prog = tmp_path / "p.py"
    prog.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGTRAP)\n")
    s = await make_session(mode="run", program=str(exe), args=[str(prog)])
    await s.launch()
    st = await wait_stopped(s, 60)
    ps = st.python.stack
    assert ps is not None and not ps.ok
    assert ps.reason == f"unsupported Python {minor}: tuidbg reads CPython 3.9 to 3.14"
    rows = M.merged_stack(st, folded=False)  # the native stack still shows
    assert rows and all(r.kind == "native" for r in rows)
