"""The Tasks pane: a program's asyncio tasks at the stop, by who awaits whom.

Each row: the task (under the task that awaits it: a ``gather``'s, a ``TaskGroup``'s, a task
awaiting another), its state (``running`` for the one a thread runs now), where its innermost
coroutine waits and what that awaits. Enter shows the task's coroutines in the Python frames pane
(``TaskChosen``), backspace the thread's own stack again. The tasks are read from memory
(``tuidbg.engine.pytasks``), when the pane is shown at a stop.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from tuidbg.engine.python.tasks import tree
from tuidbg.engine.state import DebuggerState
from tuidbg.ui.panes.tables import T


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
        tasks = state.python.tasks
        key = (state.generation, state.process, tasks, shown)
        if key == self._key:
            return
        self._key = key
        row = self.cursor_row
        self.clear(columns=True)  # (the columns fit what is shown now, not what was: 80 columns are few)
        self.add_columns(" ", "Task", "State", "Waits in", "Awaiting")
        if not state.is_stopped:
            self.add_row(T(""), T(f"(the program is {state.process.value})", "dim"), T(""), T(""), T(""), key="none")
            return
        if tasks is None or (tasks.ok and not tasks.full):
            self.add_row(T(""), T("(reading the tasks…)", "dim"), T(""), T(""), T(""), key="none")
            return
        if not tasks.ok:
            self.add_row(T(""), T(f"(the tasks could not be read: {tasks.reason})", "dim"), T(""), T(""), T(""),
                         key="none")
            return
        if not tasks.tasks:
            self.add_row(T(""), T(f"({tasks.note or 'no asyncio tasks'})", "dim"), T(""), T(""), T(""), key="none")
            return
        for i, (t, depth) in enumerate(tree(tasks)):
            mark = "▶" if t.addr == shown else ("●" if t.executing or t.current else " ")
            state_text = "running" if t.executing else t.state + (" (current)" if t.current else "")
            f = t.innermost
            where = f"{f.name} {f.file.rsplit('/', 1)[-1]}:{f.line}" if f is not None else ""
            self.add_row(
                T(mark, "bold"),
                T("  " * depth + t.name, "bold" if t.executing else ""),
                T(state_text, "bold green" if t.executing else ("yellow" if t.state == "pending" else "dim")),
                T(where),
                T((t.awaiting or t.error or "").replace("_asyncio.", "")),
                key=f"{t.addr}:{i}",
            )
        if self.row_count:
            self.move_cursor(row=min(row, self.row_count - 1), animate=False)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value if event.row_key is not None else None
        if key and key != "none":
            self.post_message(self.TaskChosen(int(key.split(":", 1)[0])))

    def action_back(self) -> None:
        self.post_message(self.TaskChosen(None))
