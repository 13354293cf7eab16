"""Blocks and threads of a kernel as cuda-gdb lists them: ranges, and the lazy table of thread ranges.

Coalesced rows are ranges in logical order (``coords.LogicalOrder``); the
arithmetic here lets a pane page through a million-thread grid, locate a thread
and move the current marker without asking cuda-gdb again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterator, Mapping, Sequence, overload

from tuidbg.engine.cuda_model.coords import CudaFocus, Dim3, LogicalOrder, _fast_dim, _num
from tuidbg.engine.cuda_model.mitable import (
    Cell,
    MITable,
    TableRow,
    cells,
    dim_or_origin,
    fixed,
    index,
    number,
    star,
    text,
)


@dataclass(frozen=True)
class BlockRange(TableRow):
    """Resident blocks of a kernel: a coalesced range, or one block (uncoalesced, with its device/SM)."""

    kernel: int | None
    first: Dim3
    last: Dim3
    count: int
    state: str = ""
    current: bool = False
    device: int | None = None
    sm: int | None = None

    COALESCED = cells(kernel=number, first=("from", dim_or_origin), last=("to", dim_or_origin), count=index, state=text, current=star)
    UNCOALESCED = cells(
        kernel=number,
        first=("blockIdx", dim_or_origin),
        last=("blockIdx", dim_or_origin),
        count=fixed(1),
        state=text,
        current=star,
        device=number,
        sm=number,
    )

    def blocks(self, order: LogicalOrder, grid_dim: Dim3, start: int = 0, count: int | None = None) -> tuple[Dim3, ...]:
        """The block indices of the range, ``start`` .. ``start+count-1``, in logical order."""
        first = order.index(self.first, grid_dim)
        n = order.index(self.last, grid_dim) - first + 1
        stop = n if count is None else min(n, max(0, start) + max(0, count))
        return tuple(order.at(first + i, grid_dim) for i in range(max(0, start), stop))

    @classmethod
    def cells_for(cls, row: Mapping[str, Any]) -> Mapping[str, Cell]:
        return cls.UNCOALESCED if "blockIdx" in row else cls.COALESCED


# A thread's PC: the virtual PC (the one the source lines map), ``pc`` in older tables.
_PC = Cell(("virtual_pc", "pc"), number)


@dataclass(frozen=True)
class ThreadRange(TableRow):
    """Threads of a kernel at one PC: a coalesced range, or one thread (uncoalesced, with device/SM/warp/lane)."""

    kernel: int | None
    first_block: Dim3
    first_thread: Dim3
    last_block: Dim3
    last_thread: Dim3
    count: int
    pc: int | None = None
    filename: str = ""
    line: int | None = None
    current: bool = False
    device: int | None = None
    sm: int | None = None
    warp: int | None = None
    lane: int | None = None

    _COMMON = cells(kernel=number, pc=_PC, filename=text, line=number, current=star)
    COALESCED = cells(
        _COMMON,
        first_block=("from_blockIdx", dim_or_origin),
        first_thread=("from_threadIdx", dim_or_origin),
        last_block=("to_blockIdx", dim_or_origin),
        last_thread=("to_threadIdx", dim_or_origin),
        count=index,
    )
    UNCOALESCED = cells(  # one thread, with where it runs
        _COMMON,
        first_block=("blockIdx", dim_or_origin),
        first_thread=("threadIdx", dim_or_origin),
        last_block=("blockIdx", dim_or_origin),
        last_thread=("threadIdx", dim_or_origin),
        count=fixed(1),
        device=number,
        sm=number,
        warp=number,
        lane=number,
    )

    @property
    def single(self) -> bool:
        return self.count == 1

    @property
    def blocks_spanned(self) -> bool:
        return self.first_block != self.last_block

    @property
    def location(self) -> str:
        if self.filename and self.line is not None:
            return f"{self.filename.rsplit('/', 1)[-1]}:{self.line}"
        return f"{self.pc:#x}" if self.pc is not None else "?"

    def focus_args(self, which: str = "first") -> str:
        """``-cuda-focus-switch`` arguments for the first (or last) thread of the range."""
        b, t = (self.first_block, self.first_thread) if which == "first" else (self.last_block, self.last_thread)
        if self.kernel is None:
            return f"block {b} thread {t}"
        return f"kernel {self.kernel} block {b} thread {t}"

    def contains(self, block: Dim3, thread: Dim3, order: LogicalOrder, grid_dim: Dim3, block_dim: Dim3) -> bool:
        i = order.linear(block, thread, grid_dim, block_dim)
        return self.start(order, grid_dim, block_dim) <= i <= self.end(order, grid_dim, block_dim)

    def start(self, order: LogicalOrder, grid_dim: Dim3, block_dim: Dim3) -> int:
        return order.linear(self.first_block, self.first_thread, grid_dim, block_dim)

    def end(self, order: LogicalOrder, grid_dim: Dim3, block_dim: Dim3) -> int:
        return order.linear(self.last_block, self.last_thread, grid_dim, block_dim)

    def span(self, order: LogicalOrder, grid_dim: Dim3, block_dim: Dim3) -> int:
        """How many threads lie between the range's ends in ``order`` (equals ``count`` when the order is right)."""
        return self.end(order, grid_dim, block_dim) - self.start(order, grid_dim, block_dim) + 1

    def block_count(self, order: LogicalOrder, grid_dim: Dim3) -> int:
        """How many blocks the range touches."""
        return order.index(self.last_block, grid_dim) - order.index(self.first_block, grid_dim) + 1

    def block_pieces(
        self, order: LogicalOrder, grid_dim: Dim3, block_dim: Dim3, start: int = 0, count: int | None = None
    ) -> tuple[ThreadRange, ...]:
        """The range cut at block boundaries, pieces ``start`` .. ``start+count-1``.

        Computed locally (a range has one PC), so a pane can page through the
        blocks of a million-thread range without asking cuda-gdb anything.
        """
        nblocks = self.block_count(order, grid_dim)
        if start < 0:
            raise ValueError("start must be ≥ 0")
        stop = nblocks if count is None else min(nblocks, start + max(0, count))
        b0 = order.index(self.first_block, grid_dim)
        tpb = block_dim.volume
        t_first = order.index(self.first_thread, block_dim)
        t_last = order.index(self.last_thread, block_dim)
        out = []
        for k in range(start, stop):
            bi = b0 + k
            block = order.at(bi, grid_dim)
            lo = t_first if k == 0 else 0
            hi = t_last if k == nblocks - 1 else tpb - 1
            out.append(
                replace(
                    self,
                    first_block=block,
                    last_block=block,
                    first_thread=order.at(lo, block_dim),
                    last_thread=order.at(hi, block_dim),
                    count=hi - lo + 1,
                    current=False,
                    device=None,
                    sm=None,
                    warp=None,
                    lane=None,
                )
            )
        return tuple(out)

    @classmethod
    def cells_for(cls, row: Mapping[str, Any]) -> Mapping[str, Cell]:
        return cls.UNCOALESCED if "threadIdx" in row and "from_threadIdx" not in row else cls.COALESCED


_UNSET: Any = object()


class ThreadRanges(Sequence[ThreadRange]):
    """The rows of a threads table, converted to ThreadRange only when read.

    A 1M-thread grid can have tens of thousands of ranges; a pane shows a page
    of them, so conversion is lazy and cached per row. ``with_focus`` moves the
    current marker after a focus switch without asking cuda-gdb again. Treat
    instances as immutable.
    """

    def __init__(
        self,
        rows: Sequence[Mapping[str, Any]],
        *,
        coalesced: bool = True,
        kernel: int | None = None,
        grid_dim: Dim3 | None = None,
        block_dim: Dim3 | None = None,
        order: LogicalOrder = LogicalOrder.X_FASTEST,
        table: str = "",
        _current: Any = _UNSET,
        _cache: dict[int, ThreadRange] | None = None,
    ) -> None:
        self._rows = rows
        self.coalesced = coalesced
        self.kernel = kernel
        self.grid_dim = grid_dim
        self.block_dim = block_dim
        self.order = order
        self.table = table
        self._current = _current
        self._cache: dict[int, ThreadRange] = {} if _cache is None else _cache
        self._total: int | None = None
        self._summary: tuple | None = None

    @classmethod
    def from_table(
        cls,
        table: MITable,
        *,
        kernel: int | None = None,
        grid_dim: Dim3 | None = None,
        block_dim: Dim3 | None = None,
        order: LogicalOrder = LogicalOrder.X_FASTEST,
    ) -> ThreadRanges:
        return cls(
            table.rows,
            coalesced=not table.uncoalesced,
            kernel=kernel,
            grid_dim=grid_dim,
            block_dim=block_dim,
            order=order,
            table=table.name,
        )

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, i: int) -> ThreadRange: ...

    @property
    def converted(self) -> int:
        """How many rows have been made ranges so far (each is made when first asked for)."""
        return len(self._cache)

    @overload
    def __getitem__(self, i: slice) -> tuple[ThreadRange, ...]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[k] for k in range(*i.indices(len(self))))
        n = len(self._rows)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        r = self._cache.get(i)
        if r is None:
            r = ThreadRange.from_row(self._rows[i])
            self._cache[i] = r
        if self._current is not _UNSET:
            want = i == self._current
            if r.current != want:
                r = replace(r, current=want)
        return r

    def __iter__(self) -> Iterator[ThreadRange]:
        for i in range(len(self)):
            yield self[i]

    def page(self, start: int, count: int) -> tuple[ThreadRange, ...]:
        """Rows ``start`` .. ``start+count-1`` (clipped)."""
        start = max(0, start)
        return self[start : start + max(0, count)]

    @property
    def total_threads(self) -> int:
        if self._total is None:
            total = 0
            for r in self._rows:
                total += _num(r.get("count")) or (0 if "from_threadIdx" in r else 1)
            self._total = total
        return self._total

    @property
    def current_index(self) -> int | None:
        """Index of the range holding the focus (the ``*`` row, or where ``with_focus`` put it)."""
        if self._current is _UNSET:
            self._current = next((i for i, r in enumerate(self._rows) if star(r.get("current"))), None)
        return self._current

    @property
    def current(self) -> ThreadRange | None:
        i = self.current_index
        return None if i is None else self[i]

    @property
    def can_locate(self) -> bool:
        return self.grid_dim is not None and self.block_dim is not None and self.grid_dim.volume > 0 and self.block_dim.volume > 0

    def _bounds(self, i: int) -> tuple[int, int]:
        """Logical start and end of row ``i``, parsed straight from its cells (no ThreadRange built)."""
        assert self.grid_dim is not None and self.block_dim is not None
        r = self._rows[i]
        if "from_threadIdx" in r:
            fb, ft, lb, lt = r.get("from_blockIdx"), r.get("from_threadIdx"), r.get("to_blockIdx"), r.get("to_threadIdx")
        else:
            fb = lb = r.get("blockIdx")
            ft = lt = r.get("threadIdx")
        o, g, b = self.order, self.grid_dim, self.block_dim
        start = o.linear(_fast_dim(fb), _fast_dim(ft), g, b)
        end = start if fb == lb and ft == lt else o.linear(_fast_dim(lb), _fast_dim(lt), g, b)
        return start, end

    def locate(self, block: Dim3, thread: Dim3) -> int | None:
        """Index of the row holding thread ``(block, thread)``, or None.

        cuda-gdb lists ranges in logical order, so this is a binary search that
        parses about log2(rows) rows; if the rows turn out not to be sorted it
        falls back to a scan.
        """
        if not self.can_locate or not len(self):
            return None
        assert self.grid_dim is not None and self.block_dim is not None
        target = self.order.linear(block, thread, self.grid_dim, self.block_dim)
        lo, hi = 0, len(self) - 1
        while lo <= hi:
            mid = (lo + hi) // 2
            start, end = self._bounds(mid)
            if target < start:
                hi = mid - 1
            elif target > end:
                lo = mid + 1
            else:
                return mid
        for i in range(len(self)):  # unsorted rows (never seen): scan
            start, end = self._bounds(i)
            if start <= target <= end:
                return i
        return None

    def with_focus(self, focus: CudaFocus | None) -> ThreadRanges:
        """The same rows with the current marker on the range holding ``focus`` (none if elsewhere)."""
        cur: int | None = None
        if focus is not None and focus.has_logical and (self.kernel is None or focus.kernel == self.kernel):
            assert focus.block is not None and focus.thread is not None
            cur = self.locate(focus.block, focus.thread)
        return ThreadRanges(
            self._rows,
            coalesced=self.coalesced,
            kernel=self.kernel,
            grid_dim=self.grid_dim,
            block_dim=self.block_dim,
            order=self.order,
            table=self.table,
            _current=cur,
            _cache=self._cache,
        )

    def summary(self, limit: int | None = None) -> tuple[tuple[int | None, str, int | None, int, int], ...]:
        """Threads per location, most populated first: ``(pc, filename, line, threads, ranges)``."""
        if self._summary is None:
            self._summary = self._make_summary()
        return self._summary if limit is None else self._summary[:limit]

    def _make_summary(self) -> tuple[tuple[int | None, str, int | None, int, int], ...]:
        acc: dict[tuple[Any, Any, Any], list[int]] = {}
        for r in self._rows:
            key = (_PC.raw(r), r.get("filename", ""), r.get("line"))
            n = _num(r.get("count")) or 1
            slot = acc.get(key)
            if slot is None:
                acc[key] = [n, 1]
            else:
                slot[0] += n
                slot[1] += 1
        out = sorted(
            ((_num(k[0]), str(k[1] or ""), _num(k[2]), v[0], v[1]) for k, v in acc.items()), key=lambda t: (-t[3], t[0] or 0)
        )
        return tuple(out)

    def where(self, predicate) -> ThreadRanges:
        """The rows for which ``predicate(ThreadRange)`` is true (converts every row: for small tables)."""
        keep = [self._rows[i] for i in range(len(self)) if predicate(self[i])]
        return ThreadRanges(
            keep,
            coalesced=self.coalesced,
            kernel=self.kernel,
            grid_dim=self.grid_dim,
            block_dim=self.block_dim,
            order=self.order,
            table=self.table,
        )

    def infer_order(self) -> LogicalOrder:
        """The logical order under which the rows' counts are consistent (checks a sample)."""
        if not self.can_locate or not self.coalesced:
            return self.order
        assert self.grid_dim is not None and self.block_dim is not None
        sample = range(0, len(self), max(1, len(self) // 64))
        for order in (self.order, self.order.other()):
            if all(self[i].span(order, self.grid_dim, self.block_dim) == self[i].count for i in sample):
                return order
        return self.order
