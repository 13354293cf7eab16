"""Typed errors raised by the engine.

Every failure that reaches a caller of the engine is one of these, so the UI and
the CLI can show one clear line instead of a traceback.
"""

from __future__ import annotations


class EngineError(Exception):
    """Base class of all engine errors."""


class MIError(EngineError):
    """gdb answered a command with ``^error``."""

    def __init__(self, message: str, command: str = "", code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.command = command
        self.code = code

    def __str__(self) -> str:
        return self.message


class GdbExited(EngineError):
    """gdb is gone: every command still waiting fails with this, carrying the reason."""

    def __init__(self, reason: str, stderr_tail: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.stderr_tail = stderr_tail

    def __str__(self) -> str:
        return self.reason


class Timeout(EngineError):
    """A command got no result within its timeout."""

    def __init__(self, command: str, seconds: float) -> None:
        super().__init__(f"gdb did not answer {command!r} within {seconds:g} s")
        self.command = command
        self.seconds = seconds


class StartupError(EngineError):
    """gdb could not be started or refused the program; the message is one line for the user."""
