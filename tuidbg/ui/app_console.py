"""The console: gdb's and tuidbg's commands, completion, and the program's input.

A part of ``TuidbgApp`` (``tuidbg.ui.app``): a mixin over the app's panes and session."""

from __future__ import annotations

import logging
import os

from tuidbg import config as tconfig
from tuidbg.engine import mi, pyagent
from tuidbg.engine.errors import EngineError, MIError
from tuidbg.ui.bindings import keymap_overrides
from tuidbg.ui.panes.io import CommandInput, ConsolePane, OutputPane
from tuidbg.ui.panes.variables import WatchPane
from tuidbg.ui.text import visible

log = logging.getLogger("tuidbg.ui")


class ConsolePart:
    """Part of ``TuidbgApp`` (see the module's docstring)."""

    # -- console ----------------------------------------------------------------------------------------

    def on_console_pane_command_submitted(self, message: ConsolePane.CommandSubmitted) -> None:
        cmd = message.command
        log_w = self.query_one(ConsolePane).log_widget
        log_w.write_lines([f"(gdb) {cmd}"], style="echo")
        if cmd.startswith(":"):
            self._tuidbg_command(cmd[1:].strip())
            return

        async def run() -> None:
            try:
                if await self._crossrank_console(cmd):  # pyall, printall, group (app_parallel)
                    return
                ag = pyagent.controller(self.session)
                if ag is not None:
                    ref = self._python_frame_ref(self.state)
                    stop = ag.at_agent_stop()
                    word = cmd.split()[0] if cmd.split() else ""
                    if (stop is not None and ref is None and word in ("pyprint", "pyeval", "pylocals")
                            and self.state.selected_thread != stop.thread_id):
                        log_w.write_lines([f"(in thread {stop.thread_id}, where the agent stopped: Python runs only there)"],
                                          style="note")
                    if word in ("c", "cont", "continue") and len(cmd.split()) == 1 and self.state.is_stopped:
                        # gdb's continue, through the agent: it answers its own stop, and a Python
                        # breakpoint set at a native stop is in place before the program runs on
                        await ag.resume()
                        return
                    text = await ag.handle_console(cmd, ref.frame if ref is not None else 0)
                    if text is not None:
                        log_w.write_lines(text.splitlines() or [""])
                        if word in ("pyprint", "pyeval") and (stop is not None or ref is not None):
                            self._python_values_may_have_changed()
                        return
                await self.session.console(cmd, timeout=None if cmd.split()[0] in ("run", "start") else 120)
            except MIError as exc:
                self._flush_buffers()
                said_once(log_w, exc.message.splitlines() or [""])
            except EngineError as exc:
                self._flush_buffers()
                log_w.write_lines([str(exc)], style="error")

        self.run_worker(run(), group="console", exit_on_error=False, name="console")

    def _tuidbg_command(self, text: str) -> None:
        log_w = self.query_one(ConsolePane).log_widget
        word, _, arg = text.partition(" ")
        arg = arg.strip()
        if word in ("e", "edit", "open"):
            if not arg:
                self.action_open_file()
            else:
                self._opened(arg)
        elif word in ("w", "watch"):
            if arg:
                self.query_one(WatchPane).add_expression(arg)
                self.action_pane("watch")
        elif word in ("q", "quit"):
            self.action_quit_debugger()
        elif word == "theme":
            if not arg:
                log_w.write_lines(["themes: " + ", ".join(sorted(self.available_themes))], style="note")
            else:
                self.use_theme(arg)
        elif word == "keymap":
            try:
                km = tconfig.load_keymap(arg or None, self.settings.keys)
            except tconfig.UsageError as exc:
                log_w.write_lines([str(exc)], style="error")
                return
            self.use_keymap(km)
            log_w.write_lines([f"keymap {km.name}"], style="note")
        elif word == "log":
            kept = list(self.session.internal_output)
            n = int(arg) if arg.isdigit() else 100
            log_w.write_lines(kept[-n:] or ["(gdb has said nothing for tuidbg's own commands yet)"], style="log")
        elif word in ("help", "h", ""):
            log_w.write_lines(
                [
                    ":e FILE[:LINE]   open a file in the source pane (no FILE: pick one)",
                    ":w EXPR          add a watch expression",
                    ":theme [NAME]    list themes or switch to one",
                    ":keymap NAME     switch keymap (default, vscode, vim or a .toml file)",
                    ":log [N]         the last N lines gdb wrote for tuidbg's own commands and stops",
                    ":q               quit (asks whether to detach or kill)",
                    "Anything else is a gdb command; an empty line repeats the last one.",
                ],
                style="note",
            )
        else:
            log_w.write_lines([f"unknown tuidbg command :{word} (:help lists them)"], style="error")

    def use_theme(self, name: str) -> None:
        """A theme by name (tuidbg's, the user's, or a .toml file); one that cannot be used says why."""
        self._apply_theme(name)

    def use_keymap(self, km: tconfig.Keymap) -> None:
        """Take a keymap: its keys in force, and a key it gives two actions at once named (once, here;
        ``ui.keyclash``)."""
        from tuidbg.ui import keyclash

        self.keymap_info = km
        self.set_keymap(keymap_overrides(km.keys))
        found = keyclash.clashes(km.keys)
        if found:
            from textual.binding import Binding

            text = keyclash.describe(found, keyclash.descriptions(), km.name,
                                     lambda key: self.get_key_display(Binding(key, "")))
            self.notify(text, severity="warning", markup=False, timeout=15)

    def on_command_input_complete_requested(self, message: CommandInput.CompleteRequested) -> None:
        text = message.text

        async def complete() -> None:
            try:
                matches = await self.session.complete(text)
            except EngineError:
                return
            inp = self.query_one(CommandInput)
            if not matches:
                return
            if len(matches) == 1:
                inp.value = matches[0] + " "
            else:
                prefix = os.path.commonprefix(matches)
                if len(prefix) > len(text):
                    inp.value = prefix
                self.query_one(ConsolePane).log_widget.write_lines(["  ".join(matches[:200])], style="log")
            inp.cursor_position = len(inp.value)

        self.run_worker(complete, group="complete", exclusive=True, exit_on_error=False)

    def on_output_pane_input_submitted(self, message: OutputPane.InputSubmitted) -> None:
        if not self.state.has_process:
            self.notify("the program is not running", markup=False)
            return
        self.session.write_program_input(message.data)


def said_once(log_w, lines: list[str]) -> None:
    """gdb's error for a console command: its log stream printed it already just before (as a CLI
    error): those lines are shown as the error, not written again."""
    tail = log_w.tail(len(lines))
    if [t for t, _ in tail] == [visible(x) for x in lines] and all(st == "log" for _, st in tail):
        log_w.restyle_tail(len(lines), "error")
    else:
        log_w.write_lines(lines, style="error")


def group_console(recs: list[mi.MIRecord]) -> list[tuple[str, list[str]]]:
    """Console records as (style, lines), merging consecutive records of one style."""
    out: list[tuple[str, list[str]]] = []
    buf = ""
    style = ""

    def flush() -> None:
        nonlocal buf
        if buf:
            lines = buf.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            out.append((style, lines))
            buf = ""

    for r in recs:
        s = {mi.CONSOLE: "", mi.TARGET: "", mi.LOG: "log", mi.TEXT: "note"}.get(r.kind, "")
        text = r.text if r.kind != mi.TEXT else (r.text + "\n")
        if s != style:
            flush()
            style = s
        buf += text
    flush()
    return out
