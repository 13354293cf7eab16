"""The Disassembly view: instructions around the program counter, source lines mixed in.

Shown in the source area (``a`` switches; automatic when the frame has no source). It holds a
``native.DisasmWindow`` and renders only the rows in view (a line-API widget), so a function of
tens of thousands of instructions scrolls at the speed of a short one: the window grows a chunk at
a time as the cursor nears either end (ahead of it, in the background), never the whole function.

Rows: a header where the symbol changes (``at::native::randn(...)``), source lines (``  13 │ for
...``) where there is line information, and instructions (``0x7fff… <+24>  mov …``). The current
instruction is marked ▶ (▷ in a caller), breakpoints ● in the gutter. ``b`` on an instruction is
``break *ADDR`` and ``t`` runs to it (the app's keys, which ask :attr:`cursor_instruction`); Enter
on a call or jump follows its target, Backspace goes back, ``.`` returns to the pc.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tuidbg.engine import native
from tuidbg.engine.errors import EngineError
from tuidbg.ui.text import visible

class DisasmSource(Protocol):
    """What the Disassembly view reads (``tuidbg.ui.bridge.SessionBridge`` provides it)."""

    def disasm_window(self) -> native.DisasmWindow: ...


PREFETCH_ROWS = 60  # the window grows when the cursor comes this close to either end


def display_rows(rows: list[native.Row], prev_func: Any = None) -> list[tuple[str, Any]]:
    """(kind, row) for the view: "head" where the symbol changes (above the source lines that lead
    into the new symbol's first instruction), "src", "ins"."""
    out: list[tuple[str, Any]] = []
    func = prev_func
    pending: list[tuple[str, Any]] = []
    for r in rows:
        if isinstance(r, native.Instruction):
            if r.func != func:
                out.append(("head", r))
                func = r.func
            out.extend(pending)
            pending = []
            out.append(("ins", r))
        else:
            pending.append(("src", r))
    out.extend(pending)
    return out


class DisasmView(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {
        "disasm--address",
        "disasm--offset",
        "disasm--mnemonic",
        "disasm--opcodes",
        "disasm--header",
        "disasm--source",
        "disasm--pc-line",
        "disasm--caller-line",
        "disasm--cursor-line",
        "disasm--gutter-pc",
        "disasm--breakpoint",
        "disasm--message",
        "disasm--target",
    }
    DEFAULT_CSS = """
    DisasmView {
        display: none;
        height: 1fr;
        background: $surface;
        color: $foreground;
        overflow-y: scroll;
        overflow-x: auto;
    }
    DisasmView > .disasm--address { color: $text-muted; }
    DisasmView > .disasm--offset { color: $source-number; }
    DisasmView > .disasm--mnemonic { color: $source-keyword; }
    DisasmView > .disasm--opcodes { color: $text-muted; }
    DisasmView > .disasm--header { color: $source-function; text-style: bold; }
    DisasmView > .disasm--source { color: $source-comment; text-style: italic; }
    DisasmView > .disasm--pc-line { background: $pc-line-background; }
    DisasmView > .disasm--caller-line { background: $caller-line-background; }
    DisasmView > .disasm--cursor-line { background: $cursor-line-background; }
    DisasmView > .disasm--gutter-pc { color: $text-warning; text-style: bold; }
    DisasmView > .disasm--breakpoint { color: $text-error; text-style: bold; }
    DisasmView > .disasm--message { color: $text-muted; text-style: italic; }
    DisasmView > .disasm--target { color: $source-type; }
    """

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False, id="disasm.up"),
        Binding("down,j", "cursor(1)", "Down", show=False, id="disasm.down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="disasm.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="disasm.page_down"),
        Binding("enter", "follow", "Follow call/jump", id="disasm.follow"),
        Binding("backspace", "back", "Back", show=False, id="disasm.back"),
        Binding("full_stop", "to_pc", "Back to pc", show=False, id="disasm.pc"),
    ]

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.source: DisasmSource | None = None  # set by the app
        self.window: native.DisasmWindow | None = None
        self.lines: list[tuple[str, Any]] = []
        self.message: list[str] = ["No program stopped yet."]
        self.cursor = 0
        self.pc: int | None = None
        self.pc_is_top = True
        self.breakpoints: dict[int, bool] = {}  # address -> enabled
        self.history: list[int] = []
        self._lock = asyncio.Lock()
        self._styles: dict[str, Style] = {}
        self._prefetching = False
        self.loads = 0  # windows loaded (tests: a move inside the window loads nothing)

    # -- content --------------------------------------------------------------------------------

    @property
    def title(self) -> str:
        ins = self.cursor_instruction or self.pc_instruction
        if ins is not None and ins.func:
            return f"Disassembly — {ins.func}"
        return "Disassembly"

    @property
    def cursor_instruction(self) -> native.Instruction | None:
        if 0 <= self.cursor < len(self.lines):
            kind, row = self.lines[self.cursor]
            if kind == "ins":
                return row
            for k, r in self.lines[self.cursor:self.cursor + 40]:
                if k == "ins":
                    return r
        return None

    @property
    def pc_instruction(self) -> native.Instruction | None:
        i = self.line_of(self.pc) if self.pc is not None else None
        return self.lines[i][1] if i is not None else None

    def line_of(self, address: int | None) -> int | None:
        """The display row of the instruction at ``address`` (binary search), or None."""
        if address is None:
            return None
        lo, hi = 0, len(self.lines)
        while lo < hi:
            mid = (lo + hi) // 2
            j = mid
            while j < hi and self.lines[j][0] != "ins":
                j += 1
            if j >= hi:
                hi = mid
                continue
            a = self.lines[j][1].address
            if a == address:
                return j
            if a < address:
                lo = j + 1
            else:
                hi = mid
        return None

    def show_message(self, lines: list[str]) -> None:
        self.window = None
        self.lines = []
        self.message = lines
        self.virtual_size = Size(max((len(l) for l in lines), default=0) + 2, len(lines))
        self.refresh()

    async def show_address(self, address: int, pc: bool = False, top: bool = True) -> None:
        """Show the instructions around ``address`` (the pc when ``pc``), loading a window if needed."""
        if self.source is None:
            return
        async with self._lock:
            if pc:
                self.pc, self.pc_is_top = address, top
            if self.window is None or self.line_of(address) is None:
                w = self.source.disasm_window()
                try:
                    await w.load_around(address)
                except EngineError as exc:
                    self.show_message([f"Cannot disassemble at {address:#x}: {exc}"])
                    return
                self.loads += 1
                if not w.rows:
                    self.show_message([f"No instructions at {address:#x} (gdb could not read that memory)."])
                    return
                self.window = w
                self.message = []
                self.lines = display_rows(w.rows)
                self._resize()
            idx = self.line_of(address)
            if idx is not None:
                self.cursor = idx
                self._scroll_to_cursor(center=True)
        self.refresh()
        self._maybe_prefetch()

    def set_pc(self, address: int | None, top: bool = True) -> None:
        self.pc, self.pc_is_top = address, top
        self.refresh()

    def set_breakpoints(self, marks: dict[int, bool]) -> None:
        if marks != self.breakpoints:
            self.breakpoints = marks
            self.refresh()

    def _resize(self) -> None:
        self.virtual_size = Size(self._content_width(), len(self.lines))

    def _content_width(self) -> int:
        return 120

    # -- growing ---------------------------------------------------------------------------------

    async def grow(self, direction: int) -> int:
        """Decode one chunk above (-1) or below (1); returns the display rows added."""
        w = self.window
        if w is None:
            return 0
        async with self._lock:
            if w is not self.window:
                return 0
            if direction > 0:
                before = len(w.rows)
                if not await w.extend_down():
                    return 0
                last_func = next((r.func for k, r in reversed(self.lines) if k == "ins"), None)
                new = display_rows(w.rows[before:], last_func)
                self.lines.extend(new)
                self._resize()
                self.refresh()
                return len(new)
            old_first = w.rows[0] if w.rows else None
            added = await w.extend_up()
            if not added:
                return 0
            new = display_rows(w.rows[:added])
            # the old top's header (or its repeated source line) may now be redundant
            new_last = next((r.func for k, r in reversed(new) if k == "ins"), None)
            rest = self.lines
            if rest and rest[0][0] == "head" and rest[0][1].func == new_last:
                rest = rest[1:]
            if old_first is not None and w.rows[added:added + 1] != [old_first] and rest and rest[0][0] == "src":
                rest = rest[1:]  # the window dropped it (a source line spanning the seam)
            delta = len(new) + len(rest) - len(self.lines)
            self.lines = new + rest
            self.cursor += delta
            self._resize()
            self.scroll_to(y=self.scroll_offset.y + delta, animate=False, immediate=True)
            self.refresh()
            return delta

    def _maybe_prefetch(self) -> None:
        if self.window is None or self._prefetching:
            return
        near_bottom = self.cursor > len(self.lines) - PREFETCH_ROWS and not self.window.at_bottom
        near_top = self.cursor < PREFETCH_ROWS and not self.window.at_top
        if near_bottom or near_top:
            self._prefetching = True
            self.run_worker(self._prefetch(1 if near_bottom else -1), group="disasm-grow", exit_on_error=False)

    async def _prefetch(self, direction: int) -> None:
        try:
            await self.grow(direction)
        except EngineError:
            pass
        finally:
            self._prefetching = False
        self._maybe_prefetch()

    # -- navigation -------------------------------------------------------------------------------

    def _scroll_to_cursor(self, center: bool = False) -> None:
        top = self.scroll_offset.y
        height = max(1, self.scrollable_content_region.height)
        if center or self.cursor < top + 1 or self.cursor >= top + height - 1:
            y = self.cursor - height // 3 if center or self.cursor < top + 1 else self.cursor - height + 2
            self.scroll_to(y=max(0, y), animate=False, immediate=True)

    async def move(self, delta: int) -> None:
        """Move the cursor; past the loaded rows, grow the window first (the key waits for it)."""
        if not self.lines:
            return
        target = self.cursor + delta
        while target >= len(self.lines) and self.window is not None and not self.window.at_bottom:
            if not await self.grow(1):
                break
        while target < 0 and self.window is not None and not self.window.at_top:
            before = self.cursor
            if not await self.grow(-1):
                break
            target += self.cursor - before
        self.cursor = max(0, min(len(self.lines) - 1, target))
        self._scroll_to_cursor()
        self.refresh()
        self._maybe_prefetch()

    async def action_cursor(self, delta: int) -> None:
        await self.move(delta)

    async def action_page(self, direction: int) -> None:
        await self.move(direction * max(1, self.scrollable_content_region.height - 2))

    async def action_follow(self) -> None:
        ins = self.cursor_instruction
        target = ins.target if ins is not None else None
        if target is None:
            self.notify("not a direct call or jump", markup=False)
            return
        self.history.append(ins.address)
        await self.show_address(target)

    async def action_back(self) -> None:
        if self.history:
            await self.show_address(self.history.pop())

    async def action_to_pc(self) -> None:
        if self.pc is not None:
            await self.show_address(self.pc)

    def on_click(self, event: events.Click) -> None:
        row = event.y + self.scroll_offset.y
        if 0 <= row < len(self.lines):
            self.cursor = row
            self.refresh()

    # -- rendering ---------------------------------------------------------------------------------

    def _style(self, name: str) -> Style:
        st = self._styles.get(name)
        if st is None:
            st = self._styles[name] = self.get_component_rich_style(name, partial=True)
        return st

    def row_text(self, index: int) -> str:
        """A row as plain text (what the view shows, without the gutter)."""
        return "".join(s.text for s in self._row_segments(index, Style()))

    def _row_segments(self, index: int, base: Style) -> list[Segment]:
        kind, row = self.lines[index]
        if kind == "head":
            name = row.func or "?? (no symbol)"
            return [Segment(visible(name) + ":", base + self._style("disasm--header"))]
        if kind == "src":
            text = row.text if row.text is not None else "(source not on this machine)"
            return [Segment(f"{row.file}:{row.line}  ", base + self._style("disasm--source")),
                    Segment(visible(text.strip()), base + self._style("disasm--source"))]
        ins: native.Instruction = row
        off = f"<+{ins.offset}>" if ins.offset is not None and ins.func else ""
        mnem, _, ops = ins.text.partition(" ")
        segs = [
            Segment(f"{ins.address:#x} ", base + self._style("disasm--address")),
            Segment(off.ljust(8) + " ", base + self._style("disasm--offset")),
            Segment(visible(mnem).ljust(7), base + self._style("disasm--mnemonic")),
        ]
        ops = ops.strip()
        if ops:
            segs.append(Segment(" " + visible(ops), base + (self._style("disasm--target") if ins.target is not None else Style())))
        return segs

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base = self.rich_style
        index = scroll_y + y
        if not self.lines:
            if index < len(self.message):
                style = base + self._style("disasm--message")
                return Strip([Segment(" " + visible(self.message[index]), style)]).crop_extend(scroll_x, scroll_x + width, base)
            return Strip.blank(width, base)
        if index >= len(self.lines):
            return Strip.blank(width, base)
        kind, row = self.lines[index]
        is_pc = kind == "ins" and row.address == self.pc
        line_style = base
        if is_pc:
            line_style = base + self._style("disasm--pc-line" if self.pc_is_top else "disasm--caller-line")
        elif index == self.cursor and self.has_focus:
            line_style = base + self._style("disasm--cursor-line")
        bp = self.breakpoints.get(row.address) if kind == "ins" else None
        bp_seg = Segment("●" if bp else ("○" if bp is False else " "), line_style + self._style("disasm--breakpoint"))
        if is_pc:
            pc_seg = Segment("▶" if self.pc_is_top else "▷", line_style + self._style("disasm--gutter-pc"))
        elif index == self.cursor:
            pc_seg = Segment("›", line_style)
        else:
            pc_seg = Segment(" ", line_style)
        body = [Segment(s.text, line_style + s.style if s.style else line_style) for s in self._row_segments(index, Style())]
        body_strip = Strip(body).crop_extend(scroll_x, scroll_x + max(0, width - 3), line_style)
        return Strip([bp_seg, pc_seg, Segment(" ", line_style)] + list(body_strip), width)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()
        self.refresh()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
