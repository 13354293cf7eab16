"""Who hears a session: the listeners of its states, of the program's output and of gdb's console.

Each is a plain callable, so the engine knows nothing of the UI. What comes before anyone listens is
kept for the first who does (a ``Channel``): gdb's console from its start (its version, the -ex
commands' answers), the program's output and the Python agent's notes, since ``tuidbg run`` starts
the program before the screen is up. A listener of the engine's own (``replay=False``) does not
take that backlog.

The console hears what the user did and what gdb answered, not tuidbg's own mechanics. gdb's output of
tuidbg's commands (quiet ones) never reaches it, and neither does gdb's account of a stop of tuidbg's
own (the agent's stop function, an interrupt of an agent request: ``Thread 2 "tuidbg-agent" received
signal SIGINT``, ``0x00007ffff7fb7001 in ?? ()``). That account comes before the stop's record, owned by
no command: gdb's console lines that no command owns wait for the next record that is not stream
output (at most ``HOLD_UNOWNED`` seconds), and go to the console, or, when that record is a stop of
tuidbg's own, to the log (``internal_output``, and the logger at debug level).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import Callable, Generic, TypeVar

from tuidbg.engine import mi
from tuidbg.engine.state import DebuggerState, StopSeen

log = logging.getLogger("tuidbg.engine")

T = TypeVar("T")

OUTPUT_BACKLOG = 8 << 20  # the program's output kept for a screen not up yet, in bytes (more than its pane keeps)
CONSOLE_BACKLOG = 10000  # gdb's console records kept likewise
INTERNAL_KEPT = 2000  # lines of gdb's output for tuidbg's own commands and stops kept (internal_output)
HOLD_UNOWNED = 0.2  # seconds a console line no command owns waits to learn whether a stop of tuidbg's follows


def tuidbgs_own_stop(state: DebuggerState) -> bool:
    """Whether a stop (the state its record made, the stop hooks run) is tuidbg's own: the agent's stop
    function (a Python breakpoint or step: the status line says which), a stop of an agent request, the
    temporary breakpoint of "step into native", a breakpoint tuidbg set for itself."""
    py = state.python
    if py.transient or py.stop_pending or py.native_step:
        return True
    stop = state.stop
    if stop is None or not stop.bkptno:
        return False
    bp = state.breakpoint(stop.bkptno.split(".")[0])
    return bp is not None and bp.internal


class Channel(Generic[T]):
    """Items handed to every listener; until a listener with ``replay`` comes, the last of them are kept
    (at most ``keep`` in all, each counting ``size(item)``) and replayed to it."""

    def __init__(self, what: str, keep: int = 0, size: Callable[[T], int] = lambda _: 1) -> None:
        self._what = what
        self._listeners: list[Callable[[T], None]] = []
        self._keep = keep
        self._size = size
        self._backlog: collections.deque[T] | None = collections.deque() if keep else None
        self._kept = 0

    @property
    def listened(self) -> bool:
        return bool(self._listeners)

    def listen(self, cb: Callable[[T], None], replay: bool = True) -> None:
        self._listeners.append(cb)
        if replay and self._backlog is not None:
            backlog, self._backlog = self._backlog, None
            for item in backlog:
                self._call(cb, item)

    def emit(self, item: T) -> None:
        if self._backlog is not None:
            self._backlog.append(item)
            self._kept += self._size(item)
            while self._kept > self._keep and len(self._backlog) > 1:
                self._kept -= self._size(self._backlog.popleft())
        for cb in list(self._listeners):
            self._call(cb, item)

    def _call(self, cb: Callable[[T], None], item: T) -> None:
        try:
            cb(item)
        except Exception:
            log.exception("%s listener failed", self._what)


class Listeners:
    """DebugSession's listeners (a mixin: the session holds ``_state``)."""

    _state: DebuggerState

    def _init_listeners(self) -> None:
        self._states: Channel[DebuggerState] = Channel("state")
        self._output: Channel[bytes] = Channel("output", OUTPUT_BACKLOG, len)
        self._console: Channel[mi.MIRecord] = Channel("console", CONSOLE_BACKLOG)
        self._stops_seen: Channel[StopSeen] = Channel("stop seen")
        self.internal_output: collections.deque[str] = collections.deque(maxlen=INTERNAL_KEPT)
        self._unowned: list[mi.MIRecord] = []  # gdb's console lines owned by no command, not yet told
        self._unowned_timer: asyncio.TimerHandle | None = None
        self._state_due: asyncio.TimerHandle | None = None  # the listeners get the state then (set_state_soon)

    def set_state(self, new: DebuggerState) -> None:
        if new is not self._state or self._state_due is not None:
            self._state = new
            if self._state_due is not None:
                self._state_due.cancel()
                self._state_due = None
            self._states.emit(new)

    def set_state_soon(self, new: DebuggerState, delay: float) -> None:
        """``new`` is the state now; the listeners get it within ``delay`` seconds (with what else comes by
        then), or with the next ``set_state``: for records that come in bursts, such as a thread's exit
        for each of a process's 500 threads as gdb detaches it, which are no reason to show a state each."""
        self._state = new
        if self._state_due is None:
            try:
                self._state_due = asyncio.get_running_loop().call_later(delay, self._emit_due)
            except RuntimeError:  # (no loop: a reducer test feeding records by hand)
                self._states.emit(new)

    def _emit_due(self) -> None:
        self._state_due = None
        self._states.emit(self._state)

    def on_state(self, cb: Callable[[DebuggerState], None]) -> None:
        self._states.listen(cb)

    def on_stop_seen(self, cb: Callable[[StopSeen], None]) -> None:
        """``cb`` gets each stop as gdb's record names it, just before the state built from it: a
        screen may show the stop's line that much sooner (``ui.app_source``)."""
        self._stops_seen.listen(cb)

    def on_program_output(self, cb: Callable[[bytes], None]) -> None:
        """``cb`` gets the program's output; the first listener also gets what came before it."""
        self._output.listen(cb)

    def on_console(self, cb: Callable[[mi.MIRecord], None], replay: bool = True) -> None:
        """``cb`` gets gdb's console records; the first one with ``replay`` (the screen) also gets those
        from before it. A listener of the engine's own (``replay=False``) gets them from now on."""
        self._console.listen(cb, replay)

    def note(self, text: str) -> None:
        """One line of tuidbg's own for the console (a note, told apart from gdb's output)."""
        self._emit_console(mi.MIRecord(mi.TEXT, payload=text))

    def _internal(self, rec: mi.MIRecord) -> None:
        """gdb's output for tuidbg's own command or stop: the log's, not the console's."""
        for line in rec.text.splitlines():
            if line.strip():
                self.internal_output.append(line)
                log.debug("gdb, for tuidbg: %s", line)

    def _hold_unowned(self, rec: mi.MIRecord) -> None:
        """A console line no command owns: gdb's account of a stop to come, or a note of its own."""
        self._unowned.append(rec)
        if self._unowned_timer is None:
            try:
                self._unowned_timer = asyncio.get_running_loop().call_later(HOLD_UNOWNED, self._told, False)
            except RuntimeError:  # no loop (a reducer test feeding records by hand)
                self._told(False)

    def _told(self, internal: bool) -> None:
        """The record after the held lines came (a stop of tuidbg's own: ``internal``), or the wait ran out."""
        if self._unowned_timer is not None:
            self._unowned_timer.cancel()
            self._unowned_timer = None
        held, self._unowned = self._unowned, []
        for rec in held:
            if internal:
                self._internal(rec)
            else:
                self._console.emit(rec)

    def _emit_output(self, data: bytes) -> None:
        self._output.emit(data)

    def _emit_console(self, rec: mi.MIRecord) -> None:
        self._console.emit(rec)
