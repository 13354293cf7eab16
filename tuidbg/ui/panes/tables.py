"""Threads and breakpoints panes (tables whose cells are plain text, never markup)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from tuidbg.engine.records import cxx_added_for
from tuidbg.engine.state import Breakpoint, DebuggerState
from tuidbg.ui.panes.lists import ReportsUserMoves
from tuidbg.ui.text import fold_templates, shorten_path, visible


def T(s: object, style: str = "") -> Text:
    return Text(visible(str(s)), style=style, no_wrap=True, overflow="ellipsis")


def add_fitted_columns(table: DataTable, labels: Sequence[str], rows: Iterable[Sequence[Text]]) -> None:
    """Columns ``labels``, each as wide as its widest cell of ``rows`` (or its title), set now.

    A column Textual sizes itself (``add_columns``) is as wide as its title until the table next goes
    idle and measures its rows; a screen update before that (another widget's, a notification's, a
    screenshot) draws the cells cut to the title's width, and DataTable keeps those renders (its cell
    cache knows nothing of column widths) until its rows change again. For a table that makes its columns
    anew with its rows (to fit what it shows now), that is every row, left cut for as long as it is shown."""
    widths = [Text(label).cell_len for label in labels]
    for row in rows:
        for i, cell in enumerate(row[:len(widths)]):
            widths[i] = max(widths[i], cell.cell_len)
    for label, width in zip(labels, widths):
        table.add_column(label, width=width)


class ChoosesRows(ReportsUserMoves):
    """Mixin for a DataTable whose row keys name what the user picks (a thread, a process): the cursor
    moved by the user, or Enter on a row, posts the table's ``Chosen(key, activated)`` message;
    ``selected_id`` is the row that is chosen already."""

    selected_id: str | None
    Chosen: type  # the table's message class, (key, activated)

    def _user_moved(self) -> None:
        if not self.row_count:
            return
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except Exception:
            return
        if key is not None and key != self.selected_id:
            self.post_message(self.Chosen(str(key), False))

    def action_scroll_top(self) -> None:
        super().action_scroll_top()  # type: ignore[misc]
        self._user_moved()

    def action_scroll_bottom(self) -> None:
        super().action_scroll_bottom()  # type: ignore[misc]
        self._user_moved()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key is not None and event.row_key.value is not None:
            self.post_message(self.Chosen(str(event.row_key.value), True))


class ThreadsPane(ChoosesRows, DataTable):
    DEFAULT_CSS = """
    ThreadsPane { height: 1fr; background: $surface; }
    """

    class ThreadChosen(Message):
        def __init__(self, thread_id: str, activated: bool) -> None:
            super().__init__()
            self.thread_id = thread_id
            self.activated = activated

    Chosen = ThreadChosen

    def __init__(self, **kw) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kw)
        self._key: tuple | None = None
        self.selected_id: str | None = None

    def on_mount(self) -> None:
        self.add_columns(" ", "Id", "Name", "State", "Python", "Where")

    def update_state(
        self, state: DebuggerState, python: dict[str, str] | None = None, names: dict[int, str] | None = None
    ) -> None:
        """``python``: gdb thread id -> the innermost Python frame it runs; ``names``: LWP -> the name
        the program's threading module gave the thread."""
        python = python or {}
        names = names or {}
        key = (state.generation, state.process, tuple((t.id, t.state, t.name, t.frame) for t in state.threads),
               state.selected_thread, tuple(sorted(python.items())), tuple(sorted(names.items())))
        if key == self._key:
            return
        self._key = key
        self.selected_id = state.selected_thread
        self.clear()
        cursor = 0
        for i, t in enumerate(state.threads):
            sel = t.id == state.selected_thread
            if sel:
                cursor = i
            where = ""
            if t.frame is not None:
                where = fold_templates(t.frame.func or t.frame.addr)
                if t.frame.file and t.frame.line is not None:
                    where += f" {shorten_path(t.frame.file, 30)}:{t.frame.line}"
                elif t.frame.library:
                    where += f" in {t.frame.library.rsplit('/', 1)[-1]}"
            lwp = t.lwp
            label = (names.get(lwp) if lwp else None) or t.name or ""
            if lwp:
                label = f"{label} (LWP {lwp})" if label else f"LWP {lwp}"
            cur = "*" if t.id == state.current_thread else " "
            self.add_row(
                T("▶" if sel else cur, "bold"),
                T(t.id),
                T(label),
                T(t.state, "green" if t.state == "stopped" else "yellow"),
                T(python.get(t.id, ""), "bold"),
                T(where),
                key=t.id,
            )
        if state.threads:
            self.move_cursor(row=cursor, animate=False)



def bp_where(b: Breakpoint, added: dict[str, str] | None = None) -> str:
    """The Where column. ``added``: {number: user's number} of the breakpoints tuidbg added on the
    functions a user's breakpoint on a C++ name means (``cxx_added_for``)."""
    added = added or {}
    if b.number in added:
        return f"{fold_templates(b.label)} (for {added[b.number]})"
    mine = [n for n, parent in added.items() if parent == b.number]
    loc = str(b.pending or b.original_location or "")
    loc = loc[len("-function "):] if loc.startswith("-function ") else loc
    if b.is_pending and mine:
        return f"{loc} (at {', '.join(mine)})"
    if b.is_pending:
        return f"{loc} (pending)"
    base = b.label
    if b.func and b.file:
        base = f"{fold_templates(b.func)} at {b.label}"
    if len(b.locations) > 1:
        base += f" ({len(b.locations)} locations)"
    return base


def _note(notes: dict[str, str], key: str) -> str:
    return f" ({notes[key]})" if key in notes else ""


class BreakpointsPane(DataTable):
    """All breakpoints; toggle, delete, set a condition, jump to the source."""

    DEFAULT_CSS = """
    BreakpointsPane { height: 1fr; background: $surface; }
    """
    BINDINGS = [
        Binding("space", "toggle_enabled", "Enable/disable", id="breakpoints.toggle"),
        Binding("delete,d", "delete_item", "Delete", id="item.delete"),
        Binding("e", "condition", "Condition", id="breakpoints.condition"),
    ]

    class Action(Message):
        """A request for the app: kind is "toggle", "delete", "condition" or "goto"."""

        def __init__(self, kind: str, number: str, python: bool = False) -> None:
            super().__init__()
            self.kind = kind
            self.number = number
            self.python = python

    def __init__(self, **kw) -> None:
        super().__init__(cursor_type="row", **kw)
        self._key: tuple | None = None

    def on_mount(self) -> None:
        self.add_columns("#", "On", "Where", "Condition", "Hits")

    def update_state(self, state: DebuggerState, python_rows: list[dict] | None = None,
                     notes: dict[str, str] | None = None, gone: list[dict] | None = None) -> None:
        """``notes``: row key ("n:3", "p:2") -> what happened to a remembered breakpoint ("moved 41→44");
        ``gone``: remembered breakpoints not placed (``file``/``line`` or ``location``, and ``why``)."""
        bps = [b for b in state.breakpoints if not b.internal]
        py = python_rows or []
        notes = notes or {}
        gone = gone or []
        key = (tuple(bps), tuple(tuple(sorted(r.items())) for r in py), tuple(sorted(notes.items())),
               tuple(repr(sorted(g.items())) for g in gone))
        if key == self._key:
            return
        self._key = key
        current = self.cursor_row
        self.clear()
        added = cxx_added_for(bps)
        for b in bps:
            kind = "" if b.type == "breakpoint" else f"[{b.type}] "
            self.add_row(
                T(b.number),
                T("●" if b.enabled else "○", "bold red" if b.enabled else "dim"),
                T(kind + bp_where(b, added) + _note(notes, f"n:{b.number}")),
                T(b.condition or ""),
                T(b.times),
                key=f"n:{b.number}",
            )
        for r in py:
            self.add_row(
                T(f"py{r['id']}"),
                T("●" if r.get("enabled", True) else "○", "bold red" if r.get("enabled", True) else "dim"),
                T(f"{r['file']}:{r['line']}" + (f" (moved from {r['requested_line']})" if r.get("requested_line") not in (None, r["line"]) else "")
                  + (f" in task {r['task']!r}" if r.get("task") else "") + _note(notes, f"p:{r['id']}")),
                T(r.get("condition") or ""),
                T(r.get("hits", 0)),
                key=f"p:{r['id']}",
            )
        for i, g in enumerate(gone):
            where = f"{g['file']}:{g['line']}" if g.get("file") else str(g.get("location"))
            self.add_row(
                T("py" if g.get("kind") == "python" else "", "dim"),
                T("✕", "bold yellow"),
                T(f"{where} ({g.get('why', 'not placed')})", "yellow"),
                T(g.get("condition") or ""),
                T(""),
                key=f"g:{i}",
            )
        if self.row_count:
            self.move_cursor(row=min(current, self.row_count - 1), animate=False)

    def _current(self) -> tuple[str, bool] | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except Exception:
            return None
        if not key:
            return None
        kind, num = key.split(":", 1)
        if kind == "g":
            return f"gone{num}", False  # a remembered breakpoint that could not be placed
        return num, kind == "p"

    def _act(self, kind: str) -> None:
        cur = self._current()
        if cur is not None:
            self.post_message(self.Action(kind, cur[0], cur[1]))

    def action_toggle_enabled(self) -> None:
        self._act("toggle")

    def action_delete_item(self) -> None:
        self._act("delete")

    def action_condition(self) -> None:
        self._act("condition")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self._act("goto")
