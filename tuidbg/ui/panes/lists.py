"""A keyboard-first list of rows whose text is never markup.

Built on OptionList with ``Content`` prompts. Programmatic moves of the
highlight do not echo back as user selections.
"""

from __future__ import annotations

from typing import Any, Sequence

from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option


class ReportsUserMoves:
    """Mixin for lists and tables: report the user's own cursor moves.

    Highlight events are posted asynchronously and also come from rebuilding the
    rows, so they cannot tell a user's move from the program's; the cursor
    actions can. Subclasses define ``_user_moved``.
    """

    def _user_moved(self) -> None:  # overridden
        return None

    def action_cursor_up(self) -> None:
        super().action_cursor_up()  # type: ignore[misc]
        self._user_moved()

    def action_cursor_down(self) -> None:
        super().action_cursor_down()  # type: ignore[misc]
        self._user_moved()

    def action_page_up(self) -> None:
        super().action_page_up()  # type: ignore[misc]
        self._user_moved()

    def action_page_down(self) -> None:
        super().action_page_down()  # type: ignore[misc]
        self._user_moved()


class RowList(ReportsUserMoves, OptionList):
    DEFAULT_CSS = """
    RowList {
        height: 1fr;
        border: none;
        padding: 0;
        background: $surface;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    RowList:focus { border: none; }
    """

    class RowChosen(Message):
        """The user moved to (``activated=False``) or chose (Enter/click) a row."""

        def __init__(self, row_list: "RowList", payload: Any, activated: bool) -> None:
            super().__init__()
            self.row_list = row_list
            self.payload = payload
            self.activated = activated

        @property
        def control(self) -> "RowList":
            return self.row_list

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._payloads: list[Any] = []
        self._contents: list[Content] = []
        self._keys: tuple = ()

    def on_focus(self, event) -> None:
        # Focus arriving on a list with no cursor (nothing selected in it yet): put the cursor on
        # the first row that stands for something, so Enter chooses it.
        if self.highlighted is None:
            first = next((i for i, p in enumerate(self._payloads) if p is not None), None)
            if first is not None:
                self.highlighted = first

    def _user_moved(self) -> None:
        if self.highlighted is not None:
            self.post_message(self.RowChosen(self, self.payload(self.highlighted), False))

    def action_first(self) -> None:
        super().action_first()
        self._user_moved()

    def action_last(self) -> None:
        super().action_last()
        self._user_moved()


    def set_rows(self, rows: Sequence[tuple[Content, Any]], highlight: int | None = None, key: tuple | None = None) -> None:
        """Replace all rows (skipped when ``key`` equals the previous key)."""
        if key is not None and key == self._keys and highlight == self.highlighted:
            return
        if key is None or key != self._keys:
            contents = [c for c, _ in rows]
            if len(contents) == len(self._contents) and contents:
                # Same number of rows (the usual case after a step): replace the
                # prompts that changed, so the list keeps its size and no layout runs.
                changed = [i for i, (old, new) in enumerate(zip(self._contents, contents)) if old != new]
                if changed:
                    for i in changed:
                        self.get_option_at_index(i)._set_prompt(contents[i])
                    self._clear_caches()
            else:
                self.clear_options()
                self.add_options([Option(c) for c in contents])
            self._contents = contents
            self._payloads = [p for _, p in rows]
            self._keys = key if key is not None else ()
        if highlight is not None and 0 <= highlight < len(self._payloads):
            self.highlighted = highlight
            self.scroll_to_highlight()

    def payload(self, index: int | None) -> Any:
        if index is None or not (0 <= index < len(self._payloads)):
            return None
        return self._payloads[index]

    @property
    def payloads(self) -> list[Any]:
        return list(self._payloads)

    @property
    def row_texts(self) -> list[str]:
        """The rows as plain text."""
        return [c.plain for c in self._contents]

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(self.RowChosen(self, self.payload(event.option_index), True))
