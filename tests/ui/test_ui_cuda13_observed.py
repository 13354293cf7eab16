"""The engine and the CUDA pane through cuda-gdb 13 sessions CAPTURED on a GPU machine by
scripts/gpu-check.sh (tests/data/cuda-gdb-13-observed/: its README says on what machine, when).

Each scene of scripts/gpucheck/scenes.py runs again against its own transcript (scripts/gpucheck/
replay.py: strict, every command the one recorded), with the CUDA pane fed the session's states as
the app feeds it; at each of the scene's marks the test looks at what a user sees. The expected
values come from the programs (tests/programs/cuda/gpucheck.cu, gpucheck_torch.py: a 4x4 grid of
128-thread blocks, the lines marked in the sources), not from the recording.

Until a GPU machine has recorded that folder, these tests skip, naming it: that recording is what
this machine cannot make.
"""

from __future__ import annotations

import json
import re
import sys

import pytest
from helpers import DATA, REPO
from ui_helpers import until
from textual.app import App
from textual.message import Message

from tuidbg.engine import cuda, native
from tuidbg.engine.errors import EngineError
from tuidbg.engine.state import DebuggerState
from tuidbg.ui.app import THEME_VARIABLE_DEFAULTS
from tuidbg.ui.bridge import SessionBridge
from tuidbg.ui.panes.cuda import CudaPane
from tuidbg.ui.panes.disasm import DisasmView, display_rows
from tuidbg.ui.panes.variables import LocalsPane, VarNode, python_extra

if str(REPO / "scripts") not in sys.path:
    sys.path.insert(0, str(REPO / "scripts"))

from gpucheck import replay as R  # noqa: E402
from gpucheck.scene import Programs  # noqa: E402
from gpucheck.scenes import SCENES  # noqa: E402

OBSERVED = DATA / "cuda-gdb-13-observed"
pytestmark = pytest.mark.skipif(
    not (OBSERVED / "meta.json").exists(),
    reason="no cuda-gdb 13 recording yet: tests/data/cuda-gdb-13-observed/ comes from scripts/gpu-check.sh on a GPU "
           "machine (README: Checking on a GPU)",
)

MARKS = Programs.read_marks(str(REPO))
CU = "gpucheck.cu"


def line(name: str, mark: str) -> int:
    return MARKS[name][mark]


def meta() -> dict:
    return json.loads((OBSERVED / "meta.json").read_text())


def recorded(name: str) -> dict:
    return R.scene_result(meta(), name)


def test_the_recording_is_of_these_sources():
    """The transcripts name lines of the programs as they were when recorded: the same sources here."""
    import hashlib

    for name, digest in meta()["sources"].items():
        here = hashlib.sha256((REPO / "tests" / "programs" / "cuda" / name).read_bytes()).hexdigest()
        assert here == digest, f"{name} changed since the recording: record again (README: Checking on a GPU)"
    assert not meta()["dry"] and meta()["cuda_gdb_version"].startswith("13.")


# ---------------------------------------------------------------------------------------------
# Harness: the pane (and the disassembly view) fed the replayed session's states


class StateChanged(Message):
    pass


class ObservedApp(App):
    """The CUDA pane and the disassembly view, fed as TuidbgApp feeds them (its theme's variables too)."""

    def __init__(self) -> None:
        super().__init__()
        self.session = None

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(THEME_VARIABLE_DEFAULTS)

    def compose(self):
        yield CudaPane(id="cuda")
        yield DisasmView(id="disasm")

    def attach(self, session) -> None:
        self.session = session
        pane = self.query_one(CudaPane)
        pane.source = SessionBridge(session)
        session.on_state(lambda st: self.post_message(StateChanged()))
        pane.update_state(session.state)

    def on_state_changed(self, message: StateChanged) -> None:
        self.query_one(CudaPane).update_state(self.session.state)


def texts(pane: CudaPane) -> list[str]:
    return [pane.rows.row_text(r) for r in range(pane.rows.row_count)]


def header(app) -> str:
    return str(app.query_one("#cuda-header").render())


class Seen:
    """What the user saw at each mark: the pane's header and rows (the ranges view, and the kernels
    view: k), the session's state, the scene's live objects."""

    def __init__(self) -> None:
        self.at: dict[str, dict] = {}


async def observe(name: str, keys_at: dict[str, str] | None = None) -> tuple[R.Replayed, Seen]:
    """Replay scene ``name`` with the pane; at each mark, settle and write down what it shows."""
    seen = Seen()
    app = ObservedApp()
    async with app.run_test(size=(160, 48)) as pilot:

        async def on_mark(mark: str, run) -> None:
            if app.session is None and run.sessions:
                app.attach(run.sessions[0])
            s = app.session
            if s is None:
                return
            for _ in range(3):
                await s.wait_refreshed()
                await app.workers.wait_for_complete()
                await pilot.pause()
            pane = app.query_one(CudaPane)
            view = {"header": header(app), "rows": texts(pane), "state": s.state, "kept": dict(run.kept)}
            for key in (keys_at or {}).get(mark, ""):
                await pilot.press(key)
                await pilot.pause()
                view[f"rows_{key}"] = texts(pane)
            if keys_at and mark in keys_at:
                await pilot.press("r")
                await pilot.pause()
            seen.at[mark] = view

        rp = await R.replay_scene(str(OBSERVED), name, str(REPO), on_mark=on_mark)
    return rp, seen


def marks_of(name: str) -> dict[str, dict]:
    """The facts the scene wrote down at each mark on the GPU machine."""
    return {m["name"]: m["facts"] for m in recorded(name)["marks"]}


async def sass_rows(win: native.DisasmWindow, address: int) -> tuple[str, list[str]]:
    """The disassembly view showing ``win`` with the pc at ``address``: that row's text, and every row's."""
    app = ObservedApp()
    async with app.run_test(size=(160, 48)) as pilot:
        view = app.query_one(DisasmView)
        view.window, view.lines = win, display_rows(win.rows)
        view.set_pc(address)
        await pilot.pause()
        at = view.line_of(address)
        assert at is not None, f"no instruction at {address:#x} in the window"
        return view.row_text(at), [view.row_text(i) for i in range(len(view.lines))]


def exact(rp: R.Replayed, name: str) -> None:
    assert rp.problems() == [], rp.problems()
    assert rp.status == "passed" == recorded(name)["status"], (rp.status, rp.error)
    assert rp.run.marks == R.recorded_marks(meta(), name, str(REPO))


# ---------------------------------------------------------------------------------------------
# The engine: every scene replays as it was recorded


@pytest.mark.parametrize("name", [s.name for s in SCENES if s.replayable])
async def test_every_scene_replays_as_recorded(name):
    if not (OBSERVED / recorded(name)["transcript"]).exists():
        pytest.fail(f"the recording has no transcript of {name}: record again")
    rp = await R.replay_scene(str(OBSERVED), name, str(REPO))
    exact(rp, name)


# ---------------------------------------------------------------------------------------------
# What a user sees


async def test_kernel_breakpoint_the_kernels_row_and_the_threads_line():
    rp, seen = await observe("kernel_breakpoint", keys_at={"stop": "k"})
    exact(rp, "kernel_breakpoint")
    at = seen.at["stop"]
    assert "■ breakpoint" in at["header"] and "grid4x4<<<(4,4,1),(128,1,1)>>>" in at["header"], at["header"]
    assert re.search(r"focus ▶ kernel \d+ block \(\d,\d,0\) thread \(\d+,0,0\)", at["header"]), at["header"]
    (krow,) = [r for r in at["rows_k"] if "kernel" in r]
    assert krow.startswith("▶") and "(4,4,1)×(128,1,1) = 2048 threads" in krow and "grid4x4(" in krow, krow
    bp = line(CU, "kernel_bp")
    threads = [r for r in at["rows"] if f"gpucheck.cu:{bp}" in r]
    assert threads and any(r.startswith("▶") for r in threads), at["rows"]
    st = at["state"]
    assert st.frames[0].func == "grid4x4" and st.frames[0].line == bp and cuda.is_device_frame(st.frames[0])
    snap = cuda.snapshot(st)
    assert snap.threads.total_threads == 2048 and sum(b.count for b in snap.blocks) == 16



async def test_focus_on_a_block_and_thread_shows_its_line_and_locals():
    rp, seen = await observe("focus")
    exact(rp, "focus")
    at = seen.at["switched"]
    assert re.search(r"focus ▶ kernel \d+ block \(2,3,0\) thread \(77,0,0\)", at["header"]), at["header"]
    st = at["state"]
    bp = line(CU, "kernel_bp")
    assert (st.frames[0].file or "").endswith(CU) and st.frames[0].line == bp and st.frames[0].arch == "m68k"
    assert {v.name: v.value for v in st.locals}["block"] == str(3 * 4 + 2)  # blockIdx.y * gridDim.x + blockIdx.x
    focused = [r for r in at["rows"] if r.startswith("▶") and f"gpucheck.cu:{bp}" in r]
    assert focused, at["rows"]
    host = seen.at["host_thread"]
    assert "no device thread" in host["header"]
    assert {"run_grid", "main"} <= {f.func for f in host["state"].frames}
    assert re.search(r"focus ▶ kernel \d+ block \(2,3,0\) thread \(77,0,0\)", seen.at["restored"]["header"])


async def test_device_frames_with_the_host_frames_beneath():
    rp, seen = await observe("frames")
    exact(rp, "frames")
    st = seen.at["stop"]["state"]
    assert [f.func for f in st.frames[:2]] == ["scaled", "grid4x4"] and all(f.arch == "m68k" for f in st.frames[:2])
    assert st.frames[0].line == line(CU, "device_fn")
    host = [f["func"] for f in marks_of("frames")["host_frames"]["frames"]]
    assert "run_grid" in host and "main" in host, host


async def test_warp_watch_shows_each_lanes_value():
    rp, seen = await observe("warp_watch")
    exact(rp, "warp_watch")
    f = cuda.focus(seen.at["stop"]["state"])
    base = (f.block.y * 4 + f.block.x) * 128 + (f.thread.x // 32) * 32
    watch = seen.at["watch i"]["state"].cuda.warp_watch
    assert [lv.value for lv in watch.lanes] == [str(base + n) for n in range(32)]


async def test_stepping_the_warp():
    rp, seen = await observe("step")
    exact(rp, "step")
    assert seen.at["next"]["state"].frames[0].line == line(CU, "kernel_next")
    f = cuda.focus(seen.at["next to the branch"]["state"])
    branch = line(CU, "kernel_call") if f.thread.x % 2 == 0 else line(CU, "kernel_odd")
    assert seen.at["next to the branch"]["state"].frames[0].line == branch


async def test_cuda_exception_message_thread_and_the_sass_at_errorpc():
    rp, seen = await observe("exception")
    exact(rp, "exception")
    at = seen.at["exception"]
    assert "■ CUDA exception CUDA_EXCEPTION_" in at["header"], at["header"]
    assert re.search(r"Illegal Address|Out-of-range Address", at["header"]), at["header"]
    st = at["state"]
    e = cuda.snapshot(st).exception
    assert e.line in (None, line(CU, "oob_store")) and st.frames[0].func == "oob_write"
    if e.filename and e.line is not None:
        assert f"{e.filename}:{e.line}" in at["header"]
    f = cuda.focus(st)
    assert f.block.x in (0, 1) and f.thread.x < 64
    assert re.search(rf"focus ▶ kernel \d+ block \({f.block.x},0,0\) thread \({f.thread.x},0,0\)", at["header"])
    # the SASS line at $errorpc, as the disassembly view shows it: the faulting store
    win: native.DisasmWindow = seen.at["sass_errorpc"]["kept"]["sass_errorpc"]
    errorpc = marks_of("exception")["errorpc"]["address"]
    text, _ = await sass_rows(win, errorpc)
    assert text.startswith(f"{errorpc:#x} ") and re.search(r"\bST", text), text  # (STG.E: a global store)


async def test_sass_around_the_device_pc_in_the_disassembly_view():
    rp, seen = await observe("sass")
    exact(rp, "sass")
    win: native.DisasmWindow = seen.at["around_pc"]["kept"]["around_pc"]
    pc = marks_of("sass")["around_pc"]["pc"]
    text, rows = await sass_rows(win, pc)
    assert text.startswith(f"{pc:#x} ") and re.search(r"<\+\d+>", text), text
    assert any(r.startswith(f"gpucheck.cu:{line(CU, 'kernel_next')}") for r in rows), rows


async def test_device_registers():
    rp, seen = await observe("registers")
    exact(rp, "registers")
    facts = marks_of("registers")
    names = facts["names"]["names"]
    assert "R0" in names and "pc" in names
    assert any(name == "pc" for name, _g, _v in facts["values"]["registers"])


async def test_torch_op_kernel_with_host_and_python_frames_beneath():
    rp, seen = await observe("torch_op")
    exact(rp, "torch_op")
    st = seen.at["stop"]["state"]
    assert st.frames[0].func == "scale_kernel" and st.frames[0].line == line("gpucheck_op.cu", "op_kernel")
    beneath = marks_of("torch_op")["beneath"]
    assert "launch_scale" in {f["func"] for f in beneath["host"]}
    py = beneath["python"]
    assert py and py[0][0] == "call_op" and py[0][2] == line("gpucheck_torch.py", "op_call"), py


async def test_Y_shows_a_cuda_tensors_bounded_preview():
    """The Locals pane's Y on the CUDA tensor of the Python stop, answered by what the agent answered
    on the GPU machine (the agent talks over its own socket, not MI: its answers are in the scene's record)."""
    r = recorded("torch_preview")
    assert r["status"] == "passed", r.get("error")
    exchange = list(r["agent_exchange"])
    asked: list[tuple] = []

    async def children(expr: str, path: list[str], frame: int, device_data: bool):
        asked.append((expr, list(path), frame, device_data))
        for i, ex in enumerate(exchange):
            if (ex["expr"], ex["path"], ex["frame"], ex["device_data"]) == (expr, list(path), frame, device_data):
                exchange.pop(i)
                return [tuple(c) for c in ex["children"]]
        raise EngineError(f"not recorded: {expr} {path} device_data={device_data}")

    stop = {m["name"]: m["facts"] for m in r["marks"]}["py_stop"]
    lines = {name: value for name, _t, value, _e in stop["locals"]}
    assert re.fullmatch(r"Tensor float32 \[4, 6\] cuda(:0)?", lines["weights"]), lines

    class LocalsApp(App):
        def get_theme_variable_defaults(self) -> dict[str, str]:
            return dict(THEME_VARIABLE_DEFAULTS)

        def compose(self):
            yield LocalsPane(id="locals")

    app = LocalsApp()
    async with app.run_test(size=(160, 48)) as pilot:
        pane = app.query_one(LocalsPane)
        pane.python_children = children
        node = VarNode(path="py:weights", name="weights", type="Tensor", value=lines["weights"], expandable=True,
                       extra=python_extra(0, "weights", []))
        pane.update_state(DebuggerState(), python_vars=[node], python_key=1)
        await pilot.pause()
        row = next(n for n in pane.root.children if n.data is not None and n.data.name == "weights")
        pane.focus()
        pane.move_cursor(row)
        await pilot.press("space")
        await until(pilot, lambda: bool(row.children), 10, "the tensor's rows")
        kids = {c.data.name: c.data.value for c in row.children if c.data is not None}
        assert kids["values"].startswith("not read (cuda tensor"), kids
        await pilot.press("Y")

        def values() -> str:
            return next((c.data.value for c in row.children if c.data is not None and c.data.name == "values"), "")

        await until(pilot, lambda: values().startswith("["), 10, "the tensor's values read")
        kids = {c.data.name: c.data.value for c in row.children if c.data is not None}
    # arange(24) * 0.5: the first and last five, min, max, mean, and where it was read from
    assert re.fullmatch(r"\[0, 0\.5, 1, 1\.5, 2, \.\.\., 9\.5, 10, 10\.5, 11, 11\.5\] min=0 max=11\.5 mean=5\.75 "
                        r"\(read from cuda(:0)?: synchronized the device\)", kids["values"]), kids["values"]
    assert asked == [("weights", [], 0, False), ("weights", [], 0, True)]
    steps = {m["name"]: m["facts"] for m in r["marks"]}["steps_Y"]["children"]
    values = dict((c[0], c[2]) for c in steps)["values"]
    assert values.startswith("[0, 1, 2, 3, 4, ..., 99995, 99996, 99997, 99998, 99999]")
    assert "(first 100000 of 200000 elements)" in values


def test_the_recordings_readme_names_the_machine():
    text = (OBSERVED / "README.md").read_text()
    m = meta()["machine"]
    assert m.get("gpu") and m["gpu"] in text and m.get("driver") and m["driver"] in text
    assert meta()["cuda_gdb_version"] in text and meta()["date"][:10] in text
