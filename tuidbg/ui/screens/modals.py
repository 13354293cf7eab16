"""Modal screens: quit, help, prompts, file open, value viewer, gdb exited or not answering."""

from __future__ import annotations

import os
from typing import Optional, TypeVar  # (a subscript evaluated at run time: 3.9 has no X | None)

from rich.text import Text
from textual.app import ComposeResult
from textual.await_complete import AwaitComplete
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from tuidbg.ui.panes.textlog import TextLog
from tuidbg.ui.text import visible

_MODAL_CSS = """
DIALOG { align: center middle; background: $background 60%; }
DIALOG > Vertical {
    width: 80%; max-width: 110; height: auto; max-height: 90%;
    border: round $primary; background: $panel; padding: 0 1;
}
DIALOG Label.title { text-style: bold; width: 1fr; padding: 0 0 1 0; }
DIALOG Horizontal.buttons { height: auto; align-horizontal: right; padding-top: 1; }
DIALOG Horizontal.buttons Button { margin-left: 1; min-width: 12; }
DIALOG Static.hint { color: $text-muted; }
"""


def modal_css(name: str, extra: str = "") -> str:
    """A dialog's DEFAULT_CSS: a box in the middle of the screen. Written with the dialog's own class name:
    Textual puts a class's name before each rule of its DEFAULT_CSS that does not begin with it, and
    "HelpScreen ModalScreen > Vertical" matches nothing (every dialog was drawn borderless, top left)."""
    return _MODAL_CSS.replace("DIALOG", name) + extra


R = TypeVar("R")


class Dialog(ModalScreen[R]):
    """A modal screen that goes once, and only itself.

    Textual's ``dismiss`` pops whatever screen is on top. Keys typed quickly (a terminal delivers them
    together) reach a dialog before the first one's dismissal has taken it off: Enter submits a prompt
    and the Escape after it, handled by the same prompt, dismissed a second time, which popped the main
    screen (ScreenStackError, the app ended: tests/ui/test_ui_key_fuzz.py found it). Here a second
    dismiss does nothing, and one while another screen is on top of this one (the gdb-not-answering
    dialog, taken away as gdb answers, under a help screen) waits until this one is on top again."""

    _gone = False
    _due: tuple | None = None  # (the result of a dismiss that waits to be on top)

    def dismiss(self, result=None) -> AwaitComplete:
        if self._gone:
            return AwaitComplete()
        if not self.is_active:
            self._due = (result,)
            return AwaitComplete()
        self._gone = True
        return super().dismiss(result)

    def on_screen_resume(self) -> None:
        if self._due is not None:
            (result,), self._due = self._due, None
            self.dismiss(result)


class QuitScreen(Dialog[str]):
    """Detach, kill or cancel; the default depends on how the session started."""

    DEFAULT_CSS = modal_css("QuitScreen")
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
        if self._gone:  # (dismissed before it was mounted: a key typed ahead; its widgets are gone)
            return
        self.query_one("#detach" if self.mode == "attach" else "#kill", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id or "cancel")


class PromptScreen(Dialog[Optional[str]]):
    DEFAULT_CSS = modal_css("PromptScreen")
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
        if self._gone:  # (dismissed before it was mounted: a key typed ahead; its widgets are gone)
            return
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)


class OpenFileScreen(Dialog[Optional[str]]):
    """Type a path, or pick one of the program's files (filtered as you type): its own first, each with
    where it comes from (``ui.filerank``)."""

    DEFAULT_CSS = modal_css("OpenFileScreen", """
    OpenFileScreen OptionList { height: 12; }
    """)
    BINDINGS = [
        Binding("escape", "dismiss(None)", "Cancel", id="open.cancel"),
        Binding("down", "to_list", "Files", show=False),
    ]

    def __init__(self, known: list, start: str = "") -> None:
        """``known``: ``filerank.Candidate``s in their order (or plain paths, each its own origin unknown)."""
        super().__init__()
        from tuidbg.ui import filerank

        self.cands = [c if isinstance(c, filerank.Candidate) else filerank.Candidate(c, c, "", True) for c in known]
        self.known = [c.path for c in self.cands]
        self.start = start

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Content("Open a file (a path, or pick one of the program's files)"), classes="title")
            yield Input(value=self.start, placeholder="/path/to/file.cpp", id="open-input")
            yield OptionList(id="open-list")
            yield Static(Content(self._summary()), classes="hint")

    def _summary(self) -> str:
        counts: dict[str, int] = {}
        for c in self.cands:
            counts[c.origin] = counts.get(c.origin, 0) + 1
        parts = [f"{n:,} {where or 'known'}" for where, n in counts.items()]
        return f"{len(self.cands):,} files ({', '.join(parts)}); Enter opens, Esc cancels" if parts else \
            "no source files known; type a path. Enter opens, Esc cancels"

    def on_mount(self) -> None:
        if self._gone:  # (dismissed before it was mounted: a key typed ahead; its widgets are gone)
            return
        self._filter(self.start)
        self.query_one(Input).focus()

    def _width(self) -> int:
        """The options' width: the box's (80% of the screen, at most 110) less its border, padding, the
        list's scrollbar and an option's padding."""
        return max(20, min(110, int(self.app.size.width * 0.8)) - 2 - 2 - 2 - 2 - 2)

    def _filter(self, text: str) -> None:
        from tuidbg.ui import filerank

        ol = self.query_one(OptionList)
        ol.clear_options()
        hits = filerank.matching(self.cands, text.strip())
        width = self._width()
        ol.add_options([Option(_file_row(c, width), id=str(i)) for i, c in enumerate(hits)])
        self._hits = [c.path for c in hits]

    def on_input_changed(self, event: Input.Changed) -> None:
        self._filter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        path, _, line = value.rpartition(":")
        if not (line.isdigit() and path):
            path = value
        if self._hits and (not value or not os.path.isfile(os.path.expanduser(path))):
            value = self._hits[0]  # (what was typed names no file: the first one that matches it)
        self.dismiss(value or None)

    def action_to_list(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self._hits[event.option_index])


def _file_row(c, width: int) -> Content:
    """A file's row: its path (dim where this machine does not have it), where it comes from at the right."""
    label = c.origin if c.exists or not c.origin else f"{c.origin}, not on this machine"
    path = visible(c.shown)
    room = width - len(label) - 2
    if len(path) > room > 10:
        path = "…" + path[-(room - 1):]
    left = Content.styled(path, "" if c.exists else "dim")
    if not label:
        return left
    return Content.assemble(left, " " * max(2, width - left.cell_length - len(label)), (label, "dim italic"))


class ValueScreen(Dialog[None]):
    DEFAULT_CSS = modal_css("ValueScreen", """
    ValueScreen > Vertical { height: 80%; }
    ValueScreen TextLog { height: 1fr; }
    """)
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
        if self._gone:  # (dismissed before it was mounted: a key typed ahead; its widgets are gone)
            return
        log = self.query_one(TextLog)
        log.write_lines(self.value.split("\n"))  # (a long line wraps)
        log.scroll_home(animate=False)
        log.focus()


class GdbExitedScreen(Dialog[str]):
    DEFAULT_CSS = modal_css("GdbExitedScreen")
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
        if self._gone:  # (dismissed before it was mounted: a key typed ahead; its widgets are gone)
            return
        for button in self.query("#restart").results(Button):
            button.focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id or "stay")


class GdbHungScreen(Dialog[str]):
    """gdb does not answer: wait, wake it (when it is stopped), kill it, or restart the session."""

    DEFAULT_CSS = modal_css("GdbHungScreen")
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
        if self._gone:  # (dismissed before it was mounted: a key typed ahead; its widgets are gone)
            return
        self.query_one("#wake" if self.stopped else "#wait", Button).focus()

    def update_what(self, what: str) -> None:
        for label in self.query("#hung-what").results(Static):
            label.update(Content(visible(what)))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id or "wait")


# The signals the help screen tells about: those a job's processes send each other or get from the
# terminal as it runs and as it ends.
HELP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGCHLD", "SIGPIPE", "SIGUSR1", "SIGUSR2")


def signals_text(handling: dict[str, tuple[bool, bool, bool]]) -> str:
    """One line of the help: which signals stop the program and which reach it without a stop, from
    gdb's (stop, print, pass) of each."""
    stop = [name for name, (stops, _, _) in handling.items() if stops]
    go = [name for name, (stops, _, passes) in handling.items() if not stops and passes]
    return (f"Signals that stop the program: {', '.join(stop) or 'none of ' + ', '.join(HELP_SIGNALS)}; "
            f"passed to it without a stop: {', '.join(go) or 'none'}. Each is gdb's setting: "
            "handle SIGTERM stop (or nostop) in the console, or -ex 'handle SIGTERM stop' at the start.")


class KeyTable(DataTable):
    """The help's table: no cursor; Home and End go to the first and the last key."""

    BINDINGS = [Binding("home", "scroll_top", "First", show=False), Binding("end", "scroll_bottom", "Last", show=False)]

    def action_page_down(self) -> None:
        self.scroll_to(y=self.scroll_y + self._page(), animate=False)

    def action_page_up(self) -> None:
        self.scroll_to(y=self.scroll_y - self._page(), animate=False)

    def _page(self) -> int:
        """The rows in view (DataTable's page takes the header row for one: a row was never shown)."""
        return max(1, self.scrollable_content_region.height - self.header_height)


class HelpScreen(Dialog[None]):
    """The keys in force now (the active keymap), by binding id: every one of them reachable, in two
    column pairs where the screen is wide enough for them (all of the app's keys at once at 160x48),
    one pair that scrolls below that (the arrows, PgUp/PgDn, Home/End and the wheel); and which signals
    stop the program (``show_signals``: the app asks gdb once the screen is up)."""

    DEFAULT_CSS = modal_css("HelpScreen", """
    HelpScreen > Vertical { max-height: 100%; max-width: 100%; width: 100%; }
    """)
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss(None)", "Close", id="help.close")]
    HINT = ("↑↓ PgUp PgDn Home End scroll; Esc closes. Remap any id in keymaps/*.toml or [keys] of "
            "$XDG_CONFIG_HOME/tuidbg/config.toml")

    def __init__(self, rows: list[tuple[str, str, str]], keymap_name: str) -> None:
        super().__init__()
        self.rows = rows
        self.keymap_name = keymap_name
        self.pairs = 0  # column pairs shown (1 or 2)
        self.signals = ""  # the line on signals (show_signals)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Content(f"Keys (keymap: {self.keymap_name})"), classes="title")
            yield KeyTable(id="help-table", cursor_type="none", zebra_stripes=True)
            yield Static(Content(self.HINT), classes="hint", id="help-hint")
            yield Static(Content(""), classes="hint", id="help-signals")

    def show_signals(self, text: str) -> None:
        """The help's line on signals (the app asks gdb once the screen is up)."""
        self.signals = text
        if self._gone or not self.is_mounted:  # (closed already, a key typed ahead: gdb answered after)
            return
        for line in self.query("#help-signals").results(Static):
            line.update(Content(text))
        self._fill(self.app.size.width, self.app.size.height)  # (the table's height, the line taken)

    def on_mount(self) -> None:
        if self._gone:  # (dismissed before it was mounted: a key typed ahead; its widgets are gone)
            return
        self.query_one(KeyTable).focus()
        self.query_one("#help-signals", Static).update(Content(self.signals))  # (gdb may have answered first)
        self._fill(self.app.size.width, self.app.size.height)

    def on_resize(self, event) -> None:
        if not self._gone:
            self._fill(event.size.width, event.size.height)

    def _fill(self, width: int, height: int) -> None:
        """One (keys, action, binding id) column triple, or two side by side when they fit: read down the
        left one, then down the right one."""
        need = sum(max((len(r[i]) for r in self.rows), default=0) for i in range(3)) + 6  # (a cell's padding: 1 + 1)
        pairs = 2 if width - 4 - 2 >= 2 * need else 1  # (the box's border and padding, the scrollbar)
        t = self.query_one(KeyTable)
        half = (len(self.rows) + pairs - 1) // pairs
        # As tall as its rows, within the screen (less the box's border, the title and the hint's lines):
        # the box is no taller than what it shows, and what does not fit scrolls.
        inner = max(10, width - 4)
        room = height - 2 - 2 - -(-len(self.HINT) // inner) - -(-len(self.signals) // inner)
        t.styles.height = max(3, min(half + 1, room))
        if pairs == self.pairs:
            return
        self.pairs = pairs
        t.clear(columns=True)
        t.add_columns(*(["Keys", "Action", "Binding id"] * pairs))
        for i in range(half):
            cells: list[Text] = []
            for col in range(pairs):
                k = i + col * half
                keys, desc, bid = self.rows[k] if k < len(self.rows) else ("", "", "")
                cells += [Text(keys, style="bold"), Text(desc), Text(bid, style="dim")]
            t.add_row(*cells)
