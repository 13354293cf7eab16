"""The Memory pane: hex and ASCII at an address or expression, 16 bytes a row, or as many as fit.

Opened at an expression (Enter asks for one; ``x`` on a pointer in Locals opens it here). It reads
a bounded range (``machine.read_memory``) and grows it a block at a time as the cursor nears either
end. A range gdb cannot read is shown as ``??`` with gdb's reason on its first row, not an error
that empties the pane. At each stop (while shown) the loaded range is read again and the bytes that
changed since the previous read are highlighted. ``e`` writes the byte under the cursor (the app
asks for the value and a confirmation).

A row is never cut: it holds 16 bytes where the pane is wide enough for them and their characters,
else 8, 4, 2 or 1 (``row_bytes``), and the address takes 12 hex digits while every address shown fits
in them (a user-space address on x86-64 and aarch64), else 16.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tuidbg.engine import machine
from tuidbg.engine.errors import EngineError
from tuidbg.ui.text import visible

class MemorySource(Protocol):
    """What the Memory pane reads (``tuidbg.ui.bridge.SessionBridge`` provides it)."""

    async def read_memory(self, address: int, count: int) -> list[machine.MemoryChunk]: ...

    async def address_of(self, expression: str) -> int: ...


ROW = 16  # bytes of a row at most (and the alignment of the range loaded)
BLOCK = 1024  # bytes read when the view grows
MAX_SPAN = 256 * 1024  # at most this much is kept loaded


class MemoryView(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {"memory--address", "memory--changed", "memory--cursor", "memory--unreadable", "memory--ascii"}
    DEFAULT_CSS = """
    MemoryView { background: $surface; color: $foreground; overflow-y: scroll; height: 1fr; }
    MemoryView > .memory--address { color: $text-muted; }
    MemoryView > .memory--changed { color: $text-warning; text-style: bold; }
    MemoryView > .memory--cursor { background: $cursor-line-background; text-style: reverse; }
    MemoryView > .memory--unreadable { color: $text-muted; text-style: italic; }
    MemoryView > .memory--ascii { color: $source-string; }
    """
    BINDINGS = [
        Binding("up", "move_row(-1)", "Up", show=False, id="memory.up"),
        Binding("down", "move_row(1)", "Down", show=False, id="memory.down"),
        Binding("left", "move(-1)", "Left", show=False, id="memory.left"),
        Binding("right", "move(1)", "Right", show=False, id="memory.right"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="memory.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="memory.page_down"),
        Binding("enter", "goto", "Go to address", id="memory.goto"),
        Binding("e", "edit", "Write byte", id="memory.edit"),
    ]

    class GotoRequested(Message):
        pass

    class WriteRequested(Message):
        def __init__(self, address: int, old: int | None) -> None:
            super().__init__()
            self.address = address
            self.old = old

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.source: MemorySource | None = None  # set by the app
        self.expression: str | None = None
        self.start = 0  # first loaded address (a multiple of ROW)
        self.data: list[int | None] = []  # None: unreadable
        self.errors: dict[int, str] = {}  # row start -> gdb's reason, on the first row of an unreadable range
        self.changed: set[int] = set()
        self.cursor = 0  # address
        self.message = ["No memory shown: Enter asks for an address or expression; x on a pointer in Locals opens it."]
        self._lock = asyncio.Lock()
        self._read_key: tuple | None = None
        self._shown_row = ROW  # bytes a row when the view was last laid out
        self._styles: dict[str, Style] = {}

    @property
    def end(self) -> int:
        return self.start + len(self.data)

    def byte(self, address: int) -> int | None:
        i = address - self.start
        return self.data[i] if 0 <= i < len(self.data) else None

    # -- reading ------------------------------------------------------------------------------

    async def _read(self, address: int, count: int) -> tuple[list[int | None], dict[int, str]]:
        out: list[int | None] = []
        errors: dict[int, str] = {}
        assert self.source is not None
        for ch in await self.source.read_memory(address, count):
            if ch.data is None:
                errors[ch.address - ch.address % ROW] = ch.error or "cannot read"
                out.extend([None] * ch.size)
            else:
                out.extend(ch.data)
        return out, errors

    async def open_at(self, expression: str, address: int) -> None:
        """Show memory from ``address`` (what ``expression`` evaluated to)."""
        async with self._lock:
            start = max(0, address - address % ROW)
            data, errors = await self._read(start, BLOCK)
            self.expression, self.start, self.data, self.errors = expression, start, data, errors
            self.changed = set()
            self.cursor = address
            self._resize()
            self.scroll_to(y=0, animate=False, immediate=True)
        self.refresh()

    async def reread(self) -> None:
        """Read the loaded range again (a new stop); bytes that differ are marked changed."""
        if not self.data or self.source is None:
            return
        async with self._lock:
            data, errors = await self._read(self.start, len(self.data))
            self.changed = {self.start + i for i, (a, b) in enumerate(zip(self.data, data)) if a != b and a is not None and b is not None}
            self.data, self.errors = data, errors
        self.refresh()

    def update_state(self, state, visible_now: bool) -> None:
        if not state.is_stopped or not self.data or not visible_now:
            return
        key = (state.generation, state.selected_thread, state.selected_frame)
        if key != self._read_key:
            self._read_key = key
            self.run_worker(self.reread, group="memory", exclusive=True, exit_on_error=False)

    async def grow(self, direction: int) -> None:
        if not self.data or len(self.data) >= MAX_SPAN:
            return
        async with self._lock:
            if direction > 0:
                if self.end >= 1 << 64:
                    return
                data, errors = await self._read(self.end, BLOCK)
                self.data.extend(data)
                self.errors.update(errors)
            else:
                if self.start == 0:
                    return
                new_start = max(0, self.start - BLOCK)
                data, errors = await self._read(new_start, self.start - new_start)
                rows = len(data) // self.row_bytes
                self.data[:0] = data
                self.errors.update(errors)
                self.start = new_start
                self.scroll_to(y=self.scroll_offset.y + rows, animate=False, immediate=True)
            self._resize()
        self.refresh()

    # -- the row's shape ------------------------------------------------------------------------

    @property
    def address_digits(self) -> int:
        return 12 if self.end <= 1 << 48 else 16

    def row_width(self, n: int) -> int:
        """Columns of a row of ``n`` bytes: address, two spaces, the bytes (a wider gap after the eighth of
        16), a space, their characters."""
        return self.address_digits + 2 + 3 * n + (1 if n > 8 else 0) + 1 + n

    @property
    def row_bytes(self) -> int:
        width = self.scrollable_content_region.width or self.size.width
        for n in (ROW, 8, 4, 2):
            if self.row_width(n) <= width:
                return n
        return 1

    def _resize(self) -> None:
        n = self.row_bytes
        self._shown_row = n
        self.virtual_size = Size(self.row_width(n), max(1, len(self.data) // n))

    def on_resize(self) -> None:
        if self.data and self.row_bytes != self._shown_row:
            self._resize()
            self._cursor_in_view()

    # -- actions ------------------------------------------------------------------------------

    async def action_move(self, delta: int) -> None:
        if not self.data:
            return
        target = self.cursor + delta
        if target >= self.end:
            await self.grow(1)
        elif target < self.start:
            await self.grow(-1)
        self.cursor = max(self.start, min(self.end - 1, target))
        self._cursor_in_view()
        self.refresh()

    async def action_move_row(self, rows: int) -> None:
        await self.action_move(rows * self.row_bytes)

    def _cursor_in_view(self) -> None:
        row = (self.cursor - self.start) // self.row_bytes
        top, height = self.scroll_offset.y, max(1, self.scrollable_content_region.height)
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False, immediate=True)

    async def action_page(self, direction: int) -> None:
        await self.action_move(direction * self.row_bytes * max(1, self.scrollable_content_region.height - 1))

    def action_goto(self) -> None:
        self.post_message(self.GotoRequested())

    def action_edit(self) -> None:
        if self.data:
            self.post_message(self.WriteRequested(self.cursor, self.byte(self.cursor)))

    # -- rendering ----------------------------------------------------------------------------

    def _style(self, name: str) -> Style:
        st = self._styles.get(name)
        if st is None:
            st = self._styles[name] = self.get_component_rich_style(name, partial=True)
        return st

    def row_text(self, row: int) -> str:
        return "".join(s.text for s in self._row(row, Style()))

    def _row(self, row: int, base: Style) -> list[Segment]:
        n = self.row_bytes
        addr = self.start + row * n
        segs = [Segment(f"{addr:0{self.address_digits}x}  ", base + self._style("memory--address"))]
        ascii_segs = []
        for i in range(n):
            a = addr + i
            b = self.byte(a)
            style = base
            if a in self.changed:
                style = style + self._style("memory--changed")
            if a == self.cursor and self.has_focus:
                style = style + self._style("memory--cursor")
            if b is None:
                segs.append(Segment("??", base + self._style("memory--unreadable")))
                ascii_segs.append(Segment(" ", base))
            else:
                segs.append(Segment(f"{b:02x}", style))
                ch = chr(b) if 32 <= b < 127 else "."
                ascii_segs.append(Segment(ch, style + self._style("memory--ascii")))
            segs.append(Segment("  " if i == 7 and n > 8 else " ", base))
        segs.append(Segment(" ", base))
        segs.extend(ascii_segs)
        err = self.errors.get(addr)
        if err:
            segs.append(Segment(f"  cannot read from {addr:#x}: {visible(err)}", base + self._style("memory--unreadable")))
        return segs

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base = self.rich_style
        if not self.data:
            if y < len(self.message):
                return Strip([Segment(" " + self.message[y], base + self._style("memory--unreadable"))]).crop_extend(0, width, base)
            return Strip.blank(width, base)
        row = scroll_y + y
        if row >= len(self.data) // self.row_bytes:
            return Strip.blank(width, base)
        return Strip(self._row(row, base)).crop_extend(scroll_x, scroll_x + width, base)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()
        self.refresh()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()


async def open_expression(view: MemoryView, expression: str) -> None:
    """Evaluate ``expression`` to an address and show memory there (EngineError when it is none)."""
    if view.source is None:
        raise EngineError("no debugger session")
    address = await view.source.address_of(expression)
    await view.open_at(expression, address)
