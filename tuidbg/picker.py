"""Processes one could attach to, Python processes first (psutil)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    name: str
    user: str
    cmdline: str
    is_python: bool
    threads: int
    uses_cuda: bool


def _uses_cuda(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                if "libcuda.so" in line or "libcudart" in line:
                    return True
    except OSError:
        return False
    return False


def list_processes(include_self: bool = False) -> list[ProcessInfo]:
    me = os.getpid()
    skip = {me, os.getppid()} if not include_self else set()
    out: list[ProcessInfo] = []
    for p in psutil.process_iter(["pid", "name", "username", "cmdline", "exe", "num_threads", "status"]):
        info = p.info
        pid = info["pid"]
        if pid in skip or pid <= 1:
            continue
        if info.get("status") == psutil.STATUS_ZOMBIE:
            continue
        cmd = info.get("cmdline") or []
        if not cmd:
            continue  # kernel threads
        exe = os.path.basename(info.get("exe") or "")
        name = info.get("name") or exe
        is_py = exe.startswith("python") or name.startswith("python") or os.path.basename(cmd[0]).startswith("python")
        out.append(
            ProcessInfo(
                pid=pid,
                name=name,
                user=info.get("username") or "?",
                cmdline=" ".join(cmd),
                is_python=is_py,
                threads=info.get("num_threads") or 0,
                uses_cuda=_uses_cuda(pid) if is_py else False,
            )
        )
    out.sort(key=lambda p: (not p.is_python, p.pid))
    return out


def _printable(text: str) -> str:
    """A command line on one line: control characters (a newline inside `python -c`) made visible."""
    return "".join(ch if ch.isprintable() else ("\\x%02x" % ord(ch) if ord(ch) < 0x100 else "\\u%04x" % ord(ch)) for ch in text)


def format_process_list(processes: list[ProcessInfo] | None = None) -> str:
    procs = list_processes() if processes is None else processes
    rows = [f"{'PID':>7}  {'USER':<10} {'THR':>4}  {'KIND':<7}  COMMAND"]
    for p in procs:
        kind = "python" if p.is_python else "-"
        if p.uses_cuda:
            kind = "py+cuda" if p.is_python else "cuda"
        rows.append(f"{p.pid:>7}  {_printable(p.user)[:10]:<10} {p.threads:>4}  {kind:<7}  {_printable(p.cmdline)[:200]}")
    return "\n".join(rows)
