"""The stop at the program's entry (``tuidbg run``): what gdb -tui and cgdb show with ``start`` (``main``,
and wait), what pudb does for a Python script (its first line).

Whether it stops (``SessionConfig.stop_at_entry``): True stops, False does not, None (the command
line's default) stops when nothing else would: no breakpoint of gdb's (a catchpoint or a watchpoint
counts) or of the Python agent's, remembered ones included (``engine.remember`` puts those back
before the program starts), no exception stop (``--break-on-exception``, ``--break-on-failure``,
``pycatch``). Decided as the program starts (``before_run``), again at each restart: a program run
again once its breakpoints are gone stops at its entry again.

- A native program: a temporary breakpoint on ``main``, tuidbg's own (not listed with the user's);
  its stop reads "at entry (main)". A program without a ``main`` symbol (stripped) runs on, and the
  console says why.
- A Python program (the agent loaded): the agent stops at the first line of the ``__main__``
  module, the script's or the ``-m`` module's (``tuidbg.agent.core``: ``entry``), with the agent's
  reason ``entry``. Without the agent (``--no-agent``) there is no Python line to stop at; the
  command line refuses an explicit ``--stop-at-entry`` then.

Only in the program's own process: children kept by ``--children`` run on (the agent's entry goes
with the first connection of the program's process, never a fork's; the breakpoint on ``main`` is
gone once the program reached it). ``attach`` and ``core`` have no entry: the one runs already, the
other never will.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from tuidbg.engine import pyagent
from tuidbg.engine.errors import EngineError, MIError
from tuidbg.engine.extensions import Extension
from tuidbg.engine.state import DebuggerState, ProcessState, mark_internal

log = logging.getLogger("tuidbg.engine")

REASON = "entry"  # the stop's reason (StopInfo's for a native program, the agent's for Python)


class EntryStop(Extension):
    def __init__(self, config: Any) -> None:
        self.config = config
        self.number: str | None = None  # the temporary breakpoint on main
        self.why = ""  # what the console says at the stop
        self._noted: tuple | None = None  # the entry stop the console has been told of
        self._session: Any = None

    # -- the session's hooks -------------------------------------------------------------------

    async def on_configure(self, session: Any) -> None:
        self._session = session
        session.stop_hooks.append(self._stop_hook)
        session.on_state(self._on_state)

    async def before_run(self, session: Any) -> None:
        if self.config.mode != "run":
            return
        if self.number is not None:  # (not reached in the last run)
            number, self.number = self.number, None
            await session.cmd(f"-break-delete {number}", check=False)
        why = self.wanted(session)
        if why is None:
            return
        self.why = why
        if self.config.python_target:
            ag = pyagent.controller(session)
            if ag is not None:
                ag.stop_at_entry()
            return
        try:
            bp = await session.break_insert("main", temporary=True, pending=False)
        except (MIError, EngineError) as exc:
            msg = exc.message if isinstance(exc, MIError) else str(exc)
            session.note(f"tuidbg: no stop at entry: the program has no main ({msg}); it runs to its first breakpoint or its end")
            return
        self.number = bp.number
        session.set_state(mark_internal(session.state, bp.number))

    # -- what decides --------------------------------------------------------------------------

    def wanted(self, session: Any) -> str | None:
        """Why the program stops at its entry this run (a sentence for the console), or None."""
        cfg = self.config
        if cfg.stop_at_entry is False:
            return None
        if cfg.stop_at_entry:
            return "--stop-at-entry"
        if cfg.python_target and not cfg.agent:
            return None
        if any(not b.internal for b in session.state.breakpoints):
            return None
        if cfg.break_on_exception or cfg.break_on_failure:
            return None
        ag = pyagent.controller(session)
        if ag is not None:
            opts = ag.options
            if ag.breakpoints or opts["uncaught"] or opts["raise"] or opts["failure"]:
                return None
        return "no breakpoint is set"

    # -- the stop ------------------------------------------------------------------------------

    def _stop_hook(self, st: DebuggerState) -> DebuggerState:
        stop = st.stop
        if (self.number is None or st.process is not ProcessState.STOPPED or stop is None
                or stop.reason != "breakpoint-hit" or str(stop.bkptno or "").split(".")[0] != self.number):
            return st
        self.number = None  # (gdb deletes a temporary breakpoint as it stops there)
        return st.evolve(stop=replace(stop, reason=REASON))

    def _on_state(self, st: DebuggerState) -> None:
        if st.process is not ProcessState.STOPPED:
            return
        astop = st.python.stop
        native = st.stop is not None and st.stop.reason == REASON
        python = astop is not None and astop.reason == REASON
        key = (st.pid, st.generation) if native else (st.pid, st.python.stop_generation)
        if not (native or python) or key == self._noted:
            return
        self._noted = key
        where = "main" if native else "the program's first line"
        if self.why == "--stop-at-entry":
            text = f"Stopped at entry ({where}): --stop-at-entry."
        else:
            text = (f"Stopped at entry ({where}): no breakpoint is set. c continues; --no-stop-at-entry "
                    "(stop_at_entry = false in a launch profile) starts it running.")
        self._session.note(text)
