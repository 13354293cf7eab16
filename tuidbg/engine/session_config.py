"""What a session debugs and how (``SessionConfig``, built by the CLI), and what it learned of its
gdb (``GdbInfo``, from the banner of ``-gdb-version``)."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field


@dataclass
class SessionConfig:
    """What to debug and how. Built by the CLI; every field has a plain meaning."""

    mode: str = "none"  # "run", "attach", "core" or "none" (gdb only)
    program: str | None = None  # executable (for Python targets: the interpreter)
    args: list[str] = field(default_factory=list)
    pid: int | None = None
    core: str | None = None
    gdb: str = "gdb"
    cuda: bool = False
    ex: list[str] = field(default_factory=list)
    x_files: list[str] = field(default_factory=list)
    nx: bool = False
    debuginfod: bool = False
    # gdb demangles C++ names as it reads symbols (slow on large C++ libraries); off: tuidbg does it
    # for what it shows (tuidbg.gdbext.cxxnames)
    gdb_demangles: bool = False
    cwd: str | None = None
    python_target: bool = False
    program_env: dict[str, str] = field(default_factory=dict)
    load_gdbext: bool = True
    agent: bool = False  # load tuidbg's in-process Python agent (Python breakpoints, stepping)
    break_on_exception: bool = False  # the agent stops on uncaught Python exceptions
    break_on_failure: bool = False  # the agent stops at a failing pytest test
    remember: str | None = None  # the file of remembered breakpoints (engine.remember); None: none
    fresh_state: bool = False  # --fresh: do not put the remembered ones back
    children: str = "none"  # which of the program's children stay under gdb: "python", "all" or "none"
    remote: str | None = None  # attach through gdbserver --multi at HOST:PORT (tuidbg.engine.remote)
    more_pids: list[int] = field(default_factory=list)  # attach: the other processes of the session
    # run: stop at the program's entry (main; a Python program's first line): True, False, or None for
    # "when nothing else would stop it" (no breakpoint: tuidbg.engine.entry); the command line's default
    stop_at_entry: bool | None = False

    def describe(self) -> str:
        if self.mode == "attach":
            more = f" and {len(self.more_pids)} more" if self.more_pids else ""
            return f"process {self.pid}{more}" + (f" on {self.remote}" if self.remote else "")
        if self.mode == "core":
            return f"{self.program} with core {self.core}"
        if self.program:
            return " ".join([os.path.basename(self.program)] + [shlex.quote(a) for a in self.args])
        return "gdb"


@dataclass(frozen=True)
class GdbInfo:
    banner: str = ""
    version: tuple[int, ...] = ()
    is_cuda: bool = False
    cuda_version: tuple[int, ...] = ()
    features: frozenset[str] = frozenset()

    @property
    def has_python(self) -> bool:
        return "python" in self.features

    @property
    def version_text(self) -> str:
        return ".".join(str(v) for v in self.version) or "unknown"


def parse_banner(text: str) -> GdbInfo:
    """Version facts from ``-gdb-version`` / ``gdb --version`` text."""
    is_cuda = "NVIDIA" in text or "cuda-gdb" in text.lower()
    version: tuple[int, ...] = ()
    m = re.search(r"GNU gdb[^\n]*?(\d+)\.(\d+)", text) or re.search(r"Based on GNU gdb (\d+)\.(\d+)", text)
    if m:
        version = (int(m.group(1)), int(m.group(2)))
    cuda_version: tuple[int, ...] = ()
    if is_cuda:
        cm = re.search(r"(?:CUDA Toolkit |cuda-gdb |^)(\d+)\.(\d+) release", text, re.M) or re.search(
            r"cuda-gdb (\d+)\.(\d+)", text
        )
        if cm:
            cuda_version = (int(cm.group(1)), int(cm.group(2)))
    return GdbInfo(banner=text.strip(), version=version, is_cuda=is_cuda, cuda_version=cuda_version)


def program_arguments(args: list[str]) -> tuple[bool, str]:
    """(whether gdb must start the program through a shell, the -exec-arguments text) for ``args``, each to
    reach the program as it is. A shell only where an argument needs one (an empty one, one with blanks:
    without a shell gdb splits the text at blanks and takes every other character as it is): the shell's one
    string is limited to 128 KB (an 800 KB argument list failed, "Argument list too long"), and it is a
    process more to start."""
    if all(a and not any(c.isspace() for c in a) for a in args):
        return False, " ".join(args)
    return True, " ".join(shlex.quote(a) for a in args)
