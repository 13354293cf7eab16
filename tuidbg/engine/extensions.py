"""The door between a session and the parts of the engine that plug into it (Python stacks, the
Python agent, CUDA): ``Extension``, whose hooks the session calls in this order:

- ``on_gdb_ready(session)``: gdb answered and is set up (``session.info`` says which gdb it is);
  nothing is loaded yet.
- ``on_configure(session)``: the program is loaded but not started (run), or not attached yet
  (attach), or the core not opened (core). Extensions register what they need on the session
  here: ``refresh_stages`` (run after each stop's refresh), ``select_stages``
  (run again when the user selects another thread), ``stop_hooks`` (pure, applied to the
  state of each stop), state listeners.
- ``on_launch(session)``: the program was started, attached to, or the core opened.
- ``before_run(session)``: the program is about to start (``run``), the first time or again.
- ``before_continue(session)``: a session of several processes, stopped, is about to continue them all
  (the processes that ended unreported are already let go of).
- ``claims_console(text)`` / ``handle_console(text)``: console commands the extension runs
  itself (the agent's ``pybreak``); the others go to gdb.
- ``restore_bytes()`` and ``abandon()``: gdb is hung or gone and the session leaves the program
  without it (``DebugSession.abandon``): the code the extension's breakpoints cover, and a
  synchronous chance to switch off what it put in the program.
- ``closed()``: the session has ended or let gdb go (``DebugSession.close``, however it went:
  detached, killed, gdb gone, cancelled; ``DebugSession.abandon``): free what the extension holds
  in tuidbg's own process and on disk (a listening socket and its folder). Synchronous, called once
  or more, and possibly from another thread than the loop's (a signal guard's, while the loop
  hangs): there, files only.

Which extensions a session has is decided where sessions are made (``tuidbg.engine.debugger``):
this module and the session know none of them.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

# (The session and its configuration are typed loosely here: this module sits below the session.)
Session = Any  # a tuidbg.engine.session.DebugSession


class Extension:
    """A part that plugs into a ``DebugSession``; every hook does nothing unless overridden."""

    async def on_gdb_ready(self, session: Session) -> None:
        return None

    async def on_configure(self, session: Session) -> None:
        return None

    async def on_launch(self, session: Session) -> None:
        return None

    async def before_run(self, session: Session) -> None:
        return None

    async def before_continue(self, session: Session) -> None:
        return None

    def claims_console(self, text: str) -> bool:
        return False

    async def handle_console(self, text: str) -> str | None:
        return None

    def restore_bytes(self) -> dict[int, bytes]:
        return {}

    def abandon(self) -> None:
        return None

    def closed(self) -> None:
        return None


ExtensionFactory = Callable[[Any], Sequence[Extension]]  # SessionConfig -> the extensions
