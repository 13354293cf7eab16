"""The scenes of scripts/gpu-check.sh: tuidbg's engine on cuda-gdb through each CUDA feature, one
cuda-gdb each (``SceneRun``: ``gpucheck.scene``). The same code records on a GPU machine and
replays in the tests, so a scene sends exactly what its replay will send: no timing, no paths but
the ones the programs have, nothing taken from outside the engine's answers.

Each scene marks what the engine showed (``run.mark``) and keeps going after a part that fails
(``run.step``). On a dry run (no GPU) a scene goes as far as it can: everything before the program
needs a device runs for real, then ``NeedsDevice``.

The programs: tests/programs/cuda/gpucheck.cu (``grid``: grid4x4<<<(4,4,1),(128,1,1)>>>; ``oob``: an
out-of-bounds write) and gpucheck_torch.py with its custom operator (gpucheck_op.cpp/.cu).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Awaitable, Callable

from tuidbg.engine import cuda, machine, native, pyagent
from tuidbg.engine.cuda import CudaError, Dim3
from tuidbg.engine.session import DebugSession
from tuidbg.engine.state import DebuggerState, ProcessState

from gpucheck.scene import NeedsDevice, SceneFailed, SceneRun, frame_facts, plain

CU = "gpucheck.cu"
TORCH = "gpucheck_torch.py"
OP_CU = "gpucheck_op.cu"


@dataclasses.dataclass(frozen=True)
class Scene:
    name: str
    run: Callable[[SceneRun], Awaitable[None]]
    what: str  # one line: what it records
    timeout: float  # seconds, on the GPU machine
    replayable: bool = True  # its transcript alone drives it again (not: the Python agent's socket)
    needs_op: bool = False  # the torch custom operator must be built first


# -- shared parts -------------------------------------------------------------------------------------


def stop_facts(st: DebuggerState) -> dict[str, Any]:
    """What a stop shows: its reason, the frames, the locals, the CUDA snapshot."""
    stop = st.stop
    snap = cuda.snapshot(st)
    return {
        "process": st.process.name,
        "stop": {"reason": stop.reason, "describe": stop.describe(), "bkptno": stop.bkptno, "thread": stop.thread_id,
                 "signal": stop.signal_name, "meaning": stop.signal_meaning} if stop is not None else None,
        "selected_thread": st.selected_thread,
        "frames": frame_facts(st.frames[:8]),
        "locals": [{"name": v.name, "value": v.value, "type": v.type} for v in st.locals[:16]],
        "focus": plain(cuda.focus(st)),
        "snapshot": plain(snap) if snap is not None else None,
    }


async def grid_at(run: SceneRun, mark: str, file: str = CU) -> tuple[DebugSession, DebuggerState]:
    """``gpucheck grid`` stopped at its line MARK:``mark`` (a breakpoint there, deleted once hit)."""
    p = run.programs
    s = await run.session(program=p.gpucheck, args=["grid"])
    bp = await s.break_insert(file=p.src(file), line=p.line(file, mark))
    view = cuda.get(s).breakpoint_view(bp.number)
    await run.mark("breakpoint", number=bp.number, addr=bp.addr, pending_on_device=view.pending_on_device if view else None,
                   shown=[loc.number for loc in view.shown] if view else None)
    await s.launch()
    st = await run.stopped(s, f"the breakpoint at {file}:{mark}")
    await run.mark("stop", **stop_facts(st))
    run.note("breakpoint", bp.number)
    return s, st


async def finish_grid(run: SceneRun, s: DebugSession) -> None:
    """Delete every breakpoint and let the program run to its end (its own check of the values)."""
    if s.state.process is not ProcessState.STOPPED:
        return
    for bp in list(s.state.breakpoints):
        if not bp.internal and "." not in bp.number:
            await s.break_delete(bp.number)
    await s.cont()
    await run.exited(s)


# -- the scenes ---------------------------------------------------------------------------------------


async def startup(run: SceneRun) -> None:
    """cuda-gdb's start-up as the engine sees it, a host stop before any kernel, the devices table there."""
    p = run.programs
    s = await run.session(program=p.gpucheck, args=["grid"])
    ext = cuda.get(s)
    if ext is None or ext.caps is None:
        raise SceneFailed(f"{run.cuda_gdb} is not cuda-gdb to tuidbg: {s.startup_messages}")
    await run.mark("started", banner=s.info.banner, version=s.info.version, cuda_version=s.info.cuda_version,
                   features=sorted(s.info.features), caps=ext.caps, settings=ext.settings,
                   workaround=s.cuda_workaround_applied, gdbext=s.gdbext_loaded, messages=s.startup_messages)
    await s.break_insert(function="no_device")
    await s.launch()
    st = await run.stopped(s, "the host breakpoint in no_device()")
    await run.mark("host_stop", **stop_facts(st))
    async with run.step("devices"):
        await run.mark("devices", devices=await ext.fetch_devices(), kernels=await ext.fetch_kernels(),
                       focus=await ext.query_focus())
    await s.cont()
    st = await run.exited(s)
    if st.process is ProcessState.EXITED and st.exit_code == 2 and run.dry:
        raise NeedsDevice("the program found no CUDA device (exit 2) after the host stop")


async def break_on_launch(run: SceneRun) -> None:
    """``set cuda break_on_launch application``: the stop at the kernel's entry."""
    p = run.programs
    s = await run.session(program=p.gpucheck, args=["grid"])
    ext = cuda.get(s)
    settings = await ext.set_option("break_on_launch", "application")
    await run.mark("set", settings=settings)
    await s.launch()
    st = await run.stopped(s, "the kernel-entry stop")
    snap = cuda.snapshot(st)
    await run.mark("kernel_entry", kernel_entry=snap.kernel_entry if snap else None, **stop_facts(st))
    await ext.set_option("break_on_launch", "none")
    await s.cont()
    await run.exited(s)


async def kernel_breakpoint(run: SceneRun) -> None:
    """A breakpoint on a kernel's line: the stop, the refresh's tables, the run to the end."""
    s, st = await grid_at(run, "kernel_bp")
    ext = cuda.get(s)
    async with run.step("breakpoint view"):
        view = ext.breakpoint_view(run.notes["breakpoint"])
        await run.mark("breakpoint_view", shown=[loc.number for loc in view.shown], lines=view.source_lines(),
                       hidden=[loc.number for loc in view.hidden_stubs], pending=view.pending_on_device)
    await finish_grid(run, s)


async def info_tables(run: SceneRun) -> None:
    """``info cuda`` devices, SMs, warps, lanes, kernels, blocks, threads, contexts, launch trace."""
    s, st = await grid_at(run, "kernel_bp")
    ext = cuda.get(s)
    f = cuda.focus(st)
    if f is None:
        raise SceneFailed("the kernel breakpoint's stop has no device focus")
    k = f.kernel
    async with run.step("devices"):
        await run.mark("devices", rows=await ext.fetch_devices())
    async with run.step("sms"):
        await run.mark("sms", rows=await ext.fetch_sms(f.device))
    async with run.step("warps"):
        await run.mark("warps", rows=await ext.fetch_warps(f.device, f.sm))
    async with run.step("lanes"):
        await run.mark("lanes", rows=await ext.fetch_lanes(f.device, f.sm, f.warp))
    async with run.step("kernels"):
        await run.mark("kernels", rows=await ext.fetch_kernels())
    async with run.step("blocks"):
        await run.mark("blocks", coalesced=await ext.fetch_blocks(k), uncoalesced=await ext.fetch_blocks(k, coalesced=False))
    async with run.step("threads"):
        th = await ext.fetch_threads(k)
        await run.mark("threads", ranges=len(th), total=th.total_threads, summary=th.summary(), first=th[:8])
    async with run.step("one block's threads"):
        rows = await ext.expand_block(k, Dim3(3, 3, 0))
        await run.mark("block_3_3", count=len(rows), total=rows.total_threads, first=rows[:4], last=rows[-2:])
    async with run.step("contexts"):
        await run.mark("contexts", rows=await ext.fetch_contexts())
    async with run.step("launch trace"):
        await run.mark("launch_trace", rows=await ext.fetch_launch_trace(k))
    async with run.step("filtered threads"):
        tbl = await ext.info("threads", f"kernel {k} block (1,2,0)")
        await run.mark("filtered", name=tbl.name, columns=tbl.columns, headers=tbl.headers, rows=len(tbl))
    await finish_grid(run, s)


async def focus(run: SceneRun) -> None:
    """Focus switches: to a block and thread, the same again, an invalid one, a physical one, a host
    thread and back, and back to the thread of the stop."""
    s, st = await grid_at(run, "kernel_bp")
    ext = cuda.get(s)
    stop_focus = cuda.focus(st)
    async with run.step("block and thread"):
        sw = await ext.switch_focus("block (2,3,0) thread (77,0,0)")
        st = s.state
        await run.mark("switched", request=sw.request, focus=sw.focus, changed=sw.changed, exact=sw.exact, frame=sw.frame,
                       frames=frame_facts(st.frames[:4]), locals=[(v.name, v.value) for v in st.locals[:12]],
                       threads_current=cuda.snapshot(st).threads.current_index if cuda.snapshot(st).threads else None)
    async with run.step("query"):
        await run.mark("query", focus=await ext.query_focus())
    async with run.step("unchanged"):
        sw = await ext.switch_focus("block (2,3,0) thread (77,0,0)")
        await run.mark("unchanged", focus=sw.focus, changed=sw.changed)
    async with run.step("invalid"):
        try:
            sw = await ext.switch_focus("block (9,0,0)")
        except CudaError as exc:
            await run.mark("invalid", error=str(exc), focus=cuda.focus(s.state))
        else:
            await run.mark("invalid", granted=sw.focus, changed=sw.changed)
    async with run.step("physical"):
        f = cuda.focus(s.state)
        sw = await ext.switch_focus(f"device {f.device} sm {f.sm} warp {f.warp} lane 5")
        await run.mark("physical", focus=sw.focus, changed=sw.changed, exact=sw.exact, lanes=cuda.snapshot(s.state).lanes)
    async with run.step("host thread"):
        tid = st.stop.thread_id if st.stop is not None and st.stop.thread_id else s.state.selected_thread
        await ext.select_host_thread(str(tid))
        await run.mark("host_thread", thread=tid, focus=cuda.focus(s.state), frames=frame_facts(s.state.frames[:12]))
        sw = await ext.restore_device_focus()
        await run.mark("restored", focus=sw.focus, frames=frame_facts(s.state.frames[:4]))
    async with run.step("back to the stop's thread"):
        sw = await ext.switch_focus(f"kernel {stop_focus.kernel} block {stop_focus.block} thread {stop_focus.thread}")
        await run.mark("back", focus=sw.focus, changed=sw.changed)
    await finish_grid(run, s)


async def frames(run: SceneRun) -> None:
    """Device frames (a __device__ function under its kernel) with the launching host thread's
    frames beneath; the kernel's frame selected."""
    s, st = await grid_at(run, "device_fn")
    ext = cuda.get(s)
    tid = st.stop.thread_id if st.stop is not None else None
    async with run.step("host frames"):
        host = await ext.host_frames(str(tid))
        await run.mark("host_frames", thread=tid, frames=frame_facts(host[:24]), focus=cuda.focus(s.state))
    async with run.step("kernel frame"):
        await s.select_frame(1)
        st = s.state
        await run.mark("kernel_frame", selected=st.selected_frame, locals=[(v.name, v.value) for v in st.locals[:12]],
                       frames=frame_facts(st.frames[:4]))
    await finish_grid(run, s)


async def warp_watch(run: SceneRun) -> None:
    """The warp watch: an expression in each of the focused warp's 32 lanes, before and after the
    warp diverges."""
    s, st = await grid_at(run, "kernel_next")
    ext = cuda.get(s)
    for expr in ("i", "in[i]", "threadIdx.x % 2"):
        async with run.step(f"watch {expr}"):
            w = await ext.warp_watch(expr)
            await run.mark(f"watch {expr}", lanes=w.lanes, restored=w.restored, distinct=w.distinct_values,
                           focus=cuda.focus(s.state))
    async with run.step("diverged"):
        await s.next()
        st = await run.stopped(s, "the step to the branch")
        w = await ext.warp_watch("v")
        await run.mark("watch v", line=st.frames[0].line if st.frames else None, lanes=w.lanes, distinct=w.distinct_values)
    await finish_grid(run, s)


async def step(run: SceneRun) -> None:
    """Stepping the focused warp: next, next into the branch, step into the device function, finish,
    one instruction."""
    s, st = await grid_at(run, "kernel_bp")
    for what, go in (("next", s.next), ("next to the branch", s.next), ("step into scaled", s.step),
                     ("finish", s.finish), ("stepi", lambda: native.stepi(s))):
        async with run.step(what):
            before = cuda.focus(s.state)
            await go()
            st = await run.stopped(s, what)
            snap = cuda.snapshot(st)
            await run.mark(what, before=before, reason=st.stop.reason if st.stop else None, frames=frame_facts(st.frames[:4]),
                           focus=cuda.focus(st), stop_kind=snap.stop_kind if snap else None,
                           threads=snap.threads.summary() if snap and snap.threads else None,
                           pc=await machine.pc(s))
    await finish_grid(run, s)


async def sass(run: SceneRun) -> None:
    """SASS around the device pc, as the disassembly view reads it (a window that grows both ways)."""
    s, st = await grid_at(run, "kernel_next")
    pc = await machine.pc(s)
    win = native.DisasmWindow(s)
    async with run.step("around the pc"):
        await win.load_around(pc)
        i = win.index_of(pc)
        run.keep("around_pc", win)
        await run.mark("around_pc", pc=pc, index=i, at_pc=win.rows[i] if i is not None else None,
                       rows=len(win.rows), first=win.rows[:12], near=win.rows[max(0, (i or 0) - 6):(i or 0) + 6])
    async with run.step("up and down"):
        up = await win.extend_up()
        down = await win.extend_down()
        await run.mark("extended", up=up, down=down, rows=len(win.rows), at_top=win.at_top, at_bottom=win.at_bottom)
    await finish_grid(run, s)


async def registers(run: SceneRun) -> None:
    """The device registers of the focused thread, and which changed after a step."""
    s, st = await grid_at(run, "kernel_bp")
    tracker = machine.RegisterTracker(s)
    groups = ("general", "predicate", "uniform", "other")
    async with run.step("names"):
        names = await machine.register_names(s)
        await run.mark("names", count=len(names), names=[n for n in names if n][:300])
    async with run.step("values"):
        regs = await tracker.read(groups)
        await run.mark("values", registers=[(r.name, r.group, r.value) for r in regs][:200], counts=tracker.counts)
    async with run.step("after a step"):
        await s.next()
        await run.stopped(s, "the step")
        regs = await tracker.read(groups)
        await run.mark("changed", changed=[r.name for r in regs if r.changed], pc=[r.value for r in regs if r.name == "pc"])
    await finish_grid(run, s)


async def exception(run: SceneRun) -> None:
    """The out-of-bounds write: the CUDA exception, its thread, ``$errorpc``, the SASS there."""
    p = run.programs
    s = await run.session(program=p.gpucheck, args=["oob"])
    await s.launch()
    st = await run.stopped(s, "the CUDA exception")
    snap = cuda.snapshot(st)
    e = snap.exception if snap else None
    await run.mark("exception", exception=e, described=e.describe() if e else None,
                   focused_lane=snap.focused_lane if snap else None, **stop_facts(st))
    errorpc = None
    async with run.step("$errorpc"):
        value = await s.evaluate("$errorpc")
        errorpc = await machine.address_of(s, "$errorpc")
        await run.mark("errorpc", value=value, address=errorpc)
    async with run.step("SASS at $errorpc"):
        at = errorpc if errorpc is not None else (e.pc if e is not None else None)
        if at is None:
            raise SceneFailed("no error pc to disassemble at")
        win = native.DisasmWindow(s)
        await win.load_around(at)
        i = win.index_of(at)
        run.keep("sass_errorpc", win)
        await run.mark("sass_errorpc", address=at, index=i, at=win.rows[i] if i is not None else None,
                       near=win.rows[max(0, (i or 0) - 6):(i or 0) + 6])
    await s.cont()
    await run.exited(s)


async def torch_op(run: SceneRun) -> None:
    """A breakpoint in a torch custom operator's kernel: device frames, then the host thread's frames
    and its Python frames beneath (gpucheck_torch.py op)."""
    p = run.programs
    s = await run.session(program=p.python, args=[p.src(TORCH), "op", p.op_build], python_target=True)
    bp = await s.break_insert(file=p.src(OP_CU), line=p.line(OP_CU, "op_kernel"))
    await run.mark("breakpoint", number=bp.number, pending=bp.pending, addr=bp.addr)
    await s.launch()
    st = await run.stopped(s, "the breakpoint in the op's kernel", timeout=240)
    await run.mark("stop", **stop_facts(st))
    ext = cuda.get(s)
    tid = st.stop.thread_id if st.stop is not None else None
    async with run.step("host and Python frames"):
        host = await ext.host_frames(str(tid))
        ps = s.state.python.stack
        py = ps.thread(str(tid)) if ps is not None and ps.ok else None
        await run.mark("beneath", thread=tid, host=frame_facts(host[:40]),
                       python=[(f.function, f.file, f.line) for f in py.frames[:12]] if py else None,
                       pystack={"status": ps.status, "reason": ps.reason, "backend": ps.backend, "python": ps.python} if ps else None)
    await s.break_delete(bp.number)
    await s.cont()
    await run.exited(s, timeout=120)


async def torch_preview(run: SceneRun) -> None:
    """``Y``: a CUDA tensor's bounded preview at a Python stop (tuidbg's agent in the torch program)."""
    p = run.programs
    s = await run.session(program=p.python, args=[p.src(TORCH), "preview"], python_target=True, agent=True)
    ctl = pyagent.controller(s)
    await ctl.add_breakpoint(p.src(TORCH), p.line(TORCH, "py_host"))
    await ctl.add_breakpoint(p.src(TORCH), p.line(TORCH, "py_stop"))
    await s.launch()

    async def agent_stop(what: str) -> DebuggerState:
        st = await ctl.wait_stop(240 * run.wait_scale)
        if st.process is not ProcessState.STOPPED or st.python.stop is None:
            run.no_stop(st, what) if st.process is not ProcessState.STOPPED else None
            raise SceneFailed(f"{what}: a stop that is not the agent's ({st.stop.describe() if st.stop else st.process.name})")
        return st

    async def children(expr: str, device_data: bool) -> list:
        kids = await ctl.python_children(expr, [], 0, device_data)
        run.agent_exchange.append({"expr": expr, "path": [], "frame": 0, "device_data": device_data,
                                   "children": [list(k) for k in kids]})
        return kids

    st = await agent_stop("the Python stop at MARK:py_host")
    async with run.step("host tensor"):
        await run.mark("py_host", line=st.python.stop.line, locals=await ctl.python_torch_locals(0),
                       children=await children("host", False))
    await ctl.resume()
    st = await agent_stop("the Python stop at MARK:py_stop")
    async with run.step("locals"):
        await run.mark("py_stop", line=st.python.stop.line, locals=await ctl.python_torch_locals(0))
    async with run.step("without Y"):
        await run.mark("weights", children=await children("weights", False))
    async with run.step("Y"):
        await run.mark("weights_Y", children=await children("weights", True))
        await run.mark("steps_Y", children=await children("steps", True))
    await ctl.resume()
    st = await ctl.wait_stop(120 * run.wait_scale)
    await run.mark("exit", process=st.process.name, exit_code=st.exit_code, description=st.exit_description)


SCENES: tuple[Scene, ...] = (
    Scene("startup", startup, "start-up, a host stop before any kernel, the devices table, the run to the end", 60),
    Scene("break_on_launch", break_on_launch, "break_on_launch application: the kernel-entry stop", 60),
    Scene("kernel_breakpoint", kernel_breakpoint, "a kernel line's breakpoint: the stop and the refresh's tables", 60),
    Scene("info_tables", info_tables, "info cuda devices/sms/warps/lanes/kernels/blocks/threads/contexts/launch trace", 60),
    Scene("focus", focus, "focus switches: block/thread, unchanged, invalid, physical, host thread and back", 60),
    Scene("frames", frames, "device frames (a __device__ function) with the host thread's frames beneath", 60),
    Scene("warp_watch", warp_watch, "the warp watch before and after the warp diverges", 60),
    Scene("step", step, "stepping the warp: next, step into, finish, stepi", 60),
    Scene("sass", sass, "SASS around the device pc", 60),
    Scene("registers", registers, "device registers and what changed after a step", 60),
    Scene("exception", exception, "the out-of-bounds write: the CUDA exception, its thread, $errorpc and its SASS", 60),
    Scene("torch_op", torch_op, "a torch custom op's kernel: device, host and Python frames", 200, needs_op=True),
    Scene("torch_preview", torch_preview, "Y: a CUDA tensor's bounded preview at a Python stop", 150, replayable=False),
)


def scene(name: str) -> Scene:
    for sc in SCENES:
        if sc.name == name:
            return sc
    raise KeyError(name)
