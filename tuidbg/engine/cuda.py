"""cuda-gdb sessions: set-up, CUDA state after each stop, focus, device views, warp watch.

The data model (frozen values, filter parsing, coordinate arithmetic) lives in
``tuidbg.engine.cuda_model`` and is re-exported here; this module talks to
cuda-gdb. A pane uses it like this::

    from tuidbg.engine import cuda

    snap = cuda.snapshot(state)          # CudaSnapshot or None (not cuda-gdb)
    snap.focus, snap.kernels, snap.blocks, snap.threads.page(0, 50)
    ext = cuda.get(session)              # the CudaExtension of a session
    await ext.switch_focus("block (1,0,0) thread (3,0,0)")
    rows = await ext.expand_block(kernel=0, block=Dim3(1, 0, 0))
    watch = await ext.warp_watch("i * 2")

Everything a stop brings is in the process's ``state.cuda`` (``CudaView``): the
``snapshot`` (CudaSnapshot), the ``focus`` (CudaFocus, or None while the focus is
on a host thread) and the last ``warp_watch``.

Requests stay bounded: the refresh after a stop reads the devices, the kernels,
the coalesced blocks and threads of one kernel and the 32 lanes of the focused
warp; everything else (another kernel, a block's threads one by one, an SM's
warps) is read when a pane expands it, one bounded request each. A kernel whose
thread table was larger than ``auto_rows_limit`` ranges is listed per block on
later stops. Never ``--thread`` while the focus is on the device: cuda-gdb drops
the focus on any host thread switch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, AsyncIterator, Iterable, Mapping

from tuidbg.engine import mi
from tuidbg.engine.cuda_model import (  # noqa: F401  (re-exported API)
    ALL_KINDS,
    CUDA_MI_COMMANDS,
    EXCEPTION_NAMES,
    OPTION_VALUES,
    STOP_BREAKPOINT,
    STOP_EXCEPTION,
    STOP_HOST,
    STOP_KERNEL_ENTRY,
    STOP_OTHER,
    STOP_SIGNAL,
    STOP_STEP,
    BlockRange,
    CudaCaps,
    CudaContext,
    CudaDevice,
    CudaError,
    CudaException,
    CudaFilter,
    CudaFilterError,
    CudaFocus,
    CudaKernel,
    CudaLane,
    CudaSettings,
    CudaSM,
    CudaSnapshot,
    CudaWarp,
    Dim3,
    KernelBreakpointView,
    LaneValue,
    LogicalOrder,
    MITable,
    ThreadRange,
    ThreadRanges,
    WarpWatch,
    check_option,
    classify_stop,
    decode_exception,
    exception_scope,
    is_device_frame,
    kernel_breakpoint_view,
    make_filter,
    parse_errorpc,
    parse_filter,
    parse_table,
)
from tuidbg.engine.commands.stack import FRAME_PAGE
from tuidbg.engine.errors import EngineError, MIError
from tuidbg.engine.extensions import Extension
from tuidbg.engine.state import DebuggerState, Frame, ProcessState, apply_refresh

if TYPE_CHECKING:
    from tuidbg.engine.session import DebugSession, SessionConfig

log = logging.getLogger("tuidbg.engine")

# cuda-gdb 11.8's embedded Python mis-handles None (the Debian executable carries
# its own _Py_NoneStruct), so gdb's Python unwinders and pretty-printers break
# every host unwind. These three commands switch that machinery off; tuidbg's
# own Python code does not depend on it.
WORKAROUND_118 = (
    "set python print-stack none",
    "python del gdb._execute_unwinders",
    "python gdb.pretty_printers.clear()",
)

# Asks gdb's Python whether a None made by gdb's C code is Python's None. On the
# broken builds it prints False.
PYTHON_NONE_PROBE = 'python print(gdb.lookup_global_symbol("tuidbg_no_such_symbol_probe") is None)'

AUTO_ROWS_LIMIT = 5000  # a kernel whose thread table had more ranges is listed per block afterwards
BIG_TABLE_TIMEOUT = 180.0


def needs_unwinder_workaround(version: tuple[int, ...], has_python: bool) -> bool:
    """The fallback rule when the probe cannot tell: 11.x builds with Python have the bug."""
    return has_python and bool(version) and version[0] == 11


async def probe_python_none(session: "DebugSession") -> bool | None:
    """True when gdb's Python has the broken-None bug, False when not, None when it cannot tell."""
    try:
        res = await session.cmd(f"-interpreter-exec console {mi.quote(PYTHON_NONE_PROBE)}", check=False)
    except EngineError:
        return None
    text = res.console_text().strip()
    if res.cls != "done" or text not in ("True", "False"):
        return None
    return text == "False"


async def configure(session: "DebugSession") -> None:
    """Called by the session right after cuda-gdb is detected: apply the 11.8 workaround where needed."""
    info = session.info
    if not info.has_python:
        return  # cuda-gdb-minimal: nothing Python-side to fix
    broken = await probe_python_none(session)
    if broken is None:
        broken = needs_unwinder_workaround(info.cuda_version, info.has_python)
    ext = get(session)
    if ext is not None:
        ext.python_none_broken = broken
    if broken:
        for command in WORKAROUND_118:
            await session.cmd(f"-interpreter-exec console {mi.quote(command)}", check=False)
        session.cuda_workaround_applied = True


# ---------------------------------------------------------------------------------------------
# Reading the state


def focus(state: DebuggerState) -> CudaFocus | None:
    """cuda-gdb's focus when it is on a device thread, else None."""
    return state.device_focus


def device_focus(state: DebuggerState) -> bool:
    return focus(state) is not None


def snapshot(state: DebuggerState) -> CudaSnapshot | None:
    """The CUDA snapshot of this state (None when the session is not cuda-gdb)."""
    return state.cuda.snapshot


def get(session: "DebugSession") -> CudaExtension | None:
    """The session's CUDA extension (None if the session was built without it)."""
    for ext in getattr(session, "extensions", ()):
        if isinstance(ext, CudaExtension):
            return ext
    return None


@dataclass(frozen=True)
class FocusSwitch:
    """What a focus switch did: the focus cuda-gdb granted (it picks the closest valid thread)."""

    request: str
    focus: CudaFocus
    changed: bool
    exact: bool
    frame: Frame | None = None


def _matches(flt: CudaFilter, f: CudaFocus) -> bool:
    """Whether the granted focus has every coordinate the request named by value."""
    for kind, v in flt.items:
        if kind in ("block", "thread"):
            got = f.block if kind == "block" else f.thread
            if got is None:
                return False
            for want, have in zip(v, (got.x, got.y, got.z)):
                if isinstance(want, int) and want != have:
                    return False
        elif isinstance(v, int) and getattr(f, kind) != v:
            return False
    return True


class CudaExtension(Extension):
    """Plugs cuda-gdb support into a DebugSession (inert under plain gdb)."""

    def __init__(self, config: "SessionConfig | None" = None, auto_rows_limit: int = AUTO_ROWS_LIMIT) -> None:
        self.config = config
        self.session: DebugSession | None = None
        self.caps: CudaCaps | None = None
        self.settings: CudaSettings | None = None
        self.python_none_broken: bool | None = None
        self.auto_rows_limit = auto_rows_limit
        self.per_block_kernels: set[int] = set()
        self.last_device_focus: CudaFocus | None = None
        self._cache: dict[tuple, Any] = {}
        self._cache_gen = -1
        self._lock_obj: asyncio.Lock | None = None

    @property
    def _lock(self) -> asyncio.Lock:
        """Serializes focus-changing operations (created in the running loop, for Python 3.9)."""
        if self._lock_obj is None:
            self._lock_obj = asyncio.Lock()
        return self._lock_obj

    # -- hooks ------------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self.caps is not None

    async def on_gdb_ready(self, session: "DebugSession") -> None:
        if session.info.is_cuda:
            await configure(session)

    async def on_configure(self, session: "DebugSession") -> None:
        self.session = session
        if not session.info.is_cuda:
            if self.config is not None and getattr(self.config, "cuda", False):
                session.startup_messages.append(
                    f"--cuda: {session.config.gdb} does not report itself as cuda-gdb; the CUDA views are off"
                )
            return
        self.caps = await self._probe_caps(session)
        self.settings = await self._read_settings(session)
        session.stop_hooks.append(self._stop_hook)
        session.refresh_stages.append(self._refresh_stage)
        session.set_state(session.state.with_cuda(snapshot=CudaSnapshot(caps=self.caps, settings=self.settings)))

    async def _probe_caps(self, session: "DebugSession") -> CudaCaps:
        info = session.info
        commands: set[str] = set()
        probed = "info-gdb-mi-command" in info.features
        if probed:
            for name in CUDA_MI_COMMANDS:
                res = await session.cmd(f"-info-gdb-mi-command {name}", check=False)
                cmd = res.get("command")
                if isinstance(cmd, Mapping) and cmd.get("exists") == "true":
                    commands.add(name)
        else:
            # No probing: the commands every cuda-gdb since 11.x has.
            commands = {c for c in CUDA_MI_COMMANDS if c not in ("cuda-info-launch-children", "cuda-info-managed", "cuda-info-line", "cuda-info-barriers", "cuda-info-clusters")}
        options = {name for name in OPTION_VALUES if not (name == "memcheck" and info.cuda_version >= (12, 8))}
        return CudaCaps(
            cuda_version=info.cuda_version,
            gdb_version=info.version,
            has_python=info.has_python,
            commands=frozenset(commands),
            options=frozenset(options),
            order=LogicalOrder.for_version(info.cuda_version),
            python_none_broken=bool(self.python_none_broken),
            workaround_applied=bool(getattr(session, "cuda_workaround_applied", False)),
            probed=probed,
        )

    async def _read_settings(self, session: "DebugSession") -> CudaSettings:
        values: dict[str, str] = {}
        for name in OPTION_VALUES:
            if self.caps is not None and name not in self.caps.options:
                continue
            res = await session.cmd(f"-gdb-show cuda {name}", check=False)
            if res.cls == "done" and isinstance(res.get("value"), str):
                values[name] = res.get("value")
        return CudaSettings(MappingProxyType(values))

    def _stop_hook(self, st: DebuggerState) -> DebuggerState:
        if self.caps is None:
            return st
        p = st.stop.payload if st.stop is not None else {}
        stopped = st.process is ProcessState.STOPPED
        f = CudaFocus.from_mi(p.get("CudaFocus")) if stopped else None
        user_bps = {b.number.split(".")[0] for b in st.breakpoints if not b.internal}
        kind = classify_stop(p, user_bps) if stopped else STOP_HOST
        bk = p.get("bkptno")
        if bk is not None and p.get("locno") is not None:
            bk = f"{bk}.{p.get('locno')}"
        snap = CudaSnapshot(
            generation=st.generation,
            caps=self.caps,
            focus=f,
            stop_focus=f,
            stop_kind=kind,
            exception=decode_exception(p) if stopped else None,
            bkptno=str(bk) if bk is not None else None,
            settings=self.settings,
            loaded=not stopped,
        )
        if f is not None:
            self.last_device_focus = f
        self._cache.clear()
        self._cache_gen = st.generation
        return st.with_cuda(snapshot=snap, focus=f, focus_known=True)

    # -- state helpers ----------------------------------------------------------------------

    def _session(self) -> "DebugSession":
        if self.session is None or self.caps is None:
            raise CudaError("this session is not running cuda-gdb")
        return self.session

    def _require_stopped(self, what: str) -> "DebugSession":
        s = self._session()
        if s.state.process is not ProcessState.STOPPED:
            raise CudaError(f"cannot {what}: {s.process_description()}")
        return s

    def _update(self, generation: int, **changes: Any) -> CudaSnapshot | None:
        """Replace fields of the current snapshot, unless a newer stop came in between."""
        s = self._session()
        st = s.state
        snap = snapshot(st)
        if snap is None or st.generation != generation or snap.generation != generation:
            return None
        new = replace(snap, **changes)
        s.set_state(st.with_cuda(snapshot=new))
        return new

    async def _table(self, command: str, expect: str | None = None, timeout: float | None = None) -> MITable:
        s = self._session()
        try:
            res = await s.cmd(command, timeout=timeout or 30.0)
        except MIError as exc:
            raise CudaError(exc.message) from exc
        return parse_table(res.payload, expect)

    async def _cached(self, key: tuple, make) -> Any:
        s = self._session()
        gen = s.state.generation
        if self._cache_gen != gen:
            self._cache.clear()
            self._cache_gen = gen
        if key in self._cache:
            return self._cache[key]
        val = await make()
        if s.state.generation == gen:
            self._cache[key] = val
        return val

    def _cmd_name(self, command: str) -> None:
        caps = self.caps
        if caps is not None and caps.commands and not caps.has(command):
            raise CudaError(f"this cuda-gdb ({caps.version_text}) has no -{command}")

    # -- the refresh after a stop -----------------------------------------------------------

    async def _refresh_stage(self, session: "DebugSession", generation: int) -> None:
        snap = snapshot(session.state)
        if snap is None or snap.generation != generation:
            return
        errors: dict[str, str] = {}

        async def table(key: str, command: str, expect: str, timeout: float | None = None) -> MITable | None:
            try:
                return await self._table(command, expect, timeout)
            except CudaError as exc:
                errors[key] = str(exc)
                return None

        t = await table("devices", "-cuda-info-devices", "DevicesTable")
        devices = tuple(CudaDevice.from_row(r) for r in t.rows) if t else ()
        t = await table("kernels", "-cuda-info-kernels", "KernelsTable")
        kernels = tuple(CudaKernel.from_row(r) for r in t.rows) if t else ()
        if self._update(generation, devices=devices, kernels=kernels, errors=MappingProxyType(dict(errors))) is None:
            return
        f = snap.focus
        kernel: int | None = None
        if f is not None and f.kernel is not None:
            kernel = f.kernel
        elif kernels:
            active = [k for k in kernels if k.status.startswith("Active")]
            kernel = (active or list(kernels))[0].kernel
        blocks: tuple[BlockRange, ...] = ()
        threads: ThreadRanges | None = None
        mode = "full"
        if kernel is not None:
            kinfo = next((k for k in kernels if k.kernel == kernel), None)
            bt = await table("blocks", f"-cuda-info-blocks kernel {kernel}", "BlocksTable")
            if bt is not None:
                blocks = tuple(BlockRange.from_row(r) for r in bt.rows)
            if self._update(generation, kernel=kernel, blocks=blocks, errors=MappingProxyType(dict(errors))) is None:
                return
            if kernel in self.per_block_kernels:
                mode = "per-block"
            else:
                try:
                    # The blocks table's name tells whether coalescing is on; an
                    # uncoalesced threads table of a whole kernel could be huge.
                    want_on = bt is None or not bt.uncoalesced
                    async with self._coalescing(session, on=True, known_on=want_on):
                        tt = await self._table(f"-cuda-info-threads kernel {kernel}", "ThreadsTable", BIG_TABLE_TIMEOUT)
                    threads = self._ranges(tt, kernel, kinfo)
                    if len(threads) > self.auto_rows_limit:
                        self.per_block_kernels.add(kernel)
                except CudaError as exc:
                    errors["threads"] = str(exc)
        now = snapshot(session.state)
        if threads is not None and now is not None and now.focus != f:
            threads = threads.with_focus(now.focus)  # the focus moved while the table was read
        if self._update(generation, threads=threads, threads_mode=mode, errors=MappingProxyType(dict(errors))) is None:
            return
        now = snapshot(session.state)
        if now is not None and now.focus != f:
            # a focus switch during the refresh already read the new warp's lanes
            self._update(generation, errors=MappingProxyType(dict(errors)), loaded=True)
            return
        lanes: tuple[CudaLane, ...] = ()
        if f is not None:
            flt = f"device {f.device} sm {f.sm} warp {f.warp}" if f.has_physical else ""
            lt = await table("lanes", f"-cuda-info-lanes {flt}".rstrip(), "LanesTable")
            lanes = tuple(CudaLane.from_row(r) for r in lt.rows) if lt else ()
            if lt is not None and f.has_physical and session.state.generation == generation:
                self._cache_gen = generation
                self._cache[("lanes", f.device, f.sm, f.warp)] = lanes
        exc_info = snap.exception
        if exc_info is not None:
            exc_info = await self._complete_exception(session, exc_info, lanes)
        self._update(generation, lanes=lanes, exception=exc_info, errors=MappingProxyType(dict(errors)), loaded=True)

    def _ranges(self, table: MITable, kernel: int | None, kinfo: CudaKernel | None) -> ThreadRanges:
        caps = self.caps or CudaCaps()
        tr = ThreadRanges.from_table(
            table,
            kernel=kernel,
            grid_dim=kinfo.grid_dim if kinfo else None,
            block_dim=kinfo.block_dim if kinfo else None,
            order=caps.order,
        )
        order = tr.infer_order()
        if order is not tr.order:
            tr = ThreadRanges.from_table(table, kernel=kernel, grid_dim=tr.grid_dim, block_dim=tr.block_dim, order=order)
        return tr

    async def _complete_exception(self, session: "DebugSession", exc: CudaException, lanes: tuple[CudaLane, ...]) -> CudaException:
        faulting = tuple(ln.lane for ln in lanes if ln.exception)
        changes: dict[str, Any] = {"lanes": faulting}
        if not exc.from_stop_fields:
            names = {ln.exception for ln in lanes if ln.exception}
            if len(names) == 1:
                name = names.pop()
                changes["name"] = name
                changes["scope"] = exception_scope(name)
        if exc.pc is None:
            res = await session.cmd("-data-evaluate-expression $errorpc", check=False)
            value = res.get("value") if res.cls == "done" else None
            if isinstance(value, str):
                pc, sym = parse_errorpc(value)
                changes["errorpc"] = value
                if pc is not None:
                    changes["pc"] = pc
                    if sym and not exc.function:
                        changes["function"] = sym
        return replace(exc, **changes)

    @contextlib.asynccontextmanager
    async def _coalescing(self, session: "DebugSession", on: bool, known_on: bool | None = None) -> AsyncIterator[None]:
        """Run the body with ``cuda coalescing`` on or off, restoring the user's value after."""
        if known_on is not None and known_on == on:
            yield
            return
        res = await session.cmd("-gdb-show cuda coalescing", check=False)
        before = str(res.get("value", "auto")) if res.cls == "done" else "auto"
        is_on = before in ("on", "auto")
        if is_on == on:
            yield
            return
        await session.cmd(f"-gdb-set cuda coalescing {'on' if on else 'off'}")
        try:
            yield
        finally:
            await session.cmd(f"-gdb-set cuda coalescing {before}", check=False)

    async def refresh(self) -> CudaSnapshot | None:
        """Read the CUDA tables again for the current stop (e.g. after a setting changed)."""
        s = self._require_stopped("read the CUDA state")
        gen = s.state.generation
        self._cache.clear()
        await self._refresh_stage(s, gen)
        return snapshot(s.state)

    # -- tables on demand (each one request, bounded) ------------------------------------------

    async def info(self, what: str, filter: str | CudaFilter | None = None, *, timeout: float | None = None) -> MITable:
        """Any ``-cuda-info-<what>`` table with a checked filter (e.g. ``info("threads", "kernel 0 block 1")``)."""
        command = f"cuda-info-{what}"
        self._cmd_name(command)
        allowed = ("kernel",) if what in ("launch-trace", "launch-children") else ALL_KINDS
        flt = parse_filter(filter, allowed=allowed, what=f"info cuda {what}")
        return await self._table(f"-{command} {flt}".rstrip(), timeout=timeout)

    async def fetch_devices(self) -> tuple[CudaDevice, ...]:
        self._require_stopped("list CUDA devices")
        return await self._cached(("devices",), self._fetch_devices)

    async def _fetch_devices(self) -> tuple[CudaDevice, ...]:
        t = await self._table("-cuda-info-devices", "DevicesTable")
        return tuple(CudaDevice.from_row(r) for r in t.rows)

    async def fetch_kernels(self) -> tuple[CudaKernel, ...]:
        self._require_stopped("list CUDA kernels")

        async def make() -> tuple[CudaKernel, ...]:
            t = await self._table("-cuda-info-kernels", "KernelsTable")
            return tuple(CudaKernel.from_row(r) for r in t.rows)

        return await self._cached(("kernels",), make)

    async def fetch_contexts(self) -> tuple[CudaContext, ...]:
        self._require_stopped("list CUDA contexts")
        t = await self._table("-cuda-info-contexts", "ContextsTable")
        return tuple(CudaContext.from_row(r) for r in t.rows)

    async def fetch_launch_trace(self, kernel: int) -> tuple[tuple[int, CudaKernel], ...]:
        """The chain of launches that led to a kernel (dynamic parallelism): ``(level, kernel)``, level 0 first."""
        self._require_stopped("read the launch trace")
        self._cmd_name("cuda-info-launch-trace")
        t = await self._table(f"-cuda-info-launch-trace {make_filter(kernel=kernel)}", "LaunchTraceTable")
        return tuple((mi.to_int(r.get("level"), 0) or 0, CudaKernel.from_row(r)) for r in t.rows)

    async def fetch_sms(self, device: int) -> tuple[CudaSM, ...]:
        """SMs of a device with their active warps (at most one row per SM)."""
        self._require_stopped("list SMs")
        flt = make_filter(device=device)

        async def make() -> tuple[CudaSM, ...]:
            t = await self._table(f"-cuda-info-sms {flt}", "SmsTable")
            return tuple(CudaSM.from_row(r) for r in t.rows)

        return await self._cached(("sms", device), make)

    async def fetch_warps(self, device: int, sm: int) -> tuple[CudaWarp, ...]:
        """Warps of one SM (at most 64 rows)."""
        self._require_stopped("list warps")
        flt = make_filter(device=device, sm=sm)

        async def make() -> tuple[CudaWarp, ...]:
            t = await self._table(f"-cuda-info-warps {flt}", "WarpsTable")
            return tuple(CudaWarp.from_row(r) for r in t.rows)

        return await self._cached(("warps", device, sm), make)

    async def fetch_lanes(self, device: int, sm: int, warp: int) -> tuple[CudaLane, ...]:
        """Lanes of one warp (at most 32 rows)."""
        self._require_stopped("list lanes")
        flt = make_filter(device=device, sm=sm, warp=warp)

        async def make() -> tuple[CudaLane, ...]:
            t = await self._table(f"-cuda-info-lanes {flt}", "LanesTable")
            return tuple(CudaLane.from_row(r) for r in t.rows)

        return await self._cached(("lanes", device, sm, warp), make)

    async def fetch_blocks(self, kernel: int, *, coalesced: bool = True) -> tuple[BlockRange, ...]:
        """Resident blocks of a kernel: coalesced ranges, or one row per block with its SM."""
        s = self._require_stopped("list blocks")
        flt = make_filter(kernel=kernel)

        async def make() -> tuple[BlockRange, ...]:
            if not coalesced:
                # one row per resident block: bounded by what the GPU holds at once
                async with self._coalescing(s, on=False):
                    t = await self._table(f"-cuda-info-blocks {flt}", "BlocksTable", BIG_TABLE_TIMEOUT)
                return tuple(BlockRange.from_row(r) for r in t.rows)
            t = await self._table(f"-cuda-info-blocks {flt}", "BlocksTable")
            if t.uncoalesced:
                async with self._coalescing(s, on=True, known_on=False):
                    t = await self._table(f"-cuda-info-blocks {flt}", "BlocksTable")
            return tuple(BlockRange.from_row(r) for r in t.rows)

        return await self._cached(("blocks", kernel, coalesced), make)

    async def fetch_threads(self, kernel: int, *, block: Dim3 | None = None) -> ThreadRanges:
        """Coalesced thread ranges of a kernel, or of one of its blocks (at most blockDim threads)."""
        s = self._require_stopped("list threads")
        flt = make_filter(kernel=kernel, block=block)

        async def make() -> ThreadRanges:
            kinfo = await self._kernel_info(kernel)
            if block is not None:
                # one block: at most blockDim rows even if the user turned coalescing off
                t = await self._table(f"-cuda-info-threads {flt}", "ThreadsTable")
            else:
                async with self._coalescing(s, on=True):
                    t = await self._table(f"-cuda-info-threads {flt}", "ThreadsTable", BIG_TABLE_TIMEOUT)
            return self._ranges(t, kernel, kinfo)

        tr: ThreadRanges = await self._cached(("threads", kernel, block), make)
        f = focus(s.state)
        return tr.with_focus(f) if f is not None else tr

    async def expand_block(
        self, kernel: int, block: Dim3, *, first: Dim3 | None = None, last: Dim3 | None = None
    ) -> ThreadRanges:
        """Every thread of one block with its PC and device/SM/warp/lane (≤ blockDim rows, one request).

        ``first``/``last`` keep only the threads of that span (the piece of a
        coalesced range that lies in this block).
        """
        s = self._require_stopped("expand a block")
        flt = make_filter(kernel=kernel, block=block)

        async def make() -> ThreadRanges:
            kinfo = await self._kernel_info(kernel)
            async with self._coalescing(s, on=False):
                t = await self._table(f"-cuda-info-threads {flt}", "ThreadsTable")
            return self._ranges(t, kernel, kinfo)

        tr: ThreadRanges = await self._cached(("block", kernel, block), make)
        if first is None and last is None:
            f = focus(s.state)
            return tr.with_focus(f) if f is not None else tr
        if tr.block_dim is None:
            raise CudaError(f"kernel {kernel} is not in the kernels table; cannot cut its block by thread")
        order, bd = tr.order, tr.block_dim
        lo = order.index(first, bd) if first is not None else 0
        hi = order.index(last, bd) if last is not None else bd.volume - 1
        sub = tr.where(lambda r: lo <= order.index(r.first_thread, bd) <= hi)
        f = focus(s.state)
        return sub.with_focus(f) if f is not None else sub

    def block_pieces(self, rng: ThreadRange, start: int = 0, count: int = 100) -> tuple[ThreadRange, ...]:
        """A coalesced range cut at block boundaries, one page (computed here, no request)."""
        kinfo, order = self._dims(rng.kernel)
        assert kinfo.grid_dim is not None and kinfo.block_dim is not None
        return rng.block_pieces(order, kinfo.grid_dim, kinfo.block_dim, start, count)

    def blocks_page(self, blocks: BlockRange, start: int = 0, count: int = 100) -> tuple[Dim3, ...]:
        """Block indices ``start`` .. ``start+count-1`` of a coalesced block range (computed, no request)."""
        kinfo, order = self._dims(blocks.kernel)
        assert kinfo.grid_dim is not None
        return blocks.blocks(order, kinfo.grid_dim, start, count)

    def block_piece_count(self, rng: ThreadRange) -> int:
        kinfo, order = self._dims(rng.kernel)
        assert kinfo.grid_dim is not None
        return rng.block_count(order, kinfo.grid_dim)

    def _dims(self, kernel: int | None) -> tuple[CudaKernel, LogicalOrder]:
        s = self._session()
        snap = snapshot(s.state)
        kinfo = snap.kernel_info(kernel) if snap is not None and kernel is not None else None
        if kinfo is None or kinfo.grid_dim is None or kinfo.block_dim is None:
            raise CudaError(f"kernel {kernel} is not in the kernels table of this stop")
        order = snap.threads.order if snap is not None and snap.threads is not None and snap.kernel == kernel else (self.caps or CudaCaps()).order
        return kinfo, order

    async def _kernel_info(self, kernel: int) -> CudaKernel | None:
        snap = snapshot(self._session().state)
        if snap is not None and snap.loaded:
            k = snap.kernel_info(kernel)
            if k is not None:
                return k
        for k in await self.fetch_kernels():
            if k.kernel == kernel:
                return k
        return None

    # -- focus ------------------------------------------------------------------------------

    async def query_focus(self) -> CudaFocus | None:
        """Ask cuda-gdb for its focus (11.x answers with text, 12.x with a CudaFocus tuple)."""
        s = self._require_stopped("query the CUDA focus")
        res = await s.cmd("-cuda-focus-query device sm warp lane kernel grid block thread", check=False)
        if res.cls != "done":
            msg = str(res.get("msg", ""))
            if "not set" in msg or "Focus" in msg:
                return None
            raise CudaError(msg or "cuda-gdb could not report its focus")
        if "CudaFocus" in res.payload:
            return CudaFocus.from_mi(res.get("CudaFocus"))
        text = res.get("text")
        if isinstance(text, str):
            return CudaFocus.from_text(text)
        return None

    def _focus_request(self, target: Any, coords: Mapping[str, Any]) -> CudaFilter:
        if coords:
            if target is not None:
                raise CudaFilterError("give a focus request or keyword coordinates, not both")
            return make_filter(**coords)
        if isinstance(target, CudaFilter):
            return parse_filter(target, what="focus")
        if isinstance(target, str):
            flt = parse_filter(target, what="focus")
            if not flt:
                raise CudaFilterError("focus: name at least one of kernel, grid, block, thread, device, sm, warp, lane")
            return flt
        if isinstance(target, CudaFocus):
            return parse_filter(target.logical_args() if target.has_logical else target.physical_args(), what="focus")
        if isinstance(target, ThreadRange):
            return make_filter(kernel=target.kernel, block=target.first_block, thread=target.first_thread)
        raise CudaFilterError(f"focus: cannot switch to {target!r}")

    async def switch_focus(self, target: Any = None, **coords: Any) -> FocusSwitch:
        """Switch cuda-gdb's focus and make frames, locals and the snapshot follow.

        ``target``: a request string (``"block (1,0,0) thread (3,0,0)"``), a
        CudaFilter, a CudaFocus, a ThreadRange (its first thread); or keyword
        coordinates (``kernel=0, block=(1,0,0), thread=(3,0,0)``). cuda-gdb picks
        the closest valid thread, so read ``.focus`` of the result. Raises
        CudaError with cuda-gdb's message when the request cannot be satisfied.
        """
        s = self._require_stopped("switch the CUDA focus")
        flt = self._focus_request(target, coords)
        async with self._lock:
            return await self._switch(s, flt)

    async def _switch(self, s: "DebugSession", flt: CudaFilter) -> FocusSwitch:
        gen = s.state.generation
        old = focus(s.state)
        res = await s.cmd(f"-cuda-focus-switch {flt}", check=False)
        if res.cls == "error":
            raise CudaError(str(res.get("msg", "cuda-gdb refused the focus switch")))
        granted = CudaFocus.from_mi(res.get("CudaFocus")) if "CudaFocus" in res.payload else None
        frame = Frame.from_mi(res.get("frame")) if isinstance(res.get("frame"), Mapping) else None
        text = res.get("text")
        unchanged = isinstance(text, str) and "unchanged" in text
        if granted is None:
            granted = old if unchanged and old is not None else await self.query_focus()
        if granted is None:
            raise CudaError(f"cuda-gdb accepted 'cuda {flt}' but reports no device focus")
        changed = not unchanged and not (old is not None and granted == old and frame is None)
        if changed or old is None or granted != old:
            await self._apply_focus(s, gen, granted, old)
        return FocusSwitch(request=str(flt), focus=granted, changed=changed, exact=_matches(flt, granted), frame=frame)

    async def _apply_focus(self, s: "DebugSession", gen: int, new: CudaFocus, old: CudaFocus | None) -> None:
        """Put a granted focus into the state, then re-read device frames and locals (no --thread)."""
        st = s.state
        if st.generation != gen:
            return
        self.last_device_focus = new
        snap = snapshot(st)
        tid = st.current_thread
        if snap is not None:
            snap = replace(
                snap,
                focus=new,
                threads=snap.threads.with_focus(new) if snap.threads is not None else None,
                lanes=snap.lanes if new.same_warp(old) else (),
            )
            st = st.with_cuda(snapshot=snap)
        st = st.with_cuda(focus=new, focus_known=True).evolve(selected_thread=tid, selected_frame=0)
        s.set_state(st)
        frames, more = await s.fetch_frames(tid or "", 0, FRAME_PAGE)
        s.set_state(apply_refresh(s.state, gen, frames=frames, frames_thread=tid, more_frames=more))
        # A key of its own per device thread, so locals are not marked changed across threads.
        key = f"cuda:{new.kernel}:{new.block}:{new.thread}"
        locs = await s.fetch_locals(key, 0)
        s.set_state(apply_refresh(s.state, gen, locals_=locs, locals_key=(tid or "", 0)))
        if snap is not None and not new.same_warp(old) and new.has_physical:
            assert new.device is not None and new.sm is not None and new.warp is not None
            try:
                lanes = await self.fetch_lanes(new.device, new.sm, new.warp)
            except CudaError as exc:
                log.info("lanes after the focus switch: %s", exc)
            else:
                cur = snapshot(s.state)
                if cur is not None and s.state.generation == gen:
                    lanes = tuple(replace(ln, current=(ln.lane == new.lane)) for ln in lanes)
                    s.set_state(s.state.with_cuda(snapshot=replace(cur, lanes=lanes)))

    async def select_host_thread(self, tid: str) -> None:
        """Look at a host thread: this drops cuda-gdb's device focus (restore_device_focus brings it back)."""
        s = self._require_stopped("select a host thread")
        async with self._lock:
            st = s.state
            f = focus(st)
            if f is not None:
                self.last_device_focus = f
            snap = snapshot(st)
            if snap is not None:
                st = st.with_cuda(
                    snapshot=replace(snap, focus=None, threads=snap.threads.with_focus(None) if snap.threads is not None else None)
                )
            s.set_state(st.with_cuda(focus=None, focus_known=True))
            await s.select_thread(tid)

    async def restore_device_focus(self) -> FocusSwitch:
        """Return to the device thread that had the focus before a host thread was selected."""
        f = self.last_device_focus
        if f is None:
            raise CudaError("there is no device focus to return to")
        return await self.switch_focus(f)

    async def host_frames(self, tid: str, count: int = FRAME_PAGE) -> tuple[Frame, ...]:
        """A host thread's frames (e.g. the thread that launched the kernel) without losing the device focus.

        ``--thread`` drops cuda-gdb's focus, so the focus is re-asserted right after.
        """
        s = self._require_stopped("read a host thread's frames")
        async with self._lock:
            f = focus(s.state)
            res = await s.cmd(f"-stack-list-frames --thread {tid} 0 {max(0, count - 1)}", check=False)
            frames: tuple[Frame, ...] = ()
            if res.cls == "done":
                frames = tuple(
                    x for x in (Frame.from_mi(d, i) for i, d in enumerate(mi.as_list(res.get("stack")))) if x is not None
                )
            if f is not None:
                back = await s.cmd(f"-cuda-focus-switch {f.logical_args() if f.has_logical else f.physical_args()}", check=False)
                granted = CudaFocus.from_mi(back.get("CudaFocus")) if back.cls == "done" else None
                if back.cls != "done" or (granted is not None and not granted.same_thread(f)):
                    # The device thread is gone or elsewhere: say so in the state.
                    st = s.state
                    snap = snapshot(st)
                    if snap is not None:
                        st = st.with_cuda(snapshot=replace(snap, focus=granted))
                    s.set_state(st.with_cuda(focus=granted, focus_known=True))
            if res.cls != "done":
                raise CudaError(str(res.get("msg", f"cannot read the frames of thread {tid}")))
            return frames

    # -- settings ---------------------------------------------------------------------------

    async def read_settings(self) -> CudaSettings:
        s = self._session()
        self.settings = await self._read_settings(s)
        self._put_settings()
        return self.settings

    async def set_option(self, name: str, value: str) -> CudaSettings:
        """Set ``cuda break_on_launch`` / ``api_failures`` / ``memcheck`` and read the value back."""
        s = self._session()
        avail = self.caps.options if self.caps is not None else ()
        v = check_option(name, value, avail)
        try:
            await s.cmd(f"-gdb-set cuda {name} {v}")
        except MIError as exc:
            raise CudaError(f"cuda {name}: {exc.message}") from exc
        return await self.read_settings()

    def _put_settings(self) -> None:
        s = self._session()
        snap = snapshot(s.state)
        if snap is not None:
            s.set_state(s.state.with_cuda(snapshot=replace(snap, settings=self.settings)))

    # -- warp watch -------------------------------------------------------------------------

    async def warp_watch(self, expression: str, *, lanes: Iterable[int] | None = None) -> WarpWatch:
        """Evaluate ``expression`` in each valid lane of the focused warp, then restore the focus.

        Costs one focus switch and one evaluation per lane (at most 32), plus a
        frame selection per lane when a frame other than 0 is selected. A lane
        where evaluation fails reports its error; the others still report.
        """
        s = self._require_stopped("watch an expression across a warp")
        expr = expression.strip()
        if not expr:
            raise CudaError("warp watch needs an expression")
        async with self._lock:
            st = s.state
            gen = st.generation
            f = focus(st)
            if f is None or not f.has_physical:
                raise CudaError("warp watch needs the focus on a device thread")
            assert f.device is not None and f.sm is not None and f.warp is not None and f.lane is not None
            level = st.selected_frame
            all_lanes = await self.fetch_lanes(f.device, f.sm, f.warp)
            want = None if lanes is None else set(lanes)
            targets = [ln for ln in all_lanes if want is None or ln.lane in want]
            # Evaluate the focused lane first: it needs no switch.
            targets.sort(key=lambda ln: (ln.lane != f.lane, ln.lane))
            out: list[LaneValue] = []
            moved = False
            restored = True
            try:
                for ln in targets:
                    if s.state.generation != gen:
                        raise CudaError("the program moved during the warp watch")
                    if ln.lane != f.lane:
                        r = await s.cmd(f"-cuda-focus-switch device {f.device} sm {f.sm} warp {f.warp} lane {ln.lane}", check=False)
                        moved = True
                        if r.cls != "done":
                            out.append(LaneValue(ln.lane, ln.thread, ln.state, error=str(r.get("msg", "cannot switch to this lane"))))
                            continue
                        got = CudaFocus.from_mi(r.get("CudaFocus")) if "CudaFocus" in r.payload else None
                        if got is not None and got.lane != ln.lane:
                            out.append(LaneValue(ln.lane, ln.thread, ln.state, error=f"cuda-gdb focused lane {got.lane} instead"))
                            continue
                        if level:
                            await s.cmd(f"-stack-select-frame {int(level)}", check=False)
                    r = await s.cmd(f"-data-evaluate-expression {mi.quote(expr)}", check=False)
                    if r.cls == "done":
                        out.append(LaneValue(ln.lane, ln.thread, ln.state, value=str(r.get("value", ""))))
                    else:
                        out.append(LaneValue(ln.lane, ln.thread, ln.state, error=str(r.get("msg", "cannot evaluate"))))
            finally:
                if moved:
                    r = await s.cmd(f"-cuda-focus-switch {f.physical_args()}", check=False)
                    got = CudaFocus.from_mi(r.get("CudaFocus")) if r.cls == "done" and "CudaFocus" in r.payload else None
                    restored = r.cls == "done" and (got is None or got.same_thread(f))
                    if level:
                        await s.cmd(f"-stack-select-frame {int(level)}", check=False)
            out.sort(key=lambda lv: lv.lane)
            watch = WarpWatch(expression=expr, focus=f, lanes=tuple(out), restored=restored, frame=level)
            if s.state.generation == gen:
                s.set_state(s.state.with_cuda(warp_watch=watch))
            return watch

    # -- breakpoints ------------------------------------------------------------------------

    def breakpoint_view(self, number: str) -> KernelBreakpointView | None:
        """A breakpoint's locations with cuda-gdb's disabled host stubs of kernels hidden."""
        s = self._session()
        bp = s.state.breakpoint(number)
        return kernel_breakpoint_view(bp) if bp is not None else None
