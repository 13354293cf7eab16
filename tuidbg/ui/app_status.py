"""The status line: what the program, gdb and tuidbg are doing, in one line.

A part of ``TuidbgApp`` (``tuidbg.ui.app``): a mixin over the app's panes and session."""

from __future__ import annotations

import logging
from typing import Any

from textual.content import Content
from textual.widgets import Static

from tuidbg.engine import pyagent, watchdog
from tuidbg.engine.python import view as pyview
from tuidbg.engine.state import DebuggerState, ProcessState
from tuidbg.ui.text import visible

log = logging.getLogger("tuidbg.ui")

class StatusLine(Static):
    state_class = ""


class StatusPart:
    """Part of ``TuidbgApp`` (see the module's docstring)."""

    # -- status line ------------------------------------------------------------------------------

    def _python_breakpoints_wait(self) -> str | None:
        """While the program runs with Python breakpoints set and the agent's load queued but not taken
        (every thread that could take it blocked in C): why they cannot fire yet (issue 30)."""
        ag = pyagent.controller(self.session)
        if ag is None or not ag.breakpoints:
            return None
        return pyview.breakpoint_waits_note(ag.info, True)

    def _update_status(self, state: DebuggerState) -> None:
        status = self.query_one(StatusLine)
        p = state.process
        cls = {
            ProcessState.RUNNING: "-running",
            ProcessState.STOPPED: "-stopped",
            ProcessState.EXITED: "-exited",
            ProcessState.DETACHED: "-exited",
            ProcessState.GDB_EXITED: "-dead",
        }.get(p, "")
        if cls != status.state_class:
            if status.state_class:
                status.remove_class(status.state_class)
            if cls:
                status.add_class(cls)
            status.state_class = cls
        parts: list[Any] = []
        if p is ProcessState.RUNNING:
            parts.append(("● running", "bold"))
            if state.activity:
                parts.append(f" — gdb: {visible(state.activity)}")
            waits = self._python_breakpoints_wait()
            if waits:  # (first: an 80-column line keeps it)
                parts.append((f"   Python breakpoints wait: {visible(waits)}", "bold"))
            parts.append("   ctrl+c interrupts")
        elif p is ProcessState.STOPPED:
            stop = state.stop
            why = stop.describe() if stop else "stopped"
            if stop is None or not stop.reason:
                # gdb gives no reason for the stop that attaching makes
                mode = self.session.config.mode
                if mode == "attach":
                    why = f"attached to process {state.pid}" if state.pid else "attached"
            astop = state.python.stop
            throw = state.cxx_throw
            if astop is not None:
                why = astop.describe()
                why += _from_cxx(astop, state.cxx_last_throw)
            elif throw is not None:
                key = (self.keymap_info.keys.get("exec.skip_throw") or "").split(",")[0]
                why = throw.describe() + (f"   ({key}: skip this throw site)" if key else "")
            elif state.python.native_step:
                why = "stepped into native code"  # (tuidbg's temporary breakpoint, not one of the user's)
            elif state.python.stop_pending:
                why = "Python stop (reading it)"  # (the agent's own trap or breakpoint, not the user's)
            elif stop is None and len(state.inferiors) > 1:
                why = "stopped with the other processes (all-stop)"
            note = self.stop_note
            if note is not None and note[0] == (state.selected_inferior, pyview.stop_generation(state)):
                # an action refused at this stop: its reason first (an 80-column line keeps it)
                parts.append((f"■ {visible(note[1])}", "bold"))
                if self._health.kind != watchdog.OK and self._health.describe():
                    parts.append((f"   ⚠ {self._health.describe()}", "bold"))
                status.update(Content.assemble(*parts), layout=False)
                return
            parts.append(("■ stopped: ", "bold"))
            parts.append((visible(why), "bold"))
            pyf = pyview.selected_frame(state, self.py_sel)
            fr = state.frames[0] if state.frames else (stop.frame if stop else None)
            task = pyview.task_here(state)
            inside = "  in"
            if task is not None:  # (first: an 80-column line keeps it)
                parts.append(f"  in task '{visible(task)}'")
                inside = ":"
            if pyf is not None:
                parts.append(f"{inside} {visible(pyf.name)} at {visible(pyf.file.rsplit('/', 1)[-1])}:{pyf.line} (Python)")
            elif fr is not None:
                where = fr.func or fr.addr
                if fr.file and fr.line is not None:
                    where += f" at {fr.file.rsplit('/', 1)[-1]}:{fr.line}"
                parts.append(f"  in {visible(where)}")
            rv = stop.payload.get("return-value") if stop else None
            if rv is not None:
                parts.append(f" → returned {visible(str(rv))[:80]}")
            if state.selected_thread:
                parts.append(f"   thread {state.selected_thread}")
                if state.selected_frame:
                    parts.append(f", frame {state.selected_frame}")
        elif p is ProcessState.EXITED:
            parts.append((f"program {state.exit_description or 'exited'}", "bold"))
            parts.extend(self._start_status(state))  # (its last line, when it exited at once: app_start)
            if self.session.config.mode == "run":
                parts.append("   R runs it again")
        elif p is ProcessState.DETACHED:
            parts.append(("detached", "bold"))
        elif p is ProcessState.GDB_EXITED:
            parts.append((f"gdb exited: {visible(state.gdb_exit or '')}", "bold"))
        else:
            failed = self._start_status_main(state)  # (the start's failure, app_start)
            parts.append(failed or ("starting…" if self.session.config.mode == "run" else "not started", "bold"))
            if state.activity and failed is None:
                parts.append(f" — gdb: {visible(state.activity)}")
        if p in (ProcessState.NOT_STARTED, ProcessState.RUNNING):
            parts.extend(self._start_status(state))  # (a -ex command that failed, until the first stop)
        if self._health.kind != watchdog.OK and self._health.describe():
            parts.append((f"   ⚠ {self._health.describe()}", "bold"))
        group = self._running_group_words(state)
        if group:  # (first: the line is cut at the right on a narrow screen)
            parts.insert(0, (f"[{visible(group)}] ", "bold reverse"))
        status.update(Content.assemble(*parts), layout=False)


def _from_cxx(astop: Any, throw: Any) -> str:
    """A Python exception that a C++ error turned into (the same message): where it was thrown."""
    exc = getattr(astop, "exception", None)
    if exc is None or throw is None or not exc.message or not throw.message:
        return ""
    if exc.message.splitlines()[0].strip() != throw.message.splitlines()[0].strip():
        return ""
    where = throw.site.split("(", 1)[0] if throw.site else "C++"
    return f"   (thrown as {throw.type_name} in {where})"
