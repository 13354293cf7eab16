"""Typed errors raised by the engine.

Every failure that reaches a caller of the engine is one of these, so the UI and
the CLI can show one clear line instead of a traceback.
"""

from __future__ import annotations

from tuidbg.procread.proc import ptrace_scope, tracer_of


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


_SCOPE_MEANING = {
    0: "classic: any process of the same user may be traced",
    1: "restricted: only descendants may be traced unless the target allows it",
    2: "admin-only: tracing needs CAP_SYS_PTRACE",
    3: "no attach: ptrace attach is disabled until reboot",
}


def attach_failure(pid: int, gdb_message: str) -> str:
    """One line explaining why attaching failed, with what to do about ptrace refusals."""
    low = gdb_message.lower()
    if "not permitted" in low or "eperm" in low or "permission" in low:
        tracer = tracer_of(pid)
        if tracer:
            return f"cannot attach to process {pid}: it is already traced by process {tracer} (a debugger or strace); detach that first"
        scope = ptrace_scope()
        scope_txt = (
            f"kernel.yama.ptrace_scope is {scope} ({_SCOPE_MEANING.get(scope, 'unknown')})"
            if scope is not None
            else "kernel.yama.ptrace_scope is not available here"
        )
        return (
            f"cannot attach to process {pid}: ptrace refused (Operation not permitted); "
            f"{scope_txt}: run as the process's owner with 'sysctl kernel.yama.ptrace_scope=0', "
            "or as root; in a container the tracer needs CAP_SYS_PTRACE (docker run --cap-add=SYS_PTRACE)"
        )
    if "no such process" in low:
        return f"cannot attach to process {pid}: no such process"
    return f"cannot attach to process {pid}: {gdb_message.strip()}"
