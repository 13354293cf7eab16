"""The CUDA pane's rows: groups, thread ranges, block ranges, blocks, kernels, devices, SMs,
warps, lanes and the warp watch grid, each knowing what it shows and what it opens into."""

from __future__ import annotations


from typing import Callable


from tuidbg.engine.cuda import (
    BlockRange,
    CudaDevice,
    CudaError,
    CudaKernel,
    CudaLane,
    CudaSM,
    CudaWarp,
    Dim3,
    LaneValue,
    LogicalOrder,
    ThreadRange,
    ThreadRanges,
    make_filter,
)
from tuidbg.engine.cuda_model import bits
from tuidbg.ui.panes.cuda.tree import AsyncSeq, Item, ListSeq, NoteItem, PagedSeq, Part, RowHost, Seq, _hex, fmt_ints, location
from tuidbg.ui.text import truncate, visible


class GroupItem(Item):
    def __init__(self, title: list[Part] | Callable[[], list[Part]], child: Seq, holds: Callable[[], bool] = lambda: False) -> None:
        self.title = title
        self.child = child
        self.holds = holds

    def parts(self, ctx: RowHost) -> list[Part]:
        return self.title() if callable(self.title) else self.title

    def expandable(self, ctx: RowHost) -> bool:
        return True

    def children(self, ctx: RowHost) -> Seq | None:
        return self.child

    def holds_focus(self, ctx: RowHost) -> bool:
        return self.holds()


class RangeItem(Item):
    """A coalesced range of threads at one PC, a per-block piece of one, or a single thread."""

    def __init__(self, r: ThreadRange, kernel: int | None, order: LogicalOrder) -> None:
        self.r = r
        self.kernel = r.kernel if r.kernel is not None else kernel
        self.order = order

    def parts(self, ctx: RowHost) -> list[Part]:
        r = self.r
        loc = location(r.filename, r.line, r.pc)
        if r.single:
            out: list[Part] = [("block ", "muted"), (str(r.first_block), ""), (" thread ", "muted"), (str(r.first_thread), "")]
            if r.lane is not None:
                out.append((f"  sm {r.sm} warp {r.warp} lane {r.lane}", "muted"))
            out += [("  ", ""), (visible(loc), "loc"), (f"  {_hex(r.pc)}", "muted")]
            return out
        return [
            (f"{r.count:>7,} ", "count"),
            ("threads  ", "muted"),
            (visible(loc), "loc"),
            ("  ", ""),
            (f"{r.first_block}/{r.first_thread}", ""),
            (" … ", "muted"),
            (f"{r.last_block}/{r.last_thread}", ""),
            (f"  {_hex(r.pc)}", "muted"),
        ]

    def expandable(self, ctx: RowHost) -> bool:
        return not self.r.single

    def children(self, ctx: RowHost) -> Seq | None:
        r = self.r
        if r.single:
            return None
        kernel = self.kernel
        if kernel is None:
            return ListSeq([NoteItem([("cuda-gdb did not say which kernel this range belongs to", "error")])])
        ext = ctx.ext
        if ext is None:
            return None
        if r.blocks_spanned:
            try:
                total = ext.block_piece_count(r)
            except CudaError as exc:
                return ListSeq([NoteItem([(str(exc), "error")])])
            dims = ctx.dims(kernel)

            def page(start: int, n: int) -> list[Item]:
                return [RangeItem(p, kernel, self.order) for p in ext.block_pieces(r, start, n)]

            def focus_index() -> int | None:
                f = ctx.cuda_focus
                if dims is None or f is None or f.block is None or f.kernel != kernel or f.thread is None:
                    return None
                order, grid, block = dims
                if not r.contains(f.block, f.thread, self.order, grid, block):
                    return None
                return self.order.index(f.block, grid) - self.order.index(r.first_block, grid)

            return PagedSeq(total, page, "blocks", focus_index)
        block, first, last = r.first_block, r.first_thread, r.last_thread

        async def load() -> Seq:
            rows = await ext.expand_block(kernel, block, first=first, last=last)
            return RangesSeq(rows, kernel)

        return AsyncSeq(f"the threads of block {block}", load)

    def is_current(self, ctx: RowHost) -> bool:
        f = ctx.cuda_focus
        r = self.r
        if f is None or not f.has_logical or (self.kernel is not None and f.kernel != self.kernel):
            return False
        assert f.block is not None and f.thread is not None
        dims = ctx.dims(self.kernel)
        if dims is None:
            return r.first_block == f.block and r.first_thread == f.thread if r.single else r.current
        _, grid, block = dims
        return r.contains(f.block, f.thread, self.order, grid, block)

    def activate(self, ctx: RowHost) -> bool:
        ctx.switch_focus(make_filter(kernel=self.kernel, block=self.r.first_block, thread=self.r.first_thread))
        return True


class BlockRangeItem(Item):
    """A coalesced range of resident blocks (or one block, with its SM when uncoalesced)."""

    def __init__(self, b: BlockRange, kernel: int | None) -> None:
        self.b = b
        self.kernel = b.kernel if b.kernel is not None else kernel

    def parts(self, ctx: RowHost) -> list[Part]:
        b = self.b
        if b.count == 1 or b.first == b.last:
            out: list[Part] = [("  block ", "muted"), (str(b.first), "")]
            if b.sm is not None:
                out.append((f"  device {b.device} sm {b.sm}", "muted"))
        else:
            out = [(f"{b.count:>7,} ", "count"), ("blocks  ", "muted"), (str(b.first), ""), (" … ", "muted"), (str(b.last), "")]
        if b.state:
            out.append((f"  {visible(b.state)}", "muted"))
        return out

    def expandable(self, ctx: RowHost) -> bool:
        return self.kernel is not None

    def children(self, ctx: RowHost) -> Seq | None:
        ext = ctx.ext
        kernel = self.kernel
        if ext is None or kernel is None:
            return None
        b = self.b
        if b.count == 1 or b.first == b.last:
            return BlockItem(kernel, b.first).children(ctx)
        try:
            dims = ctx.dims(kernel)
            total = b.count
            if dims is not None:
                order, grid, _ = dims
                total = order.index(b.last, grid) - order.index(b.first, grid) + 1

            def page(start: int, n: int) -> list[Item]:
                return [BlockItem(kernel, blk) for blk in ext.blocks_page(b, start, n)]

            def focus_index() -> int | None:
                f = ctx.cuda_focus
                if dims is None or f is None or f.block is None or f.kernel != kernel:
                    return None
                order, grid, _ = dims
                i = order.index(f.block, grid) - order.index(b.first, grid)
                return i if 0 <= i < total else None

            return PagedSeq(total, page, "blocks", focus_index)
        except CudaError as exc:
            return ListSeq([NoteItem([(str(exc), "error")])])

    def is_current(self, ctx: RowHost) -> bool:
        f = ctx.cuda_focus
        if f is None or f.block is None or (self.kernel is not None and f.kernel != self.kernel):
            return False
        dims = ctx.dims(self.kernel)
        if dims is None:
            return self.b.current
        order, grid, _ = dims
        return order.index(self.b.first, grid) <= order.index(f.block, grid) <= order.index(self.b.last, grid)

    def activate(self, ctx: RowHost) -> bool:
        ctx.switch_focus(make_filter(kernel=self.kernel, block=self.b.first))
        return True


class BlockItem(Item):
    def __init__(self, kernel: int, block: Dim3) -> None:
        self.kernel = kernel
        self.block = block

    def parts(self, ctx: RowHost) -> list[Part]:
        return [("block ", "muted"), (str(self.block), "")]

    def expandable(self, ctx: RowHost) -> bool:
        return True

    def children(self, ctx: RowHost) -> Seq | None:
        ext = ctx.ext
        if ext is None:
            return None
        kernel, block = self.kernel, self.block

        async def load() -> Seq:
            return RangesSeq(await ext.fetch_threads(kernel, block=block), kernel)

        return AsyncSeq(f"the threads of block {block}", load)

    def is_current(self, ctx: RowHost) -> bool:
        f = ctx.cuda_focus
        return f is not None and f.kernel == self.kernel and f.block == self.block

    def activate(self, ctx: RowHost) -> bool:
        ctx.switch_focus(make_filter(kernel=self.kernel, block=self.block))
        return True


class KernelItem(Item):
    def __init__(self, k: CudaKernel) -> None:
        self.k = k

    def parts(self, ctx: RowHost) -> list[Part]:
        k = self.k
        out: list[Part] = [("kernel ", "muted"), (str(k.kernel), "count")]
        if k.parent is not None:
            out.append((f" (child of {k.parent})", "muted"))
        out += [
            (f"  device {k.device if k.device is not None else '?'} grid {k.grid if k.grid is not None else '?'}  ", "muted"),
            (visible(k.status or "?"), "loc" if k.status.startswith("Active") else "muted"),
            (f"  {k.grid_dim}×{k.block_dim}", ""),
            (f" = {k.total_threads:,} threads  ", "muted"),
            (visible(k.invocation), ""),
        ]
        return out

    def expandable(self, ctx: RowHost) -> bool:
        return True

    def children(self, ctx: RowHost) -> Seq | None:
        k = self.k
        rows = [
            NoteItem([("launch  ", "muted"), (visible(k.launch), "")]),
            NoteItem([("invocation  ", "muted"), (visible(k.invocation), "")]),
            NoteItem([("SMs  ", "muted"), (fmt_ints(bits(k.sms_mask)), "")]),
            NoteItem([("parent kernel  ", "muted"), (str(k.parent) if k.parent is not None else "none (launched by the host)", "")]),
            NoteItem([("enter: show this kernel's blocks and threads", "more")]),
        ]
        return ListSeq(rows)

    def is_current(self, ctx: RowHost) -> bool:
        f = ctx.cuda_focus
        return f is not None and f.kernel == self.k.kernel

    def activate(self, ctx: RowHost) -> bool:
        ctx.show_kernel(self.k.kernel)
        return True


class DeviceItem(Item):
    def __init__(self, d: CudaDevice) -> None:
        self.d = d

    def parts(self, ctx: RowHost) -> list[Part]:
        d = self.d
        return [
            ("device ", "muted"),
            (str(d.device), "count"),
            ("  ", ""),
            (visible(d.name), ""),
            (f"  {visible(d.description)} {visible(d.sm_type)}", "muted"),
            (f"  {d.num_sms} SMs × {d.num_warps} warps × {d.num_lanes} lanes, {d.num_regs} regs/lane", "muted"),
            ("  active SMs ", "muted"),
            (fmt_ints(d.active_sms), ""),
        ]

    def expandable(self, ctx: RowHost) -> bool:
        return True

    def children(self, ctx: RowHost) -> Seq | None:
        ext = ctx.ext
        if ext is None:
            return None
        dev = self.d.device

        async def load() -> Seq:
            return ListSeq([SMItem(dev, sm) for sm in await ext.fetch_sms(dev)])

        return AsyncSeq(f"the SMs of device {dev}", load)

    def is_current(self, ctx: RowHost) -> bool:
        f = ctx.cuda_focus
        return f is not None and f.device == self.d.device


class SMItem(Item):
    def __init__(self, device: int, sm: CudaSM) -> None:
        self.device = device
        self.sm = sm

    def parts(self, ctx: RowHost) -> list[Part]:
        return [("SM ", "muted"), (str(self.sm.sm), "count"), ("  active warps ", "muted"), (fmt_ints(self.sm.active_warps), "")]

    def expandable(self, ctx: RowHost) -> bool:
        return True

    def children(self, ctx: RowHost) -> Seq | None:
        ext = ctx.ext
        if ext is None:
            return None
        dev, sm = self.device, self.sm.sm

        async def load() -> Seq:
            return ListSeq([WarpItem(dev, sm, w) for w in await ext.fetch_warps(dev, sm)])

        return AsyncSeq(f"the warps of SM {sm}", load)

    def is_current(self, ctx: RowHost) -> bool:
        f = ctx.cuda_focus
        return f is not None and (f.device, f.sm) == (self.device, self.sm.sm)


class WarpItem(Item):
    def __init__(self, device: int, sm: int, w: CudaWarp) -> None:
        self.device = device
        self.sm = sm
        self.w = w

    def parts(self, ctx: RowHost) -> list[Part]:
        w = self.w
        out: list[Part] = [("warp ", "muted"), (str(w.warp), "count")]
        if w.kernel is not None:
            out.append((f"  kernel {w.kernel}", "muted"))
        if w.block is not None:
            out += [("  block ", "muted"), (str(w.block), "")]
        if w.first_thread is not None:
            out += [("  first thread ", "muted"), (str(w.first_thread), "")]
        out += [("  active lanes ", "muted"), (fmt_ints(w.active_lanes), "")]
        if w.divergent_lanes:
            out += [("  divergent ", "muted"), (fmt_ints(w.divergent_lanes), "warn")]
        out.append((f"  {_hex(w.pc)}", "muted"))
        return out

    def expandable(self, ctx: RowHost) -> bool:
        return True

    def children(self, ctx: RowHost) -> Seq | None:
        ext = ctx.ext
        if ext is None:
            return None
        dev, sm, warp = self.device, self.sm, self.w.warp

        async def load() -> Seq:
            return ListSeq([LaneItem(dev, sm, warp, ln) for ln in await ext.fetch_lanes(dev, sm, warp)])

        return AsyncSeq(f"the lanes of warp {warp}", load)

    def is_current(self, ctx: RowHost) -> bool:
        f = ctx.cuda_focus
        return f is not None and (f.device, f.sm, f.warp) == (self.device, self.sm, self.w.warp)

    def activate(self, ctx: RowHost) -> bool:
        ctx.switch_focus(make_filter(device=self.device, sm=self.sm, warp=self.w.warp))
        return True


class LaneItem(Item):
    def __init__(self, device: int | None, sm: int | None, warp: int | None, ln: CudaLane, value: LaneValue | None = None) -> None:
        self.device = device
        self.sm = sm
        self.warp = warp
        self.ln = ln
        self.value = value

    def parts(self, ctx: RowHost) -> list[Part]:
        ln = self.ln
        out: list[Part] = [("lane ", "muted"), (f"{ln.lane:<2}", "count")]
        if ln.thread is not None:
            out += [("  thread ", "muted"), (str(ln.thread), "")]
        out += [(f"  {visible(ln.state) or '?'}", "muted" if ln.active else "warn"), (f"  {_hex(ln.pc)}", "muted")]
        if ln.exception:
            out.append((f"  {visible(ln.exception)}", "error"))
        v = self.value
        if v is not None:
            if v.ok:
                out += [("  = ", "muted"), (visible(truncate(v.value or "", 200)[0]), "value")]
            else:
                out += [("  ! ", "error"), (visible(v.error or ""), "error")]
        return out

    def is_current(self, ctx: RowHost) -> bool:
        f = ctx.cuda_focus
        return f is not None and (f.device, f.sm, f.warp, f.lane) == (self.device, self.sm, self.warp, self.ln.lane)

    def activate(self, ctx: RowHost) -> bool:
        if None in (self.device, self.sm, self.warp):
            return False
        ctx.switch_focus(make_filter(device=self.device, sm=self.sm, warp=self.warp, lane=self.ln.lane))
        return True


class GridItem(Item):
    """One line of the warp watch: several lanes' values side by side."""

    def __init__(self, cells: list[tuple[LaneValue, int]]) -> None:
        self.cells = cells

    def parts(self, ctx: RowHost) -> list[Part]:
        out: list[Part] = []
        f = ctx.cuda_focus
        for lv, w in self.cells:
            mark = "▶" if f is not None and f.lane == lv.lane and self._same_warp(ctx) else " "
            out.append((f"{mark}{lv.lane:>2} ", "current" if mark == "▶" else "muted"))
            if lv.ok:
                text = visible(lv.value or "")
                shown, _ = truncate(text, w)
                out.append((shown.ljust(w), "value"))
            else:
                shown, _ = truncate("! " + visible(lv.error or ""), w)
                out.append((shown.ljust(w), "error"))
            out.append((" │", "muted"))
        return out

    def _same_warp(self, ctx: RowHost) -> bool:
        w = ctx.watch
        return w is not None and w.focus.same_warp(ctx.cuda_focus)

class RangesSeq(Seq):
    """The rows of a ThreadRanges (thousands of ranges: converted only when shown)."""

    def __init__(self, threads: ThreadRanges, kernel: int | None) -> None:
        super().__init__()
        self.threads = threads
        self.kernel = kernel if kernel is not None else threads.kernel

    def count(self) -> int:
        return len(self.threads)

    def item(self, i: int) -> Item:
        return RangeItem(self.threads[i], self.kernel, self.threads.order)

    def current_index(self, ctx: RowHost) -> int | None:
        f = ctx.cuda_focus
        th = self.threads
        if f is None or not f.has_logical or (self.kernel is not None and f.kernel != self.kernel):
            return None
        assert f.block is not None and f.thread is not None
        if th.can_locate:
            return th.locate(f.block, f.thread)
        return th.current_index
