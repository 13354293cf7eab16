"""The command palette (ctrl+p): every action tuidbg has a key for, with its key beside it, and what
has no key: a breakpoint at a typed location, a theme, a keymap, a launch profile.

The commands are made from the bindings themselves (the app's, and each pane's, with the keys the
active keymap gives them), as the help (``ui.keyhelp``) is, so that a new action is in the palette
as soon as it has a binding id. A pane's action (``Show value`` of the Locals, ``Follow`` of the
Disassembly) shows its pane, then runs there, on what that pane's cursor is on.

Textual's own palette commands are left out: they are tuidbg's keys already (Keys, Maximize,
Screenshot), or would skip tuidbg's way (its Quit ends at once, without asking whether to detach;
its Theme lists Textual's themes, not tuidbg's).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, NamedTuple

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

# The pane each pane class belongs to (the app's action_pane names it), for its actions.
PANE_OF = {
    "SourceView": "source", "CppFramesPane": "cpp", "ThreadsPane": "threads", "BreakpointsPane": "breakpoints",
    "LocalsPane": "locals", "WatchPane": "watch", "CommandInput": "console", "ProgramInput": "output",
    "CudaPane": "cuda", "CudaRows": "cuda", "CudaInput": "cuda", "DisasmView": "source",
    "RegistersPane": "registers", "MemoryView": "memory", "TasksPane": "tasks", "ParallelPane": "parallel",
}
PANE_TITLE = {
    "SourceView": "Source", "CppFramesPane": "C++ frames", "ThreadsPane": "Threads", "BreakpointsPane": "Breakpoints",
    "LocalsPane": "Locals", "WatchPane": "Watch", "CommandInput": "Console", "ProgramInput": "Output",
    "CudaPane": "CUDA", "CudaRows": "CUDA", "CudaInput": "CUDA", "DisasmView": "Disassembly",
    "RegistersPane": "Registers", "MemoryView": "Memory", "TasksPane": "Tasks", "ParallelPane": "Parallel stacks",
}


class Command(NamedTuple):
    title: str
    keys: str  # as the footer shows them ("c, f5"), "" for none
    run: Callable[[], Any]
    help: str = ""  # a second line, "" for none
    where: str = ""  # the pane the action works in, "" for the app's own
    bid: str = ""  # the binding id ("" for a command without one)


def commands(app: Any) -> list[Command]:
    """Every command of the palette, now (the keymap and the profiles as they are when it opens)."""
    return binding_commands(app) + extra_commands(app)


def _keys(app: Any, bid: str, own: str) -> str:
    from tuidbg.ui.keyhelp import keys_shown

    return keys_shown(app, app.keymap_info.keys.get(bid) or own)


def binding_commands(app: Any) -> list[Command]:
    """One command per binding id of the debugger's screen: the app's, then each pane's."""
    from tuidbg.ui import bindings, keyclash

    out: list[Command] = []
    defaults = bindings.default_keys()
    for bid, action, desc, _show, _prio in bindings.GLOBAL:
        if bid == "app.command_palette":
            continue
        out.append(Command(desc, _keys(app, bid, defaults.get(bid, "")),
                           lambda a=action: app.call_later(app.run_action, a), bid=bid))
    seen = set(bindings.global_ids())
    for classes in keyclash.contexts().values():
        for cls in classes:
            for klass in cls.__mro__:
                for b in klass.__dict__.get("BINDINGS", []):
                    if not getattr(b, "id", None) or b.id in seen:
                        continue
                    seen.add(b.id)
                    name = cls.__name__
                    out.append(Command(b.description, _keys(app, b.id, b.key),
                                       lambda c=cls, a=b.action, n=name: run_in_pane(app, c, n, a),
                                       where=PANE_TITLE.get(name, name.replace("Pane", "")), bid=b.id))
    return out


def run_in_pane(app: Any, cls: type, name: str, action: str) -> None:
    """Show the pane of ``cls`` and run ``action`` on it, as its key would there."""
    pane = PANE_OF.get(name) or _pane_name(app, cls)
    if pane is not None:
        app.action_pane(pane)

    def run() -> None:
        widget = next((w for w in app.query(cls) if w.display), None)
        if widget is None or not widget.is_on_screen:
            what = PANE_TITLE.get(name, name)
            hint = " (a shows it)" if name == "DisasmView" else ""
            app.notify(f"the {what} pane is not shown{hint}", markup=False)
            return
        widget.focus()
        app.call_later(widget.run_action, action)

    app.call_after_refresh(run)


def _pane_name(app: Any, cls: type) -> str | None:
    """The pane (as the app's action_pane names it) of the tab that holds a widget of ``cls``."""
    from tuidbg.ui.app_source import PANES

    widget = next(iter(app.query(cls)), None)
    node = widget
    while node is not None:
        for name, (_wid, _group, tab) in PANES.items():
            if tab is not None and node.id == tab:
                return name
        node = node.parent
    return None


def extra_commands(app: Any) -> list[Command]:
    """What has no key: a breakpoint at a typed location, the themes, the keymaps, the launch profiles."""
    from tuidbg import config as tconfig
    from tuidbg.ui import profile_commands

    out = [Command("Breakpoint at a location…", "", lambda: ask_breakpoint(app),
                   "FILE:LINE, a function, *ADDRESS, … if COND; on a .py file a Python breakpoint")]
    for name in sorted(tconfig.theme_files()):
        now = " (now)" if name == app.theme else ""
        out.append(Command(f"Theme: {name}{now}", "", lambda n=name: app.use_theme(n)))
    for name in sorted(tconfig.keymap_files()):
        now = " (now)" if name == app.keymap_info.name else ""
        out.append(Command(f"Keymap: {name}{now}", "", lambda n=name: use_keymap(app, n)))
    for title, help_text, callback in profile_commands.commands(app):
        out.append(Command(title, "", callback, help_text))
    return out


def ask_breakpoint(app: Any) -> None:
    """Prompt for a location; the breakpoint is set as the console's ``break`` sets it (its answer there)."""
    from tuidbg.ui.panes.io import ConsolePane
    from tuidbg.ui.screens.modals import PromptScreen

    def done(text: str | None) -> None:
        if text and text.strip():
            app.query_one(ConsolePane).post_message(ConsolePane.CommandSubmitted(f"break {text.strip()}"))

    app.push_screen(PromptScreen("Breakpoint at", "", "file.c:42, my_function, train.py:17 if step > 3",
                                 "gdb's break: FILE:LINE, a function, *ADDRESS, then if COND; a .py file's "
                                 "line is a Python breakpoint. The console shows gdb's answer."), done)


def use_keymap(app: Any, name: str) -> None:
    from tuidbg import config as tconfig

    try:
        km = tconfig.load_keymap(name, app.settings.keys)
    except tconfig.UsageError as exc:
        app.notify(str(exc), severity="error", markup=False)
        return
    app.use_keymap(km)
    app.notify(f"keymap {km.name}", markup=False, timeout=3)


def prompt(cmd: Command, title: Content, width: int) -> Content:
    """The command's line: its title (matches highlighted), its pane, and its keys at the right."""
    left = title
    if cmd.where:
        left = Content.assemble(left, (f"  ({cmd.where})", "dim"))
    if not cmd.keys:
        return left
    gap = max(2, width - left.cell_length - len(cmd.keys))
    return Content.assemble(left, " " * gap, (cmd.keys, "bold $accent"))


class DebuggerCommands(Provider):
    """The palette's commands (see the module's docstring)."""

    def _width(self) -> int:
        return max(20, self.app.size.width - 6)  # (the option's padding, the list's scrollbar)

    def _all(self) -> Iterable[Command]:
        return commands(self.app)

    async def discover(self) -> Hits:
        width = self._width()
        for cmd in self._all():
            yield DiscoveryHit(prompt(cmd, Content(cmd.title), width), cmd.run, text=cmd.title,
                               help=Content(cmd.help) if cmd.help else None)  # (Content: not read as markup)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        width = self._width()
        for cmd in self._all():
            target = f"{cmd.title} {cmd.where} {cmd.bid}".strip()  # ("bp.toggle" or "locals" find it too)
            score = matcher.match(target)
            if score > 0:
                yield Hit(score, prompt(cmd, _highlight(matcher, query, cmd.title), width), cmd.run, text=cmd.title,
                          help=Content(cmd.help) if cmd.help else None)


def _highlight(matcher: Any, query: str, title: str) -> Content:
    content = Content(title)
    score, offsets = matcher.fuzzy_search.match(query, title)
    if score:
        for i in offsets:
            if i < len(title) and not title[i].isspace():
                content = content.stylize(matcher.match_style, i, i + 1)
    return content


def provider() -> type[DebuggerCommands]:
    """For ``App.COMMANDS`` (a callable: this module is imported when the palette first opens)."""
    return DebuggerCommands
