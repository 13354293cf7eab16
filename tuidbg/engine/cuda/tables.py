"""Tables read on demand, one bounded request each: devices, kernels, contexts, SMs, warps,
lanes, blocks, threads; a block expanded; pages of ranges computed locally."""

from __future__ import annotations

import logging

from tuidbg.engine import mi
from tuidbg.engine.cuda_model import (
    ALL_KINDS,
    BlockRange,
    CudaCaps,
    CudaContext,
    CudaDevice,
    CudaError,
    CudaFilter,
    CudaKernel,
    CudaLane,
    CudaSM,
    CudaWarp,
    Dim3,
    LogicalOrder,
    MITable,
    ThreadRange,
    ThreadRanges,
    make_filter,
    parse_filter,
)
from tuidbg.engine.cuda.base import BIG_TABLE_TIMEOUT, CudaBase, focus, snapshot


log = logging.getLogger("tuidbg.engine")

class CudaTables(CudaBase):
    """Part of ``CudaExtension`` (see the module's docstring)."""

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
