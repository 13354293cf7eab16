"""Every user-facing action has a Binding with a dotted id; keymaps remap them by id.

The keys are not written here: ``keymaps/default.toml`` (what users read and
copy) names every binding id with its default key, and :func:`binding` takes a
binding's key from it. ``keymaps/*.toml`` then replace keys by id through
``App.set_keymap``; an id a keymap leaves out keeps its default key.

The panes' and dialogs' ``BINDINGS`` still spell their keys;
tests/ui/test_keymaps_themes.py holds them equal to the file's (building them
with :func:`binding` would write them once too).
"""

from __future__ import annotations

from textual.binding import Binding

from tuidbg import config as tconfig

# (id, action, description, show in footer, priority); the keys: keymaps/default.toml
GLOBAL = [
    ("exec.continue", "exec('cont')", "Continue", True, False),
    ("exec.next", "exec('next')", "Next", True, False),
    ("exec.step", "exec('step')", "Step", True, False),
    ("exec.finish", "exec('finish')", "Finish", True, False),
    ("exec.until", "exec('until')", "Until", False, False),
    ("exec.run_to_cursor", "run_to_cursor", "Run to cursor", False, False),
    ("exec.stepi", "exec('stepi')", "Step instruction", False, False),
    ("exec.nexti", "exec('nexti')", "Next instruction", False, False),
    ("exec.step_into_native", "step_into_native", "Step into native", False, False),
    ("exec.interrupt", "interrupt", "Interrupt", False, True),
    ("exec.restart", "restart_program", "Restart", False, False),
    ("exec.skip_throw", "skip_throw", "Skip this C++ throw site, continue", False, False),
    ("frame.up", "frame(1)", "Frame up (caller)", False, False),
    ("frame.down", "frame(-1)", "Frame down (callee)", False, False),
    ("bp.toggle", "toggle_breakpoint", "Breakpoint", True, False),
    ("bp.condition", "breakpoint_condition", "Breakpoint condition", False, False),
    ("view.merged", "toggle_merged", "Merged stack", False, False),
    ("view.maximize", "toggle_maximize", "Maximize pane", False, False),
    ("file.open", "open_file", "Open file", False, False),
    ("source.find", "find", "Find in source", False, False),
    ("source.goto_line", "goto_line", "Go to line", False, False),
    ("watch.add", "add_watch", "Add watch", False, False),
    ("pane.source", "pane('source')", "Source pane", False, False),
    ("pane.python", "pane('python')", "Python frames", False, False),
    ("pane.cpp", "pane('cpp')", "C++ frames", False, False),
    ("pane.threads", "pane('threads')", "Threads", False, False),
    ("pane.processes", "pane('processes')", "Processes", False, False),
    ("pane.tasks", "pane('tasks')", "Asyncio tasks", False, False),
    ("pane.parallel", "pane('parallel')", "Parallel stacks", False, False),
    ("pane.locals", "pane('locals')", "Locals", False, False),
    ("pane.watch", "pane('watch')", "Watch", False, False),
    ("pane.breakpoints", "pane('breakpoints')", "Breakpoints", False, False),
    ("pane.console", "pane('console')", "Console", False, False),
    ("pane.output", "pane('output')", "Program output", False, False),
    ("pane.cuda", "pane('cuda')", "CUDA", False, False),
    ("pane.disassembly", "toggle_disassembly", "Disassembly / source", False, False),
    ("pane.registers", "pane('registers')", "Registers", False, False),
    ("pane.memory", "pane('memory')", "Memory", False, False),
    ("focus.next", "app.focus_next", "Next pane", False, False),
    ("focus.previous", "app.focus_previous", "Previous pane", False, False),
    ("app.help", "help", "Keys", True, False),
    ("app.command_palette", "command_palette", "Commands", False, False),
    ("app.screenshot", "screenshot", "Save screenshot", False, False),
    ("app.redraw", "redraw", "Redraw the screen", False, False),
    ("app.quit", "quit_debugger", "Quit", True, False),
]


def binding(bid: str, action: str, description: str, *, show: bool = True, priority: bool = False) -> Binding:
    """A Binding whose key is the default keymap's for ``bid``."""
    keys = tconfig.shipped_default_keys().get(bid)
    if keys is None:
        raise tconfig.UsageError(f"keymaps/{tconfig.DEFAULT_KEYMAP}.toml has no key for {bid!r}: reinstall tuidbg")
    return Binding(keys, action, description, show=show, priority=priority, id=bid)


def keymap_overrides(keys: dict[str, str]) -> dict[str, str]:
    """What Textual's keymap needs of a keymap: the ids whose keys differ from the bindings' own.

    Textual applies its keymap to a copy of every binding of the focused widget's ancestors on every
    key press, twice (about 1.2 ms each with all 113 ids); the default keymap changes nothing, and
    then there is nothing to apply."""
    defaults = tconfig.shipped_default_keys()
    return {bid: key for bid, key in keys.items() if defaults.get(bid) != key}


def global_bindings() -> list[Binding]:
    return [binding(bid, action, desc, show=show, priority=prio) for bid, action, desc, show, prio in GLOBAL]


def global_ids() -> set[str]:
    return {g[0] for g in GLOBAL}


def default_keys() -> dict[str, str]:
    """The default keys of the global bindings, by id."""
    keys = tconfig.shipped_default_keys()
    return {bid: keys[bid] for bid in global_ids() if bid in keys}
