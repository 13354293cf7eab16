"""The floor of any Textual app's start (bench/cold_start.py, case ``true``): the design card's UI
library, imported and painting one line, nothing else (no gdb, no panes, no CSS of its own).

tuidbg's first screen cannot come before this one: it imports the same Textual, then more, and starts
gdb and the program beside it. The line says "exited normally" so that the harness's marker for the
first screen of the other tools matches it."""

from textual.app import App, ComposeResult
from textual.widgets import Static


class Bare(App):
    def compose(self) -> ComposeResult:
        yield Static("bare Textual app: exited normally (nothing ran)")


if __name__ == "__main__":
    Bare().run()
