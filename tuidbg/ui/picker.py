"""``tuidbg attach`` without a PID: pick a process (Python processes first), keyboard first."""

from __future__ import annotations

from typing import Optional  # (a subscript evaluated at run time: 3.9 has no X | None)

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import DataTable, Footer, Input, Static

from tuidbg.picker import ProcessInfo, list_processes
from tuidbg.ui.text import visible


class PickerApp(App[Optional[int]]):
    TITLE = "tuidbg attach"
    CSS = """
    #hint { height: 1; padding: 0 1; background: $panel; }
    #filter { border: none; height: 1; padding: 0 1; }
    DataTable { height: 1fr; }
    """
    BINDINGS = [
        Binding("escape,ctrl+q", "cancel", "Cancel", id="picker.cancel"),
        Binding("f5,ctrl+r", "reload", "Reload", id="picker.reload"),
        Binding("down", "to_table", "List", show=False, id="picker.to_list"),
    ]

    def __init__(self, processes: list[ProcessInfo] | None = None) -> None:
        super().__init__()
        self._given = processes
        self.processes: list[ProcessInfo] = []
        self.shown: list[ProcessInfo] = []

    def compose(self) -> ComposeResult:
        yield Static(Content("Attach to which process? Type to filter, Enter attaches (quitting tuidbg later detaches)."), id="hint")
        yield Input(placeholder="filter: name, command line or PID", id="filter")
        yield DataTable(id="procs", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        t = self.query_one(DataTable)
        t.add_columns("PID", "User", "Threads", "Kind", "Command")
        self.action_reload()
        self.query_one(Input).focus()

    def action_reload(self) -> None:
        self.processes = self._given if self._given is not None else list_processes()
        self._fill(self.query_one(Input).value)

    def _fill(self, text: str) -> None:
        t = self.query_one(DataTable)
        t.clear()
        low = text.strip().lower()
        self.shown = [p for p in self.processes if not low or low in p.cmdline.lower() or low in p.name.lower() or low == str(p.pid)]
        for p in self.shown:
            kind = "python" if p.is_python else ""
            if p.uses_cuda:
                kind = (kind + "+cuda").lstrip("+")
            t.add_row(
                Text(str(p.pid)),
                Text(visible(p.user)),
                Text(str(p.threads)),
                Text(kind, style="bold green" if p.is_python else ""),
                Text(visible(p.cmdline[:300]), no_wrap=True, overflow="ellipsis"),
                key=str(p.pid),
            )

    def on_input_changed(self, event: Input.Changed) -> None:
        self._fill(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.shown:
            t = self.query_one(DataTable)
            self.exit(self.shown[max(0, min(t.cursor_row, len(self.shown) - 1))].pid)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key is not None and event.row_key.value is not None:
            self.exit(int(event.row_key.value))

    def action_to_table(self) -> None:
        self.query_one(DataTable).focus()

    def action_cancel(self) -> None:
        self.exit(None)


def pick_process() -> int | None:
    return PickerApp().run()
