"""Stack panes: C++ (native) frames, Python frames, and the merged view.

The C++ pane lists the selected thread's native frames; an eval-loop frame that
runs Python code is marked with the Python function it runs. In merged mode the
same pane shows one list: Python frames in place of their eval-loop frames, and
glue (CPython internals, PyTorch dispatcher, pybind11, pytest/pluggy) folded into
rows that expand with Enter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.binding import Binding
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from tuidbg.engine.python.merge import StackRow
from tuidbg.engine.python.model import PyFrame
from tuidbg.engine.state import DebuggerState, Frame
from tuidbg.ui.panes.lists import RowList
from tuidbg.ui.text import fold_templates, shorten_path, visible


@dataclass(frozen=True)
class LoadMore:
    """The "load more frames" row."""


@dataclass(frozen=True)
class NativeRow:
    frame: Frame
    note: str = ""  # the Python function this eval-loop frame runs


@dataclass(frozen=True)
class PythonRow:
    """A Python frame in the merged view."""

    frame: PyFrame
    native_level: int | None


@dataclass(frozen=True)
class FoldRow:
    """Folded glue; ``key`` identifies it across refreshes for its expanded state."""

    key: tuple
    label: str
    children: tuple[StackRow, ...]
    depth: int = 0


@dataclass(frozen=True)
class HostRow:
    """A frame of the host thread shown under a CUDA device focus (the thread that launched the kernel)."""

    thread: str
    frame: Frame


@dataclass(frozen=True)
class HostStack:
    """What the pane shows below the device frames: a host thread's frames, or why there are none."""

    thread: str
    label: str
    frames: tuple[Frame, ...] = ()
    error: str | None = None


def frame_name(func: str, expanded: bool) -> str:
    name = func or "??"
    return visible(name if expanded else fold_templates(name))


def frame_location(frame: Frame, width: int = 60) -> str:
    if frame.file and frame.line is not None:
        return f"{shorten_path(frame.file, width)}:{frame.line}"
    if frame.library:
        return f"in {frame.library.rsplit('/', 1)[-1]}"
    return frame.addr


def native_row_content(row: NativeRow, selected: bool, expanded: bool, indent: str = "") -> Content:
    f = row.frame
    parts: list[Any] = [
        indent,
        ("▶ " if selected else "  ", "bold $text-warning" if selected else ""),
        (f"#{f.level:<3}", "$text-muted"),
        (frame_name(f.func, expanded), "bold" if f.has_source else ""),
        "  ",
        (visible(frame_location(f)), "$text-muted"),
    ]
    if row.note:
        parts += ["  ", (visible(row.note), "$python-frame")]
    return Content.assemble(*parts)


def python_row_content(frame: PyFrame, selected: bool, level: int | None, indent: str = "") -> Content:
    line = f":{frame.line}" if frame.line is not None else ""
    return Content.assemble(
        indent,
        ("▶ " if selected else "  ", "bold $text-warning" if selected else ""),
        (f"#{level:<3}" if level is not None else "    ", "$text-muted"),
        ("py ", "bold $python-frame"),
        (visible(frame.name), "bold $python-frame"),
        "  ",
        (visible(shorten_path(frame.file, 70) + line), "$text-muted"),
    )


class CppFramesPane(Static):
    """Native frames of the selected thread, or the merged Python/native stack."""

    DEFAULT_CSS = """
    CppFramesPane { height: 1fr; layout: vertical; }
    """
    BINDINGS = [
        Binding("right,x", "expand", "Expand name", id="frames.expand", show=False),
        Binding("h", "host_stack", "Host stack", id="frames.host_stack", show=False),
    ]

    class FrameChosen(Message):
        def __init__(self, level: int, activated: bool) -> None:
            super().__init__()
            self.level = level
            self.activated = activated

    class PythonChosen(Message):
        def __init__(self, frame: PyFrame, activated: bool) -> None:
            super().__init__()
            self.frame = frame
            self.activated = activated

    class MoreRequested(Message):
        pass

    class HostStackToggled(Message):
        """Show or hide the host thread's frames below the device frames (CUDA device focus)."""

    class HostFrameChosen(Message):
        def __init__(self, thread: str, level: int) -> None:
            super().__init__()
            self.thread = thread
            self.level = level

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.expanded: set[int] = set()  # native levels whose names are shown whole
        self.open_folds: set[tuple] = set()
        self._rows: list[Any] = []
        self._state: DebuggerState | None = None
        self._merged: list[StackRow] | None = None
        self._py_selected: int | None = None
        self.notes: dict[int, str] = {}
        self.agent_top = 0  # at a stop of tuidbg's agent: its frames on top of the stack, folded
        self.host: HostStack | None = None
        self._shown: tuple = ()  # (generation, thread, selected frame) of the rows on screen
        self._shown_count = 0

    def compose(self):
        yield RowList(id="cpp-list")

    def set_host(self, host: HostStack | None) -> None:
        if host != self.host:
            self.host = host
            self._refresh_rows()

    @property
    def rows(self) -> list[Any]:
        return list(self._rows)

    def update_state(
        self,
        state: DebuggerState,
        notes: dict[int, str] | None = None,
        merged: list[StackRow] | None = None,
        py_selected: int | None = None,
        agent_top: int = 0,
    ) -> None:
        self._state = state
        self.notes = notes or {}
        self.agent_top = agent_top
        self._merged = merged
        self._py_selected = py_selected
        self._refresh_rows()

    def _refresh_rows(self) -> None:
        state = self._state
        if state is None:
            return
        rl = self.query_one(RowList)
        if state.frames_thread is None or not state.is_stopped:
            rl.set_rows([], key=("empty", state.process))
            self._rows = []
            return
        contents: list[tuple[Content, Any]] = []
        highlight = None
        if self._merged is not None:
            highlight = self._merged_rows(self._merged, state, contents, 0)
        else:
            frames = state.frames
            top = min(self.agent_top, len(frames))
            if top > 0:
                key = ("agent", top)
                is_open = key in self.open_folds
                # its stop function, ctypes, the agent's own Python: Enter shows them
                label = f"#0–#{top - 1}  tuidbg's agent stop ({top} frame{'s' if top != 1 else ''})"
                contents.append((Content.assemble(("  ▾ " if is_open else "  ▸ ", "$text-accent"), (label, "italic $text-muted")),
                                 FoldRow(key, label, ())))
                if not is_open:
                    if state.selected_frame < top:
                        highlight = 0
                    frames = frames[top:]
            for f in frames:
                r = NativeRow(f, self.notes.get(f.level, ""))
                sel = f.level == state.selected_frame
                if sel:
                    highlight = len(contents)
                contents.append((native_row_content(r, sel, f.level in self.expanded), r))
        if state.more_frames:
            contents.append((Content.styled("  … load 64 more frames", "italic $text-accent"), LoadMore()))
        host = self.host
        if host is not None:
            contents.append((Content.styled(f"── {visible(host.label)} ──", "bold $text-accent"), None))
            if host.error:
                contents.append((Content.styled("  " + visible(host.error), "italic $text-muted"), None))
            for f in host.frames:
                contents.append(
                    (native_row_content(NativeRow(f), False, False), HostRow(host.thread, f))
                )
        self._rows = [p for _, p in contents]
        shown = (state.generation, state.frames_thread, state.selected_frame)
        if self._merged is None and shown == self._shown and len(state.frames) > self._shown_count:
            # More frames were loaded: stay on the row that was "load more" (now the first new frame).
            highlight = rl.highlighted if rl.highlighted is not None else highlight
        self._shown, self._shown_count = shown, len(state.frames)
        key = (
            state.generation, state.frames_thread, len(state.frames), state.selected_frame, frozenset(self.expanded),
            tuple(sorted(self.notes.items())), self._merged is not None, self._py_selected, frozenset(self.open_folds),
            id(self._merged), host, self.agent_top,
        )
        rl.set_rows(contents, highlight, key=key)

    def _merged_rows(self, rows: list[StackRow], state: DebuggerState, out: list, depth: int) -> int | None:
        highlight = None
        indent = "  " * depth
        for i, r in enumerate(rows):
            if r.kind == "python" and r.python is not None:
                lvl = r.native.level if r.native is not None else None
                sel = self._py_selected is not None and r.python.index == self._py_selected
                if sel:
                    highlight = len(out)
                out.append((python_row_content(r.python, sel, lvl, indent), PythonRow(r.python, lvl)))
            elif r.kind == "native" and r.native is not None:
                f = r.native
                sel = self._py_selected is None and f.level == state.selected_frame
                if sel:
                    highlight = len(out)
                nr = NativeRow(f)
                out.append((native_row_content(nr, sel, f.level in self.expanded, indent), nr))
            elif r.kind == "fold":
                key = (r.rule, r.level, len(r.children))
                is_open = key in self.open_folds
                out.append(
                    (Content.assemble(indent, ("  ▾ " if is_open else "  ▸ ", "$text-accent"), (visible(r.label), "italic $text-muted")),
                     FoldRow(key, r.label, r.children, depth))
                )
                if is_open:
                    h = self._merged_rows(list(r.children), state, out, depth + 1)
                    highlight = highlight if h is None else h
                elif any(c.level == state.selected_frame for c in r.children if c.kind == "native") and self._py_selected is None:
                    highlight = len(out) - 1
            elif r.kind == "note":
                out.append((Content.styled(indent + "  " + visible(r.label), "italic $text-muted"), None))
        return highlight

    def on_row_list_row_chosen(self, event: RowList.RowChosen) -> None:
        event.stop()
        p = event.payload
        if isinstance(p, LoadMore):
            if event.activated:
                self.post_message(self.MoreRequested())
        elif isinstance(p, NativeRow):
            self.post_message(self.FrameChosen(p.frame.level, event.activated))
        elif isinstance(p, PythonRow):
            self.post_message(self.PythonChosen(p.frame, event.activated))
        elif isinstance(p, FoldRow) and event.activated:
            self.toggle_fold(p)
        elif isinstance(p, HostRow) and event.activated:
            self.post_message(self.HostFrameChosen(p.thread, p.frame.level))

    def action_host_stack(self) -> None:
        self.post_message(self.HostStackToggled())

    def toggle_fold(self, row: FoldRow) -> None:
        """Open a folded run of frames, or fold it back (Enter on its row)."""
        self.open_folds.symmetric_difference_update({row.key})
        self._refresh_rows()
        # the cursor stays on the fold's row (Enter again folds it back)
        rl = self.query_one(RowList)
        at = next((i for i, p in enumerate(self._rows) if isinstance(p, FoldRow) and p.key == row.key), None)
        if at is not None:
            rl.highlighted = at

    def action_expand(self) -> None:
        rl = self.query_one(RowList)
        row = rl.payload(rl.highlighted)
        if isinstance(row, NativeRow):
            self.expanded.symmetric_difference_update({row.frame.level})
            self._refresh_rows()
        elif isinstance(row, FoldRow):
            self.toggle_fold(row)
        elif isinstance(row, LoadMore):
            self.post_message(self.MoreRequested())


@dataclass(frozen=True)
class PyRow:
    """One Python frame as the Python frames pane shows it."""

    frame: PyFrame

    @property
    def index(self) -> int:
        return self.frame.index


def py_row_content(frame: PyFrame, selected: bool, number: int) -> Content:
    """``number``: the frame's place in the list shown (the walker's index counts the agent's own
    frames, which are hidden)."""
    line = f":{frame.line}" if frame.line is not None else ""
    return Content.assemble(
        ("▶ " if selected else "  ", "bold $text-warning" if selected else ""),
        (f"{number:<3}", "$text-muted"),
        (visible(frame.name), "bold $python-frame"),
        (visible(line), "$python-frame"),
        "  ",
        (visible(frame.file), "$text-muted"),  # the full path: checkout or site-packages?
    )


class PyFramesPane(Static):
    """Python frames of the selected thread (innermost first), with the full path of each file."""

    DEFAULT_CSS = """
    PyFramesPane { height: 1fr; layout: vertical; }
    """

    class FrameChosen(Message):
        def __init__(self, frame: PyFrame, activated: bool) -> None:
            super().__init__()
            self.frame = frame
            self.activated = activated

    def compose(self):
        yield RowList(id="py-list")

    def show_frames(self, frames: tuple[PyFrame, ...], selected: int | None, key: tuple) -> None:
        contents = [(py_row_content(f, f.index == selected, n), PyRow(f)) for n, f in enumerate(frames)]
        hl = next((i for i, f in enumerate(frames) if f.index == selected), None)
        self.query_one(RowList).set_rows(contents, hl, key=key + (selected,))

    def show_message(self, text: str, key: tuple) -> None:
        self.query_one(RowList).set_rows([(Content.styled(visible(text), "italic $text-muted"), None)], key=key)

    def on_row_list_row_chosen(self, event: RowList.RowChosen) -> None:
        event.stop()
        if isinstance(event.payload, PyRow):
            self.post_message(self.FrameChosen(event.payload.frame, event.activated))
