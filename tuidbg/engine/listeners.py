"""Who hears a session: the listeners of its states, of the program's output and of gdb's console.

Each is a plain callable, so the engine knows nothing of the UI. What comes before anyone listens is
kept for the first who does: gdb's console from its start (its version, the -ex commands' answers),
and the program's output, since ``tuidbg run`` starts the program before the screen is up. A
listener of the engine's own (``on_console(cb, replay=False)``) does not take that backlog.
"""

from __future__ import annotations

import logging
from typing import Callable

from tuidbg.engine import mi
from tuidbg.engine.state import DebuggerState

log = logging.getLogger("tuidbg.engine")

OUTPUT_BACKLOG = 8 << 20  # the program's output kept for a screen not up yet (more than its pane keeps)
CONSOLE_BACKLOG = 10000  # gdb's console records kept likewise

StateListener = Callable[[DebuggerState], None]
OutputListener = Callable[[bytes], None]
ConsoleListener = Callable[[mi.MIRecord], None]


class Listeners:
    """DebugSession's listeners (a mixin: the session holds ``_state``)."""

    _state: DebuggerState

    def _init_listeners(self) -> None:
        self._state_listeners: list[StateListener] = []
        self._output_listeners: list[OutputListener] = []
        self._console_listeners: list[ConsoleListener] = []
        self._console_backlog: list[mi.MIRecord] | None = []  # until a listener with replay comes
        self._output_backlog: bytearray | None = bytearray()  # its last OUTPUT_BACKLOG bytes

    def set_state(self, new: DebuggerState) -> None:
        if new is self._state:
            return
        self._state = new
        for cb in list(self._state_listeners):
            try:
                cb(new)
            except Exception:
                log.exception("state listener failed")

    def on_state(self, cb: StateListener) -> None:
        self._state_listeners.append(cb)

    def on_program_output(self, cb: OutputListener) -> None:
        """``cb`` gets the program's output; the first listener also gets what came before it."""
        self._output_listeners.append(cb)
        backlog, self._output_backlog = self._output_backlog, None
        if backlog:
            cb(bytes(backlog))

    def on_console(self, cb: ConsoleListener, replay: bool = True) -> None:
        """``cb`` gets gdb's console records; the first one with ``replay`` (the screen) also gets those
        from before it. A listener of the engine's own (``replay=False``) gets them from now on."""
        self._console_listeners.append(cb)
        if replay:
            backlog, self._console_backlog = self._console_backlog, None
            for rec in backlog or ():
                cb(rec)

    def _emit_output(self, data: bytes) -> None:
        if self._output_backlog is not None:
            self._output_backlog += data
            if len(self._output_backlog) > OUTPUT_BACKLOG:
                del self._output_backlog[: len(self._output_backlog) - OUTPUT_BACKLOG]
            return
        for cb in list(self._output_listeners):
            try:
                cb(data)
            except Exception:
                log.exception("output listener failed")

    def _emit_console(self, rec: mi.MIRecord) -> None:
        if self._console_backlog is not None and len(self._console_backlog) < CONSOLE_BACKLOG:
            self._console_backlog.append(rec)
        for cb in list(self._console_listeners):
            try:
                cb(rec)
            except Exception:
                log.exception("console listener failed")
