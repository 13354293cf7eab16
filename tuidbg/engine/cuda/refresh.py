"""The refresh after a stop: devices, kernels, the coalesced blocks and threads of one kernel and
the focused warp's lanes, with the CUDA exception completed; bounded, stamped with the stop."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, AsyncIterator

from tuidbg.engine.cuda_model import (
    BlockRange,
    CudaCaps,
    CudaDevice,
    CudaError,
    CudaException,
    CudaKernel,
    CudaLane,
    CudaSnapshot,
    MITable,
    ThreadRanges,
    exception_scope,
    parse_errorpc,
)
from tuidbg.engine.cuda.base import BIG_TABLE_TIMEOUT, CudaBase, snapshot

if TYPE_CHECKING:
    from tuidbg.engine.session import DebugSession

log = logging.getLogger("tuidbg.engine")

class CudaRefresh(CudaBase):
    """Part of ``CudaExtension`` (see the module's docstring)."""

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
