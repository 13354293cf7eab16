"""The CUDA pane driven with Pilot on replayed cuda-gdb sessions (no GPU here).

The sessions are the engine's replay transcripts (tests/data/cuda-replay/, all
SYNTHESIZED from cuda-gdb's source, see their headers) and three made here with
the same generators for what the pane asks in the order a user at the keyboard
makes it ask (``vecadd_ui`` and ``grid_watch_ui`` below: also SYNTHESIZED, 12.8
and 11.8 shapes). The replay is strict: every command the pane makes the engine
send must be the next one recorded, so these tests also pin down that expanding
a row is one bounded request and that a focus switch sends no ``--thread``.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys

import pytest
from conftest import requires_gdb
from helpers import DATA, PROGRAMS
from ui_helpers import until, until_shown
from textual.app import App
from textual.message import Message
from textual.widgets import TabbedContent

from tuidbg.engine import cuda
from tuidbg.engine.cuda import CudaExtension, Dim3
from tuidbg.engine.state import ProcessState
from tuidbg.ui.bridge import SessionBridge  # noqa: E402
from tuidbg.ui.panes.cuda import CudaInput, CudaPane, CudaRows, fmt_ints

REPLAY = DATA / "cuda-replay"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"cuda_{name}", REPLAY / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


GRID = _load("make_grid")
MT = sys.modules["make_transcripts"]  # the generator make_grid builds on
StrictReplay = _load("cuda_replay").CudaReplay


# ---------------------------------------------------------------------------------------------
# Transcripts for the pane (SYNTHESIZED with the engine's generators; see the module docstring)


def sms_table(rows: list[tuple[str, str, str]]) -> str:
    cols = [("current", " ", "1"), ("sm", "SM", "1"), ("active_warps_mask", "Active Warps Mask", "1")]
    return MT.table("InfoCudaSmsTable", "InfoCudaSmsRow", cols, [list(r) for r in rows])


def warps_table(p, rows: list[list[str]]) -> str:
    cols = [
        ("current", " ", "1"),
        ("warp", "Wp", "1"),
        ("active_lanes_mask", "Active Lanes Mask", "1"),
        ("divergent_lanes_mask", "Divergent Lanes Mask", "1"),
        ("active_physical_pc", p.colhdr("active_physical_pc", "Active PC"), "1"),
        ("kernel", "Kernel", "1"),
        ("blockIdx", "BlockIdx", "1"),
        ("threadIdx", "First Active ThreadIdx", "1"),
    ]
    return MT.table("InfoCudaWarpsTable", "InfoCudaWarpsRow", cols, rows)


def frames_reply(frame: dict) -> str:
    return MT.done({"stack": MT.Raw("[frame=" + MT.mi_value(frame) + "]")})


def vecadd_stopped(p, what: str, maker: str):
    """Start-up, a toggle, and vecAdd<<<2,64>>> stopped at its kernel breakpoint, refreshed."""
    t = MT.T(MT.header(what, p, [f"Made by tests/ui/test_ui_cuda.py ({maker}) with tests/data/cuda-replay/make_transcripts.py."]))
    MT.startup(t, p)
    if p.key == "118":  # M cycles memcheck: auto -> on
        t.cmd("-gdb-set cuda memcheck on", MT.done())
        new = {"break_on_launch": "none", "api_failures": "ignore", "memcheck": "on"}
    else:  # A cycles api_failures: ignore -> stop
        t.cmd("-gdb-set cuda api_failures stop", MT.done())
        new = {"break_on_launch": "none", "api_failures": "stop"}
    for name, value in new.items():
        t.cmd(f"-gdb-show cuda {name}", MT.done({"value": value}))
    MT.break_vecadd(t, p)
    stop = {"CudaFocus": MT.focus_of(0, 0), "reason": "breakpoint-hit", "disp": "keep", "bkptno": "1"}
    if p.locno:
        stop["locno"] = "2"
    stop["frame"] = MT.dframe(MT.PC_L8, 8)
    stop.update(MT.host_tail())
    hit = (
        "CUDA thread hit Breakpoint 1.2, "
        if p.key != "118"
        else 'Thread 1 "vecadd" hit Breakpoint 1, '
    ) + f"vecAdd<<<(2,1,1),(64,1,1)>>> ({MT.INVOCATION[7:-1]}) at vecadd.cu:8\n"
    t.cmd(
        "-exec-run",
        *MT.run_preamble(p),
        "=breakpoint-modified," + MT.results({"bkpt": MT.bkpt_with_device(0)}),
        "=breakpoint-modified," + MT.results({"bkpt": MT.bkpt_with_device(1)}),
        MT.console("\n"),
        MT.console(hit),
        MT.console(f"8\t{MT.LINES[8]}\n"),
        MT.stop_line(p, stop),
        MT.PROMPT,
    )
    MT.refresh_host(t, [MT.dframe(MT.PC_L8, 8, args=False, level=0)], MT.locals_at(8, "0"))
    MT.refresh_cuda(t, p, focus=(0, 0))
    return t


def vecadd_ui(p) -> str:
    """vecAdd<<<2,64>>> stopped at a kernel breakpoint, then what the keyboard does in the tests below."""
    t = vecadd_stopped(
        p,
        "the CUDA pane driven from the keyboard: toggle, kernel breakpoint, range -> block -> threads, "
        "focus switches and their errors, a filter, device -> SM -> warp -> lane",
        "vecadd_ui",
    )
    t.cmd("-gdb-show cuda coalescing", MT.done({"value": "auto"}))
    t.cmd("-gdb-set cuda coalescing off", MT.done())
    rows = [[" ", "0", MT.dim(1), MT.dim(th), MT.hex16(MT.PC_L8), "0", "2", str(th // 32), str(th % 32), MT.SRC, "8"] for th in range(64)]
    t.cmd("-cuda-info-threads kernel 0 block (1,0,0)", MT.done(raw=MT.threads_uncoalesced(p, rows)))
    t.cmd("-gdb-set cuda coalescing auto", MT.done())
    # enter on thread (3,0,0) of block 1
    t.cmd("-cuda-focus-switch kernel 0 block (1,0,0) thread (3,0,0)", MT.switch_reply(p, 1, 3, 8, MT.PC_L8))
    t.cmd("-stack-list-frames 0 64", frames_reply(MT.dframe(MT.PC_L8, 8, args=False, level=0)))
    t.cmd("-stack-list-variables --skip-unavailable --simple-values", MT.done({"variables": MT.locals_at(8, "67")}))
    t.cmd("-cuda-info-lanes device 0 sm 2 warp 0", MT.done(raw=MT.lanes(p, 1, 0, MT.PC_L8, 3)))
    # enter on it again: unchanged (12.x: the focus without a frame; 11.x: a bare string)
    if p.key == "118":
        t.cmd("-cuda-focus-switch kernel 0 block (1,0,0) thread (3,0,0)", '^done,"CUDA focus unchanged.\\n"')
        t.cmd("-cuda-focus-switch block (1,0,0) thread (70,0,0)", MT.error("Request cannot be satisfied. CUDA focus unchanged."))
        t.cmd("-cuda-focus-switch block (5,0,0)", MT.error("Invalid coordinates. CUDA focus unchanged."))
        return t.text()
    t.cmd("-cuda-focus-switch kernel 0 block (1,0,0) thread (3,0,0)", MT.switch_reply(p, 1, 3, 8, MT.PC_L8, with_frame=False))
    t.cmd("-cuda-focus-switch block (5,0,0)", MT.error("Invalid coordinates requested. CUDA focus unchanged."))
    # the filter "kernel 0 block (1,0,0)"
    one = [["*", "0", MT.dim(1), MT.dim(0), MT.dim(1), MT.dim(63), "64", MT.hex16(MT.PC_L8), MT.SRC, "8"]]
    t.cmd("-cuda-info-threads kernel 0 block (1,0,0)", MT.done(raw=MT.threads_coalesced(p, one)))
    t.cmd("-cuda-info-blocks kernel 0 block (1,0,0)", MT.done(raw=MT.blocks_coalesced([("*", "0", MT.dim(1), MT.dim(1), "1", "running")])))
    # device 0 -> its SMs -> SM 2's warps -> warp 1's lanes; enter on lane 7
    t.cmd("-cuda-info-sms device 0", MT.done(raw=sms_table([(" ", "0", "0x0000000000000003"), ("*", "2", "0x0000000000000003")])))
    wrows = [
        ["*", "0", "0xffffffff", "0x00000000", MT.hex16(MT.PC_L8), "0", MT.dim(1), MT.dim(0)],
        [" ", "1", "0xffffffff", "0x00000000", MT.hex16(MT.PC_L8), "0", MT.dim(1), MT.dim(32)],
    ]
    t.cmd("-cuda-info-warps device 0 sm 2", MT.done(raw=warps_table(p, wrows)))
    t.cmd("-cuda-info-lanes device 0 sm 2 warp 1", MT.done(raw=MT.lanes(p, 1, 1, MT.PC_L8, None)))
    t.cmd("-cuda-focus-switch device 0 sm 2 warp 1 lane 7", MT.switch_reply(p, 1, 39, 8, MT.PC_L8))
    t.cmd("-stack-list-frames 0 64", frames_reply(MT.dframe(MT.PC_L8, 8, args=False, level=0)))
    t.cmd("-stack-list-variables --skip-unavailable --simple-values", MT.done({"variables": MT.locals_at(8, "103")}))
    # L cycles break_on_launch: none -> application
    t.cmd("-gdb-set cuda break_on_launch application", MT.done())
    t.cmd("-gdb-show cuda break_on_launch", MT.done({"value": "application"}))
    t.cmd("-gdb-show cuda api_failures", MT.done({"value": "stop"}))
    return t.text()


WATCH_AT = (2052, 80)  # block 2052, warp 2 is divergent: lanes 0-15 in slow() (line 4), 16-31 at line 16


def vecadd_host_stack(p) -> str:
    """The kernel breakpoint of vecadd_ui, then h in the C++ pane: the launching host thread's frames."""
    t = vecadd_stopped(p, "the host stack below the device frames (h in the C++ frames pane)", "vecadd_host_stack")
    host = [
        {"level": "0", "addr": "0x00007ffff7d1e9d7", "func": "ioctl", "from": "/lib/x86_64-linux-gnu/libc.so.6", "arch": "i386:x86-64"},
        {"level": "1", "addr": "0x00007ffff5c1a2b3", "func": "??", "from": "/lib/x86_64-linux-gnu/libcuda.so.1", "arch": "i386:x86-64"},
        {"level": "2", "addr": "0x000055555555e3a1", "func": "cudaLaunchKernel", "arch": "i386:x86-64"},
        {"level": "3", "addr": "0x000055555555cd3e", "func": "main", "file": "vecadd.cu", "fullname": MT.SRC, "line": "25", "arch": "i386:x86-64"},
    ]
    t.cmd("-stack-list-frames --thread 1 0 63", MT.done({"stack": MT.Raw("[" + ",".join("frame=" + MT.mi_value(f) for f in host) + "]")}))
    t.cmd("-cuda-focus-switch kernel 0 block (0,0,0) thread (0,0,0)", MT.switch_reply(p, 0, 0, 8, MT.PC_L8))
    # Enter on main: host thread 1 selected (the device focus dropped), then its frame 3
    t.cmd("-thread-select 1", MT.done({"new-thread-id": "1", "frame": host[0]}))
    t.cmd("-stack-list-frames --thread 1 0 64", MT.done({"stack": MT.Raw("[" + ",".join("frame=" + MT.mi_value(f) for f in host) + "]")}))
    t.cmd("-stack-list-variables --thread 1 --frame 0 --skip-unavailable --simple-values", MT.done({"variables": []}))
    t.cmd("-stack-select-frame --thread 1 3", MT.done())
    t.cmd(
        "-stack-list-variables --thread 1 --frame 3 --skip-unavailable --simple-values",
        MT.done({"variables": [{"name": "n", "type": "int", "value": "128"}]}),
    )
    return t.text()


def grid_watch_ui() -> str:
    """The 1M-thread grid's stop, then a switch to a divergent warp and a warp watch of ``v``."""
    g = GRID.Grid(1056)
    text = GRID.generate(resident=1056)
    lines = text.splitlines()
    cut = next(i for i, ln in enumerate(lines) if re.match(r"^-> \d+-cuda-focus-switch", ln))
    lines[0] = "# SYNTHESIZED, not captured: tests/ui/test_ui_cuda.py (grid_watch_ui) from make_grid.py; mimics cuda-gdb 12.8."
    t = MT.T([])
    b, th = WATCH_AT
    sm, warp, lane, _ = g.place(b, th)
    t.cmd(f"-cuda-focus-switch block ({b},0,0) thread ({th},0,0)", MT.done({"CudaFocus": GRID.focus_of(g, b, th), "frame": GRID.frame(g.line(b, th))}))
    t.cmd("-stack-list-frames 0 64", frames_reply(GRID.frame(g.line(b, th), level=0, args=False)))
    t.cmd("-stack-list-variables --skip-unavailable --simple-values", MT.done({"variables": GRID.LOCALS}))
    t.cmd(f"-cuda-info-lanes device 0 sm {sm} warp {warp}", MT.done(raw=GRID.lanes_of(g, b, th)))
    base = th - lane

    def value(ln: int) -> str:
        if g.line(b, base + ln) == 4:
            return MT.error('No symbol "v" in current context.')
        return MT.done({"value": f"{(base + ln) / 4}"})

    t.cmd('-data-evaluate-expression "v"', value(lane))
    for ln in range(32):
        if ln == lane:
            continue
        t.cmd(
            f"-cuda-focus-switch device 0 sm {sm} warp {warp} lane {ln}",
            MT.done({"CudaFocus": GRID.focus_of(g, b, base + ln), "frame": GRID.frame(g.line(b, base + ln))}),
        )
        t.cmd('-data-evaluate-expression "v"', value(ln))
    t.cmd(f"-cuda-focus-switch device 0 sm {sm} warp {warp} lane {lane}", MT.done({"CudaFocus": GRID.focus_of(g, b, th), "frame": GRID.frame(g.line(b, th))}))
    return "\n".join(lines[:cut]) + "\n" + t.text()


# ---------------------------------------------------------------------------------------------
# Harness


class StateChanged(Message):
    pass


class PaneApp(App):
    """The pane alone, fed the session's states the way TuidbgApp feeds its panes."""

    def __init__(self, session) -> None:
        super().__init__()
        self.session = session

    def compose(self):
        pane = CudaPane(id="cuda")
        pane.source = SessionBridge(self.session)
        yield pane

    def on_mount(self) -> None:
        self.session.on_state(lambda st: self.post_message(StateChanged()))
        pane = self.query_one(CudaPane)
        pane.update_state(self.session.state)
        pane.focus()

    def on_state_changed(self, message: StateChanged) -> None:
        self.query_one(CudaPane).update_state(self.session.state)


async def replay_session(make_session, text: str, program: str = "/home/user/proj/vecadd", **kw):
    tr = StrictReplay(text)
    kw.setdefault("load_gdbext", False)
    s = await make_session(start=False, transport=tr, mode="run", program=program, gdb="cuda-gdb", **kw)
    s.extensions = [CudaExtension(s.config)]
    await s.start()
    return s, tr


async def vecadd_in_app(make_session, text: str):
    """The whole TuidbgApp on a vecadd transcript: the toggle and the kernel breakpoint set, as the
    transcript has them before the run."""
    from tuidbg.ui.app import TuidbgApp

    s, tr = await replay_session(make_session, text)
    await cuda.get(s).set_option("api_failures", "stop")
    await s.break_insert(function="vecAdd")
    return s, tr, TuidbgApp(s)


async def settle(pilot, session=None) -> None:
    app = pilot.app
    for _ in range(3):
        if session is not None:
            await session.wait_refreshed()
        await app.workers.wait_for_complete()
        await pilot.pause()


async def stopped(pilot, session) -> None:
    """Launch the program and wait until the stop and its CUDA tables are on screen."""
    await session.launch()
    await until(pilot, lambda: session.state.process is ProcessState.STOPPED, 30, "the stop")
    await settle(pilot, session)
    snap = cuda.snapshot(session.state)
    assert snap is not None and snap.loaded


def texts(pane: CudaPane) -> list[str]:
    rows = pane.rows
    return [rows.row_text(r) for r in range(rows.row_count)]


def cursor_text(pane: CudaPane) -> str:
    return pane.rows.row_text(pane.rows.cursor)


def header(app) -> str:
    return str(app.query_one("#cuda-header").render())


def bar(app) -> str:
    return str(app.query_one("#cuda-bar").render())


async def type_into(pilot, key: str, text: str) -> None:
    """Open the pane's input line with ``key`` and submit ``text``."""
    await pilot.press(key)
    await pilot.pause()
    inp = pilot.app.query_one(CudaInput)
    assert inp.has_focus
    inp.value = ""
    await pilot.press(*[{" ": "space", "(": "left_parenthesis", ")": "right_parenthesis", ",": "comma"}.get(c, c) for c in text])
    await pilot.press("enter")
    await settle(pilot)


async def goto_row(pilot, r: int) -> None:
    rows = pilot.app.query_one(CudaRows)
    while rows.cursor != r:
        await pilot.press("down" if rows.cursor < r else "up")


def no_thread_option(tr) -> bool:
    return not any("--thread" in c for c in tr.sent)


# ---------------------------------------------------------------------------------------------
# Tests


async def test_kernel_breakpoint_shows_kernels_and_threads_with_focus_then_expand_and_switch_12x(make_session):
    s, tr = await replay_session(make_session, vecadd_ui(MT.P128))
    app = PaneApp(s)
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(CudaPane)
        await settle(pilot)
        assert not pane.has_class("-off")
        # the toggle before the run: api_failures ignore -> stop, read back from cuda-gdb
        assert "A api_failures ignore" in header(app) and "memcheck" not in header(app)  # 12.8 has no memcheck
        await pilot.press("A")
        await settle(pilot)
        assert "api_failures stop" in header(app) and pane.message == "cuda api_failures is now stop"
        await pilot.press("M")
        await settle(pilot)
        assert pane.message_is_error and "no memcheck" in pane.message

        await s.break_insert(function="vecAdd")
        await stopped(pilot, s)
        hdr = header(app)
        assert "breakpoint 1.2" in hdr and "vecAdd<<<(2,1,1),(64,1,1)>>>" in hdr
        assert "focus ▶ kernel 0 block (0,0,0) thread (0,0,0)" in hdr and "device 0 sm 0 warp 0 lane 0" in hdr
        rows = texts(pane)
        assert rows[0].startswith(" ▾ Blocks") and "2 resident blocks" in rows[0]
        assert rows[2].startswith(" ▾ Threads") and "1 range · 128 threads" in rows[2] and "vecadd.cu:8 ×128" in rows[2]
        # the focused range is marked and the cursor is on it
        assert rows[3].startswith("▶") and "128 threads" in rows[3] and "(0,0,0)/(0,0,0) … (1,0,0)/(63,0,0)" in rows[3]
        assert pane.rows.cursor == 3 and pane.rows.focus_row() == 3

        # kernels view
        await pilot.press("k")
        await pilot.pause()
        (krow,) = texts(pane)
        assert krow.startswith("▶") and "kernel 0" in krow and "Active" in krow and "(2,1,1)×(64,1,1) = 128 threads" in krow
        assert "vecAdd(a=0x7fffd1a00000" in krow
        await pilot.press("space")
        await pilot.pause()
        assert any("launch" in r and "vecAdd<<<(2,1,1),(64,1,1)>>>" in r for r in texts(pane))
        assert any("SMs" in r and "0,2" in r for r in texts(pane))

        # back to the ranges: open the range (pieces are computed, no request), then block 1's threads
        await pilot.press("r")
        await pilot.pause()
        assert pane.rows.cursor == 3
        sent = len(tr.sent)
        await pilot.press("space")
        await pilot.pause()
        assert len(tr.sent) == sent
        rows = texts(pane)
        assert "64 threads" in rows[4] and "(0,0,0)/(0,0,0) … (0,0,0)/(63,0,0)" in rows[4] and rows[4].startswith("▶")
        assert "(1,0,0)/(0,0,0) … (1,0,0)/(63,0,0)" in rows[5] and not rows[5].startswith("▶")
        await pilot.press("down", "down", "space")
        await settle(pilot)
        rows = texts(pane)
        assert len(rows) == 6 + 64
        assert "block (1,0,0) thread (3,0,0)  sm 2 warp 0 lane 3  vecadd.cu:8" in rows[9]
        assert tr.sent[-4:] == ["-gdb-show cuda coalescing", "-gdb-set cuda coalescing off", "-cuda-info-threads kernel 0 block (1,0,0)", "-gdb-set cuda coalescing auto"]

        # enter on thread 3 of block 1: cuda-gdb's focus moves, frames and locals follow
        await pilot.press("down", "down", "down", "down")
        assert "thread (3,0,0)" in cursor_text(pane)
        await pilot.press("enter")
        await settle(pilot, s)
        st = s.state
        f = cuda.focus(st)
        assert (f.block, f.thread, f.sm, f.warp, f.lane) == (Dim3(1), Dim3(3), 2, 0, 3)
        assert st.frames[0].arch == "m68k" and cuda.is_device_frame(st.frames[0]) and st.frames[0].line == 8
        assert {v.name: v.value for v in st.locals}["i"] == "67"
        assert pane.message == "focus → kernel 0 block (1,0,0) thread (3,0,0) · device 0 sm 2 warp 0 lane 3"
        assert "focus ▶ kernel 0 block (1,0,0) thread (3,0,0)" in header(app) and "(the stop was in kernel 0 block (0,0,0) thread (0,0,0))" in header(app)
        rows = texts(pane)
        assert rows[9].startswith("▶") and not rows[6].startswith("▶")
        assert rows[5].startswith("▶") and not rows[4].startswith("▶")  # block 1's piece holds the focus now
        assert pane.rows.focus_row() == 9

        # the same again: 12.x answers with the focus only; the pane says so
        await pilot.press("enter")
        await settle(pilot)
        assert pane.message.startswith("focus unchanged: kernel 0 block (1,0,0) thread (3,0,0)")
        # a block that does not exist: cuda-gdb's error, shown (and notified), focus unchanged
        await type_into(pilot, "G", "block (5,0,0)")
        assert pane.message_is_error and pane.message == "focus block (5,0,0): Invalid coordinates requested. CUDA focus unchanged."
        assert cuda.focus(s.state).thread == Dim3(3)
        assert tr.mismatches == [] and no_thread_option(tr)


async def test_filter_validation_filtered_view_and_device_tree_12x(make_session):
    s, tr = await replay_session(make_session, vecadd_ui(MT.P128))
    app = PaneApp(s)
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(CudaPane)
        await settle(pilot)
        await pilot.press("A")
        await settle(pilot)
        await s.break_insert(function="vecAdd")
        await stopped(pilot, s)
        # the engine-level steps the first test makes through the keyboard, replayed directly
        ext = cuda.get(s)
        await ext.expand_block(0, Dim3(1))
        await ext.switch_focus(kernel=0, block=(1, 0, 0), thread=(3, 0, 0))
        await ext.switch_focus(kernel=0, block=(1, 0, 0), thread=(3, 0, 0))
        with pytest.raises(cuda.CudaError):
            await ext.switch_focus("block (5,0,0)")
        await settle(pilot, s)

        # a bad filter: the error is shown, nothing is sent, the input stays open for a fix
        sent = len(tr.sent)
        await type_into(pilot, "i", "kernel x")
        assert pane.message_is_error and pane.message == "filter: 'kernel' needs a number, got 'x'"
        assert app.query_one(CudaInput).has_focus and len(tr.sent) == sent
        app.query_one(CudaInput).value = ""
        await pilot.press(*"block", "space", "1", "space", *"thread")
        await pilot.press("enter")
        await settle(pilot)
        assert pane.message_is_error and "'thread' needs an index like (1,0,0)" in pane.message, (pane.message, app.query_one(CudaInput).value)
        await pilot.press("escape")
        await pilot.pause()
        assert pane.rows.has_focus
        # a good one: cuda-gdb's filtered tables
        await type_into(pilot, "i", "kernel 0 block (1,0,0)")
        assert tr.sent[-2:] == ["-cuda-info-threads kernel 0 block (1,0,0)", "-cuda-info-blocks kernel 0 block (1,0,0)"]
        assert pane.message == "filter kernel 0 block (1,0,0): 1 thread range"
        rows = texts(pane)
        assert "filter kernel 0 block (1,0,0)" in rows[0] and "1 resident blocks" in rows[0]
        assert "64 threads" in rows[3] and rows[3].startswith("▶") and "(1,0,0)/(0,0,0) … (1,0,0)/(63,0,0)" in rows[3]
        assert "back to the blocks and threads of this stop" in rows[-1]
        assert "│ filter kernel 0 block (1,0,0)  (escape clears)" in bar(app)
        await pilot.press("escape")
        await pilot.pause()
        assert "128 threads" in texts(pane)[3] and pane.filter is None and "filter kernel" not in bar(app)

        # device -> SM -> warp -> lane, each level one request when opened
        await pilot.press("D")
        await pilot.pause()
        (drow,) = texts(pane)
        assert drow.startswith("▶") and "NVIDIA A100-SXM4-80GB" in drow and "108 SMs × 64 warps × 32 lanes" in drow and "active SMs 0,2" in drow
        await pilot.press("space")
        await settle(pilot)
        assert tr.sent[-1] == "-cuda-info-sms device 0"
        rows = texts(pane)
        assert "SM 0  active warps 0-1" in rows[1] and rows[2].startswith("▶") and "SM 2" in rows[2]
        await pilot.press("down", "down", "space")
        await settle(pilot)
        assert tr.sent[-1] == "-cuda-info-warps device 0 sm 2"
        rows = texts(pane)
        assert rows[3].startswith("▶") and "warp 0  kernel 0  block (1,0,0)  first thread (0,0,0)  active lanes 0-31" in rows[3]
        assert "warp 1" in rows[4] and "first thread (32,0,0)" in rows[4]
        await pilot.press("down", "down", "space")
        await settle(pilot)
        assert tr.sent[-1] == "-cuda-info-lanes device 0 sm 2 warp 1"
        rows = texts(pane)
        assert len(rows) == 5 + 32 and "lane 7   thread (39,0,0)  active" in rows[12]
        await pilot.press(*["down"] * 8, "enter")
        await settle(pilot, s)
        f = cuda.focus(s.state)
        assert (f.warp, f.lane, f.thread) == (1, 7, Dim3(39))
        assert pane.message == "focus → kernel 0 block (1,0,0) thread (39,0,0) · device 0 sm 2 warp 1 lane 7"
        rows = texts(pane)
        assert rows[12].startswith("▶") and rows[4].startswith("▶") and not rows[3].startswith("▶")
        assert {v.name: v.value for v in s.state.locals}["i"] == "103"

        # the focused warp's lanes (read by the tree above: no request)
        sent = len(tr.sent)
        await pilot.press("l")
        await pilot.pause()
        rows = texts(pane)
        assert "device 0 sm 2 warp 1" in rows[0] and "32 lanes, 32 active" in rows[0]
        lane7 = next(r for r in rows if "lane 7 " in r)
        assert lane7.startswith("▶") and "thread (39,0,0)" in lane7
        assert len(tr.sent) == sent

        # L cycles break_on_launch
        await pilot.press("L")
        await settle(pilot)
        assert "break_on_launch application" in header(app)
        assert tr.mismatches == [] and no_thread_option(tr)


async def test_focus_switch_reply_shapes_and_memcheck_118(make_session):
    s, tr = await replay_session(make_session, vecadd_ui(MT.P118))
    app = PaneApp(s)
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(CudaPane)
        await settle(pilot)
        assert "memcheck auto" in header(app)  # 11.8 has it
        await pilot.press("M")
        await settle(pilot)
        assert "memcheck on" in header(app)
        await s.break_insert(function="vecAdd")
        await stopped(pilot, s)
        hdr = header(app)
        assert "breakpoint 1 " in hdr and "cuda-gdb 11.8" in hdr and "11.8 unwinder workaround on" in hdr
        await pilot.press("space", "down", "down", "space")
        await settle(pilot)
        await pilot.press("down", "down", "down", "down", "enter")
        await settle(pilot, s)
        f = cuda.focus(s.state)
        assert (f.block, f.thread, f.lane) == (Dim3(1), Dim3(3), 3) and s.state.frames[0].arch == "m68k"
        assert texts(pane)[9].startswith("▶")
        # 11.x: the same focus again is the bare string "CUDA focus unchanged."
        await pilot.press("enter")
        await settle(pilot)
        assert pane.message.startswith("focus unchanged: kernel 0 block (1,0,0) thread (3,0,0)") and not pane.message_is_error
        # 11.x refuses a thread that is not there
        await type_into(pilot, "G", "block (1,0,0) thread (70,0,0)")
        assert pane.message_is_error and pane.message.endswith("Request cannot be satisfied. CUDA focus unchanged.")
        await type_into(pilot, "G", "block (5,0,0)")
        assert pane.message == "focus block (5,0,0): Invalid coordinates. CUDA focus unchanged."
        assert cuda.focus(s.state).thread == Dim3(3)
        assert tr.mismatches == [] and no_thread_option(tr)


@pytest.mark.parametrize("name", ["exception_12x.mi.txt", "exception_118_fallback.mi.txt"])
async def test_exception_stop_shows_the_faulting_thread_and_lanes(make_session, name):
    s, tr = await replay_session(make_session, (REPLAY / name).read_text())
    app = PaneApp(s)
    async with app.run_test(size=(150, 40)) as pilot:
        pane = app.query_one(CudaPane)
        await stopped(pilot, s)
        hdr = header(app).splitlines()
        assert hdr[0] == "■ CUDA exception CUDA_EXCEPTION_14: Warp Illegal Address  (warp scope)"
        assert hdr[1].startswith("focus ▶ kernel 0 block (1,0,0) thread (32,0,0)") and "device 0 sm 2 warp 1 lane 0" in hdr[1]
        assert "error pc 0x7fffd727d390" in hdr[2] and "precise" in hdr[2] and "faulting lanes 0-31" in hdr[2]
        if name.startswith("exception_12x"):
            assert "vecadd.cu:11" in hdr[2] and "$errorpc" not in hdr[2]
        else:
            assert "vecAdd(int const*, int const*, int*, int)+656" in hdr[2]
            assert "$errorpc = (void (*)(void)) 0x7fffd727d390" in hdr[2]
        # the faulting thread's range is selected
        assert cursor_text(pane).startswith("▶") and "128 threads" in cursor_text(pane) and "vecadd.cu:11" in cursor_text(pane)
        # the warp view lists its lanes with the exception, the focused one marked
        await pilot.press("l")
        await pilot.pause()
        lanes = [r for r in texts(pane) if "lane " in r and "thread (" in r]
        assert len(lanes) == 32 and all("Warp Illegal Address" in r for r in lanes)
        assert lanes[0].startswith("▶") and "thread (32,0,0)" in lanes[0] and pane.rows.cursor == texts(pane).index(lanes[0])
        assert tr.mismatches == []


async def test_break_on_launch_toggle_and_kernel_entry_stop_12x(make_session):
    s, tr = await replay_session(make_session, (REPLAY / "break_on_launch_12x.mi.txt").read_text())
    app = PaneApp(s)
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot)
        assert "break_on_launch none" in header(app)
        await pilot.press("L")
        await settle(pilot)
        assert "break_on_launch application" in header(app)
        await stopped(pilot, s)
        assert header(app).startswith("■ kernel entry (break_on_launch)  vecAdd<<<(2,1,1),(64,1,1)>>>")
        assert "vecadd.cu:7" in cursor_text(app.query_one(CudaPane))
        assert tr.mismatches == []


async def test_warp_watch_side_by_side_with_per_lane_errors(make_session):
    s, tr = await replay_session(make_session, grid_watch_ui(), program=GRID.EXE)
    app = PaneApp(s)
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(CudaPane)
        await s.break_insert(file=GRID.SRC, line=19)
        await stopped(pilot, s)
        await type_into(pilot, "G", "block (2052,0,0) thread (80,0,0)")
        await settle(pilot, s)
        assert cuda.focus(s.state).lane == 16 and "(2052,0,0)" in cursor_text(pane)
        await type_into(pilot, "e", "v")
        await settle(pilot, s)
        assert pane.view == "warp"
        watch = s.state.cuda.warp_watch
        assert watch.restored and len(watch.lanes) == 32 and cuda.focus(s.state).lane == 16
        rows = texts(pane)
        head = next(r for r in rows if r.lstrip().startswith("watch v"))
        assert "32 lanes, 16 distinct values, 16 with errors" in head
        grid = [r for r in rows if "│" in r]
        assert 2 <= len(grid) <= 8  # the 32 lanes side by side, several per line
        cells = " ".join(grid)
        assert "▶16 20.0" in cells and " 31 23.75" in cells and " 0 ! No symbol" in cells
        assert any('lanes 0-15: No symbol "v" in current context.' in r for r in rows)
        lane16 = next(r for r in rows if r.lstrip("▶ ").startswith("lane 16"))
        assert lane16.startswith("▶") and lane16.endswith("= 20.0")
        assert cursor_text(pane) == lane16  # the cursor stays on the focused lane when the values arrive
        lane3 = next(r for r in rows if r.lstrip("▶ ").startswith("lane 3 "))
        assert '! No symbol "v" in current context.' in lane3 and "divergent" in lane3
        assert pane.message == "warp watch v: 32 lanes, 16 lanes with errors"
        assert tr.mismatches == [] and no_thread_option(tr)


async def test_million_thread_grid_opens_and_scrolls_without_building_every_row(make_session):
    s, tr = await replay_session(make_session, GRID.generate(resident=1056), program=GRID.EXE)
    app = PaneApp(s)
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(CudaPane)
        rows = pane.rows
        await s.break_insert(file=GRID.SRC, line=19)
        await stopped(pilot, s)
        snap = cuda.snapshot(s.state)
        assert len(snap.threads) == 4808 and snap.threads.total_threads == 270_336
        assert rows.row_count == 2 + 1 + 4808
        assert "4,808 ranges · 270,336 threads" in rows.row_text(2)
        cur = rows.cursor
        assert cur == 3 + snap.threads.current_index and rows.row_text(cur).startswith("▶") and "(2051,0,0)/(0,0,0)" in rows.row_text(cur)
        await pilot.press("end")
        await pilot.pause()
        assert rows.cursor == rows.row_count - 1 and rows.scroll_offset.y > 4000
        assert "(3103,0,0)/(255,0,0)" in rows.row_text(rows.cursor)
        for _ in range(20):
            await pilot.press("pageup")
        await pilot.press("home")
        await pilot.pause()
        assert rows.cursor == 0 and rows.scroll_offset.y == 0
        # far fewer rows were drawn than there are, and the engine converted only what was shown
        assert rows.rows_built < 2000
        assert snap.threads.converted < 2000

        # the focus switch from the input line: the cursor follows to the granted thread's range
        await type_into(pilot, "G", "block (3000,0,0) thread (77,0,0)")
        await settle(pilot, s)
        f = cuda.focus(s.state)
        assert (f.block, f.thread) == (Dim3(3000), Dim3(77))
        assert rows.row_text(rows.cursor).startswith("▶") and "256 threads" in rows.row_text(rows.cursor)
        assert "(3000,0,0)/(0,0,0) … (3000,0,0)/(255,0,0)" in rows.row_text(rows.cursor)
        # open it: one block, one bounded request; "." goes to the focused thread
        await pilot.press("space")
        await settle(pilot)
        assert tr.sent[-2] == "-cuda-info-threads kernel 0 block (3000,0,0)"
        await pilot.press("full_stop")
        await pilot.pause()
        assert "block (3000,0,0) thread (77,0,0)" in rows.row_text(rows.cursor) and rows.row_text(rows.cursor).startswith("▶")
        assert tr.mismatches == []


async def test_range_over_many_blocks_pages_its_pieces(make_session):
    s, tr = await replay_session(make_session, GRID.generate(resident=1056), program=GRID.EXE)
    app = PaneApp(s)
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(CudaPane)
        rows = pane.rows
        await s.break_insert(file=GRID.SRC, line=19)
        await stopped(pilot, s)
        # the blocks range: 1,056 blocks, paged 100 at a time with a "load more" row (computed, no request)
        sent = len(tr.sent)
        await pilot.press("home", "down", "space")
        await pilot.pause()
        assert "1,056 blocks  (2048,0,0) … (3103,0,0)" in rows.row_text(1)
        assert rows.row_text(2).strip().endswith("block (2048,0,0)") and "block (2147,0,0)" in rows.row_text(101)
        assert "… 956 more blocks (enter loads 100)" in rows.row_text(102)
        await pilot.press(*["pagedown"] * 3)
        await goto_row(pilot, 102)
        await pilot.press("enter")
        await pilot.pause()
        assert "block (2148,0,0)" in rows.row_text(102) and "… 856 more blocks" in rows.row_text(202)
        assert len(tr.sent) == sent


async def test_per_block_mode_on_the_next_stop_reads_a_block_on_demand(make_session):
    # make_grid's two-stop session without its first-stop operations (a focus switch, a block)
    lines = GRID.generate(resident=1056, second_stop=True).splitlines()
    a = next(i for i, ln in enumerate(lines) if re.match(r"^-> \d+-cuda-focus-switch", ln))
    b = next(i for i, ln in enumerate(lines) if re.match(r"^-> \d+-exec-continue", ln))
    s, tr = await replay_session(make_session, "\n".join(lines[:a] + lines[b:]) + "\n", program=GRID.EXE)
    cuda.get(s).auto_rows_limit = 2000  # this kernel's 4,808 ranges are over it: the next stop goes per block
    app = PaneApp(s)
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(CudaPane)
        rows = pane.rows
        await s.break_insert(file=GRID.SRC, line=19)
        await stopped(pilot, s)
        assert rows.row_count == 3 + 4808
        gen = s.state.generation
        await s.cont()
        await until(pilot, lambda: s.state.is_stopped and s.state.generation > gen and cuda.snapshot(s.state).loaded, 30, "the stop and its CUDA tables")
        await settle(pilot, s)
        snap = cuda.snapshot(s.state)
        assert snap.threads_mode == "per-block" and snap.threads is None
        t = texts(pane)
        assert t[2].startswith(" ▾ Threads") and "per block" in t[2]
        assert "too big to read at every stop; expand a block" in t[3]
        assert "1,056 blocks  (2048,0,0) … (3103,0,0)" in t[4] and t[4].startswith("▶")
        # the cursor is on the block range that holds the focus; open it, then block 2056
        assert rows.cursor == 4
        await pilot.press("space")
        await pilot.pause()
        assert rows.row_text(5 + 8).strip().endswith("block (2056,0,0)") and rows.row_text(5 + 8).startswith("▶")
        await goto_row(pilot, 5 + 8)
        await pilot.press("space")
        await settle(pilot)
        assert tr.sent[-1] == "-cuda-info-threads kernel 0 block (2056,0,0)"
        one = rows.row_text(5 + 9)
        assert one.startswith("▶") and "256 threads" in one and "scale.cu:19" in one
        # once the program is gone the pane says so instead of showing old tables
        await s.cont()
        await settle(pilot)
        await until(pilot, lambda: s.state.process is not ProcessState.STOPPED, 30, "the program to end")
        await pilot.pause()
        assert texts(pane) == ["   The program exited."] and header(app).startswith("the program exited normally")
        assert tr.mismatches == []


async def test_host_stop_under_cuda_gdb_minimal(make_session):
    s, tr = await replay_session(make_session, (REPLAY / "minimal_no_python_12x.mi.txt").read_text(), program="/home/user/proj/hello", load_gdbext=True)
    app = PaneApp(s)
    async with app.run_test(size=(120, 30)) as pilot:
        pane = app.query_one(CudaPane)
        await s.break_insert(function="add")
        await s.launch()
        await until(pilot, lambda: s.state.is_stopped and cuda.snapshot(s.state).loaded, 30, "the stop and its CUDA tables")
        await settle(pilot, s)
        hdr = header(app).splitlines()
        assert hdr[0] == "■ host stop" and hdr[1].startswith("focus: host thread 1, no device thread")
        assert "no Python (cuda-gdb-minimal)" in hdr[2]
        assert texts(pane) == ["   No CUDA kernel is running."]
        await pilot.press("k")
        await pilot.pause()
        assert texts(pane) == ["   No CUDA kernel is running."]
        await pilot.press("l")
        await pilot.pause()
        assert "No device thread has the focus" in texts(pane)[0]
        await type_into(pilot, "e", "a")  # the engine refuses: no device thread
        assert pane.message_is_error and "device thread" in pane.message


CUDA_GDB = shutil.which("cuda-gdb")


@pytest.mark.cudagdb
@pytest.mark.skipif(CUDA_GDB is None, reason="cuda-gdb is not installed (scripts/setup.sh --test installs Debian's nvidia-cuda-gdb)")
async def test_real_cuda_gdb_without_a_gpu_host_stop_toggle_and_errors(make_session, tmp_path):
    """The pane on the real cuda-gdb of this machine (11.8, no GPU): what it can show is honest."""
    prog = tmp_path / "host"
    subprocess.run(["gcc", "-g", "-O0", str(PROGRAMS / "cuda" / "host.c"), "-o", str(prog)], check=True, capture_output=True)
    s = await make_session(gdb=CUDA_GDB, cuda=True, load_gdbext=False, mode="run", program=str(prog))
    app = PaneApp(s)
    async with app.run_test(size=(140, 30)) as pilot:
        pane = app.query_one(CudaPane)
        await s.break_insert(function="add")
        await s.launch()
        await until(pilot, lambda: s.state.is_stopped and cuda.snapshot(s.state).loaded, 30, "the stop and its CUDA tables")
        await settle(pilot, s)
        caps = cuda.get(s).caps
        hdr = header(app).splitlines()
        assert hdr[0] == "■ host stop" and hdr[1].startswith("focus: host thread")
        assert f"cuda-gdb {caps.version_text}" in hdr[2]
        assert texts(pane) == ["   No CUDA kernel is running."]
        await pilot.press("D")
        await pilot.pause()
        assert texts(pane) == ["   cuda-gdb reports no CUDA device (no GPU, or no CUDA context yet)."]
        # a toggle round-trips through cuda-gdb and the value shown is the one it reads back
        before = cuda.snapshot(s.state).settings.get("break_on_launch")
        await pilot.press("L")
        await settle(pilot)
        after = cuda.snapshot(s.state).settings.get("break_on_launch")
        assert after != before and f"break_on_launch {after}" in header(app)
        # cuda-gdb's own error for a focus it cannot grant, in the pane (no traceback)
        await type_into(pilot, "G", "kernel 0 block (0,0,0) thread (0,0,0)")
        assert pane.message_is_error and "Invalid coordinates" in pane.message
        # a filter cuda-gdb accepts, with nothing to list
        await type_into(pilot, "i", "kernel 0 block (1,0,0)")
        assert pane.message == "filter kernel 0 block (1,0,0): 0 thread ranges"
        await pilot.press("escape")
        await s.cont()
        await settle(pilot)


@requires_gdb
async def test_not_a_cuda_session_shows_one_line(make_session, threads_prog):
    s = await make_session(program=str(threads_prog), mode="run")
    assert cuda.snapshot(s.state) is None
    app = PaneApp(s)
    async with app.run_test(size=(100, 20)) as pilot:
        await pilot.pause()
        pane = app.query_one(CudaPane)
        assert pane.has_class("-off")
        off = app.query_one("#cuda-off")
        assert off.display and str(off.render()) == "CUDA views need cuda-gdb: start tuidbg with --cuda (or --gdb pointing at a cuda-gdb)."
        assert not pane.rows.display and not app.query_one("#cuda-header").display
        await pilot.press("D", "G")  # nothing to do, nothing breaks
        await pilot.pause()
        assert pane.has_class("-off")


async def test_inside_tuidbg_app_focus_switch_moves_frames_and_source(make_session):
    from tuidbg.ui.panes.frames import CppFramesPane, NativeRow

    s, tr, app = await vecadd_in_app(make_session, vecadd_ui(MT.P128))
    async with app.run_test(size=(160, 48)) as pilot:
        pane = app.query_one("#cuda", CudaPane)
        await until(pilot, lambda: s.state.is_stopped and cuda.snapshot(s.state).loaded, 30, "the stop and its CUDA tables")
        await settle(pilot, s)
        await until_shown(pilot)
        await pilot.press("0")  # the app's pane key
        await pilot.pause()
        assert app.query_one("#stack-group", TabbedContent).active == "tab-cuda" and pane.rows.has_focus
        assert pane.rows.cursor == 3
        await pilot.press("space", "down", "down", "space")
        await settle(pilot)
        await pilot.press("down", "down", "down", "down", "enter")
        await settle(pilot, s)
        await until(pilot, lambda: getattr(cuda.focus(app.state), "thread", None) == Dim3(3), 10, "the thread focused")
        await until_shown(pilot)
        st = app.state
        assert cuda.focus(st).thread == Dim3(3) and st.frames[0].arch == "m68k"
        cpp = app.query_one(CppFramesPane)
        frames = [r for r in cpp.rows if isinstance(r, NativeRow)]
        assert frames and frames[0].frame.func == "vecAdd" and frames[0].frame.arch == "m68k"
        assert "thread (3,0,0)" in header(app)
        # the source pane follows the device frame (the file is not on this machine: it says so)
        assert "vecadd.cu:8" in str(app.query_one("#status").render()) or "vecAdd" in str(app.query_one("#status").render())
        assert [m for m in tr.mismatches if m[0] != "<not in transcript>"] == []
        assert no_thread_option(tr)


def test_fmt_ints():
    assert fmt_ints((0, 1, 2, 5, 7, 8)) == "0-2,5,7-8"
    assert fmt_ints(()) == "-"
    assert fmt_ints((3,)) == "3"


def test_rows_widget_is_a_line_api_scroll_view():
    from textual.scroll_view import ScrollView

    assert issubclass(CudaRows, ScrollView) and hasattr(CudaRows, "render_line")


async def test_host_stack_of_the_launching_thread_below_the_device_frames(make_session):
    # Under a device focus, h in the C++ pane adds the frames of the host thread that launched the
    # kernel (cudaLaunchKernel ... main); cuda-gdb's focus is put back right after reading them.
    from tuidbg.ui.panes.frames import CppFramesPane, HostRow, NativeRow

    s, tr, app = await vecadd_in_app(make_session, vecadd_host_stack(MT.P128))
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: s.state.is_stopped and cuda.snapshot(s.state).loaded, 30, "the stop and its CUDA tables")
        await settle(pilot, s)
        cpp = app.query_one(CppFramesPane)
        assert [r.frame.func for r in cpp.rows if isinstance(r, NativeRow)] == ["vecAdd"]
        assert not any(isinstance(r, HostRow) for r in cpp.rows)
        await pilot.press("3")  # the C++ pane
        await pilot.press("h")
        await until(pilot, lambda: any(isinstance(r, HostRow) for r in cpp.rows), 10, "the host frames")
        await settle(pilot, s)
        host = [r for r in cpp.rows if isinstance(r, HostRow)]
        assert [r.frame.func for r in host] == ["ioctl", "??", "cudaLaunchKernel", "main"] and host[0].thread == "1"
        assert cpp.host is not None and "host thread 1" in cpp.host.label
        # the device focus is where it was, and the device frames are still first
        assert cuda.focus(s.state) is not None and cuda.focus(s.state).thread == Dim3(0)
        assert [r.frame.func for r in cpp.rows if isinstance(r, NativeRow)] == ["vecAdd"]
        assert tr.sent[-2:] == ["-stack-list-frames --thread 1 0 63", "-cuda-focus-switch kernel 0 block (0,0,0) thread (0,0,0)"]
        assert tr.mismatches == [], tr.mismatches
        # h again hides them
        await pilot.press("h")
        await pilot.pause()
        assert not any(isinstance(r, HostRow) for r in cpp.rows)
        await pilot.press("h")
        await settle(pilot, s)
        host = [r for r in cpp.rows if isinstance(r, HostRow)]
        # Enter on a host frame (main): that host thread and frame are selected, the device focus left
        await pilot.press("end")
        await pilot.press("enter")
        await settle(pilot, s)
        await until(pilot, lambda: app.state.selected_frame == 3, 10, "the host frame selected")
        st = app.state
        assert (st.selected_thread, st.selected_frame) == ("1", 3) and cuda.focus(st) is None
        assert [r.frame.func for r in cpp.rows if isinstance(r, NativeRow)] == ["ioctl", "??", "cudaLaunchKernel", "main"]
        assert not any(isinstance(r, HostRow) for r in cpp.rows)
        assert tr.mismatches == [] and tr.finished, tr.mismatches
