"""What went wrong as the program started, named where the user looks: the status line, the console and,
for ``tuidbg run``, one line on stderr at exit (``start_problems``, which the CLI prints).

- The program could not be started at all (gdb's ``-exec-run`` failed: an executable the kernel refuses, a
  loader that is missing): the status line says "could not start: ..." instead of "starting…", with the
  program's last words (the start's own error goes to the program's terminal, the Output pane).
- A -ex or -x command failed (the session's ``startup_errors``): the status line carries it until the
  program first stops.
- The program ran, but exited with a non-zero code within its first EARLY_EXIT seconds (``No module named
  pytest``, a SyntaxError in the script): its last lines of output are written to the console, and the
  status line names the last of them, so that nobody has to look for them in the Output tab (the console's
  tab is brought into view, on a narrow screen in place of the stacks).

A mixin of ``TuidbgApp`` (``ui/app.py``), like the app's other parts.
"""

from __future__ import annotations

import time
from typing import Any

from tuidbg.engine import mi
from tuidbg.engine.state import DebuggerState, ProcessState
from tuidbg.ui.panes.io import ConsolePane, OutputPane
from tuidbg.ui.text import visible

EARLY_EXIT = 5.0  # seconds after its start within which a non-zero exit is the program failing to start
LAST_LINES = 10  # of the program's output, written to the console then


class StartPart:
    """Part of ``TuidbgApp`` (see the module's docstring)."""

    _start_failure: str | None = None  # why the program could not be started
    _early_exit: str | None = None  # the status line's note on a program that exited at once
    _launched_at: float | None = None  # when the program last began to run
    _stopped_once = False  # the program stopped once since the start: the -ex errors have been seen

    def start_problems(self) -> list[str]:
        """What could not be done as asked at the start, one line each (for stderr at exit): the start's
        failure, the -ex/-x commands that failed."""
        out = [self._start_failure] if self._start_failure else []
        return out + list(self.session.startup_errors)

    def _start_failed(self, exc: BaseException) -> None:
        """The program could not be started (``_start_session``)."""
        self._flush_after_drain()
        raw = self._last_output(LAST_LINES)
        logs = [text for text in (_gdb_child_says(line) for line in raw) if text]
        last = [_gdb_child_says(line) or line for line in raw]
        reason = str(exc)
        said = [_cut(t) for t in (logs[-2:] or [t.strip() for t in last if t.strip()][-1:]) if t not in reason]
        if said:
            reason += f" ({'; '.join(said)})"
        self._start_failure = reason
        self._error(reason)
        self._console_lines(last)
        self._console_in_view()
        self._update_status(self.state)

    def _watch_start(self, prev: DebuggerState, state: DebuggerState) -> None:
        """At each state: when the program began to run; at its exit, whether that was at once, with a
        non-zero code."""
        if state.is_stopped:
            self._stopped_once = True
        if state.process is ProcessState.RUNNING and prev.process in (ProcessState.NOT_STARTED, ProcessState.EXITED):
            self._launched_at = time.monotonic()
            self._early_exit = None
        if state.process is not ProcessState.EXITED or prev.process is ProcessState.EXITED:
            return
        code = state.exit_code
        began = self._launched_at
        if not code or self.session.config.mode != "run" or (began is not None and time.monotonic() - began > EARLY_EXIT):
            return
        self._flush_after_drain()
        last = self._last_output(LAST_LINES)
        took = f" within {time.monotonic() - began:.1f} s" if began is not None else ""
        self.query_one(ConsolePane).log_widget.write_lines(
            [f"the program {state.exit_description or f'exited with code {code}'}{took}"
             + ("; its last lines:" if last else ", and printed nothing")], style="error")
        self._console_lines(last)
        self._console_in_view()
        tail = next((line.strip() for line in reversed(last) if line.strip()), "")
        self._early_exit = tail[:200] or None
        self._update_status(state)

    def _start_status(self, state: DebuggerState) -> list[Any]:
        """The status line's words on the start (after its state's): [] when there are none."""
        p = state.process
        if p is ProcessState.NOT_STARTED and self._start_failure:
            return []  # (the state's own words are replaced: _start_status_main)
        if p is ProcessState.EXITED and self._early_exit:
            return [f": {visible(self._early_exit)}"]
        errors = self.session.startup_errors
        if errors and not self._stopped_once and p in (ProcessState.NOT_STARTED, ProcessState.RUNNING):
            more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
            return [(f"   ⚠ {visible(errors[0])[:120]}{more}", "bold")]
        return []

    def _start_status_main(self, state: DebuggerState) -> Any:
        """The status line's main words when the start failed (instead of "starting…"), else None."""
        if state.process is ProcessState.NOT_STARTED and self._start_failure:
            return (f"could not start: {visible(self._start_failure)}", "bold")
        return None

    # -- the program's last words ------------------------------------------------------------------

    def _flush_after_drain(self) -> None:
        tty = self.session.tty
        if tty is not None:
            tty.drain()  # (what the program wrote just before it ended, not read yet)
        self._flush_buffers()

    def _last_output(self, n: int) -> list[str]:
        return self.query_one(OutputPane).program_lines()[-n:]

    def _console_in_view(self) -> None:
        """The console's tab shown (on a narrow screen its group too, instead of the stacks), not focused: the
        keys typed next are still the debugger's (R runs the program again)."""
        from textual.widgets import TabbedContent

        self.query_one("#io-group", TabbedContent).active = "tab-console"
        if self.narrow:
            self._show_group("io-group")

    def _console_lines(self, lines: list[str]) -> None:
        if lines:
            self.query_one(ConsolePane).log_widget.write_lines([f"  │ {visible(_cut(line, 400))}" for line in lines],
                                                               style="note")


def _gdb_child_says(line: str) -> str | None:
    """What gdb's forked child said on the program's terminal when it could not run the program: an MI log
    record there (``&"warning: Cannot exec ..."``), as text; None for any other line."""
    if not line.startswith('&"'):
        return None
    rec = mi.parse_line(line)
    if rec is None or rec.kind != mi.LOG:
        return None
    text = rec.text.strip()
    return text[len("warning: "):] if text.startswith("warning: ") else text


def _cut(text: str, most: int = 160) -> str:
    """At most ``most`` characters of a line, its end kept (where an error says what went wrong)."""
    return text if len(text) <= most else "…" + text[-most:]
