"""The gdb console and the program's output, each a TextLog with an input line."""

from __future__ import annotations

from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input

from tuidbg.ui.panes.textlog import TextLog
from tuidbg.ui.text import LineAssembler


class LogInput(Input):
    """An input line with keys that scroll the log above it, as a terminal's do while one types: PgUp/PgDn
    a page, ctrl+Home/ctrl+End to the first and the last line, and Home/End too while the line is empty
    (with text in it they move the cursor, as in any input line). Its parent holds the ``TextLog``."""

    BINDINGS = [
        Binding("pageup", "log_page(-1)", "Scroll up a page", show=False, id="log.page_up"),
        Binding("pagedown", "log_page(1)", "Scroll down a page", show=False, id="log.page_down"),
        Binding("ctrl+home", "log_edge(-1)", "Scroll to the first line", show=False, id="log.first"),
        Binding("ctrl+end", "log_edge(1)", "Scroll to the last line", show=False, id="log.last"),
    ]

    @property
    def log_widget(self) -> TextLog:
        return self.parent.query_one(TextLog)  # type: ignore[union-attr]

    def action_log_page(self, direction: int) -> None:
        log = self.log_widget
        (log.scroll_page_down if direction > 0 else log.scroll_page_up)(animate=False)

    def action_log_line(self, direction: int) -> None:
        log = self.log_widget
        log.scroll_to(y=log.scroll_offset.y + direction, animate=False)

    def action_log_edge(self, direction: int) -> None:
        log = self.log_widget
        if direction > 0:
            log.scroll_end(animate=False)
        else:
            log.scroll_home(animate=False)

    def action_home(self, select: bool = False) -> None:
        if not self.value and not select:
            self.action_log_edge(-1)
        else:
            super().action_home(select)

    def action_end(self, select: bool = False) -> None:
        if not self.value and not select:
            self.action_log_edge(1)
        else:
            super().action_end(select)


class CommandInput(LogInput):
    """The console's input line: history on up/down, completion on tab."""

    BINDINGS = [
        Binding("up", "history(-1)", "Previous command", show=False, id="console.history_prev"),
        Binding("down", "history(1)", "Next command", show=False, id="console.history_next"),
        Binding("tab", "complete", "Complete", show=False, id="console.complete"),
        Binding("escape", "leave", "Leave the console", show=False, id="console.leave"),
    ]

    class CompleteRequested(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.history: list[str] = []
        self._pos: int | None = None

    def remember(self, command: str) -> None:
        if command and (not self.history or self.history[-1] != command):
            self.history.append(command)
            del self.history[:-1000]
        self._pos = None

    def action_history(self, delta: int) -> None:
        if not self.history:
            return
        if self._pos is None:
            self._pos = len(self.history)
        self._pos = max(0, min(len(self.history), self._pos + delta))
        self.value = self.history[self._pos] if self._pos < len(self.history) else ""
        self.cursor_position = len(self.value)

    def action_complete(self) -> None:
        self.post_message(self.CompleteRequested(self.value))

    def action_leave(self) -> None:
        self.app.action_pane("source")  # type: ignore[attr-defined]


class ConsolePane(Vertical):
    DEFAULT_CSS = """
    ConsolePane { height: 1fr; }
    ConsolePane > TextLog { height: 1fr; }
    ConsolePane > CommandInput { height: 1; border: none; padding: 0 1; background: $boost; }
    ConsolePane > CommandInput:focus { border: none; background: $boost; }
    """

    class CommandSubmitted(Message):
        def __init__(self, command: str) -> None:
            super().__init__()
            self.command = command

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.last_command = ""

    def compose(self):
        yield TextLog(id="console-log", max_lines=20000)
        yield CommandInput(placeholder="gdb command (tab completes, :e FILE opens a file, :help)", id="console-input")

    @property
    def log_widget(self) -> TextLog:
        return self.query_one(TextLog)

    @property
    def input(self) -> CommandInput:
        return self.query_one(CommandInput)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        cmd = event.value.strip()
        if not cmd:
            cmd = self.last_command  # an empty line repeats the last command, as in gdb
            if not cmd:
                return
        self.input.value = ""
        self.input.remember(cmd)
        self.last_command = cmd
        self.post_message(self.CommandSubmitted(cmd))


class ProgramInput(LogInput):
    """The program's input line: Up/Down scroll the output a line (there is no history to go through)."""

    BINDINGS = [
        Binding("up", "log_line(-1)", "Scroll up a line", show=False, id="output.line_up"),
        Binding("down", "log_line(1)", "Scroll down a line", show=False, id="output.line_down"),
        Binding("ctrl+d", "eof", "End of input", show=False, id="output.eof"),
        Binding("escape", "leave", "Leave the input line", show=False, id="output.leave"),
    ]

    def action_leave(self) -> None:
        self.app.action_pane("source")  # type: ignore[attr-defined]

    class EOF(Message):
        pass

    def action_eof(self) -> None:
        self.post_message(self.EOF())


class OutputPane(Vertical):
    """What the program writes to its terminal; the input line types into it."""

    DEFAULT_CSS = """
    OutputPane { height: 1fr; }
    OutputPane > TextLog { height: 1fr; }
    OutputPane > ProgramInput { height: 1; border: none; padding: 0 1; background: $boost; }
    OutputPane > ProgramInput:focus { border: none; background: $boost; }
    """

    class InputSubmitted(Message):
        def __init__(self, data: bytes) -> None:
            super().__init__()
            self.data = data

    def __init__(self, max_lines: int = 50000, **kw) -> None:
        super().__init__(**kw)
        self.assembler = LineAssembler()
        self.max_lines = max_lines

    def compose(self):
        yield TextLog(id="output-log", max_lines=self.max_lines)
        yield ProgramInput(placeholder="input for the program (Enter sends a line, ctrl+d sends end of file)", id="output-input")

    @property
    def log_widget(self) -> TextLog:
        return self.query_one(TextLog)

    def feed(self, data: bytes) -> None:
        lines = self.assembler.feed(data)
        self.log_widget.write_lines(lines, open_line=self.assembler.current)

    def program_lines(self) -> list[str]:
        """The program's own lines, the open one included (tuidbg's notes left out)."""
        return self.log_widget.lines(without="note")

    def note(self, text: str) -> None:
        """A line of tuidbg's own (program started, exited), styled apart from the output."""
        if self.assembler.current:
            self.log_widget.write_lines([self.assembler.current])
            self.assembler.partial = ""
        self.log_widget.write_lines([text], style="note")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value
        event.input.value = ""
        self.post_message(self.InputSubmitted((text + "\n").encode()))

    def on_program_input_eof(self, event: ProgramInput.EOF) -> None:
        event.stop()
        self.post_message(self.InputSubmitted(b"\x04"))
