"""Every user-facing action has a Binding with a dotted id; keymaps remap them by id.

The keys written here are the ``default`` keymap (gdb-like single keys where the
focus allows, F-keys too). ``keymaps/*.toml`` replace keys by id through
``App.set_keymap``.
"""

from __future__ import annotations

from textual.binding import Binding

# (id, default keys, action, description, show in footer, priority)
GLOBAL = [
    ("exec.continue", "c,f5", "exec('cont')", "Continue", True, False),
    ("exec.next", "n,f10", "exec('next')", "Next", True, False),
    ("exec.step", "s,f11", "exec('step')", "Step", True, False),
    ("exec.finish", "f,shift+f11", "exec('finish')", "Finish", True, False),
    ("exec.until", "u", "exec('until')", "Until", False, False),
    ("exec.run_to_cursor", "t,ctrl+f10", "run_to_cursor", "Run to cursor", False, False),
    ("exec.step_into_native", "S", "step_into_native", "Step into native", False, False),
    ("exec.interrupt", "ctrl+c,f6", "interrupt", "Interrupt", False, True),
    ("exec.restart", "R,ctrl+shift+f5", "restart_program", "Restart", False, False),
    ("frame.up", "less_than_sign,ctrl+up", "frame(1)", "Frame up (caller)", False, False),
    ("frame.down", "greater_than_sign,ctrl+down", "frame(-1)", "Frame down (callee)", False, False),
    ("bp.toggle", "b,f9", "toggle_breakpoint", "Breakpoint", True, False),
    ("bp.condition", "B", "breakpoint_condition", "Breakpoint condition", False, False),
    ("view.merged", "m", "toggle_merged", "Merged stack", False, False),
    ("view.maximize", "z", "toggle_maximize", "Maximize pane", False, False),
    ("file.open", "ctrl+o,o", "open_file", "Open file", False, False),
    ("source.find", "slash", "find", "Find in source", False, False),
    ("source.goto_line", "ctrl+g", "goto_line", "Go to line", False, False),
    ("watch.add", "w", "add_watch", "Add watch", False, False),
    ("pane.source", "1", "pane('source')", "Source pane", False, False),
    ("pane.python", "2", "pane('python')", "Python frames", False, False),
    ("pane.cpp", "3", "pane('cpp')", "C++ frames", False, False),
    ("pane.threads", "4", "pane('threads')", "Threads", False, False),
    ("pane.locals", "5", "pane('locals')", "Locals", False, False),
    ("pane.watch", "6", "pane('watch')", "Watch", False, False),
    ("pane.breakpoints", "7", "pane('breakpoints')", "Breakpoints", False, False),
    ("pane.console", "8,colon", "pane('console')", "Console", False, False),
    ("pane.output", "9", "pane('output')", "Program output", False, False),
    ("pane.cuda", "0", "pane('cuda')", "CUDA", False, False),
    ("focus.next", "tab", "app.focus_next", "Next pane", False, False),
    ("focus.previous", "shift+tab", "app.focus_previous", "Previous pane", False, False),
    ("app.help", "question_mark,f1", "help", "Keys", True, False),
    ("app.command_palette", "ctrl+p", "command_palette", "Commands", False, False),
    ("app.screenshot", "f12", "screenshot", "Save screenshot", False, False),
    ("app.quit", "q,ctrl+q", "quit_debugger", "Quit", True, False),
]


def global_bindings() -> list[Binding]:
    return [
        Binding(keys, action, desc, show=show, priority=prio, id=bid)
        for bid, keys, action, desc, show, prio in GLOBAL
    ]


def global_ids() -> set[str]:
    return {g[0] for g in GLOBAL}


def default_keys() -> dict[str, str]:
    return {g[0]: g[1] for g in GLOBAL}
