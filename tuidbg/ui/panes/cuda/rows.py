"""The CUDA pane's scroll view: rows drawn with the line API from the lazy tree (only the
visible rows are built), the cursor, expand/collapse and the keys that move through rows."""

from __future__ import annotations


from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tuidbg.engine.errors import EngineError
from tuidbg.ui.panes.cuda.items import GroupItem
from tuidbg.ui.panes.cuda.tree import AsyncSeq, Item, ListSeq, MoreItem, RowHost, Seq


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
        self.ctx: RowHost | None = None
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
