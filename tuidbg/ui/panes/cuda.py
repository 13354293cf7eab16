"""The CUDA pane: devices, kernels, blocks and threads, the focused warp, cuda-gdb's focus.

Everything shown comes from the engine's CUDA snapshot (``cuda.snapshot(state)``)
or from bounded engine requests made when a row is expanded; nothing is invented.

Views (one at a time, switched with keys):

- **threads**: the blocks and threads of a kernel as cuda-gdb coalesces them,
  one row per range with its count and PC/source line. A range expands into its
  per-block pieces (computed locally, a page at a time, "load more" rows), a
  piece or a one-block range into the threads of that block (one bounded
  request), a block into its ranges (one bounded request). A filter
  (``kernel 1 block (0,0,0)``) asks cuda-gdb for the filtered tables.
- **devices**: device → SM → warp → lane, each level read when expanded.
- **kernels**: id, device, grid, status, dims, invocation; Enter shows that
  kernel's blocks and threads.
- **warp**: the lanes of the focused warp, and the warp watch (an expression
  evaluated in every lane, shown side by side, with per-lane errors).

Rows are drawn with the line API from a lazy tree: a million-thread grid's
ranges are converted only when they scroll into view. Enter on a thread (or a
range, block, warp, lane) asks cuda-gdb to switch its focus there; the pane
shows the focus cuda-gdb granted, or cuda-gdb's error. The stop (kernel
breakpoint, kernel entry, CUDA exception with its lanes and error PC) and the
``break_on_launch``/``api_failures``/``memcheck`` settings are shown on top.

Text from gdb is never markup: rows are built from plain segments and every
string goes through ``visible()``.

The app sets ``pane.session`` and calls ``pane.update_state(state)`` on every
state change (cheap when nothing CUDA changed); focus switches go through the
engine, which updates frames and locals in the state, so the source and stack
panes follow through the app's normal state flow.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Sequence

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.containers import Vertical
from textual.content import Content
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input, Static

from tuidbg.engine import cuda
from tuidbg.engine.cuda import (
    BlockRange,
    CudaDevice,
    CudaError,
    CudaFilter,
    CudaFocus,
    CudaKernel,
    CudaLane,
    CudaSM,
    CudaSnapshot,
    CudaWarp,
    Dim3,
    LaneValue,
    LogicalOrder,
    ThreadRange,
    ThreadRanges,
    WarpWatch,
    make_filter,
    parse_filter,
)
from tuidbg.engine.cuda_model import bits
from tuidbg.engine.errors import EngineError
from tuidbg.engine.state import DebuggerState, ProcessState
from tuidbg.ui.text import truncate, visible

PAGE = 100  # block pieces / blocks shown per "load more"
VIEWS = ("threads", "devices", "kernels", "warp")
NOT_CUDA = "CUDA views need cuda-gdb: start tuidbg with --cuda (or --gdb pointing at a cuda-gdb)."
TOGGLES = ("break_on_launch", "api_failures", "memcheck")

Part = tuple[str, str]  # (text, component class suffix; "" for plain)


def fmt_ints(values: Sequence[int]) -> str:
    """(0, 1, 2, 5, 7, 8) → "0-2,5,7-8"."""
    out: list[str] = []
    vals = sorted(values)
    i = 0
    while i < len(vals):
        j = i
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        out.append(str(vals[i]) if i == j else f"{vals[i]}-{vals[j]}")
        i = j + 1
    return ",".join(out) or "-"


def location(filename: str | None, line: int | None, pc: int | None = None) -> str:
    if filename and line is not None:
        return f"{filename.rsplit('/', 1)[-1]}:{line}"
    return f"{pc:#x}" if pc is not None else "?"


def _hex(v: int | None) -> str:
    return f"{v:#x}" if v is not None else "-"


# ---------------------------------------------------------------------------------------------
# A lazy tree of rows: a Seq is a list whose items may be opened into child Seqs.


class Item:
    """One row: what it shows, whether it holds cuda-gdb's focus, what it opens into."""

    def parts(self, ctx: "CudaPane") -> list[Part]:
        raise NotImplementedError

    def expandable(self, ctx: "CudaPane") -> bool:
        return False

    def children(self, ctx: "CudaPane") -> "Seq | None":
        return None

    def is_current(self, ctx: "CudaPane") -> bool:
        return False

    def holds_focus(self, ctx: "CudaPane") -> bool:
        return self.is_current(ctx)

    def activate(self, ctx: "CudaPane") -> bool:
        """Enter on the row; False when the row does nothing (the tree toggles it instead)."""
        return False


class Seq:
    """Rows of one level. ``open`` maps item indices to their expanded children."""

    def __init__(self) -> None:
        self.open: dict[int, Seq] = {}
        self.parent: Seq | None = None
        self.index_in_parent = 0
        self.depth = 0
        self._size: int | None = None
        self._keys: list[int] | None = None

    # data
    def count(self) -> int:
        return 0

    def item(self, i: int) -> Item:
        raise IndexError(i)

    def current_index(self, ctx: "CudaPane") -> int | None:
        return None

    # tree
    def changed(self) -> None:
        self._keys = None
        for k in [k for k in self.open if k >= self.count()]:
            del self.open[k]
        s: Seq | None = self
        while s is not None:
            s._size = None
            s = s.parent

    def size(self) -> int:
        if self._size is None:
            self._size = self.count() + sum(c.size() for c in self.open.values())
        return self._size

    def keys(self) -> list[int]:
        if self._keys is None:
            self._keys = sorted(self.open)
        return self._keys

    def pos_of(self, idx: int) -> int:
        """Row of item ``idx`` among this Seq's visible rows."""
        return idx + sum(self.open[k].size() for k in self.keys() if k < idx)

    def locate(self, r: int) -> tuple[Seq, int]:
        """The Seq and item index of visible row ``r``."""
        seq = self
        while True:
            offset = 0
            descended = False
            for k in seq.keys():
                pos = k + offset
                if r <= pos:
                    break
                child = seq.open[k]
                cs = child.size()
                if r <= pos + cs:
                    seq, r = child, r - pos - 1
                    descended = True
                    break
                offset += cs
            if not descended:
                return seq, r - offset

    def row_of(self, idx: int) -> int:
        """Absolute visible row of item ``idx`` of this Seq (from the root)."""
        r = self.pos_of(idx)
        seq = self
        while seq.parent is not None:
            r = seq.parent.pos_of(seq.index_in_parent) + 1 + r
            seq = seq.parent
        return r

    def attach(self, idx: int, child: Seq) -> None:
        child.parent = self
        child.index_in_parent = idx
        child.depth = self.depth + 1
        self.open[idx] = child
        self.changed()

    def detach(self, idx: int) -> None:
        if self.open.pop(idx, None) is not None:
            self.changed()


class ListSeq(Seq):
    def __init__(self, items: Sequence[Item], focus_order: Sequence[int] | None = None) -> None:
        super().__init__()
        self.items = list(items)
        self.focus_order = focus_order

    def count(self) -> int:
        return len(self.items)

    def item(self, i: int) -> Item:
        return self.items[i]

    def current_index(self, ctx: "CudaPane") -> int | None:
        order = self.focus_order if self.focus_order is not None else range(len(self.items))
        for i in order:
            if i < len(self.items) and self.items[i].holds_focus(ctx):
                return i
        return None


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

    def current_index(self, ctx: "CudaPane") -> int | None:
        f = ctx.cuda_focus
        th = self.threads
        if f is None or not f.has_logical or (self.kernel is not None and f.kernel != self.kernel):
            return None
        assert f.block is not None and f.thread is not None
        if th.can_locate:
            return th.locate(f.block, f.thread)
        return th.current_index


class PagedSeq(Seq):
    """Items computed locally a page at a time, with a "load more" row after them."""

    def __init__(self, total: int, page: Callable[[int, int], Sequence[Item]], what: str, focus_index: Callable[[], int | None] | None = None) -> None:
        super().__init__()
        self.total = total
        self.page = page
        self.what = what
        self.focus_index = focus_index
        self.loaded: list[Item] = list(page(0, PAGE))

    def count(self) -> int:
        return len(self.loaded) + (1 if len(self.loaded) < self.total else 0)

    def item(self, i: int) -> Item:
        if i < len(self.loaded):
            return self.loaded[i]
        if i == len(self.loaded) and len(self.loaded) < self.total:
            return MoreItem(self, self.total - len(self.loaded))
        raise IndexError(i)

    def load_more(self, until: int | None = None) -> None:
        want = max(len(self.loaded) + PAGE, (until or 0) + 1)
        while len(self.loaded) < min(want, self.total):
            got = self.page(len(self.loaded), min(PAGE * 10, want - len(self.loaded)))
            if not got:
                self.total = len(self.loaded)
                break
            self.loaded.extend(got)
        self.changed()

    def current_index(self, ctx: "CudaPane") -> int | None:
        if self.focus_index is None:
            return None
        i = self.focus_index()
        return i if i is not None and i < len(self.loaded) else None


class AsyncSeq(Seq):
    """Children read from cuda-gdb when opened: a "reading…" row until they arrive, or the error."""

    def __init__(self, what: str, loader: Callable[[], Awaitable[Seq]]) -> None:
        super().__init__()
        self.what = what
        self.loader = loader
        self.source: Seq | None = None
        self.error: str | None = None

    def count(self) -> int:
        if self.source is not None:
            return self.source.count()
        return 1

    def item(self, i: int) -> Item:
        if self.source is not None:
            return self.source.item(i)
        if self.error is not None:
            return NoteItem([(f"{self.what}: {self.error}", "error")])
        return NoteItem([(f"reading {self.what}…", "muted")])

    def current_index(self, ctx: "CudaPane") -> int | None:
        return self.source.current_index(ctx) if self.source is not None else None


# ---------------------------------------------------------------------------------------------
# Row kinds


class NoteItem(Item):
    def __init__(self, parts: list[Part]) -> None:
        self._parts = parts

    def parts(self, ctx: "CudaPane") -> list[Part]:
        return self._parts


class MoreItem(Item):
    def __init__(self, seq: PagedSeq, remaining: int) -> None:
        self.seq = seq
        self.remaining = remaining

    def parts(self, ctx: "CudaPane") -> list[Part]:
        n = min(PAGE, self.remaining)
        return [(f"… {self.remaining:,} more {self.seq.what} (enter loads {n})", "more")]

    def activate(self, ctx: "CudaPane") -> bool:
        ctx.load_more(self.seq)
        return True


class GroupItem(Item):
    def __init__(self, title: list[Part] | Callable[[], list[Part]], child: Seq, holds: Callable[[], bool] = lambda: False) -> None:
        self.title = title
        self.child = child
        self.holds = holds

    def parts(self, ctx: "CudaPane") -> list[Part]:
        return self.title() if callable(self.title) else self.title

    def expandable(self, ctx: "CudaPane") -> bool:
        return True

    def children(self, ctx: "CudaPane") -> Seq | None:
        return self.child

    def holds_focus(self, ctx: "CudaPane") -> bool:
        return self.holds()


class RangeItem(Item):
    """A coalesced range of threads at one PC, a per-block piece of one, or a single thread."""

    def __init__(self, r: ThreadRange, kernel: int | None, order: LogicalOrder) -> None:
        self.r = r
        self.kernel = r.kernel if r.kernel is not None else kernel
        self.order = order

    def parts(self, ctx: "CudaPane") -> list[Part]:
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

    def expandable(self, ctx: "CudaPane") -> bool:
        return not self.r.single

    def children(self, ctx: "CudaPane") -> Seq | None:
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

    def is_current(self, ctx: "CudaPane") -> bool:
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

    def activate(self, ctx: "CudaPane") -> bool:
        ctx.switch_focus(make_filter(kernel=self.kernel, block=self.r.first_block, thread=self.r.first_thread))
        return True


class BlockRangeItem(Item):
    """A coalesced range of resident blocks (or one block, with its SM when uncoalesced)."""

    def __init__(self, b: BlockRange, kernel: int | None) -> None:
        self.b = b
        self.kernel = b.kernel if b.kernel is not None else kernel

    def parts(self, ctx: "CudaPane") -> list[Part]:
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

    def expandable(self, ctx: "CudaPane") -> bool:
        return self.kernel is not None

    def children(self, ctx: "CudaPane") -> Seq | None:
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

    def is_current(self, ctx: "CudaPane") -> bool:
        f = ctx.cuda_focus
        if f is None or f.block is None or (self.kernel is not None and f.kernel != self.kernel):
            return False
        dims = ctx.dims(self.kernel)
        if dims is None:
            return self.b.current
        order, grid, _ = dims
        return order.index(self.b.first, grid) <= order.index(f.block, grid) <= order.index(self.b.last, grid)

    def activate(self, ctx: "CudaPane") -> bool:
        ctx.switch_focus(make_filter(kernel=self.kernel, block=self.b.first))
        return True


class BlockItem(Item):
    def __init__(self, kernel: int, block: Dim3) -> None:
        self.kernel = kernel
        self.block = block

    def parts(self, ctx: "CudaPane") -> list[Part]:
        return [("block ", "muted"), (str(self.block), "")]

    def expandable(self, ctx: "CudaPane") -> bool:
        return True

    def children(self, ctx: "CudaPane") -> Seq | None:
        ext = ctx.ext
        if ext is None:
            return None
        kernel, block = self.kernel, self.block

        async def load() -> Seq:
            return RangesSeq(await ext.fetch_threads(kernel, block=block), kernel)

        return AsyncSeq(f"the threads of block {block}", load)

    def is_current(self, ctx: "CudaPane") -> bool:
        f = ctx.cuda_focus
        return f is not None and f.kernel == self.kernel and f.block == self.block

    def activate(self, ctx: "CudaPane") -> bool:
        ctx.switch_focus(make_filter(kernel=self.kernel, block=self.block))
        return True


class KernelItem(Item):
    def __init__(self, k: CudaKernel) -> None:
        self.k = k

    def parts(self, ctx: "CudaPane") -> list[Part]:
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

    def expandable(self, ctx: "CudaPane") -> bool:
        return True

    def children(self, ctx: "CudaPane") -> Seq | None:
        k = self.k
        rows = [
            NoteItem([("launch  ", "muted"), (visible(k.launch), "")]),
            NoteItem([("invocation  ", "muted"), (visible(k.invocation), "")]),
            NoteItem([("SMs  ", "muted"), (fmt_ints(bits(k.sms_mask)), "")]),
            NoteItem([("parent kernel  ", "muted"), (str(k.parent) if k.parent is not None else "none (launched by the host)", "")]),
            NoteItem([("enter: show this kernel's blocks and threads", "more")]),
        ]
        return ListSeq(rows)

    def is_current(self, ctx: "CudaPane") -> bool:
        f = ctx.cuda_focus
        return f is not None and f.kernel == self.k.kernel

    def activate(self, ctx: "CudaPane") -> bool:
        ctx.show_kernel(self.k.kernel)
        return True


class DeviceItem(Item):
    def __init__(self, d: CudaDevice) -> None:
        self.d = d

    def parts(self, ctx: "CudaPane") -> list[Part]:
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

    def expandable(self, ctx: "CudaPane") -> bool:
        return True

    def children(self, ctx: "CudaPane") -> Seq | None:
        ext = ctx.ext
        if ext is None:
            return None
        dev = self.d.device

        async def load() -> Seq:
            return ListSeq([SMItem(dev, sm) for sm in await ext.fetch_sms(dev)])

        return AsyncSeq(f"the SMs of device {dev}", load)

    def is_current(self, ctx: "CudaPane") -> bool:
        f = ctx.cuda_focus
        return f is not None and f.device == self.d.device


class SMItem(Item):
    def __init__(self, device: int, sm: CudaSM) -> None:
        self.device = device
        self.sm = sm

    def parts(self, ctx: "CudaPane") -> list[Part]:
        return [("SM ", "muted"), (str(self.sm.sm), "count"), ("  active warps ", "muted"), (fmt_ints(self.sm.active_warps), "")]

    def expandable(self, ctx: "CudaPane") -> bool:
        return True

    def children(self, ctx: "CudaPane") -> Seq | None:
        ext = ctx.ext
        if ext is None:
            return None
        dev, sm = self.device, self.sm.sm

        async def load() -> Seq:
            return ListSeq([WarpItem(dev, sm, w) for w in await ext.fetch_warps(dev, sm)])

        return AsyncSeq(f"the warps of SM {sm}", load)

    def is_current(self, ctx: "CudaPane") -> bool:
        f = ctx.cuda_focus
        return f is not None and (f.device, f.sm) == (self.device, self.sm.sm)


class WarpItem(Item):
    def __init__(self, device: int, sm: int, w: CudaWarp) -> None:
        self.device = device
        self.sm = sm
        self.w = w

    def parts(self, ctx: "CudaPane") -> list[Part]:
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

    def expandable(self, ctx: "CudaPane") -> bool:
        return True

    def children(self, ctx: "CudaPane") -> Seq | None:
        ext = ctx.ext
        if ext is None:
            return None
        dev, sm, warp = self.device, self.sm, self.w.warp

        async def load() -> Seq:
            return ListSeq([LaneItem(dev, sm, warp, ln) for ln in await ext.fetch_lanes(dev, sm, warp)])

        return AsyncSeq(f"the lanes of warp {warp}", load)

    def is_current(self, ctx: "CudaPane") -> bool:
        f = ctx.cuda_focus
        return f is not None and (f.device, f.sm, f.warp) == (self.device, self.sm, self.w.warp)

    def activate(self, ctx: "CudaPane") -> bool:
        ctx.switch_focus(make_filter(device=self.device, sm=self.sm, warp=self.w.warp))
        return True


class LaneItem(Item):
    def __init__(self, device: int | None, sm: int | None, warp: int | None, ln: CudaLane, value: LaneValue | None = None) -> None:
        self.device = device
        self.sm = sm
        self.warp = warp
        self.ln = ln
        self.value = value

    def parts(self, ctx: "CudaPane") -> list[Part]:
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

    def is_current(self, ctx: "CudaPane") -> bool:
        f = ctx.cuda_focus
        return f is not None and (f.device, f.sm, f.warp, f.lane) == (self.device, self.sm, self.warp, self.ln.lane)

    def activate(self, ctx: "CudaPane") -> bool:
        if None in (self.device, self.sm, self.warp):
            return False
        ctx.switch_focus(make_filter(device=self.device, sm=self.sm, warp=self.warp, lane=self.ln.lane))
        return True


class GridItem(Item):
    """One line of the warp watch: several lanes' values side by side."""

    def __init__(self, cells: list[tuple[LaneValue, int]]) -> None:
        self.cells = cells

    def parts(self, ctx: "CudaPane") -> list[Part]:
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

    def _same_warp(self, ctx: "CudaPane") -> bool:
        w = ctx.watch
        return w is not None and w.focus.same_warp(ctx.cuda_focus)


# ---------------------------------------------------------------------------------------------
# The rows widget


class CudaRows(ScrollView, can_focus=True):
    """The pane's rows, drawn with the line API from a lazy tree (only visible rows are built)."""

    COMPONENT_CLASSES = {
        "cuda--current",
        "cuda--muted",
        "cuda--error",
        "cuda--warn",
        "cuda--group",
        "cuda--more",
        "cuda--loc",
        "cuda--count",
        "cuda--value",
        "cuda--cursor",
        "cuda--focus-row",
    }
    DEFAULT_CSS = """
    CudaRows {
        height: 1fr;
        background: $surface;
        overflow-y: auto;
        overflow-x: hidden;
    }
    CudaRows > .cuda--current { color: $text-warning; text-style: bold; }
    CudaRows > .cuda--muted { color: $text-muted; }
    CudaRows > .cuda--error { color: $text-error; }
    CudaRows > .cuda--warn { color: $text-warning; }
    CudaRows > .cuda--group { color: $text-accent; text-style: bold; }
    CudaRows > .cuda--more { color: $text-accent; text-style: italic; }
    CudaRows > .cuda--loc { color: $text-success; }
    CudaRows > .cuda--count { color: $text-primary; text-style: bold; }
    CudaRows > .cuda--value { text-style: bold; }
    CudaRows > .cuda--cursor { background: $block-cursor-background; }
    CudaRows > .cuda--focus-row { background: $warning-muted; }
    """
    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False, id="cuda.up"),
        Binding("down", "cursor(1)", "Down", show=False, id="cuda.down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="cuda.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="cuda.page_down"),
        Binding("home", "first", "First row", show=False, id="cuda.first"),
        Binding("end", "last", "Last row", show=False, id="cuda.last"),
        Binding("enter", "activate", "Switch focus", id="cuda.select"),
        Binding("space", "toggle", "Expand/collapse", show=False, id="cuda.toggle"),
        Binding("right", "expand", "Expand", show=False, id="cuda.expand"),
        Binding("left", "collapse", "Collapse", show=False, id="cuda.collapse"),
    ]

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.root: Seq = ListSeq([])
        self.cursor = 0
        self.ctx: CudaPane | None = None
        self.rows_built = 0  # rows turned into text since the widget was made (tests, benchmark)
        self._cache: LRUCache[tuple, Strip] = LRUCache(512)
        self._version = 0
        self._styles: dict[str, Style] = {}

    # -- content ---------------------------------------------------------------------------

    def set_root(self, root: Seq) -> None:
        self.root = root
        self.structure_changed()

    def structure_changed(self) -> None:
        n = self.root.size()
        if self.cursor >= n:
            self.cursor = max(0, n - 1)
        if self.virtual_size.height != n:
            self.virtual_size = Size(0, n)
        self.restyle()

    def restyle(self) -> None:
        """Rows keep their places, their text may have changed (focus moved, values arrived)."""
        self._version += 1
        self._cache.clear()
        self.refresh()

    @property
    def row_count(self) -> int:
        return self.root.size()

    def row_item(self, r: int) -> tuple[Seq, int, Item]:
        seq, idx = self.root.locate(r)
        return seq, idx, seq.item(idx)

    def row_text(self, r: int) -> str:
        """The plain text of row ``r`` as drawn (tests)."""
        return "".join(s.text for s in self._segments(r, False)[0]).rstrip()

    def focus_row(self) -> int | None:
        """The deepest visible row holding cuda-gdb's focus."""
        if self.ctx is None:
            return None
        seq: Seq = self.root
        base = 0
        found = None
        while True:
            i = seq.current_index(self.ctx)
            if i is None or i >= seq.count():
                return found
            pos = base + seq.pos_of(i)
            found = pos
            child = seq.open.get(i)
            if child is None:
                return found
            seq, base = child, pos + 1

    def move_to(self, r: int, *, center: bool = False) -> None:
        n = self.row_count
        old = self.cursor
        self.cursor = max(0, min(n - 1, r)) if n else 0
        h = max(1, self.size.height)
        top = self.scroll_offset.y
        if center:
            if not top <= self.cursor < top + h:
                self.scroll_to(y=max(0, self.cursor - h // 3), animate=False, immediate=True)
        elif self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + h:
            self.scroll_to(y=self.cursor - h + 1, animate=False, immediate=True)
        if self.scroll_offset.y != top:
            self.refresh()  # rows drawn before come from the cache
        elif old != self.cursor:
            # only the two rows whose cursor mark changed are drawn again
            self.refresh_line(old)
            self.refresh_line(self.cursor)

    # -- keys ------------------------------------------------------------------------------

    def action_cursor(self, delta: int) -> None:
        self.move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_to(self.cursor + direction * max(1, self.size.height - 1))

    def action_first(self) -> None:
        self.move_to(0)

    def action_last(self) -> None:
        self.move_to(self.row_count - 1)

    def _current(self) -> tuple[Seq, int, Item] | None:
        if not self.row_count or self.ctx is None:
            return None
        return self.row_item(self.cursor)

    def action_activate(self) -> None:
        cur = self._current()
        if cur is None:
            return
        seq, idx, item = cur
        assert self.ctx is not None
        if not item.activate(self.ctx):
            self._toggle(seq, idx, item)

    def action_toggle(self) -> None:
        cur = self._current()
        if cur is not None:
            seq, idx, item = cur
            if isinstance(item, MoreItem):
                item.activate(self.ctx)  # type: ignore[arg-type]
            else:
                self._toggle(seq, idx, item)

    def action_expand(self) -> None:
        cur = self._current()
        if cur is None:
            return
        seq, idx, item = cur
        if isinstance(item, MoreItem):
            item.activate(self.ctx)  # type: ignore[arg-type]
        elif idx in seq.open:
            if seq.open[idx].count():
                self.move_to(self.cursor + 1)
        else:
            self._toggle(seq, idx, item)

    def action_collapse(self) -> None:
        cur = self._current()
        if cur is None:
            return
        seq, idx, item = cur
        if idx in seq.open:
            seq.detach(idx)
            self.structure_changed()
        elif seq.parent is not None:
            self.move_to(seq.parent.row_of(seq.index_in_parent))

    def _toggle(self, seq: Seq, idx: int, item: Item) -> None:
        assert self.ctx is not None
        if idx in seq.open:
            seq.detach(idx)
        elif item.expandable(self.ctx):
            try:
                child = item.children(self.ctx)
            except EngineError as exc:  # e.g. the kernel left the kernels table
                self.ctx.say(str(exc), error=True)
                return
            if child is None:
                return
            seq.attach(idx, child)
            if isinstance(child, AsyncSeq) and child.source is None and child.error is None:
                self.ctx.load(child)
        else:
            return
        self.structure_changed()

    def on_resize(self, event: events.Resize) -> None:
        top, h = self.scroll_offset.y, max(1, self.size.height)
        if self.row_count and not top <= self.cursor < top + h:
            self.scroll_to(y=max(0, self.cursor - h // 3), animate=False, immediate=True)

    def on_click(self, event: events.Click) -> None:
        r = event.y + self.scroll_offset.y
        if 0 <= r < self.row_count:
            self.move_to(r)
            if event.chain >= 2:
                self.action_activate()

    # -- drawing ---------------------------------------------------------------------------

    def _style(self, name: str) -> Style:
        st = self._styles.get(name)
        if st is None:
            if name == "":
                st = self._styles[name] = self.rich_style
            else:
                st = self._styles[name] = self.get_component_rich_style(f"cuda--{name}", partial=True)
        return st

    def _segments(self, r: int, cursor: bool) -> tuple[list[Segment], Style]:
        base = self._style("")
        seq, idx, item = self.row_item(r)
        self.rows_built += 1
        ctx = self.ctx
        current = ctx is not None and item.is_current(ctx)
        line_style = base
        if current:
            line_style = line_style + self._style("focus-row")
        if cursor:
            line_style = line_style + self._style("cursor")
        if idx in seq.open:
            glyph = "▾ "
        elif ctx is not None and item.expandable(ctx):
            glyph = "▸ "
        else:
            glyph = "  "
        segs = [
            Segment("▶" if current else " ", line_style + self._style("current") if current else line_style),
            Segment("  " * seq.depth + glyph, line_style + self._style("muted")),
        ]
        parts = item.parts(ctx) if ctx is not None else []
        if isinstance(item, GroupItem):
            parts = [(t, c or "group") for t, c in parts]
        for text, cls in parts:
            segs.append(Segment(text, line_style + self._style(cls) if cls else line_style))
        return segs, line_style

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        r = self.scroll_offset.y + y
        if r >= self.row_count or width <= 0:
            return Strip.blank(width, self._style(""))
        cursor = r == self.cursor and self.has_focus
        key = (r, self._version, width, cursor)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        segs, line_style = self._segments(r, cursor)
        length = sum(cell_len(seg.text) for seg in segs)
        if length > width:
            strip = Strip(segs, length).crop(0, max(0, width - 1))
            strip = Strip([*strip, Segment("…", line_style)], width)
        else:
            if length < width:
                segs.append(Segment(" " * (width - length), line_style))
            strip = Strip(segs, width)
        self._cache[key] = strip
        return strip

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()
        self.restyle()

    def on_focus(self) -> None:
        self.refresh_line(self.cursor)

    def on_blur(self) -> None:
        self.refresh_line(self.cursor)


class CudaInput(Input):
    """The pane's input line (filter, focus request or warp-watch expression)."""


# ---------------------------------------------------------------------------------------------
# The pane


@dataclass
class _Alt:
    """Blocks and threads read on request (a filter, or a kernel other than the snapshot's)."""

    label: str
    kernel: int | None
    blocks: tuple[BlockRange, ...] = ()
    threads: ThreadRanges | None = None
    error: str | None = None
    loading: bool = True
    filter: CudaFilter | None = None


class CudaPane(Vertical):
    """Devices, kernels, blocks/threads and the focused warp of a cuda-gdb session."""

    DEFAULT_CSS = """
    CudaPane { height: 1fr; background: $surface; }
    CudaPane > #cuda-header { height: 3; padding: 0 1; background: $panel; text-wrap: nowrap; text-overflow: ellipsis; }
    CudaPane > #cuda-bar { height: 1; padding: 0 1; background: $boost; text-wrap: nowrap; text-overflow: ellipsis; }
    CudaPane > #cuda-message { height: 1; padding: 0 1; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis; }
    CudaPane > #cuda-message.-error { color: $text-error; }
    CudaPane > CudaInput { height: 1; border: none; padding: 0 1; background: $boost; display: none; }
    CudaPane > CudaInput:focus { border: none; background: $boost; }
    CudaPane > CudaInput.-open { display: block; }
    CudaPane > #cuda-off { height: 1; padding: 0 1; color: $text-muted; display: none; text-wrap: nowrap; text-overflow: ellipsis; }
    CudaPane.-off > * { display: none; }
    CudaPane.-off > #cuda-off { display: block; }
    """
    BINDINGS = [
        Binding("r", "view('threads')", "Blocks and threads", show=False, id="cuda.view_threads"),
        Binding("D", "view('devices')", "Devices, SMs, warps, lanes", show=False, id="cuda.view_devices"),
        Binding("k", "view('kernels')", "Kernels", show=False, id="cuda.view_kernels"),
        Binding("l", "view('warp')", "Focused warp and warp watch", show=False, id="cuda.view_warp"),
        Binding("i", "open_input('filter')", "Filter", id="cuda.filter"),
        Binding("G", "open_input('focus')", "Focus on…", id="cuda.goto"),
        Binding("e", "open_input('watch')", "Warp watch", id="cuda.warp_watch"),
        Binding("E", "rewatch", "Evaluate the warp watch again", show=False, id="cuda.warp_watch_again"),
        Binding("full_stop", "show_focus", "Go to the focused thread", show=False, id="cuda.show_focus"),
        Binding("L", "toggle_setting('break_on_launch')", "Cycle cuda break_on_launch", show=False, id="cuda.break_on_launch"),
        Binding("A", "toggle_setting('api_failures')", "Cycle cuda api_failures", show=False, id="cuda.api_failures"),
        Binding("M", "toggle_setting('memcheck')", "Cycle cuda memcheck", show=False, id="cuda.memcheck"),
        Binding("ctrl+r", "reread", "Read the CUDA tables again", show=False, id="cuda.refresh"),
        Binding("escape", "escape", "Close the input / clear the filter", show=False, id="cuda.escape"),
    ]

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.session: Any = None  # set by the app
        self.state: DebuggerState | None = None
        self.snap: CudaSnapshot | None = None
        self.watch: WarpWatch | None = None
        self.view = "threads"
        self.message = ""
        self.message_is_error = False
        self.filter: CudaFilter | None = None
        self.input_mode: str | None = None
        self.watch_expression = ""
        self._process: ProcessState | None = None
        self._watch_gen = -1
        self._view_keys: dict[str, tuple] = {}
        self._jump: set[str] = set()
        self._jump_after_switch = False
        self._alt: _Alt | None = None
        self._alt_gen = -1
        self._summary_key: tuple | None = None
        self._summary: tuple | None = None
        self._dims: dict[int, Any] = {}  # per snapshot
        self._refused: set[tuple[str, str]] = set()
        self._header_text: tuple = ()
        self._bar_key: tuple = ()
        self._threads_seq: RangesSeq | None = None
        self._warp_width = 0

    # -- composition -------------------------------------------------------------------------

    def compose(self):
        yield Static(Content(""), id="cuda-header")
        yield Static(Content(""), id="cuda-bar")
        rows = CudaRows(id="cuda-rows")
        rows.ctx = self
        yield rows
        yield Static(Content(""), id="cuda-message")
        yield CudaInput(id="cuda-input")
        yield Static(Content(NOT_CUDA), id="cuda-off")

    @property
    def rows(self) -> CudaRows:
        return self.query_one(CudaRows)

    def focus(self, scroll_visible: bool = True) -> "CudaPane":
        """Focus goes to the rows (the pane itself is a container)."""
        if self.has_class("-off"):
            return self
        self.rows.focus(scroll_visible)
        return self

    def on_mount(self) -> None:
        self.add_class("-off")
        if self.session is not None:
            self.update_state(self.session.state)

    # -- what the rows read ------------------------------------------------------------------

    @property
    def ext(self) -> cuda.CudaExtension | None:
        if self.session is None:
            return None
        ext = cuda.get(self.session)
        return ext if ext is not None and ext.active else None

    @property
    def cuda_focus(self) -> CudaFocus | None:
        """cuda-gdb's focus as the pane shows it (None: a host thread)."""
        return self.snap.focus if self.snap is not None else None

    def dims(self, kernel: int | None) -> tuple[LogicalOrder, Dim3, Dim3] | None:
        """A kernel's logical order, grid and block dims (None when the kernels table lacks it)."""
        snap = self.snap
        if snap is None or kernel is None:
            return None
        if kernel in self._dims:
            return self._dims[kernel]
        self._dims[kernel] = d = self._find_dims(snap, kernel)
        return d

    def _find_dims(self, snap: CudaSnapshot, kernel: int) -> tuple[LogicalOrder, Dim3, Dim3] | None:
        k = snap.kernel_info(kernel)
        if k is None or k.grid_dim is None or k.block_dim is None or not k.grid_dim.volume or not k.block_dim.volume:
            return None
        order = snap.threads.order if snap.threads is not None and snap.kernel == kernel else snap.caps.order
        return order, k.grid_dim, k.block_dim

    def load(self, seq: AsyncSeq) -> None:
        """Read an expanded row's children in a worker; the row shows "reading…" until then."""

        async def job() -> None:
            try:
                seq.source = await seq.loader()
            except (EngineError, asyncio.TimeoutError) as exc:
                seq.error = str(exc) or type(exc).__name__
            except Exception as exc:  # shown in the row, never as a traceback
                seq.error = f"{type(exc).__name__}: {exc}"
            seq.changed()
            self.rows.structure_changed()

        self.run_worker(job(), group="cuda-load", exit_on_error=False)

    def load_more(self, seq: PagedSeq) -> None:
        try:
            seq.load_more()
        except EngineError as exc:
            self.say(str(exc), error=True)
        self.rows.structure_changed()

    # -- state ---------------------------------------------------------------------------------

    def update_state(self, state: DebuggerState) -> None:
        """Called by the app on every state change; cheap when nothing CUDA changed."""
        snap = cuda.snapshot(state)
        watch = state.cuda.warp_watch
        if snap is self.snap and watch is self.watch and state.process is self._process and self.state is not None:
            return
        self.state = state
        self._process = state.process
        if snap is None:
            self.snap = None
            self.watch = watch
            self._show_off()
            return
        if self.has_class("-off"):
            self.remove_class("-off")
        prev = self.snap
        new_stop = prev is None or snap.generation != prev.generation
        focus_moved = prev is not None and not new_stop and snap.focus != prev.focus
        self.snap = snap
        self._dims.clear()
        if watch is not self.watch:
            self.watch = watch
            self._watch_gen = snap.generation
        if new_stop:
            self._view_keys.clear()
            self._jump = set(VIEWS)
            self._alt = None
            self._summary_key = None
            if self.filter is None:
                self._alt_gen = -1
        self._render_header()
        self._render_bar()
        if self.filter is not None and snap.loaded and state.is_stopped and self._alt_gen != snap.generation:
            self._apply_filter(self.filter)
        self._refresh_view()
        if focus_moved and self._jump_after_switch:
            self._jump_after_switch = False
            self._jump_to_focus()

    def _show_off(self) -> None:
        started = bool(getattr(getattr(self.session, "info", None), "banner", ""))
        if self.session is not None and not started:
            text = "CUDA: waiting for gdb to start…"
            self.state = None  # look again at the next call: the banner tells whether it is cuda-gdb
        else:
            text = NOT_CUDA
        self.query_one("#cuda-off", Static).update(Content(text), layout=False)
        self.add_class("-off")
        if self.rows.has_focus or self.query_one(CudaInput).has_focus:
            self.screen.set_focus(None)

    # -- header and bar ------------------------------------------------------------------------

    def _render_header(self) -> None:
        snap = self.snap
        st = self.state
        assert snap is not None and st is not None
        lines: list[Content] = []
        kinfo = snap.focused_kernel or snap.kernel_info()
        launch = visible(kinfo.launch) if kinfo is not None else ""
        if st.process is ProcessState.RUNNING:
            lines.append(Content.styled("● running", "bold"))
        elif st.process is not ProcessState.STOPPED:
            what = {
                ProcessState.EXITED: f"the program {st.exit_description or 'exited'}",
                ProcessState.NOT_STARTED: "the program has not started",
                ProcessState.DETACHED: "detached",
                ProcessState.GDB_EXITED: "gdb exited",
            }.get(st.process, st.process.value)
            lines.append(Content.styled(visible(what), "bold"))
        else:
            kind = snap.stop_kind
            exc = snap.exception
            if kind == cuda.STOP_EXCEPTION and exc is not None:
                lines.append(Content.assemble(("■ CUDA exception ", "bold $text-error"), (visible(f"{exc.signal}: {exc.name}"), "bold $text-error"), (f"  ({exc.scope} scope)", "$text-muted")))
            elif kind == cuda.STOP_BREAKPOINT:
                lines.append(Content.assemble(("■ breakpoint ", "bold"), (visible(snap.bkptno or "?"), "bold"), (f"  in {launch}" if launch else "", "")))
            elif kind == cuda.STOP_KERNEL_ENTRY:
                lines.append(Content.assemble(("■ kernel entry", "bold"), (" (break_on_launch)", "$text-muted"), (f"  {launch}" if launch else "", "")))
            elif kind == cuda.STOP_STEP:
                lines.append(Content.assemble(("■ stepped on the device", "bold"), (f"  in {launch}" if launch else "", "")))
            elif kind == cuda.STOP_SIGNAL:
                sig = st.stop.payload.get("signal-name", "") if st.stop is not None else ""
                lines.append(Content.assemble(("■ signal on the device ", "bold"), (visible(str(sig)), "bold")))
            elif kind == cuda.STOP_HOST:
                n = len(snap.kernels)
                tail = f"  ({n} kernel{'s' if n != 1 else ''} on the GPU)" if snap.loaded and n else ""
                lines.append(Content.assemble(("■ host stop", "bold"), (tail, "$text-muted")))
            else:
                lines.append(Content.assemble(("■ stopped on the device", "bold"), (f"  in {launch}" if launch else "", "")))
        f = snap.focus
        if f is not None:
            parts: list[Any] = [("focus ▶ ", "$text-warning"), (visible(_logical(f)), "bold")]
            if f.has_physical:
                parts.append((f"  · device {f.device} sm {f.sm} warp {f.warp} lane {f.lane}", "$text-muted"))
            sf = snap.stop_focus
            if sf is not None and not sf.same_thread(f):
                parts.append((f"  (the stop was in {_logical(sf)})", "$text-muted"))
            lines.append(Content.assemble(*parts))
        elif st.is_stopped:
            back = " (. returns to the device thread)" if snap.stop_focus is not None else ""
            lines.append(Content.styled(f"focus: host thread {st.selected_thread or '?'}, no device thread{back}", "$text-muted"))
        else:
            lines.append(Content(""))
        exc = snap.exception if st.is_stopped else None
        if exc is not None:
            # most telling first: the pane is often narrow and the line is cut at its end
            parts = []
            if exc.lanes:
                parts += [("faulting lanes ", "$text-muted"), (fmt_ints(exc.lanes), "bold $text-error"), (" · ", "$text-muted")]
            if exc.scope in ("warp", "lane"):
                parts.append(("precise · " if exc.precise else "imprecise (no error PC) · ", "$text-muted"))
            if exc.pc is not None:
                parts += [("error pc ", "$text-muted"), (f"{exc.pc:#x}", "bold")]
            if exc.filename and exc.line is not None:
                parts.append((visible(f" {exc.filename}:{exc.line}"), "$text-success"))
            elif exc.device is not None:
                parts.append((f" device {exc.device}", ""))
            if exc.function:
                parts.append((visible(f" {exc.function}"), ""))
            if exc.errorpc:
                parts += [(" · $errorpc = ", "$text-muted"), (visible(exc.errorpc), "")]
            lines.append(Content.assemble(*parts))
        else:
            parts = self._settings_parts()
            caps = snap.caps
            bits = [f"cuda-gdb {caps.version_text}"]
            if caps.minimal:
                bits.append("no Python (cuda-gdb-minimal)")
            if caps.workaround_applied:
                bits.append("11.8 unwinder workaround on")
            if st.is_stopped and not snap.loaded:
                bits.append("reading the CUDA tables…")
            parts.append(("  │ " if parts else "", "$text-muted"))
            parts.append((visible(" · ".join(bits)), "$text-muted"))
            if snap.errors and snap.loaded:
                parts.append((visible("  · " + "; ".join(f"{k}: {v}" for k, v in snap.errors.items())), "$text-error"))
            lines.append(Content.assemble(*parts))
        content = Content("\n").join(lines)
        key = tuple(c.plain for c in lines) + tuple(str(c.spans) for c in lines)
        if key != self._header_text:
            self._header_text = key
            self.query_one("#cuda-header", Static).update(content, layout=False)

    def _key(self, bid: str, default: str) -> str:
        km = getattr(self.app, "_keymap", None) or {}
        keys = km.get(bid, default)
        first = keys.split(",")[0].strip()
        return {"full_stop": "."}.get(first, first)

    def _settings_parts(self) -> list[Any]:
        """The toggles this cuda-gdb has, with their values and keys."""
        snap = self.snap
        parts: list[Any] = []
        if snap is None or snap.settings is None:
            return parts
        keys = {"break_on_launch": ("cuda.break_on_launch", "L"), "api_failures": ("cuda.api_failures", "A"), "memcheck": ("cuda.memcheck", "M")}
        for name in TOGGLES:
            value = snap.settings.get(name)
            if value is None or name not in snap.caps.options:
                continue  # this cuda-gdb has no such setting
            bid, dflt = keys[name]
            if parts:
                parts.append(("  ", ""))
            parts += [(self._key(bid, dflt), "$text-accent"), (f" {name} ", "$text-muted"), (visible(value), "bold")]
        return parts

    def _render_bar(self) -> None:
        parts: list[Any] = []
        names = {"threads": ("cuda.view_threads", "r", "threads"), "devices": ("cuda.view_devices", "D", "devices"), "kernels": ("cuda.view_kernels", "k", "kernels"), "warp": ("cuda.view_warp", "l", "warp")}
        for v in VIEWS:
            bid, dflt, label = names[v]
            style = "bold reverse" if v == self.view else ""
            parts += [(self._key(bid, dflt), "$text-accent"), (f" {label} ", style), (" ", "")]
        if self._alt is not None:
            parts += [("│ ", "$text-muted"), (visible(self._alt.label), "bold $text-warning"), (f"  ({self._key('cuda.escape', 'escape')} clears)", "$text-muted")]
        else:
            parts += [("│ ", "$text-muted"), (self._key("cuda.filter", "i"), "$text-accent"), (" filter  ", "$text-muted"), (self._key("cuda.goto", "G"), "$text-accent"), (" focus  ", "$text-muted"), (self._key("cuda.warp_watch", "e"), "$text-accent"), (" watch", "$text-muted")]
        content = Content.assemble(*parts)
        key = (content.plain, str(content.spans))
        if key != self._bar_key:
            self._bar_key = key
            self.query_one("#cuda-bar", Static).update(content, layout=False)

    def say(self, text: str, *, error: bool = False, notify: bool = False) -> None:
        """A one-line message under the rows (and a notification for errors that need one)."""
        self.message = text
        self.message_is_error = error
        msg = self.query_one("#cuda-message", Static)
        msg.set_class(error, "-error")
        msg.update(Content(visible(text)), layout=False)
        if notify:
            self.notify(text, severity="error" if error else "information", markup=False)

    # -- views ---------------------------------------------------------------------------------

    def action_view(self, name: str) -> None:
        if name not in VIEWS or self.snap is None:
            return
        if name != self.view:
            self.view = name
            self.rows.cursor = 0
            self.rows.scroll_to(y=0, animate=False, immediate=True)
            self._view_keys.pop(name, None)
            self._jump.add(name)
            self._render_bar()
            self._refresh_view()

    def _refresh_view(self) -> None:
        snap = self.snap
        if snap is None:
            return
        rows = self.rows
        builder = {"threads": self._threads_view, "devices": self._devices_view, "kernels": self._kernels_view, "warp": self._warp_view}[self.view]
        if self.state is None or not self.state.is_stopped:
            builder = self._not_stopped_view
        key = self._data_key()
        if self._view_keys.get(self.view) != key:
            self._view_keys[self.view] = key
            lane = self._cursor_lane()
            rows.set_root(builder())
            if lane is not None:
                # the warp view is rebuilt when values arrive: the cursor stays on its lane
                for r in range(rows.row_count):
                    item = rows.row_item(r)[2]
                    if isinstance(item, LaneItem) and item.ln.lane == lane:
                        rows.move_to(r, center=True)
                        break
        else:
            if self.view == "threads" and self._threads_seq is not None and snap.threads is not None and self._alt is None:
                self._threads_seq.threads = snap.threads  # the same rows; the current marker may have moved
            rows.restyle()
        if self.view in self._jump and self._data_ready():
            self._jump.discard(self.view)
            self._jump_to_focus()

    def _cursor_lane(self) -> int | None:
        rows = self.rows
        if self.view != "warp" or not rows.row_count or not isinstance(rows.root, ListSeq):
            return None
        item = rows.row_item(rows.cursor)[2]
        return item.ln.lane if isinstance(item, LaneItem) else None

    def _data_ready(self) -> bool:
        snap = self.snap
        if snap is None or not snap.loaded:
            return False
        if self.view == "threads" and self._alt is not None and self._alt.loading:
            return False
        return True

    def _data_key(self) -> tuple:
        snap = self.snap
        assert snap is not None
        g = (snap.generation, snap.loaded, self._process)
        if self.view == "threads":
            alt = self._alt
            if alt is not None:
                return g + ("alt", id(alt), alt.loading)
            th = snap.threads
            return g + (snap.kernel, snap.blocks, len(th) if th is not None else None, th.table if th is not None else "", snap.threads_mode, tuple(snap.errors.items()))
        if self.view == "devices":
            return g + (snap.devices, tuple(snap.errors.items()))
        if self.view == "kernels":
            return g + (snap.kernels,)
        return g + (snap.lanes, id(self.watch), snap.focus, self._warp_width, self._watch_gen)

    def _jump_to_focus(self) -> None:
        r = self.rows.focus_row()
        if r is not None:
            self.rows.move_to(r, center=True)

    def action_show_focus(self) -> None:
        snap = self.snap
        if snap is None:
            return
        if snap.focus is None and snap.stop_focus is not None and self.state is not None and self.state.is_stopped:
            self._restore_device_focus()
            return
        self._jump_to_focus()

    def _not_stopped_view(self) -> Seq:
        st = self.state
        p = st.process if st is not None else ProcessState.NOT_STARTED
        text = {
            ProcessState.RUNNING: "The program is running: cuda-gdb's tables are read at the next stop.",
            ProcessState.EXITED: "The program exited.",
            ProcessState.DETACHED: "Detached from the program.",
            ProcessState.GDB_EXITED: "gdb exited.",
        }.get(p, "The program has not started.")
        return ListSeq([NoteItem([(text, "muted")])])

    # threads view

    def _threads_view(self) -> Seq:
        snap = self.snap
        assert snap is not None
        self._threads_seq = None
        alt = self._alt
        if alt is not None:
            if alt.loading:
                return ListSeq([NoteItem([(f"reading {alt.label}…", "muted")])])
            if alt.error is not None:
                return ListSeq([NoteItem([(f"{alt.label}: ", "muted"), (visible(alt.error), "error")]), _escape_note(self)])
            return self._ranges_tree(alt.kernel, alt.blocks, alt.threads, "full", alt.label, {})
        if not self.state or not self.state.is_stopped:
            return ListSeq([NoteItem([("The program is not stopped.", "muted")])])
        if not snap.loaded and snap.threads is None and not snap.blocks:
            return ListSeq([NoteItem([("reading the blocks and threads…", "muted")])])
        if snap.kernel is None:
            return ListSeq([NoteItem([("No CUDA kernel is running.", "muted")])] + _error_notes(snap.errors))
        return self._ranges_tree(snap.kernel, snap.blocks, snap.threads, snap.threads_mode, f"kernel {snap.kernel}", snap.errors)

    def _ranges_tree(self, kernel: int | None, blocks: tuple[BlockRange, ...], threads: ThreadRanges | None, mode: str, label: str, errors: Any) -> Seq:
        snap = self.snap
        assert snap is not None
        kinfo = snap.kernel_info(kernel) if kernel is not None else None
        nblocks = sum(b.count for b in blocks)
        btitle: list[Part] = [("Blocks", ""), (f"  {label}", "muted"), (f" · {len(blocks):,} range{'s' if len(blocks) != 1 else ''} · {nblocks:,} resident blocks", "muted")]
        if kinfo is not None:
            btitle.append((f" of {kinfo.grid_dim.volume if kinfo.grid_dim else '?':,}", "muted"))
        bitems: list[Item] = [BlockRangeItem(b, kernel) for b in blocks]
        if "blocks" in errors:
            bitems.append(NoteItem([(visible(errors["blocks"]), "error")]))
        bseq = ListSeq(bitems)
        if threads is not None:
            tseq = RangesSeq(threads, kernel)
            if self._alt is None:
                self._threads_seq = tseq
            skey = self._summary_of(threads, kernel)
            nranges = f" · {len(threads):,} range{'s' if len(threads) != 1 else ''}"

            def ttitle() -> list[Part]:
                got = self._summary if self._summary_key == skey else None
                if got is None:
                    return [("Threads", ""), (f"{nranges} · counting threads…", "muted")]
                total, summary = got
                out: list[Part] = [("Threads", ""), (f"{nranges} · {total:,} threads", "muted")]
                if summary:
                    out.append(("  at ", "muted"))
                    for i, (pc, fname, line, n, _nr) in enumerate(summary[:3]):
                        out += [((", " if i else ""), "muted"), (visible(location(fname, line, pc)), "loc"), (f" ×{n:,}", "muted")]
                    if len(summary) > 3:
                        out.append((f", … {len(summary) - 3} more", "muted"))
                return out

            tgroup: Item = GroupItem(ttitle, tseq, lambda: tseq.current_index(self) is not None)
        else:
            if mode == "per-block":
                note = "Threads: this kernel's table was too big to read at every stop; expand a block to read its threads."
            elif "threads" in errors:
                note = f"Threads: {errors['threads']}"
            elif not snap.loaded:
                note = "Threads: reading…"
            else:
                note = "Threads: cuda-gdb listed none."
            items: list[Item] = [NoteItem([(visible(note), "error" if "threads" in errors else "muted")])]
            items += [BlockRangeItem(b, kernel) for b in blocks]
            tseq2 = ListSeq(items)
            tgroup = GroupItem([("Threads", ""), ("  per block", "muted")], tseq2, lambda: tseq2.current_index(self) is not None)
        bgroup = GroupItem(btitle, bseq, lambda: bseq.current_index(self) is not None)
        root_items: list[Item] = [bgroup, tgroup]
        if self._alt is not None:
            root_items.append(_escape_note(self))
        root = ListSeq(root_items, focus_order=[1, 0])
        root.attach(0, bseq)
        root.attach(1, tgroup.child)  # type: ignore[attr-defined]
        return root

    def _summary_of(self, threads: ThreadRanges, kernel: int | None) -> tuple:
        """Count a table's threads per location once the rows are on screen (20,000 ranges take
        tens of ms: the first paint does not wait for it); returns the summary's key."""
        snap = self.snap
        key = (snap.generation if snap else None, kernel, id(self._alt), len(threads), threads.table)
        if snap is not None and not snap.loaded and self._alt is None:
            return key  # counted after the stop's last table arrived and was painted
        if key != self._summary_key:
            self._summary_key = key
            self._summary = None

            def count() -> None:
                if key == self._summary_key:
                    summary = threads.summary()
                    self._summary_ready(key, (sum(t[3] for t in summary), summary))

            self.call_after_refresh(count)
        return key

    def _summary_ready(self, key: tuple, result: tuple) -> None:
        if key == self._summary_key:
            self._summary = result
            self.rows.restyle()

    # devices, kernels, warp views

    def _devices_view(self) -> Seq:
        snap = self.snap
        assert snap is not None
        items: list[Item] = [DeviceItem(d) for d in snap.devices]
        if not items:
            if "devices" in snap.errors:
                items.append(NoteItem([(visible(snap.errors["devices"]), "error")]))
            elif snap.loaded:
                items.append(NoteItem([("cuda-gdb reports no CUDA device (no GPU, or no CUDA context yet).", "muted")]))
            else:
                items.append(NoteItem([("reading the devices…" if self.state and self.state.is_stopped else "The program is not stopped.", "muted")]))
        return ListSeq(items)

    def _kernels_view(self) -> Seq:
        snap = self.snap
        assert snap is not None
        items: list[Item] = [KernelItem(k) for k in snap.kernels]
        if not items:
            if "kernels" in snap.errors:
                items.append(NoteItem([(visible(snap.errors["kernels"]), "error")]))
            elif snap.loaded:
                items.append(NoteItem([("No CUDA kernel is running.", "muted")]))
            else:
                items.append(NoteItem([("reading the kernels…" if self.state and self.state.is_stopped else "The program is not stopped.", "muted")]))
        return ListSeq(items)

    def _warp_view(self) -> Seq:
        snap = self.snap
        assert snap is not None
        f = snap.focus
        items: list[Item] = []
        watch = self.watch
        fresh = watch is not None and self._watch_gen == snap.generation
        if f is None:
            items.append(NoteItem([("No device thread has the focus: nothing to show for a warp.", "muted")]))
            return ListSeq(items)
        head: list[Part] = [("warp ", "muted"), (f"device {f.device} sm {f.sm} warp {f.warp}", "")]
        if f.kernel is not None:
            head.append((f"  kernel {f.kernel} block {f.block}", "muted"))
        if snap.lanes:
            active = sum(1 for ln in snap.lanes if ln.active)
            head.append((f"  · {len(snap.lanes)} lanes, {active} active", "muted"))
        items.append(NoteItem(head))
        values: dict[int, LaneValue] = {}
        if watch is not None and watch.focus.same_warp(f):
            values = {lv.lane: lv for lv in watch.lanes}
            note: list[Part] = [("watch ", "muted"), (visible(watch.expression), "value"), (f"  · {len(watch.lanes)} lanes, {watch.distinct_values} distinct value{'s' if watch.distinct_values != 1 else ''}", "muted")]
            errs = [lv for lv in watch.lanes if not lv.ok]
            if errs:
                note.append((f", {len(errs)} with errors", "error"))
            if not fresh:
                note.append(("  (from an earlier stop: E evaluates it again)", "error"))
            if not watch.restored:
                note.append(("  (cuda-gdb could not return to the focused lane)", "error"))
            items.append(NoteItem(note))
            items += self._watch_grid(watch)
            by_error: dict[str, list[int]] = {}
            for lv in errs:
                by_error.setdefault(lv.error or "", []).append(lv.lane)
            for msg, lanes in by_error.items():
                items.append(NoteItem([(f"lanes {fmt_ints(lanes)}: ", "error"), (visible(msg), "error")]))
        elif watch is not None:
            items.append(NoteItem([("the last warp watch was on another warp; E evaluates it here", "muted")]))
        else:
            items.append(NoteItem([(f"{self._key('cuda.warp_watch', 'e')} evaluates an expression in every lane of this warp", "muted")]))
        if snap.lanes:
            for ln in snap.lanes:
                items.append(LaneItem(f.device, f.sm, f.warp, ln, values.get(ln.lane)))
        elif "lanes" in snap.errors:
            items.append(NoteItem([("lanes: ", "muted"), (visible(snap.errors["lanes"]), "error")]))
        elif not snap.loaded:
            items.append(NoteItem([("reading the lanes…", "muted")]))
        return ListSeq(items, focus_order=[i for i in range(len(items)) if isinstance(items[i], LaneItem)])

    def _watch_grid(self, watch: WarpWatch) -> list[Item]:
        width = max(20, self.rows.size.width - 4)
        self._warp_width = self.rows.size.width
        texts = [len(visible(lv.value or "")) if lv.ok else len(visible(lv.error or "")) + 2 for lv in watch.lanes]
        cell = max(3, min(28, max(texts, default=3)))
        per = max(1, min(8, width // (cell + 6)))
        out: list[Item] = []
        lanes = list(watch.lanes)
        for i in range(0, len(lanes), per):
            out.append(GridItem([(lv, cell) for lv in lanes[i : i + per]]))
        return out

    def on_resize(self, event: events.Resize) -> None:
        if self.view == "warp" and self.snap is not None and self.watch is not None and self.rows.size.width != self._warp_width:
            self._refresh_view()

    # -- actions that ask cuda-gdb -------------------------------------------------------------

    def _run(self, coro: Awaitable[None], group: str) -> None:
        self.run_worker(coro, group=group, exit_on_error=False)

    def switch_focus(self, target: Any, *, jump: bool = False) -> None:
        """Ask cuda-gdb to move its focus; the pane says what it granted (or its error)."""
        ext = self.ext
        if ext is None:
            self.say("not a cuda-gdb session", error=True)
            return
        req = str(target)
        self.say(f"switching the focus to {req}…")

        async def job() -> None:
            self._jump_after_switch = jump
            try:
                sw = await ext.switch_focus(target)
            except (EngineError, asyncio.TimeoutError) as exc:
                self._jump_after_switch = False
                self.say(f"focus {req}: {exc}", error=True, notify=True)
                return
            got = sw.focus
            phys = f" · device {got.device} sm {got.sm} warp {got.warp} lane {got.lane}" if got.has_physical else ""
            if not sw.changed:
                self.say(f"focus unchanged: {_logical(got)}{phys}")
            elif sw.exact:
                self.say(f"focus → {_logical(got)}{phys}")
            else:
                self.say(f"cuda-gdb chose the closest valid thread: {_logical(got)}{phys}")
            if self._jump_after_switch and (not sw.changed or (self.snap is not None and self.snap.focus == got)):
                # the pane already shows this focus (else update_state jumps when it arrives)
                self._jump_after_switch = False
                self._jump_to_focus()

        self._run(job(), "cuda-focus")

    def _restore_device_focus(self) -> None:
        ext = self.ext
        if ext is None:
            return

        async def job() -> None:
            self._jump_after_switch = True
            try:
                sw = await ext.restore_device_focus()
            except (EngineError, asyncio.TimeoutError) as exc:
                self._jump_after_switch = False
                self.say(f"back to the device thread: {exc}", error=True, notify=True)
                return
            self.say(f"focus → {_logical(sw.focus)}")
            if self._jump_after_switch and self.snap is not None and self.snap.focus == sw.focus:
                self._jump_after_switch = False
                self._jump_to_focus()

        self._run(job(), "cuda-focus")

    def show_kernel(self, kernel: int) -> None:
        """The threads view for one kernel (read from cuda-gdb when it is not the snapshot's)."""
        snap = self.snap
        ext = self.ext
        if snap is None or ext is None:
            return
        self.filter = None
        if kernel == snap.kernel:
            self._alt = None
        else:
            alt = _Alt(label=f"kernel {kernel}", kernel=kernel)
            self._alt = alt
            self._alt_gen = snap.generation

            async def job() -> None:
                try:
                    alt.blocks = await ext.fetch_blocks(kernel)
                    alt.threads = await ext.fetch_threads(kernel)
                except (EngineError, asyncio.TimeoutError) as exc:
                    alt.error = str(exc)
                alt.loading = False
                if self._alt is alt:
                    self._refresh_view()

            self._run(job(), "cuda-load")
        self.view = "threads"
        self._jump.add("threads")
        self._render_bar()
        self._refresh_view()

    def _apply_filter(self, flt: CudaFilter) -> None:
        snap = self.snap
        ext = self.ext
        if snap is None or ext is None:
            return
        k = flt.get("kernel")
        if isinstance(k, int):
            kernel: int | None = k
        elif snap.focus is not None and snap.focus.kernel is not None:
            kernel = snap.focus.kernel
        else:
            kernel = snap.kernel
        alt = _Alt(label=f"filter {flt}", kernel=kernel, filter=flt)
        self._alt = alt
        self._alt_gen = snap.generation
        kinfo = snap.kernel_info(kernel) if kernel is not None else None
        order = snap.caps.order
        bflt = CudaFilter(tuple((kind, v) for kind, v in flt.items if kind in ("kernel", "grid", "block", "device", "sm")))

        async def job() -> None:
            try:
                t = await ext.info("threads", flt)
                tr = ThreadRanges.from_table(t, kernel=kernel, grid_dim=kinfo.grid_dim if kinfo else None, block_dim=kinfo.block_dim if kinfo else None, order=order)
                o = tr.infer_order()
                if o is not tr.order:
                    tr = ThreadRanges.from_table(t, kernel=kernel, grid_dim=tr.grid_dim, block_dim=tr.block_dim, order=o)
                alt.threads = tr
                b = await ext.info("blocks", bflt)
                alt.blocks = tuple(BlockRange.from_row(r) for r in b.rows)
            except (EngineError, asyncio.TimeoutError) as exc:
                alt.error = str(exc)
            alt.loading = False
            if self._alt is alt:
                n = len(alt.threads) if alt.threads is not None else 0
                if alt.error is None:
                    self.say(f"filter {flt}: {n:,} thread range{'s' if n != 1 else ''}")
                else:
                    self.say(f"filter {flt}: {alt.error}", error=True)
                self._jump.add("threads")
                self._refresh_view()

        self._run(job(), "cuda-load")
        self.view = "threads"
        self._render_bar()
        self._refresh_view()

    def action_rewatch(self) -> None:
        expr = self.watch_expression or (self.watch.expression if self.watch is not None else "")
        if not expr:
            self.action_open_input("watch")
            return
        self._warp_watch(expr)

    def _warp_watch(self, expr: str) -> None:
        ext = self.ext
        if ext is None:
            return
        self.watch_expression = expr
        self.say(f"evaluating {expr} in every lane of the warp…")
        if self.view != "warp":
            self.action_view("warp")

        async def job() -> None:
            try:
                w = await ext.warp_watch(expr)
            except (EngineError, asyncio.TimeoutError) as exc:
                self.say(f"warp watch: {exc}", error=True, notify=True)
                return
            bad = sum(1 for lv in w.lanes if not lv.ok)
            tail = f", {bad} lane{'s' if bad != 1 else ''} with errors" if bad else ""
            self.say(f"warp watch {expr}: {len(w.lanes)} lanes{tail}")

        self._run(job(), "cuda-watch")

    def action_toggle_setting(self, name: str) -> None:
        snap = self.snap
        ext = self.ext
        if snap is None or ext is None:
            return
        settings = snap.settings
        current = settings.get(name) if settings is not None else None
        if name not in snap.caps.options or current is None:
            msg = "this cuda-gdb has no memcheck (removed in 12.8; use compute-sanitizer)" if name == "memcheck" else f"this cuda-gdb has no 'cuda {name}' setting"
            self.say(msg, error=True)
            return
        values = [v for v in cuda.OPTION_VALUES[name] if (name, v) not in self._refused]
        nxt = values[(values.index(current) + 1) % len(values)] if current in values else values[0]

        async def job() -> None:
            try:
                got = await ext.set_option(name, nxt)
            except (EngineError, asyncio.TimeoutError) as exc:
                self._refused.add((name, nxt))
                self.say(f"cuda {name} {nxt}: {exc}", error=True, notify=True)
                return
            self.say(f"cuda {name} is now {got.get(name)}")

        self._run(job(), "cuda-settings")

    def action_reread(self) -> None:
        ext = self.ext
        if ext is None or self.state is None or not self.state.is_stopped:
            return
        self.say("reading the CUDA tables again…")

        async def job() -> None:
            try:
                await ext.refresh()
            except (EngineError, asyncio.TimeoutError) as exc:
                self.say(f"CUDA tables: {exc}", error=True, notify=True)
                return
            self._view_keys.clear()
            self._refresh_view()
            self.say("CUDA tables read again")

        self._run(job(), "cuda-load")

    # -- the input line ------------------------------------------------------------------------

    PROMPTS = {
        "filter": "filter: kernel 1 block (0,0,0)  (empty: no filter)",
        "focus": "switch focus: block (1,0,0) thread (3,0,0), or device 0 sm 2 warp 1 lane 7",
        "watch": "warp watch: an expression evaluated in every lane (e.g. i, a[i] * 2)",
    }

    def action_open_input(self, mode: str) -> None:
        if self.snap is None:
            return
        inp = self.query_one(CudaInput)
        self.input_mode = mode
        inp.placeholder = self.PROMPTS[mode]
        inp.value = {"filter": str(self.filter) if self.filter else "", "watch": self.watch_expression}.get(mode, "")
        inp.add_class("-open")
        inp.focus()

    def _close_input(self) -> None:
        inp = self.query_one(CudaInput)
        inp.remove_class("-open")
        self.input_mode = None
        self.rows.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        mode = self.input_mode
        text = event.value.strip()
        if mode == "filter":
            if not text:
                self._close_input()
                self._clear_alt()
                return
            try:
                flt = parse_filter(text, what="filter")
            except CudaError as exc:
                self.say(str(exc), error=True)
                return  # the input stays open to be corrected
            self.filter = flt
            self._close_input()
            self.say(f"filter {flt}: asking cuda-gdb…")
            self._apply_filter(flt)
        elif mode == "focus":
            if not text:
                self._close_input()
                return
            try:
                flt = parse_filter(text, what="focus")
                if not flt:
                    raise CudaError("focus: name a kernel, block, thread, device, sm, warp or lane")
            except CudaError as exc:
                self.say(str(exc), error=True)
                return
            self._close_input()
            self.switch_focus(flt, jump=True)
        elif mode == "watch":
            self._close_input()
            if text:
                self._warp_watch(text)

    def action_escape(self) -> None:
        if self.input_mode is not None:
            self._close_input()
        elif self._alt is not None:
            self._clear_alt()

    def _clear_alt(self) -> None:
        self.filter = None
        self._alt = None
        self._alt_gen = -1
        self._jump.add("threads")
        self.say("")
        self._render_bar()
        self._refresh_view()


def _logical(f: CudaFocus) -> str:
    parts = []
    if f.kernel is not None:
        parts.append(f"kernel {f.kernel}")
    if f.block is not None:
        parts.append(f"block {f.block}")
    if f.thread is not None:
        parts.append(f"thread {f.thread}")
    return " ".join(parts) or f.label


def _error_notes(errors: Any) -> list[Item]:
    return [NoteItem([(f"{k}: ", "muted"), (visible(str(v)), "error")]) for k, v in errors.items()]


def _escape_note(pane: CudaPane) -> Item:
    return NoteItem([(f"{pane._key('cuda.escape', 'escape')}: back to the blocks and threads of this stop", "more")])
