"""The Registers pane: the selected frame's registers, read at each stop while the pane is shown.

General-purpose registers first, the flags register with its flags decoded by gdb (``[ ZF PF ]``),
then the vector, x87 and other registers as groups collapsed by default (read when opened; Enter
or Space opens and closes a group). A value that changed since the previous stop the pane read
is highlighted (gdb's ``-data-list-changed-registers``). ``e`` edits the register under the
cursor (the app asks for the new value). Reading only while shown keeps stepping fast when the
pane is not looked at; the first read after it is shown compares with the last one it made.
"""

from __future__ import annotations

from typing import Protocol

from textual.binding import Binding
from textual.content import Content
from textual.message import Message

from tuidbg.engine import machine
from tuidbg.engine.errors import EngineError
from tuidbg.ui.panes.lists import RowList
from tuidbg.ui.text import visible

class RegisterSource(Protocol):
    """What the Registers pane reads (``tuidbg.ui.bridge.SessionBridge`` provides it)."""

    def register_tracker(self) -> machine.RegisterTracker: ...


LABELS = {"uniform": "uniform registers", "vector": "vector registers", "x87": "x87 floating point", "other": "other registers"}


class RegistersPane(RowList):
    BINDINGS = [
        Binding("space", "toggle_group", "Open/close group", show=False, id="registers.toggle"),
        Binding("e", "edit", "Edit register", id="registers.edit"),
    ]

    class EditRegister(Message):
        def __init__(self, name: str, value: str) -> None:
            super().__init__()
            self.name = name
            self.value = value

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._source: RegisterSource | None = None  # set by the app (a new one for a new session)
        self.tracker: machine.RegisterTracker | None = None
        self.open_groups: set[str] = set()
        self.registers: tuple[machine.Register, ...] = ()
        self.error: str | None = None
        self._read_key: tuple | None = None
        self._counts: dict[str, int] = {}

    @property
    def source(self) -> RegisterSource | None:
        return self._source

    @source.setter
    def source(self, source: RegisterSource | None) -> None:
        self._source = source
        self.tracker = None
        self._read_key = None

    # -- reading ------------------------------------------------------------------------------

    def stale(self) -> None:
        """The program moved: read again when next shown."""
        self._read_key = None

    def update_state(self, state, visible_now: bool) -> None:
        """Read the registers of a new stop (or a new frame) if the pane is shown."""
        if not state.is_stopped or self._source is None:
            if not state.is_stopped and state.has_process is False:
                self._show_message("No process.")
            return
        key = (state.generation, state.selected_thread, state.selected_frame)
        if key == self._read_key or not visible_now:
            return
        self._read_key = key
        self.run_worker(self.read, group="registers", exclusive=True, exit_on_error=False)

    async def read(self) -> None:
        if self._source is None:
            return
        if self.tracker is None:
            self.tracker = self._source.register_tracker()
        groups = ("general", "flags", "predicate", *sorted(self.open_groups))
        try:
            regs = await self.tracker.read(groups)
        except EngineError as exc:
            self._show_message(f"Cannot read registers: {exc}")
            return
        self._counts = dict(self.tracker.counts)
        self.registers = regs
        self.error = None
        self._render_rows()

    def _show_message(self, text: str) -> None:
        self.error = text
        self.set_rows([(Content.styled(visible(text), "italic $text-muted"), None)], key=("msg", text))

    # -- rows ---------------------------------------------------------------------------------

    def _render_rows(self) -> None:
        width = max((len(r.name) for r in self.registers), default=6) + 1
        rows: list[tuple[Content, object]] = []
        by_group: dict[str, list[machine.Register]] = {}
        for r in self.registers:
            by_group.setdefault(r.group, []).append(r)
        for r in by_group.get("general", []) + by_group.get("flags", []) + by_group.get("predicate", []):
            rows.append((self._row(r, width), r))
        for g in ("uniform", "vector", "x87", "other"):
            n = self._counts.get(g, 0)
            if not n:
                continue
            is_open = g in self.open_groups
            rows.append((Content.assemble(("▾ " if is_open else "▸ ", "$text-accent"), (f"{LABELS[g]} ({n})", "italic $text-muted")), g))
            if is_open:
                for r in by_group.get(g, []):
                    rows.append((self._row(r, width, indent="  "), r))
        key = tuple((r.name, r.value, r.changed) for r in self.registers) + tuple(sorted(self.open_groups))
        self.set_rows(rows, highlight=self.highlighted, key=key)

    def _row(self, r: machine.Register, width: int, indent: str = "") -> Content:
        style = "bold $text-warning" if r.changed else ""
        parts: list = [(indent + r.name.ljust(width), "$text-muted"), (visible(r.value), style)]
        if r.decoded:
            parts.append(("  " + visible(r.decoded), "$text-accent"))
        return Content.assemble(*parts)

    def row_texts_by_name(self) -> dict[str, str]:
        return {p.name: c.plain for c, p in zip(self._contents, self._payloads) if isinstance(p, machine.Register)}

    # -- actions ------------------------------------------------------------------------------

    def action_toggle_group(self) -> None:
        p = self.payload(self.highlighted)
        if isinstance(p, str):
            if p in self.open_groups:
                self.open_groups.discard(p)
                self._render_rows()
            else:
                self.open_groups.add(p)
                self.run_worker(self.read, group="registers", exclusive=True, exit_on_error=False)

    def on_row_list_row_chosen(self, event: RowList.RowChosen) -> None:
        if event.activated and isinstance(event.payload, str):
            event.stop()
            self.action_toggle_group()

    def action_edit(self) -> None:
        p = self.payload(self.highlighted)
        if isinstance(p, machine.Register):
            self.post_message(self.EditRegister(p.name, p.value))
