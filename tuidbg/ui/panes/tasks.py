"""The Tasks pane: a program's asyncio tasks at the stop, by who awaits whom.

Each row: the task (under the task that awaits it: a ``gather``'s, a ``TaskGroup``'s, a task
awaiting another), its state (``running`` for the one a thread runs now), where its innermost
coroutine waits and what that awaits. Enter shows the task's coroutines in the Python frames pane
(``TaskChosen``), backspace the thread's own stack again. The tasks are read from memory
(``tuidbg.engine.pytasks``), when the pane is shown at a stop.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from tuidbg.engine.python.tasks import tree
from tuidbg.engine.state import DebuggerState
from tuidbg.ui.panes.tables import T, add_fitted_columns

COLUMNS = (" ", "Task", "State", "Waits in", "Awaiting")


class TasksPane(DataTable):
    """The asyncio tasks of the selected process at its stop."""

    DEFAULT_CSS = """
    TasksPane { height: 1fr; background: $surface; }
    """
    BINDINGS = [
        Binding("backspace", "back", "Thread's own stack", id="tasks.back"),
    ]

    class TaskChosen(Message):
        """Enter on a task (``addr``), or back to the thread's own stack (``addr`` None)."""

        def __init__(self, addr: int | None) -> None:
            super().__init__()
            self.addr = addr

    class Wanted(Message):
        """The pane came into view: its tasks are wanted (read at a stop when shown)."""

    def __init__(self, **kw) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kw)
        self._key: tuple | None = None

    def on_mount(self) -> None:
        self.post_message(self.Wanted())

    def on_show(self) -> None:
        self.post_message(self.Wanted())

    def update_state(self, state: DebuggerState, shown: int = 0) -> None:
        """``shown``: the task whose coroutines the Python frames pane shows (0: none)."""
        key = (state.generation, state.process, state.python.tasks, shown)
        if key == self._key:
            return
        self._key = key
        row = self.cursor_row
        rows = self._rows(state, shown)
        self.clear(columns=True)  # (the columns fit what is shown now, not what was: 80 columns are few)
        add_fitted_columns(self, COLUMNS, (cells for cells, _ in rows))  # (whole in any screen update from now)
        for cells, row_key in rows:
            self.add_row(*cells, key=row_key)
        if rows and rows[0][1] != "none":  # (tasks: the cursor stays on the row it was on)
            self.move_cursor(row=min(row, self.row_count - 1), animate=False)

    @staticmethod
    def _rows(state: DebuggerState, shown: int) -> list[tuple[list[Text], str]]:
        """The rows (cells, key) for ``state``: a task each, or one that says why there are none."""

        def note(text: str) -> list[tuple[list[Text], str]]:
            return [([T(""), T(text, "dim"), T(""), T(""), T("")], "none")]

        tasks = state.python.tasks
        if not state.is_stopped:
            return note(f"(the program is {state.process.value})")
        if tasks is None or (tasks.ok and not tasks.full):
            return note("(reading the tasks…)")
        if not tasks.ok:
            return note(f"(the tasks could not be read: {tasks.reason})")
        if not tasks.tasks:
            return note(f"({tasks.note or 'no asyncio tasks'})")
        rows = []
        for i, (t, depth) in enumerate(tree(tasks)):
            mark = "▶" if t.addr == shown else ("●" if t.executing or t.current else " ")
            state_text = "running" if t.executing else t.state + (" (current)" if t.current else "")
            f = t.innermost
            where = f"{f.name} {f.file.rsplit('/', 1)[-1]}:{f.line}" if f is not None else ""
            rows.append(([
                T(mark, "bold"),
                T("  " * depth + t.name, "bold" if t.executing else ""),
                T(state_text, "bold green" if t.executing else ("yellow" if t.state == "pending" else "dim")),
                T(where),
                T((t.awaiting or t.error or "").replace("_asyncio.", "")),
            ], f"{t.addr}:{i}"))
        return rows

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value if event.row_key is not None else None
        if key and key != "none":
            self.post_message(self.TaskChosen(int(key.split(":", 1)[0])))

    def action_back(self) -> None:
        self.post_message(self.TaskChosen(None))
