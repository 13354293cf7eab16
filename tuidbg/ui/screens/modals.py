"""Modal screens: quit, help, prompts, file open, value viewer, gdb exited or not answering."""

from __future__ import annotations

from typing import Optional  # (a subscript evaluated at run time: 3.9 has no X | None)

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from tuidbg.ui.panes.textlog import TextLog
from tuidbg.ui.text import visible

MODAL_CSS = """
ModalScreen { align: center middle; background: $background 60%; }
ModalScreen > Vertical {
    width: 80%; max-width: 110; height: auto; max-height: 90%;
    border: round $primary; background: $panel; padding: 0 1;
}
ModalScreen Label.title { text-style: bold; width: 1fr; padding: 0 0 1 0; }
ModalScreen Horizontal.buttons { height: auto; align-horizontal: right; padding-top: 1; }
ModalScreen Horizontal.buttons Button { margin-left: 1; min-width: 12; }
ModalScreen Static.hint { color: $text-muted; }
"""


class QuitScreen(ModalScreen[str]):
    """Detach, kill or cancel; the default depends on how the session started."""

    DEFAULT_CSS = MODAL_CSS
    BINDINGS = [
        Binding("escape", "dismiss('cancel')", "Cancel", id="quit.cancel"),
        Binding("d", "dismiss('detach')", "Detach", show=False),
        Binding("k", "dismiss('kill')", "Kill", show=False),
    ]

    def __init__(self, mode: str, description: str, several: bool = False) -> None:
        super().__init__()
        self.mode = mode
        self.several = several  # (the description names more than one process: "them", not "it")
        self.description = description

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Content("Quit tuidbg?"), classes="title")
            it, keeps = ("them", "keep") if self.several else ("it", "keeps")
            if self.mode == "attach":
                text = f"{self.description} {keeps} running after a detach (d). Kill (k) ends {it}."
            else:
                text = f"Kill (k) ends {self.description}; detach (d) leaves {it} running without a debugger."
            yield Static(Content(text))
            with Horizontal(classes="buttons"):
                yield Button("Detach and quit", id="detach", variant="primary" if self.mode == "attach" else "default")
                yield Button("Kill and quit", id="kill", variant="error" if self.mode != "attach" else "default")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#detach" if self.mode == "attach" else "#kill", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id or "cancel")


class PromptScreen(ModalScreen[Optional[str]]):
    DEFAULT_CSS = MODAL_CSS
    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="prompt.cancel")]

    def __init__(self, title: str, value: str = "", placeholder: str = "", hint: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.value = value
        self.placeholder = placeholder
        self.hint = hint

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Content(self.title_text), classes="title")
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")
            if self.hint:
                yield Static(Content(self.hint), classes="hint")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)


class OpenFileScreen(ModalScreen[Optional[str]]):
    """Type a path, or pick one of the source files gdb knows about (filtered as you type)."""

    DEFAULT_CSS = MODAL_CSS + """
    OpenFileScreen OptionList { height: 12; }
    """
    BINDINGS = [
        Binding("escape", "dismiss(None)", "Cancel", id="open.cancel"),
        Binding("down", "to_list", "Files", show=False),
    ]

    def __init__(self, known: list[str], start: str = "") -> None:
        super().__init__()
        self.known = sorted(set(known))
        self.start = start

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Content("Open a file (a path, or pick a source file of the program)"), classes="title")
            yield Input(value=self.start, placeholder="/path/to/file.cpp", id="open-input")
            yield OptionList(id="open-list")
            yield Static(Content(f"{len(self.known)} source files known to gdb; Enter opens, Esc cancels"), classes="hint")

    def on_mount(self) -> None:
        self._filter(self.start)
        self.query_one(Input).focus()

    def _filter(self, text: str) -> None:
        ol = self.query_one(OptionList)
        ol.clear_options()
        low = text.lower()
        hits = [p for p in self.known if low in p.lower()][:500]
        ol.add_options([Option(Content(visible(p)), id=str(i)) for i, p in enumerate(hits)])
        self._hits = hits

    def on_input_changed(self, event: Input.Changed) -> None:
        self._filter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        if not value and self._hits:
            value = self._hits[0]
        self.dismiss(value or None)

    def action_to_list(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self._hits[event.option_index])


class ValueScreen(ModalScreen[None]):
    DEFAULT_CSS = MODAL_CSS + """
    ValueScreen > Vertical { height: 80%; }
    ValueScreen TextLog { height: 1fr; }
    """
    BINDINGS = [Binding("escape,q,enter", "dismiss(None)", "Close", id="value.close")]

    def __init__(self, title: str, value: str) -> None:
        super().__init__()
        self.title_text = title
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Content(visible(self.title_text)), classes="title")
            yield TextLog(id="value-log")
            yield Static(Content(f"{len(self.value)} characters; Esc closes"), classes="hint")

    def on_mount(self) -> None:
        log = self.query_one(TextLog)
        chunks = []
        for line in self.value.split("\n"):
            while len(line) > 200:
                chunks.append(line[:200])
                line = line[200:]
            chunks.append(line)
        log.write_lines(chunks)
        log.scroll_home(animate=False)
        log.focus()


class GdbExitedScreen(ModalScreen[str]):
    DEFAULT_CSS = MODAL_CSS
    BINDINGS = [Binding("escape", "dismiss('stay')", "Stay", id="gdbexit.stay")]

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Content("gdb is gone"), classes="title")
            yield Static(Content(visible(self.reason)))
            yield Static(Content("The panes keep what they showed. Restart starts gdb and the program again."), classes="hint")
            with Horizontal(classes="buttons"):
                yield Button("Restart session", id="restart", variant="primary")
                yield Button("Keep looking", id="stay")
                yield Button("Quit", id="quit", variant="error")

    def on_mount(self) -> None:
        for button in self.query("#restart").results(Button):
            button.focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id or "stay")


class GdbHungScreen(ModalScreen[str]):
    """gdb does not answer: wait, wake it (when it is stopped), kill it, or restart the session."""

    DEFAULT_CSS = MODAL_CSS
    BINDINGS = [Binding("escape", "dismiss('wait')", "Wait", id="gdbhung.wait")]

    def __init__(self, what: str, stopped: bool, mode: str) -> None:
        super().__init__()
        self.what = what
        self.stopped = stopped
        self.mode = mode

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Content("gdb is not answering"), classes="title")
            yield Static(Content(visible(self.what)), id="hung-what")
            after = ("the process tuidbg attached to is released (running, untraced, without gdb's breakpoints)"
                     if self.mode == "attach" else "the program ends with it")
            yield Static(Content(f"Kill gdb: {after}. Restart: kill it and start the session again."), classes="hint")
            with Horizontal(classes="buttons"):
                if self.stopped:
                    yield Button("Continue gdb", id="wake", variant="primary")
                yield Button("Wait", id="wait", variant="default" if self.stopped else "primary")
                yield Button("Kill gdb", id="kill", variant="error")
                yield Button("Restart", id="restart")

    def on_mount(self) -> None:
        self.query_one("#wake" if self.stopped else "#wait", Button).focus()

    def update_what(self, what: str) -> None:
        self.query_one("#hung-what", Static).update(Content(visible(what)))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id or "wait")


class HelpScreen(ModalScreen[None]):
    """The keys in force now (the active keymap), by binding id."""

    DEFAULT_CSS = MODAL_CSS + """
    HelpScreen > Vertical { height: 85%; }
    HelpScreen DataTable { height: 1fr; }
    """
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss(None)", "Close", id="help.close")]

    def __init__(self, rows: list[tuple[str, str, str]], keymap_name: str) -> None:
        super().__init__()
        self.rows = rows
        self.keymap_name = keymap_name

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Content(f"Keys (keymap: {self.keymap_name})"), classes="title")
            yield DataTable(id="help-table", cursor_type="row")
            yield Static(Content("Remap any id in keymaps/*.toml or [keys] of $XDG_CONFIG_HOME/tuidbg/config.toml"), classes="hint")

    def on_mount(self) -> None:
        t = self.query_one(DataTable)
        t.add_columns("Keys", "Action", "Binding id")
        for keys, desc, bid in self.rows:
            t.add_row(Text(keys, style="bold"), Text(desc), Text(bid, style="dim"))
        t.focus()
