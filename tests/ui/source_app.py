"""The source pane alone in a small Textual app, in tuidbg's theme (the pane's styles name the theme's
colours): for tests/ui/test_source_pc_paint.py, test_rows_now.py and rows_app.py."""

from __future__ import annotations

import tuidbg.ui  # noqa: F401  (before Textual: tuidbg's frame rate)
from textual.app import App, ComposeResult

from tuidbg import config as tconfig
from tuidbg.ui.app import theme_from_file
from tuidbg.ui.panes.source import SourceView


class SourceApp(App):
    def __init__(self) -> None:
        super().__init__()
        for path in tconfig.theme_files().values():
            self.register_theme(theme_from_file(path))
        self.theme = tconfig.DEFAULT_THEME

    def compose(self) -> ComposeResult:
        yield SourceView()
