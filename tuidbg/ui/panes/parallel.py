"""The Parallel Stacks tab: every thread of every process at a stop, merged into one tree from the
outermost frame in (``tuidbg.engine.python.parallel``: the tree, its order and folds).

A row is a frame with how many processes and threads are in it ("rank 0-2,4-7 · 7 procs"); where
the processes part the branches are open, the odd one (fewest processes) first; a long common trunk
is one row ("… 9 frames") that Enter opens. Under the tree: how many threads run no Python, and the
processes whose stacks are not in it (running, not read yet). The line at the bottom tells the
highlighted row's whole location and processes.

Keys: Enter on a frame selects its processes (the app shows the first, and every pane follows it);
Enter or right on a fold opens it; left closes the branch under a frame, right opens it again; G makes
the row's processes the run group (they continue and step together, the others stay stopped).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from tuidbg.engine.python.view import stacks_read
from tuidbg.engine.state import DebuggerState, ProcessState
from tuidbg.ui.panes.lists import RowList
from tuidbg.ui.text import visible

if TYPE_CHECKING:
    from tuidbg.engine.python import parallel as P


def _tree():
    """``tuidbg.engine.python.parallel``, imported when the tab first has stops to show (not with the
    first screen: it brings the dump's grouping, ``tuidbg.dumpreport``)."""
    from tuidbg.engine.python import parallel

    return parallel


# Seconds a stop's stacks may take to come in (each one a new state, the last one builds the tree at once)
# before the tree is built of those there.
SETTLE = 0.5


def row_content(row: P.Row, width: int) -> Content:
    left = visible(row.prefix + row.text)
    label = visible(row.label)
    gap = max(2, width - len(left) - len(label) - 1)
    style = {"fold": "italic $text-muted", "no-python": "$text-muted", "left": "italic $text-muted"}.get(row.kind, "")
    if len(left) + 2 + len(label) > width - 1:
        # (narrow: the processes first after the frame, the line cut at the right)
        gap = 2
    return Content.assemble((left, style), " " * gap, (label, "$text-muted" if row.kind != "node" else "$accent"))


class ParallelPane(Vertical):
    """The processes' stacks as one tree; the app feeds it states (``update_state``) while it shows."""

    DEFAULT_CSS = """
    ParallelPane { height: 1fr; background: $surface; }
    ParallelPane > #parallel-summary { height: 1; padding: 0 1; color: $text-muted; }
    ParallelPane > #parallel-detail { height: 1; padding: 0 1; color: $text-muted; }
    """

    BINDINGS = [
        Binding("right,x", "open_row", "Open", show=False, id="parallel.open"),
        Binding("left", "close_row", "Close", show=False, id="parallel.close"),
        Binding("G", "group_row", "Run group from this frame's processes", show=False, id="parallel.group"),
    ]

    class NodeChosen(Message):
        """Enter on a row: its processes (``iids``), and of the first the thread in it (gdb's id or its LWP)."""

        def __init__(self, iids: tuple[str, ...], thread: tuple[str | None, int | None] | None,
                     frame: tuple | None = None) -> None:
            super().__init__()
            self.iids = iids
            self.thread = thread
            self.frame = frame  # the row's frame, as the dump keys it: ("py", name, file, line)

    class GroupAsked(Message):
        def __init__(self, iids: tuple[str, ...]) -> None:
            super().__init__()
            self.iids = iids

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._folds_open: frozenset = frozenset()
        self._branches_shut: frozenset = frozenset()
        self._shown_state: DebuggerState | None = None
        self._rows_key: tuple | None = None
        self._shown_tree: P.ParallelTree | None = None
        self._made_from: tuple | None = None
        self.painted_rows: list[P.Row] = []  # what the list shows (tests and the app read it)
        self._settling = False
        self.built_at = 0.0  # time.monotonic() of the last tree built (benchmarks read it)

    def compose(self):
        yield Static(id="parallel-summary")
        yield RowList(id="parallel-list")
        yield Static(id="parallel-detail")

    @staticmethod
    def stop_key(state: DebuggerState) -> tuple:
        """What the tree is made of: each process's stop and stack (a new stack of a process read, a
        process that runs or stops, changes it)."""
        return tuple((inf.id, inf.generation, inf.process, id(inf.python.stack), inf.python.stack_read, len(inf.threads))
                     for inf in state.inferiors)

    def update_state(self, state: DebuggerState) -> None:
        """Build the tree of ``state`` and show it: once every stopped process's stack of the stop is in (they
        come in one by one, each a new state), or ``SETTLE`` seconds after the first of them, of those there."""
        key = self.stop_key(state)
        self._shown_state = state
        if key != self._made_from:
            if not stacks_read(state) and self._made_from is not None:
                if not self._settling:
                    self._settling = True  # (the rest of this stop's stacks are on their way)
                    self.set_timer(SETTLE, self._settled)
                return
            self._build(state, key)
        self._repaint()

    def _settled(self) -> None:
        self._settling = False
        state = self._shown_state
        if state is not None and self.stop_key(state) != self._made_from:
            self._build(state, self.stop_key(state))
            self._repaint()

    def _build(self, state: DebuggerState, key: tuple) -> None:
        if self._made_from is not None and {k[:2] for k in key} != {k[:2] for k in self._made_from}:
            self._folds_open = self._branches_shut = frozenset()  # (another stop: the folds as they come)
        self._made_from = key
        self._shown_tree = _tree().tree(state)
        self.built_at = time.monotonic()

    def _repaint(self) -> None:
        state, t = self._shown_state, self._shown_tree
        if state is None or t is None:
            return
        rows = _tree().rows(t, state, self._folds_open, self._branches_shut)
        running = sum(1 for inf in state.inferiors if inf.process is ProcessState.RUNNING)
        if not t.roots:
            text = (f"{running} process{'es' if running != 1 else ''} running" if running
                    else "no Python stacks at this stop (yet)")
            self.query_one("#parallel-summary", Static).update(Content(text))
        else:
            self.query_one("#parallel-summary", Static).update(Content(visible(_tree().summary(t))))
        lst = self.query_one(RowList)
        width = max(20, (lst.size.width or self.size.width or 80) - 1)
        key = (_tree().keys_of(rows), width)
        if key != self._rows_key:
            self._rows_key = key
            hl = lst.highlighted
            lst.set_rows([(row_content(r, width), r) for r in rows], highlight=min(hl, len(rows) - 1) if hl is not None and rows else None)
        self.painted_rows = rows
        self._show_detail()

    def on_resize(self, _event) -> None:
        self._repaint()

    def _row(self) -> P.Row | None:
        lst = self.query_one(RowList)
        p = lst.payload(lst.highlighted)
        return p if isinstance(p, _tree().Row) else None

    def _show_detail(self) -> None:
        row = self._row()
        text = "" if row is None else row.detail + (f" — {row.label}" if row.label else "")
        self.query_one("#parallel-detail", Static).update(Content(visible(text)))

    def on_row_list_row_chosen(self, event: RowList.RowChosen) -> None:
        event.stop()
        row = event.payload
        if not isinstance(row, _tree().Row):
            return
        self._show_detail()
        if not event.activated:
            return
        if row.kind == "fold":
            self._folds_open = self._folds_open | {row.key}
            self._repaint()
        elif row.iids:
            frame = row.key[-1] if row.kind == "node" and row.key else None
            self.post_message(self.NodeChosen(row.iids, _tree().first_thread(row, row.iids[0]), frame))

    def action_open_row(self) -> None:
        row = self._row()
        if row is None:
            return
        if row.kind == "fold":
            self._folds_open = self._folds_open | {row.key}
        elif row.key in self._branches_shut:
            self._branches_shut = self._branches_shut - {row.key}
        self._repaint()

    def action_close_row(self) -> None:
        row = self._row()
        if row is not None and row.kind == "node":
            self._branches_shut = self._branches_shut | {row.key}
            self._repaint()

    def action_group_row(self) -> None:
        row = self._row()
        if row is not None and row.iids:
            self.post_message(self.GroupAsked(row.iids))

    def focus_list(self) -> None:
        self.query_one(RowList).focus()
