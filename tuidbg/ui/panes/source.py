"""The source view: a line-API widget that stays fast on 100,000-line files.

Only visible rows are rendered. The file is highlighted with Pygments in a
worker thread (plain text is shown until that is done): whole for files up to
20,000 lines, and 2,000 lines at a time as they come into view for bigger ones,
so a 100,000-line file never keeps a core busy for long; the token styles are
component classes whose colours come from the theme. The gutter shows
breakpoints (● enabled, ○ disabled, ◆ conditional, ◌ pending) and the
current line (▶ in the newest frame, ▷ in a caller). A cursor line is moved
with the keyboard; breakpoints toggle at the cursor or by a click in the gutter.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass

from pygments.lexers import get_lexer_for_filename
from pygments.lexers.special import TextLexer
from pygments.token import Comment, Keyword, Name, Number, Operator, String, Token
from pygments.util import ClassNotFound
from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events, work
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tuidbg.engine import files
from tuidbg.ui.panes.source_ahead import RowsAhead
from tuidbg.ui.rows_now import paint_rows
from tuidbg.ui.text import visible

_TOKEN_CLASSES = [
    (Comment.Preproc, "preproc"),
    (Comment, "comment"),
    (String, "string"),
    (Number, "number"),
    (Keyword.Type, "type"),
    (Keyword, "keyword"),
    (Name.Builtin, "builtin"),
    (Name.Function, "function"),
    (Name.Class, "function"),
    (Name.Decorator, "preproc"),
    (Operator.Word, "keyword"),
    (Operator, "operator"),
]

MAX_HIGHLIGHT_BYTES = 8 * 1024 * 1024  # bigger files stay plain
WHOLE_FILE_LINES = 20000  # files up to this size are lexed whole (exact multi-line tokens)
# A stop's line goes out in a screen update of its own before the other panes show the stop
# (app_source): they wait for that update, or this long at most.
PC_PAINT_WAIT = 0.05
CHUNK = 2000  # bigger files are lexed a chunk at a time, as the chunks come into view


@functools.lru_cache(maxsize=64)
def _lexer_for(name: str):
    """A base name's lexer, chosen in the highlighting thread (pygments tries every lexer's patterns and, at first,
    reads every distribution's entry points: a tenth of a first Python stop's CPU on the UI thread, issue 31)."""
    try:
        return get_lexer_for_filename(name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        if name.endswith((".cu", ".cuh")):
            from pygments.lexers import CudaLexer

            return CudaLexer(stripnl=False, ensurenl=False)
        return TextLexer()


def token_class(ttype) -> str:
    for t, name in _TOKEN_CLASSES:
        if ttype in t:
            return name
    return ""


@dataclass(frozen=True)
class BreakpointMark:
    enabled: bool = True
    conditional: bool = False
    pending: bool = False
    python: bool = False

    @property
    def glyph(self) -> str:
        if self.pending:
            return "◌"
        if not self.enabled:
            return "○"
        if self.conditional:
            return "◆"
        return "●"


def read_source(path: str, limit: int = files.SOURCE_CAP) -> list[str]:
    """The file's lines: a regular file under ``limit`` bytes, read in a thread of its own that the UI
    waits for ``files.UI_TIMEOUT`` at most (``tuidbg.engine.files``); ``files.Unreadable`` if not."""
    data = files.read_bytes(path, limit, files.UI_TIMEOUT)
    if b"\x00" in data[:8192]:
        raise files.Unreadable(path, "a binary file")
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


class SourceView(ScrollView, can_focus=True):
    """Shows one file, or a message when there is no source."""

    COMPONENT_CLASSES = {
        "source--gutter",
        "source--gutter-pc",
        "source--breakpoint",
        "source--breakpoint-disabled",
        "source--pc-line",
        "source--caller-line",
        "source--cursor-line",
        "source--message",
        "source--keyword",
        "source--type",
        "source--string",
        "source--comment",
        "source--number",
        "source--function",
        "source--builtin",
        "source--operator",
        "source--preproc",
        "source--match",
    }
    DEFAULT_CSS = """
    SourceView {
        background: $surface;
        color: $foreground;
        overflow-y: scroll;
        overflow-x: auto;
    }
    SourceView > .source--gutter { color: $text-muted; }
    SourceView > .source--gutter-pc { color: $text-warning; text-style: bold; }
    SourceView > .source--breakpoint { color: $text-error; text-style: bold; }
    SourceView > .source--breakpoint-disabled { color: $text-muted; }
    SourceView > .source--pc-line { background: $pc-line-background; }
    SourceView > .source--caller-line { background: $caller-line-background; }
    SourceView > .source--cursor-line { background: $cursor-line-background; }
    SourceView > .source--message { color: $text-muted; text-style: italic; }
    SourceView > .source--keyword { color: $source-keyword; }
    SourceView > .source--type { color: $source-type; }
    SourceView > .source--string { color: $source-string; }
    SourceView > .source--comment { color: $source-comment; text-style: italic; }
    SourceView > .source--number { color: $source-number; }
    SourceView > .source--function { color: $source-function; }
    SourceView > .source--builtin { color: $source-builtin; }
    SourceView > .source--operator { color: $source-operator; }
    SourceView > .source--preproc { color: $source-preproc; }
    SourceView > .source--match { background: $source-match; }
    """

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False, id="source.up"),
        Binding("down,j", "cursor(1)", "Down", show=False, id="source.down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="source.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="source.page_down"),
        Binding("home", "goto_start", "Start", show=False, id="source.start"),
        Binding("end", "goto_end", "End", show=False, id="source.end"),
        Binding("left", "scroll_left", "Left", show=False),
        Binding("right", "scroll_right", "Right", show=False),
    ]

    # (repainted by its watcher: the rows it leaves and enters, not the whole view)
    cursor_line: reactive[int] = reactive(1, always_update=True, repaint=False)

    class FileRead(Message):
        """A file whose read outlasted ``files.UI_TIMEOUT`` is read now: it can be shown again."""

        def __init__(self, path: str) -> None:
            super().__init__()
            self.path = path

    class BreakpointToggle(Message):
        def __init__(self, path: str, line: int) -> None:
            super().__init__()
            self.path = path
            self.line = line

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.path: str | None = None
        self.lines: list[str] = []
        self.message: list[str] = ["No program stopped yet."]
        self.refused: str | None = None  # a file it was asked to show and could not: the message says why
        self.pc_line: int | None = None
        self.pc_is_top = True
        self._on_pc_painted: list[Callable[[], None]] = []
        self._changed_rows: set[int | None] | None = None
        self.painted_now = False  # the last set_pc wrote its rows to the terminal itself (ui.rows_now)
        self._early: tuple | None = None  # what show_stop_early wrote: (line, scroll offset, file)
        self.marks: dict[int, BreakpointMark] = {}
        self.search: str | None = None
        # Highlighted rows by chunk of CHUNK lines. Small files are one chunk lexed
        # whole; big files are lexed a chunk at a time as they come into view.
        self._tokens: dict[int, list[list[tuple[str, str]]]] = {}
        self._pending_chunks: set[int] = set()
        self._cache: LRUCache[int, list[Segment]] = LRUCache(2000)
        self._generation = 0
        self._mtime: float | None = None
        self._styles: dict[str, Style] = {}
        self._kept_in_view = -1  # the file (_generation) whose line set_pc looked at again after a layout
        self._style_generation = 0  # (the theme changed: every row drawn ahead is out of date)
        self.ahead = RowsAhead(self)  # the rows a step may change next, drawn ahead
        self._as_if: tuple[int | None, int | None] | None = None  # (current line, cursor line) drawing one

    # -- content ------------------------------------------------------------------------------

    def show_file(self, path: str, line: int | None = None, *, reload: bool = False) -> bool:
        """Show a file (reading it only if it changed); False when it cannot be read."""
        try:
            mtime = os.stat(path).st_mtime
        except OSError as exc:
            self.show_message([f"Cannot open {path}: {exc.strerror or exc}"])
            self.refused = path
            return False
        changed = path != self.path or reload or mtime != self._mtime or not self.lines
        if changed:
            try:
                lines = read_source(path)
            except files.Unreadable as exc:
                self.show_message([f"Cannot show {path}: {exc.why}"])
                self.refused = path
                if exc.pending is not None:  # (post_message is thread-safe)
                    exc.pending.add_done_callback(lambda _f: self.post_message(self.FileRead(path)))
                return False
            self.path = path
            self._mtime = mtime
            self.lines = lines
            self.message = []
            self._tokens = {}
            self._pending_chunks = set()
            self._cache.clear()
            self._generation += 1
            self._request_chunk(0)
        self.virtual_size = Size(self._content_width(), len(self.lines))
        if line is not None:
            self.cursor_line = max(1, min(line, max(1, len(self.lines))))
            self.scroll_to_line(self.cursor_line)
        if changed:
            self.refresh()  # (the same file again: the rows that change repaint themselves)
        return True

    def show_message(self, lines: list[str]) -> None:
        self.path = self.refused = None
        self.lines = []
        self.message = lines
        self._tokens = {}
        self._cache.clear()
        self._generation += 1
        self.pc_line = None
        width = max((cell_len(l) for l in lines), default=0)
        self.virtual_size = Size(width + 2, len(lines))
        self.scroll_to(0, 0, animate=False)
        self.refresh()

    def show_stop_early(self, line: int, on_screen: str | None = None) -> None:
        """``set_pc(line)`` for a stop whose state comes next and calls it again (``app_source``): that
        call finds the rows on the screen already, and writes nothing. ``on_screen``: what the thread
        that reads gdb's output wrote for this stop (``ui.stoppaint``), not written again if the same."""
        self.set_pc(line, on_screen=on_screen)
        self._early = (line, self.scroll_offset, self._generation) if self.painted_now else None

    def set_pc(self, line: int | None, top: bool = True, on_screen: str | None = None) -> None:
        early, self._early = self._early, None
        if (early == (line, self.scroll_offset, self._generation) and top and self.pc_is_top
                and self.pc_line == line == self.cursor_line):
            # (show_stop_early wrote these rows a moment ago, and nothing of the view has moved since)
            self.painted_now = True
            if self._on_pc_painted:
                self._pc_painted()
            return
        changed = {self.pc_line, line}
        self.pc_line = line
        self.pc_is_top = top
        scrolled = self.scroll_offset
        self._changed_rows = changed  # (the cursor's rows too: watch_cursor_line)
        try:
            if line is not None:
                self.cursor_line = line
                self.scroll_to_line(line)
                # A new file may bring a horizontal scroll bar with the next layout, which takes a row
                # and lowers how far the view may scroll: look again once it is there.
                if self._generation != self._kept_in_view:
                    self._kept_in_view = self._generation
                    self.call_after_refresh(self._keep_in_view, line)
        finally:
            self._changed_rows = None
        # Only the rows of the old and the new line repaint (a step is a few ms of rendering less, and
        # less to write to the terminal), written at once where that is the same (ui.rows_now); a
        # scroll repaints the view by itself.
        top_row = self.scroll_offset.y
        self.painted_now = scrolled.y == top_row and paint_rows(
            self, [n - 1 - top_row for n in changed if n is not None], self.ahead.known(), on_screen)
        if not self.painted_now:
            self._refresh_rows(*changed)
        elif self._on_pc_painted:
            self._pc_painted()  # (its row was drawn ahead: nothing rendered it now)
        self.ahead.schedule(line is not None)

    def after_pc_painted(self, callback: Callable[[], None], at_most: float = PC_PAINT_WAIT) -> None:
        """Call ``callback`` once the current line has been rendered into a screen update (soon after that
        update is out), or after ``at_most`` seconds whatever happened (a hidden or scrolled-away view)."""
        called = False

        def once() -> None:
            nonlocal called
            if not called:
                called = True
                if once in self._on_pc_painted:  # (the wait ran out: no later render calls it again)
                    self._on_pc_painted.remove(once)
                try:
                    callback()
                except Exception as error:  # (from the loop's timer too: an error stops the app as Textual's would)
                    self.app._handle_exception(error)

        self._on_pc_painted.append(once)
        # (the loop's own timer: a Textual timer is a task and a message, at every stop before its line is out)
        asyncio.get_running_loop().call_later(at_most, once)

    def _pc_painted(self) -> None:
        callbacks, self._on_pc_painted = self._on_pc_painted, []
        for cb in callbacks:
            self.call_later(cb)  # (after the update being rendered now is handed to Textual's writer)

    def _refresh_rows(self, *lines: int | None) -> None:
        for line in {n for n in lines if n is not None and 1 <= n <= max(1, len(self.lines))}:
            self.refresh_line(line - 1)

    def _keep_in_view(self, line: int) -> None:
        if self.cursor_line == line:
            self.scroll_to_line(line)

    def set_marks(self, marks: dict[int, BreakpointMark]) -> None:
        if marks != self.marks:
            self.marks = marks
            self.refresh()
            self.ahead.schedule(self.pc_line is not None)

    def _content_width(self) -> int:
        longest = 0
        for line in self.lines[:20000]:  # enough to size the scroll bar; long tails scroll anyway
            n = len(line)
            if n > longest:
                longest = n
        return self._gutter_width() + longest + 2

    def _gutter_width(self) -> int:
        return len(str(max(1, len(self.lines)))) + 3

    def _chunk_count(self) -> int:
        return max(1, -(-len(self.lines) // self._chunk_size()))

    def _chunk_size(self) -> int:
        return len(self.lines) if len(self.lines) <= WHOLE_FILE_LINES else CHUNK

    def _request_chunk(self, chunk: int) -> None:
        if chunk in self._tokens or chunk in self._pending_chunks or not self.lines:
            return
        if sum(len(l) for l in self.lines[:WHOLE_FILE_LINES]) > MAX_HIGHLIGHT_BYTES:
            return
        size = self._chunk_size()
        text = "\n".join(self.lines[chunk * size : (chunk + 1) * size])
        self._pending_chunks.add(chunk)
        self._highlight(self._generation, chunk, text, os.path.basename(self.path or ""))

    @work(thread=True, group="highlight", exit_on_error=False)
    def _highlight(self, generation: int, chunk: int, text: str, name: str) -> None:
        rows: list[list[tuple[str, str]]] = [[]]
        for ttype, value in _lexer_for(name).get_tokens(text):
            cls = token_class(ttype)
            parts = value.split("\n")
            for i, part in enumerate(parts):
                if i:
                    rows.append([])
                if part:
                    rows[-1].append((part, cls))
        self.app.call_from_thread(self._set_tokens, generation, chunk, rows)

    def _set_tokens(self, generation: int, chunk: int, rows: list[list[tuple[str, str]]]) -> None:
        if generation != self._generation:
            return
        self._pending_chunks.discard(chunk)
        self._tokens[chunk] = rows
        size = self._chunk_size()
        for i in range(chunk * size, min(len(self.lines), (chunk + 1) * size)):
            self._cache.discard(i)
        self.refresh()
        self.ahead.schedule(self.pc_line is not None)  # (the rows drawn ahead had no highlighting)

    @property
    def highlighted(self) -> bool:
        """Whether the rows in view are highlighted (the whole file, for small files)."""
        if not self.lines:
            return False
        size = self._chunk_size()
        top = self.scroll_offset.y // size
        bottom = min(self._chunk_count() - 1, (self.scroll_offset.y + max(1, self.size.height)) // size)
        return all(c in self._tokens for c in range(top, bottom + 1))

    # -- navigation ---------------------------------------------------------------------------

    def scroll_to_line(self, line: int) -> None:
        """Bring a line into view, with some context above it."""
        top = self.scroll_offset.y
        height = max(1, self.scrollable_content_region.height)  # less the horizontal scroll bar
        idx = line - 1
        if idx < top + 2 or idx >= top + height - 2:
            self.scroll_to(y=max(0, idx - height // 3), animate=False, immediate=True)

    def watch_cursor_line(self, old: int, new: int) -> None:
        if self._changed_rows is not None:
            self._changed_rows.update((old, new))  # (set_pc repaints them)
        else:
            self._refresh_rows(old, new)

    def action_cursor(self, delta: int) -> None:
        if not self.lines:
            self.scroll_relative(y=delta, animate=False)
            return
        self.cursor_line = max(1, min(len(self.lines), self.cursor_line + delta))
        self.scroll_to_line(self.cursor_line)

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(1, self.size.height - 2))

    def action_goto_start(self) -> None:
        self.cursor_line = 1
        self.scroll_to(y=0, animate=False)

    def action_goto_end(self) -> None:
        self.cursor_line = max(1, len(self.lines))
        self.scroll_to_line(self.cursor_line)

    def goto_line(self, line: int) -> None:
        self.cursor_line = max(1, min(max(1, len(self.lines)), line))
        self.scroll_to_line(self.cursor_line)

    def find(self, text: str, forward: bool = True) -> int | None:
        """Move the cursor to the next line containing ``text`` (wrapping); its number or None."""
        if not text or not self.lines:
            return None
        self.search = text
        n = len(self.lines)
        start = self.cursor_line - 1
        low = text.lower()
        for step in range(1, n + 1):
            i = (start + step) % n if forward else (start - step) % n
            if low in self.lines[i].lower():
                self.goto_line(i + 1)
                self._cache.clear()
                self.refresh()
                return i + 1
        return None

    def on_click(self, event: events.Click) -> None:
        if not self.lines:
            return
        row = event.y + self.scroll_offset.y
        if row >= len(self.lines):
            return
        line = row + 1
        self.cursor_line = line
        if event.x < self._gutter_width() and self.path:
            self.post_message(self.BreakpointToggle(self.path, line))

    # -- rendering ----------------------------------------------------------------------------

    def _style(self, name: str) -> Style:
        """A component class's style, cached until the styles change (theme switch)."""
        st = self._styles.get(name)
        if st is None:
            st = self._styles[name] = self.get_component_rich_style(name, partial=True)
        return st

    def _code_segments(self, index: int) -> list[Segment]:
        cached = self._cache.get(index)
        if cached is not None:
            return cached
        raw = self.lines[index]
        segs: list[Segment] = []
        size = self._chunk_size()
        chunk, row = divmod(index, size)
        rows = self._tokens.get(chunk)
        if rows is None:
            self._request_chunk(chunk)
        if rows is not None and row < len(rows):
            for part, cls in rows[row]:
                style = self._style(f"source--{cls}") if cls else None
                segs.append(Segment(visible(part), style))
        else:
            segs.append(Segment(visible(raw)))
        if self.search:
            segs = self._mark_matches(segs, self.search)
        self._cache[index] = segs
        return segs

    def _mark_matches(self, segs: list[Segment], text: str) -> list[Segment]:
        plain = "".join(s.text for s in segs)
        low, needle = plain.lower(), text.lower()
        spans = []
        start = low.find(needle)
        while start >= 0 and needle:
            spans.append((start, start + len(needle)))
            start = low.find(needle, start + len(needle))
        if not spans:
            return segs
        match_style = self._style("source--match")
        out: list[Segment] = []
        pos = 0
        for seg in segs:
            seg_start, seg_end = pos, pos + len(seg.text)
            cuts = {seg_start, seg_end}
            for a, b in spans:
                if seg_start < a < seg_end:
                    cuts.add(a)
                if seg_start < b < seg_end:
                    cuts.add(b)
            points = sorted(cuts)
            for a, b in zip(points, points[1:]):
                piece = seg.text[a - seg_start : b - seg_start]
                hit = any(sa <= a and b <= sb for sa, sb in spans)
                style = (seg.style + match_style) if (hit and seg.style) else (match_style if hit else seg.style)
                out.append(Segment(piece, style))
            pos = seg_end
        return out

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base = self.rich_style
        index = scroll_y + y
        if not self.lines:
            if index < len(self.message):
                style = base + self._style("source--message")
                text = visible(self.message[index])
                return Strip([Segment(" " + text, style)]).crop_extend(scroll_x, scroll_x + width, base)
            return Strip.blank(width, base)
        if index >= len(self.lines):
            return Strip.blank(width, base)
        line = index + 1
        line_style = base
        pc_line, cursor_line = self._as_if or (self.pc_line, self.cursor_line)
        if line == pc_line:
            line_style = base + self._style("source--pc-line" if self.pc_is_top else "source--caller-line")
            if self._on_pc_painted and self._as_if is None:
                self._pc_painted()
        elif line == cursor_line and self.has_focus:
            line_style = base + self._style("source--cursor-line")
        gutter_w = self._gutter_width()
        mark = self.marks.get(line)
        if mark is not None:
            gstyle = self._style("source--breakpoint" if mark.enabled else "source--breakpoint-disabled")
            bp_seg = Segment(mark.glyph, line_style + gstyle)
        else:
            bp_seg = Segment(" ", line_style)
        if line == pc_line:
            pc_seg = Segment("▶" if self.pc_is_top else "▷", line_style + self._style("source--gutter-pc"))
        elif line == cursor_line:
            pc_seg = Segment("›", line_style + self._style("source--gutter"))
        else:
            pc_seg = Segment(" ", line_style)
        num = str(line).rjust(gutter_w - 3)
        num_class = "source--gutter-pc" if line == pc_line else "source--gutter"
        gutter = [bp_seg, Segment(num, line_style + self._style(num_class)), pc_seg, Segment(" ", line_style)]
        code = [Segment(s.text, line_style + s.style if s.style else line_style) for s in self._code_segments(index)]
        code_strip = Strip(code).crop_extend(scroll_x, scroll_x + max(0, width - gutter_w), line_style)
        return Strip(gutter + list(code_strip), width)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style_generation += 1
        self._styles.clear()
        self._cache.clear()
        self.refresh()

    def on_focus(self) -> None:
        self.refresh()

    def on_show(self) -> None:
        # shown again (another pane un-maximized): a repaint the screen took while the view was off its map
        # stays pending (rows_now.boxes off until the view's next repaint); this one takes its place
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
