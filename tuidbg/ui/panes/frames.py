"""Stack panes: C++ (native) frames, Python frames, and the merged view."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.binding import Binding
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from tuidbg.engine.state import DebuggerState, Frame
from tuidbg.ui.panes.lists import RowList
from tuidbg.ui.text import fold_templates, shorten_path, visible


@dataclass(frozen=True)
class LoadMore:
    """The "load more frames" row."""


@dataclass(frozen=True)
class NativeRow:
    frame: Frame
    note: str = ""  # e.g. the Python function this eval-loop frame runs


def frame_name(func: str, expanded: bool) -> str:
    name = func or "??"
    return visible(name if expanded else fold_templates(name))


def frame_location(frame: Frame, width: int = 60) -> str:
    if frame.file and frame.line is not None:
        return f"{shorten_path(frame.file, width)}:{frame.line}"
    if frame.library:
        return f"in {frame.library.rsplit('/', 1)[-1]}"
    return frame.addr


def native_row_content(row: NativeRow, selected: bool, expanded: bool) -> Content:
    f = row.frame
    parts: list[Any] = [
        ("▶ " if selected else "  ", "bold $text-warning" if selected else ""),
        (f"#{f.level:<3}", "$text-muted"),
        (frame_name(f.func, expanded), "bold" if f.has_source else ""),
        "  ",
        (visible(frame_location(f)), "$text-muted"),
    ]
    if row.note:
        parts += ["  ", (visible(row.note), "$text-accent")]
    return Content.assemble(*parts)


class CppFramesPane(Static):
    """Native frames of the selected thread, with template arguments folded until expanded."""

    DEFAULT_CSS = """
    CppFramesPane { height: 1fr; layout: vertical; }
    """
    BINDINGS = [
        Binding("right,x", "expand", "Expand name", id="frames.expand", show=False),
    ]

    class FrameChosen(Message):
        def __init__(self, level: int, activated: bool) -> None:
            super().__init__()
            self.level = level
            self.activated = activated

    class MoreRequested(Message):
        pass

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.expanded: set[int] = set()
        self._rows: list[NativeRow | LoadMore] = []
        self._state: DebuggerState | None = None
        self.notes: dict[int, str] = {}

    def compose(self):
        yield RowList(id="cpp-list")

    @property
    def rows(self) -> list[NativeRow | LoadMore]:
        return list(self._rows)

    def update_state(self, state: DebuggerState, notes: dict[int, str] | None = None) -> None:
        self._state = state
        if notes is not None:
            self.notes = notes
        if state.frames_thread is None or not state.is_stopped:
            self.query_one(RowList).set_rows([], key=("empty", state.process))
            self._rows = []
            return
        rows: list[NativeRow | LoadMore] = [NativeRow(f, self.notes.get(f.level, "")) for f in state.frames]
        if state.more_frames:
            rows.append(LoadMore())
        self._rows = rows
        contents = []
        highlight = None
        for i, r in enumerate(rows):
            if isinstance(r, LoadMore):
                contents.append((Content.styled(f"  … load {64} more frames", "italic $text-accent"), r))
            else:
                sel = r.frame.level == state.selected_frame
                if sel:
                    highlight = i
                contents.append((native_row_content(r, sel, r.frame.level in self.expanded), r))
        key = (state.generation, state.frames_thread, len(state.frames), state.selected_frame, frozenset(self.expanded), tuple(sorted(self.notes.items())))
        self.query_one(RowList).set_rows(contents, highlight, key=key)

    def on_row_list_row_chosen(self, event: RowList.RowChosen) -> None:
        event.stop()
        if isinstance(event.payload, LoadMore):
            if event.activated:
                self.post_message(self.MoreRequested())
            return
        if isinstance(event.payload, NativeRow):
            self.post_message(self.FrameChosen(event.payload.frame.level, event.activated))

    def action_expand(self) -> None:
        rl = self.query_one(RowList)
        row = rl.payload(rl.highlighted)
        if isinstance(row, NativeRow):
            lvl = row.frame.level
            self.expanded.symmetric_difference_update({lvl})
            if self._state is not None:
                self.update_state(self._state)
        elif isinstance(row, LoadMore):
            self.post_message(self.MoreRequested())


@dataclass(frozen=True)
class PyRow:
    """One Python frame as the pane shows it (filled from the engine's Python stack)."""

    index: int  # 0 = innermost
    function: str
    filename: str
    line: int | None
    native_level: int | None = None
    is_entry: bool = False


def py_row_content(row: PyRow, selected: bool, width: int = 200) -> Content:
    loc = row.filename + (f":{row.line}" if row.line is not None else "")
    return Content.assemble(
        ("▶ " if selected else "  ", "bold $text-warning" if selected else ""),
        (f"{row.index:<3}", "$text-muted"),
        (visible(row.function), "bold $python-frame"),
        "  ",
        (visible(loc), "$text-muted"),
    )


class PyFramesPane(Static):
    """Python frames of the selected thread (innermost first), with the full path of each file."""

    DEFAULT_CSS = """
    PyFramesPane { height: 1fr; layout: vertical; }
    """

    class FrameChosen(Message):
        def __init__(self, row: PyRow, activated: bool) -> None:
            super().__init__()
            self.row = row
            self.activated = activated

    def compose(self):
        yield RowList(id="py-list")

    def show_rows(self, rows: list[PyRow], selected: int | None, key: tuple) -> None:
        contents = [(py_row_content(r, r.index == selected), r) for r in rows]
        hl = next((i for i, r in enumerate(rows) if r.index == selected), None)
        self.query_one(RowList).set_rows(contents, hl, key=key + (selected,))

    def show_message(self, text: str, key: tuple) -> None:
        self.query_one(RowList).set_rows([(Content.styled(visible(text), "italic $text-muted"), None)], key=key)

    def on_row_list_row_chosen(self, event: RowList.RowChosen) -> None:
        event.stop()
        if isinstance(event.payload, PyRow):
            self.post_message(self.FrameChosen(event.payload, event.activated))
