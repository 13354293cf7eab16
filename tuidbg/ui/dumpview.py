"""``tuidbg view FILE...``: the report of ``tuidbg dump --json`` (one node's, or several merged)
in the terminal, read-only.

Four panes, top to bottom (they fit 80x24): the distinct stacks, grouped as the text report
groups them (``tuidbg.dumpreport.group``: fewest processes first, the odd one out leading; then
the asyncio tasks' stacks, ``tuidbg.dumptasks.group``, "N tasks" in the threads column); the
frames of the stack under the cursor, innermost first; the source around the frame under the
cursor (when its file is on this machine); the processes and threads that share the stack.
Tab and shift+tab go between panes, the arrows move, ? lists the keys, q quits. Nothing is attached to: the
processes are those of the report, as they were when it was made.
"""

from __future__ import annotations

import functools

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Footer, Static

from tuidbg import dumpreport as R
from tuidbg import dumptasks
from tuidbg.engine import files
from tuidbg.ui.text import visible

SOURCE_LINES = 5


class ViewApp(App[int]):
    TITLE = "tuidbg view"
    CSS = """
    #summary { height: 1; padding: 0 1; background: $panel; }
    .title { height: 1; padding: 0 1; color: $text-muted; }
    #groups { height: 1fr; min-height: 4; }
    #frames { height: 1fr; min-height: 4; }
    #source { height: 5; padding: 0 1; }
    #procs { height: auto; max-height: 5; min-height: 2; }
    """
    BINDINGS = [
        Binding("q,ctrl+q,escape", "quit_view", "Quit", id="view.quit"),
        Binding("tab", "focus_next", "Next pane", show=False, id="view.next"),
        Binding("shift+tab", "focus_previous", "Previous pane", show=False, id="view.previous"),
        Binding("question_mark,f1", "help", "Keys", id="view.help"),
    ]

    def __init__(self, doc: dict, names: list[str]) -> None:
        super().__init__()
        self.report = doc
        self.files = names
        self.stack_groups = R.group(doc["processes"]) + dumptasks.group(doc["processes"])
        procs = doc["processes"]
        self.many_hosts = len({p.get("host") for p in procs}) > 1
        self.shown_group: R.Group | None = None
        self.shown_frame: dict | None = None
        self._sources: dict[str, list[str] | str] = {}  # path -> its lines, or why they cannot be read

    def compose(self) -> ComposeResult:
        yield Static(id="summary")
        with Vertical():
            yield Static("Stacks (fewest processes first)", classes="title")
            yield DataTable(id="groups", cursor_type="row")
            yield Static("Frames (innermost first)", classes="title", id="frames-title")
            yield DataTable(id="frames", cursor_type="row")
            yield Static(id="source")
            yield Static("Processes with this stack", classes="title")
            yield DataTable(id="procs", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        procs = self.report["processes"]
        threads = sum(len(p.get("threads", [])) for p in procs)
        hosts = len({p.get("host") for p in procs})
        errors = len(self.report.get("errors", []))
        tasks = sum(len(p.get("tasks") or ()) for p in procs)
        summary = (f"{R.plural(len(procs), 'process')}, {R.plural(threads, 'thread')}" + (f" on {hosts} hosts" if hosts > 1 else "")
                   + (f", {R.plural(tasks, 'asyncio task')}" if tasks else "")
                   + f", {R.plural(len(self.stack_groups), 'distinct stack')}" + (f", {errors} not read" if errors else "")
                   + f" — {', '.join(self.files)}")
        self.query_one("#summary", Static).update(Text(visible(summary), no_wrap=True, overflow="ellipsis"))
        g = self.query_one("#groups", DataTable)
        g.add_columns("procs", "threads", "who", "innermost frame")
        for i, grp in enumerate(self.stack_groups):
            members = f"{len(grp.members)} task{'s' if len(grp.members) > 1 else ''}" if grp.tasks else str(len(grp.members))
            g.add_row(Text(str(len(grp.processes))), Text(members),
                      Text(visible(self._who(grp)), no_wrap=True, overflow="ellipsis"),
                      Text(visible(_frame_text(grp.frames[0]) if grp.frames else "(no frames)"), no_wrap=True,
                           overflow="ellipsis"),
                      key=str(i))
        self.query_one("#frames", DataTable).add_columns("#", "frame", "where")
        self.query_one("#procs", DataTable).add_columns("process", "role", "threads", "command")
        g.focus()
        if self.stack_groups:
            self.show_group(0)

    def _proc_name(self, p: dict) -> str:
        return f"{p.get('host')}:{p['pid']}" if self.many_hosts else str(p["pid"])

    def _who(self, grp: R.Group) -> str:
        return " ".join(self._proc_name(p) + (f"({R.rank_of(p)})" if R.rank_of(p) else "") for p in grp.processes)

    # -- following the cursor ---------------------------------------------------------------------

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is None or event.row_key.value is None:
            return
        if event.data_table.id == "groups":
            self.show_group(int(event.row_key.value))
        elif event.data_table.id == "frames" and self.shown_group is not None:
            self.show_frame(self.shown_group.frames[int(event.row_key.value)])

    def show_group(self, index: int) -> None:
        self.shown_group = grp = self.stack_groups[index]
        f = self.query_one("#frames", DataTable)
        f.clear()
        for i, fr in enumerate(grp.frames):
            kind = "py" if fr.get("kind") == "python" else "c"
            f.add_row(Text(f"{i} {kind}"), Text(visible(_function(fr)), no_wrap=True, overflow="ellipsis"),
                      Text(visible(_where(fr)), no_wrap=True, overflow="ellipsis"), key=str(i))
        p = self.query_one("#procs", DataTable)
        p.clear()
        counts: dict[int, list[dict]] = {}
        for proc, t in grp.members:
            counts.setdefault(id(proc), []).append(t)
        for proc in grp.processes:
            ts = counts[id(proc)]
            if grp.tasks:  # (asyncio tasks: their names)
                tids = ", ".join(f"'{t.get('name')}'" for t in ts[:4])
            else:
                tids = ", ".join(("main " if t.get("main") else "") + str(t.get("tid")) for t in ts[:4])
            tids += f" (+{len(ts) - 4})" if len(ts) > 4 else ""
            why = proc.get("error") or proc.get("note") or ""  # (no Python stacks read: why)
            p.add_row(Text(self._proc_name(proc)), Text(visible(R.role(proc) or why), no_wrap=True, overflow="ellipsis"),
                      Text(tids),
                      Text(visible(" ".join(proc.get("cmdline") or [])), no_wrap=True, overflow="ellipsis"))
        what = "asyncio task" if grp.tasks else "thread"
        aw = dumptasks.awaiting_text(grp.members[0][1].get("awaiting")) if grp.tasks else ""
        self.query_one("#frames-title", Static).update(
            f"Frames (innermost first) of {len(grp.members)} {what}{'s' if len(grp.members) > 1 else ''} "
            f"in {len(grp.processes)} process{'es' if len(grp.processes) > 1 else ''}" + (f", {aw}" if aw else ""))
        self.show_frame(grp.frames[0] if grp.frames else None)

    def show_frame(self, frame: dict | None) -> None:
        """The source around the frame: read off the UI's thread (``tuidbg.engine.files``: a FIFO,
        /dev/zero or a huge file named by the dump is one line, and q still quits at once)."""
        self.shown_frame = frame
        box = self.query_one("#source", Static)
        path = frame.get("file") if frame is not None else None
        if frame is not None and path and isinstance(frame.get("line"), int) and path not in self._sources:
            box.update(source_text(frame, None))  # (reading it)
            self.run_worker(functools.partial(self._read_source, frame, path), group="source", exclusive=True,
                            exit_on_error=False)
        else:
            box.update(source_text(frame, self._sources.get(path) if path else None))

    async def _read_source(self, frame: dict, path: str) -> None:
        try:
            got: list[str] | str = (await files.read_text_async(path, files.SOURCE_CAP)).splitlines()
        except files.Unreadable as exc:
            got = exc.why
        if len(self._sources) >= 64:
            self._sources.clear()
        self._sources[path] = got
        if self.shown_frame is frame:
            self.query_one("#source", Static).update(source_text(frame, got))

    def action_quit_view(self) -> None:
        self.exit(0)

    def action_help(self) -> None:
        from tuidbg.ui import keyhelp

        keyhelp.show(self, "tuidbg view", {})  # (it takes no keymap: the keys are the default ones)


def _function(f: dict) -> str:
    return str(f.get("qualname") or f.get("function") or "??")


def _where(f: dict) -> str:
    if f.get("file") and f.get("line") is not None:
        return f"{f['file']}:{f['line']}"
    return str(f.get("file") or f.get("library") or "")


def _frame_text(f: dict) -> str:
    return f"{_function(f)} ({_where(f)})"


def source_text(frame: dict | None, got: list[str] | str | None, context: int = SOURCE_LINES // 2) -> Text:
    """The lines around the frame's line, that line marked; or why there are none (``got``: the file's
    lines, or why it could not be read)."""
    if frame is None:
        return Text("(no frames)", style="dim")
    path, line = frame.get("file"), frame.get("line")
    if not path or not isinstance(line, int) or line < 1:
        return Text("(no source line for this frame)", style="dim")
    if got is None:
        return Text(visible(f"reading {path}…"), style="dim")
    if isinstance(got, str):
        return Text(visible(f"{path}: {got} (the source is read on this machine)"), style="dim")
    lines = got
    if line > len(lines):
        return Text(visible(f"{path} has {len(lines)} lines, not {line}: changed since the dump?"), style="dim")
    out = Text(no_wrap=True, overflow="ellipsis")
    lo, hi = max(1, line - context), min(len(lines), line + context)
    for n in range(lo, hi + 1):
        mark = ">" if n == line else " "
        out.append(f"{mark}{n:>5} {visible(lines[n - 1])}" + ("\n" if n < hi else ""),
                   style="reverse" if n == line else "")
    return out


def view(doc: dict, names: list[str]) -> int:
    return ViewApp(doc, names).run() or 0
