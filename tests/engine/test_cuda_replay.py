"""CUDA states from replayed cuda-gdb MI transcripts (tests/data/cuda-replay/, all synthesized: see their headers).

The replay is strict: every command the engine sends must be the next one the
transcript recorded, argument for argument, so these tests also pin down what
tuidbg sends (no ``--thread`` while the focus is on the device, bounded filters).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest
from helpers import DATA, wait_for, wait_stopped

from tuidbg.engine import cuda, cuda_model
from tuidbg.engine.cuda import CudaError, CudaExtension, Dim3
from tuidbg.engine.state import ProcessState

REPLAY = DATA / "cuda-replay"
SRC = "/home/user/proj/vecadd.cu"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"cuda_{name}", REPLAY / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


StrictReplay = _load("cuda_replay").CudaReplay


async def replay(make_session, name: str, program: str = "/home/user/proj/vecadd", text: str | None = None, **kw):
    tr = StrictReplay(text if text is not None else (REPLAY / name).read_text())
    kw.setdefault("load_gdbext", False)
    s = await make_session(start=False, transport=tr, mode="run", program=program, gdb="cuda-gdb", **kw)
    s.extensions = [CudaExtension(s.config)]
    await s.start()
    return s, tr


def device_commands_without_thread(tr: StrictReplay, allowed: tuple[str, ...] = ()) -> list[str]:
    return [c for c in tr.sent if "--thread" in c and not c.startswith(allowed)]


# ---------------------------------------------------------------------------------------------


async def test_kernel_breakpoint_focus_blocks_threads_warp_watch_12x(make_session):
    s, tr = await replay(make_session, "kernel_bp_12x.mi.txt")
    ext = cuda.get(s)
    caps = ext.caps
    assert caps.cuda_version == (12, 8) and caps.gdb_version == (13, 2)
    assert caps.has("cuda-info-launch-children") and caps.has("cuda-info-line") and not caps.has("cuda-info-barriers")
    assert caps.order is cuda.LogicalOrder.X_FASTEST
    assert caps.has_python and not caps.python_none_broken and not caps.workaround_applied
    assert "memcheck" not in caps.options  # removed in 12.8
    assert not s.cuda_workaround_applied
    assert cuda.snapshot(s.state).settings.get("api_failures") == "ignore"

    settings = await ext.set_option("api_failures", "stop")
    assert settings.get("api_failures") == "stop" and settings.get("break_on_launch") == "none"
    assert cuda.snapshot(s.state).settings.get("api_failures") == "stop"
    with pytest.raises(CudaError, match="memcheck"):
        await ext.set_option("memcheck", "on")
    with pytest.raises(CudaError, match="not one of"):
        await ext.set_option("api_failures", "sometimes")

    bp = await s.break_insert(function="vecAdd")
    view = ext.breakpoint_view(bp.number)
    assert view.pending_on_device and view.shown == () and [loc.number for loc in view.hidden_stubs] == ["1.1"]

    await s.launch()
    st = await wait_stopped(s)
    snap = cuda.snapshot(st)
    assert snap.loaded and snap.stop_kind == cuda.STOP_BREAKPOINT and snap.bkptno == "1.2"
    f = snap.focus
    assert (f.kernel, f.block, f.thread, f.device, f.sm, f.warp, f.lane) == (0, Dim3(0, 0, 0), Dim3(0, 0, 0), 0, 0, 0, 0)
    assert cuda.device_focus(st) and st.cuda.focus == f
    # the refresh listed device frames and locals without --thread
    assert st.frames[0].arch == "m68k" and st.frames[0].line == 8 and cuda.is_device_frame(st.frames[0])
    assert {"a", "b", "c", "n", "i"} <= {v.name for v in st.locals}
    # device tables
    (dev,) = snap.devices
    assert dev.name == "NVIDIA A100-SXM4-80GB" and dev.num_sms == 108 and dev.active_sms == (0, 2) and dev.current
    (k,) = snap.kernels
    assert (k.kernel, k.name, k.grid_dim, k.block_dim, k.status, k.parent) == (0, "vecAdd", Dim3(2, 1, 1), Dim3(64, 1, 1), "Active", None)
    assert k.launch == "vecAdd<<<(2,1,1),(64,1,1)>>>" and k.total_threads == 128
    assert snap.kernel == 0 and snap.threads_mode == "full"
    (blk,) = snap.blocks
    assert (blk.first, blk.last, blk.count, blk.current) == (Dim3(0), Dim3(1), 2, True)
    assert len(snap.threads) == 1 and snap.threads.total_threads == 128
    r = snap.threads[0]
    assert (r.count, r.pc, r.line, r.filename, r.current) == (128, 0x7FFFD727D1F0, 8, SRC, True)
    assert len(snap.lanes) == 32 and snap.focused_lane.lane == 0
    # after the module load, the kernel breakpoint shows its device location only
    view = ext.breakpoint_view(bp.number)
    assert [loc.number for loc in view.shown] == ["1.2"] and view.source_lines() == [(SRC, 8)]
    assert not view.pending_on_device

    # focus switch, 12.x shape: CudaFocus + frame
    sw = await ext.switch_focus("block (1,0,0) thread (3,0,0)")
    assert sw.changed and sw.exact and sw.frame is not None and sw.frame.line == 8
    assert (sw.focus.sm, sw.focus.warp, sw.focus.lane, sw.focus.block, sw.focus.thread) == (2, 0, 3, Dim3(1), Dim3(3))
    st = s.state
    assert cuda.focus(st) == sw.focus and cuda.snapshot(st).focus == sw.focus
    assert cuda.snapshot(st).stop_focus == f  # what the stop said stays
    assert st.frames[0].arch == "m68k" and st.selected_frame == 0
    lanes = cuda.snapshot(st).lanes
    assert len(lanes) == 32 and cuda.snapshot(st).focused_lane.lane == 3 and lanes[3].thread == Dim3(3)
    # unchanged: 12.x repeats the focus without a frame; nothing else is sent
    sent_before = len(tr.sent)
    sw2 = await ext.switch_focus("block (1,0,0) thread (3,0,0)")
    assert not sw2.changed and sw2.focus == sw.focus and len(tr.sent) == sent_before + 1
    with pytest.raises(CudaError, match="Invalid coordinates requested"):
        await ext.switch_focus("block (5,0,0)")
    assert cuda.focus(s.state) == sw.focus
    assert await ext.query_focus() == sw.focus

    # uncoalesced blocks: the coalescing setting is switched off and restored
    blocks = await ext.fetch_blocks(0, coalesced=False)
    assert [(b.first, b.sm, b.current) for b in blocks] == [(Dim3(0), 0, False), (Dim3(1), 2, True)]
    # one block's threads, one request, with their physical coordinates
    rows = await ext.expand_block(0, Dim3(1, 0, 0))
    assert len(rows) == 64 and not rows.coalesced and rows.total_threads == 64
    t35 = rows[35]
    assert (t35.first_thread, t35.sm, t35.warp, t35.lane, t35.line, t35.single) == (Dim3(35), 2, 1, 3, 8, True)
    assert rows.current_index == 3
    half = await ext.expand_block(0, Dim3(1, 0, 0), first=Dim3(32), last=Dim3(63))  # cached: no request
    assert [x.first_thread.x for x in half] == list(range(32, 64))
    pieces = ext.block_pieces(snap.threads[0], 0, 10)
    assert [(p.first_block, p.first_thread, p.last_thread, p.count) for p in pieces] == [
        (Dim3(0), Dim3(0), Dim3(63), 64),
        (Dim3(1), Dim3(0), Dim3(63), 64),
    ]
    assert ext.block_piece_count(snap.threads[0]) == 2

    # a host thread: the device focus goes, frames are the host thread's; then back
    await ext.select_host_thread("2")
    st = s.state
    assert not cuda.device_focus(st) and cuda.snapshot(st).focus is None
    assert st.selected_thread == "2" and st.frames[0].func == "poll"
    sw3 = await ext.restore_device_focus()
    assert sw3.focus == sw.focus and cuda.device_focus(s.state) and s.state.frames[0].arch == "m68k"
    # the launching thread's host stack, keeping the device focus
    host = await ext.host_frames("1")
    assert [fr.func for fr in host][-2:] == ["vecAdd", "main"] and host[-1].line == 25
    assert cuda.focus(s.state) == sw.focus

    # step the focused warp: three ranges now, the current one is block 1's first warp at line 9
    await s.next()
    st = await wait_stopped(s)
    snap = cuda.snapshot(st)
    assert snap.stop_kind == cuda.STOP_STEP and snap.focus.thread == Dim3(3) and st.frames[0].line == 9
    th = snap.threads
    assert [(x.first_block, x.first_thread, x.count, x.line) for x in th] == [
        (Dim3(0), Dim3(0), 64, 8),
        (Dim3(1), Dim3(0), 32, 9),
        (Dim3(1), Dim3(32), 32, 8),
    ]
    assert th.current_index == 1
    assert [(s_[2], s_[3]) for s_ in th.summary()] == [(8, 96), (9, 32)]
    assert th.with_focus(cuda.CudaFocus(kernel=0, block=Dim3(1), thread=Dim3(40))).current_index == 2

    # warp watch: every lane's i, the focus is restored
    watch = await ext.warp_watch("i")
    assert watch.restored and len(watch.lanes) == 32
    assert [lv.value for lv in watch.lanes] == [str(64 + n) for n in range(32)]
    assert watch.value(3).value == "67" and watch.distinct_values == 32
    assert s.state.cuda.warp_watch == watch
    assert cuda.focus(s.state).lane == 3

    await s.cont()
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 10, "exit")
    assert not cuda.device_focus(s.state) and cuda.snapshot(s.state).focus is None
    # --thread only where a host thread was asked for on purpose
    assert device_commands_without_thread(tr) == [
        "-stack-list-frames --thread 2 0 64",
        "-stack-list-variables --thread 2 --frame 0 --skip-unavailable --simple-values",
        "-stack-list-frames --thread 1 0 63",
    ]
    assert tr.mismatches == [] and tr.finished


async def test_kernel_breakpoint_and_focus_118_bare_strings(make_session):
    s, tr = await replay(make_session, "kernel_bp_118.mi.txt")
    ext = cuda.get(s)
    caps = ext.caps
    assert caps.cuda_version == (11, 8) and caps.gdb_version == (10, 2)
    assert caps.python_none_broken and caps.workaround_applied and s.cuda_workaround_applied
    assert not caps.has("cuda-info-launch-children") and caps.has("cuda-info-launch-trace")
    assert caps.order is cuda.LogicalOrder.Z_FASTEST
    assert ext.settings.get("memcheck") == "auto"
    assert [c for c in tr.sent if c.startswith("-interpreter-exec")][1:] == [
        '-interpreter-exec console "set python print-stack none"',
        '-interpreter-exec console "python del gdb._execute_unwinders"',
        '-interpreter-exec console "python gdb.pretty_printers.clear()"',
    ]
    bp = await s.break_insert(function="vecAdd")
    assert ext.breakpoint_view(bp.number).pending_on_device
    await s.launch()
    st = await wait_stopped(s)  # BFD noise on stdout on the way
    snap = cuda.snapshot(st)
    assert snap.stop_kind == cuda.STOP_BREAKPOINT and snap.bkptno == "1"
    assert snap.threads[0].pc == 0x7FFFD727D1F0 and snap.threads.total_threads == 128  # 11.8 headers, same columns
    assert snap.devices[0].active_sms == (0, 2)  # 64-hex-digit mask

    sw = await ext.switch_focus(kernel=0, block=(1, 0, 0), thread=(3, 0, 0))
    assert sw.changed and sw.focus.sm == 2 and sw.focus.lane == 3
    sw2 = await ext.switch_focus(kernel=0, block=(1, 0, 0), thread=(3, 0, 0))  # ^done,"CUDA focus unchanged.\n"
    assert not sw2.changed and sw2.focus == sw.focus
    q = await ext.query_focus()  # ^done,"kernel 0, grid 1, block (1,0,0), ..."
    assert q == sw.focus
    with pytest.raises(CudaError, match="Request cannot be satisfied"):
        await ext.switch_focus("block (1,0,0) thread (70,0,0)")
    with pytest.raises(CudaError, match="Invalid coordinates"):
        await ext.switch_focus("device 0 sm 7")
    await ext.select_host_thread("2")
    assert await ext.query_focus() is None  # ^done,"Focus is not set on any active CUDA kernel.\n"
    await ext.restore_device_focus()
    assert cuda.focus(s.state) == sw.focus and s.state.frames[0].arch == "m68k"
    await s.cont()
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 10, "exit")
    assert tr.mismatches == [] and tr.finished


async def test_exception_stop_with_fields_12x(make_session):
    s, tr = await replay(make_session, "exception_12x.mi.txt")
    await s.launch()
    st = await wait_stopped(s)
    snap = cuda.snapshot(st)
    assert snap.stop_kind == cuda.STOP_EXCEPTION
    e = snap.exception
    assert (e.signal, e.code, e.name, e.scope) == ("CUDA_EXCEPTION_14", 14, "Warp Illegal Address", "warp")
    assert (e.pc, e.function, e.filename, e.line) == (0x7FFFD727D390, "vecAdd(int const*, int const*, int*, int)", "vecadd.cu", 11)
    assert e.precise and e.from_stop_fields and e.errorpc is None
    assert e.focus.block == Dim3(1) and e.focus.thread == Dim3(32) and e.focus.warp == 1
    assert e.lanes == tuple(range(32))  # from the lanes table's exception column
    assert "Warp Illegal Address" in e.describe() and "vecadd.cu:11" in e.describe()
    assert st.frames[0].line == 11 and snap.focused_lane.exception == "Warp Illegal Address"
    assert "$errorpc" not in " ".join(tr.sent)
    await s.cont()
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 10, "exit")
    assert s.state.exit_code == 1
    assert tr.mismatches == [] and tr.finished


async def test_exception_stop_without_fields_falls_back_118(make_session):
    s, tr = await replay(make_session, "exception_118_fallback.mi.txt")
    await s.launch()
    st = await wait_stopped(s)
    snap = cuda.snapshot(st)
    e = snap.exception
    assert snap.stop_kind == cuda.STOP_EXCEPTION and not e.from_stop_fields
    assert e.name == "Warp Illegal Address" and e.scope == "warp"  # signal-meaning, then the lanes table
    assert e.pc == 0x7FFFD727D390 and e.function == "vecAdd(int const*, int const*, int*, int)+656"
    assert e.errorpc.startswith("(void (*)(void)) 0x7fffd727d390")
    assert e.lanes == tuple(range(32))
    await s.cont()
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 10, "exit")
    assert tr.mismatches == [] and tr.finished


async def test_break_on_launch_stop_is_a_kernel_entry_12x(make_session):
    s, tr = await replay(make_session, "break_on_launch_12x.mi.txt")
    ext = cuda.get(s)
    settings = await ext.set_option("break_on_launch", "application")
    assert settings.get("break_on_launch") == "application"
    await s.launch()
    st = await wait_stopped(s)
    snap = cuda.snapshot(st)
    assert snap.stop_kind == cuda.STOP_KERNEL_ENTRY and snap.kernel_entry and snap.bkptno is None
    assert snap.focus.thread == Dim3(0) and st.frames[0].line == 7
    assert snap.threads[0].line == 7 and snap.threads[0].count == 128
    await s.cont()
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 10, "exit")
    assert tr.mismatches == [] and tr.finished


async def test_cuda_gdb_minimal_without_python(make_session):
    # load_gdbext=True: the session must not try to load it, there is no Python
    s, tr = await replay(make_session, "minimal_no_python_12x.mi.txt", program="/home/user/proj/hello", load_gdbext=True)
    ext = cuda.get(s)
    assert ext.caps.minimal and not ext.caps.has_python and not s.gdbext_loaded
    assert not any("python" in c for c in tr.sent)
    bp = await s.break_insert(function="add")
    await s.launch()
    st = await wait_stopped(s)
    snap = cuda.snapshot(st)
    assert snap.stop_kind == cuda.STOP_HOST and snap.focus is None and snap.kernels == () and snap.devices == ()
    assert st.stop.bkptno == bp.number and [f.func for f in st.frames] == ["add", "main"]
    assert {v.name for v in st.locals} == {"a", "b"}
    assert await ext.query_focus() is None  # 12.x: plain ^done
    with pytest.raises(CudaError, match="device thread"):
        await ext.warp_watch("a")
    await s.cont()
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 10, "exit")
    assert tr.mismatches == [] and tr.finished


async def test_million_thread_grid_ranges_focus_and_per_block_mode(make_session):
    grid = _load("make_grid")
    text = grid.generate(resident=1056, second_stop=True)
    s, tr = await replay(make_session, "", program="/home/user/proj/scale", text=text)
    ext = cuda.get(s)
    ext.auto_rows_limit = 2000  # this kernel's table (4,808 ranges) is over it: later stops go per block
    await s.break_insert(file="/home/user/proj/scale.cu", line=19)
    await s.launch()
    st = await wait_stopped(s)
    snap = cuda.snapshot(st)
    (k,) = snap.kernels
    assert k.total_threads == 1 << 20 and k.grid_dim == Dim3(4096, 1, 1)
    (blk,) = snap.blocks
    assert (blk.first, blk.last, blk.count) == (Dim3(2048), Dim3(3103), 1056)
    assert ext.blocks_page(blk, 1000, 100) == tuple(Dim3(2048 + i) for i in range(1000, 1056))
    th = snap.threads
    g = grid.Grid(1056)
    expected = g.ranges(grid.FIRST_STOP)
    assert len(th) == len(expected) == 4808 and th.total_threads == 1056 * 256
    assert th.order is cuda.LogicalOrder.X_FASTEST
    # the current range holds the focus; pages are converted on demand
    cur = th.current
    assert cur.first_block == Dim3(2051) and cur.line == 19 and cur.count == 256
    page = th.page(2000, 50)
    assert len(page) == 50 and all(r.count > 0 for r in page)
    assert [(r.first_block.x, r.first_thread.x, r.count, r.line) for r in th[:3]] == [
        (int(e[2][1:].split(",")[0]), int(e[3][1:].split(",")[0]), int(e[6]), int(e[9])) for e in expected[:3]
    ]
    # the thread lies in the range the table says, found by bisection
    assert th.locate(Dim3(3000), Dim3(77)) is not None
    i = th.locate(Dim3(3000), Dim3(77))
    r = th[i]
    assert r.first_block <= Dim3(3000) <= r.last_block and r.line == g.line(3000, 77)
    assert sum(n for *_, n, _r in th.summary()) == th.total_threads

    sw = await ext.switch_focus("block (3000,0,0) thread (77,0,0)")
    assert (sw.focus.sm, sw.focus.warp, sw.focus.lane) == g.place(3000, 77)[:3]
    th2 = cuda.snapshot(s.state).threads
    assert th2.current_index == i and th2[i].current and not th2[th.current_index].current
    rows = await ext.expand_block(0, Dim3(3000))
    assert len(rows) == 256 and rows.current_index == 77
    assert [r.line for r in rows] == [g.line(3000, t) for t in range(256)]

    # the next stop: the table was too big, so the threads are read per block
    await s.cont()
    st = await wait_stopped(s)
    snap = cuda.snapshot(st)
    assert snap.threads is None and snap.threads_mode == "per-block" and 0 in ext.per_block_kernels
    assert snap.focus.block == Dim3(2056)
    one = await ext.fetch_threads(0, block=Dim3(2056))
    assert len(one) == 1 and one[0].count == 256 and one.current_index == 0
    await s.cont()
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 10, "exit")
    assert "-cuda-info-threads kernel 0" in tr.sent and tr.sent.count("-cuda-info-threads kernel 0") == 1
    assert tr.mismatches == [] and tr.finished


# ---------------------------------------------------------------------------------------------
# The transcripts themselves


def _load_generator():
    return _load("make_transcripts")


def test_transcripts_are_up_to_date_with_their_generator():
    res = subprocess.run([sys.executable, str(REPLAY / "make_transcripts.py"), "--check"], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize(
    "path",
    sorted(DATA.glob("cuda-*/*.mi.txt")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_every_cuda_transcript_says_where_it_came_from(path):
    _check_header(path.read_text())


def test_generated_grid_transcripts_say_where_they_came_from():
    grid = _load("make_grid")
    _check_header(grid.generate(resident=64))
    assert "STRESS VARIANT" in grid.generate(resident=4096).split("=thread-group-added", 1)[0]


def _check_header(text: str) -> None:
    head = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        head.append(line)
    assert head, "the transcript does not start with # comment lines"
    text = " ".join(head).lower()
    assert "captured" in text or "synthesized" in text
    # a release ("cuda-gdb 11.8") or, for a synthesized reply that follows a major version's shapes, "12.x"
    assert re.search(r"cuda-gdb \d+\.(\d+|x)\b", text), "the header names the cuda-gdb version it mimics"


def test_13x_tables_parse_by_column_name():
    gen = _load_generator()
    from tuidbg.engine.mi import parse_line

    k = dict(gen.vecadd_kernel(gen.P13, True))
    line = "^done," + gen.kernels(gen.P13, [k])
    rec = parse_line(line)
    (kern,) = cuda_model.rows(rec.payload, cuda.CudaKernel, "KernelsTable")
    assert kern.parent is None and kern.grid_dim == Dim3(2, 1, 1) and kern.name == "vecAdd"
    tbl = cuda.parse_table(rec.payload)
    assert "parent" not in tbl.columns and len(tbl.columns) == 9
    rows = gen.coalesce(gen.P13, (0, 0), lambda b, t: gen.thread_pc(False, b, t))
    rec = parse_line("^done," + gen.threads_coalesced(gen.P13, rows))
    tbl = cuda.parse_table(rec.payload, "ThreadsTable")
    assert tbl.headers[tbl.columns.index("to_threadIdx")] == "ThreadIdx"  # 13.x header, same col_name
    tr = cuda.ThreadRanges.from_table(tbl, kernel=0, grid_dim=Dim3(2, 1, 1), block_dim=Dim3(64, 1, 1))
    assert tr[0].last_thread == Dim3(63) and tr.total_threads == 128
