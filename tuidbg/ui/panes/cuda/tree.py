"""The CUDA pane's lazy tree of rows: a ``Seq`` is a list whose items may open into child
Seqs; pieces are built only when they scroll into view (a million-thread grid stays cheap)."""

from __future__ import annotations


from typing import Any, Awaitable, Callable, Protocol, Sequence


from tuidbg.engine import cuda
from tuidbg.engine.cuda import (
    CudaFocus,
    Dim3,
    LogicalOrder,
    WarpWatch,
)


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


class RowHost(Protocol):
    """What the rows ask of the pane that shows them (``CudaPane``): a narrow door, so that the
    tree and its rows know nothing else of the pane."""

    watch: WarpWatch | None

    @property
    def ext(self) -> cuda.CudaExtension | None: ...

    @property
    def cuda_focus(self) -> CudaFocus | None: ...

    def dims(self, kernel: int | None) -> tuple[LogicalOrder, Dim3, Dim3] | None: ...

    def load(self, seq: AsyncSeq) -> None: ...

    def load_more(self, seq: PagedSeq) -> None: ...

    def say(self, text: str, *, error: bool = False, notify: bool = False) -> None: ...

    def show_kernel(self, kernel: int) -> None: ...

    def switch_focus(self, target: Any, *, jump: bool = False) -> None: ...


# ---------------------------------------------------------------------------------------------
# A lazy tree of rows: a Seq is a list whose items may be opened into child Seqs.


class Item:
    """One row: what it shows, whether it holds cuda-gdb's focus, what it opens into."""

    def parts(self, ctx: RowHost) -> list[Part]:
        raise NotImplementedError

    def expandable(self, ctx: RowHost) -> bool:
        return False

    def children(self, ctx: RowHost) -> "Seq | None":
        return None

    def is_current(self, ctx: RowHost) -> bool:
        return False

    def holds_focus(self, ctx: RowHost) -> bool:
        return self.is_current(ctx)

    def activate(self, ctx: RowHost) -> bool:
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

    def current_index(self, ctx: RowHost) -> int | None:
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

    def current_index(self, ctx: RowHost) -> int | None:
        order = self.focus_order if self.focus_order is not None else range(len(self.items))
        for i in order:
            if i < len(self.items) and self.items[i].holds_focus(ctx):
                return i
        return None


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

    def current_index(self, ctx: RowHost) -> int | None:
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

    def current_index(self, ctx: RowHost) -> int | None:
        return self.source.current_index(ctx) if self.source is not None else None


# ---------------------------------------------------------------------------------------------
# Row kinds


class NoteItem(Item):
    def __init__(self, parts: list[Part]) -> None:
        self._parts = parts

    def parts(self, ctx: RowHost) -> list[Part]:
        return self._parts


class MoreItem(Item):
    def __init__(self, seq: PagedSeq, remaining: int) -> None:
        self.seq = seq
        self.remaining = remaining

    def parts(self, ctx: RowHost) -> list[Part]:
        n = min(PAGE, self.remaining)
        return [(f"… {self.remaining:,} more {self.seq.what} (enter loads {n})", "more")]

    def activate(self, ctx: RowHost) -> bool:
        ctx.load_more(self.seq)
        return True
