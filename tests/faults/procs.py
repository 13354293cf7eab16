"""What the fault tests look for in /proc: a process that is gone, stopped, traced, or a gdb left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    state: str
    comm: str
    tracer: int


def proc(pid: int) -> Proc | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("utf-8", "replace")
        with open(f"/proc/{pid}/status") as f:
            tracer = next((int(l.split()[1]) for l in f if l.startswith("TracerPid:")), 0)
    except (OSError, ValueError):
        return None
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    rest = stat[stat.rindex(")") + 2 :].split()
    return Proc(pid, int(rest[1]), rest[0], comm, tracer)


def all_procs() -> dict[int, Proc]:
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            p = proc(int(name))
            if p is not None:
                out[p.pid] = p
    return out


def leftovers(before: dict[int, Proc], targets: tuple[int, ...] = ()) -> list[str]:
    """What tuidbg must never leave behind, among processes that did not exist ``before``, and among
    ``targets`` (processes it was asked to debug): a gdb, a zombie whose parent is this test, a process
    stopped (T) or traced-stopped (t), a target still traced."""
    found = []
    me = os.getpid()
    for pid, p in all_procs().items():
        new = pid not in before or before[pid].comm != p.comm
        if new and p.comm in ("gdb", "cuda-gdb", "gdbserver"):
            found.append(f"gdb left behind: {p}")
        if new and p.state == "Z" and p.ppid == me:
            found.append(f"zombie: {p}")
        if (new or pid in targets) and p.state in ("T", "t"):
            found.append(f"stopped: {p}")
        if pid in targets and p.tracer:
            found.append(f"still traced: {p}")
    return found


def wait_until(pred, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def assert_clean(before: dict[int, Proc], targets: tuple[int, ...] = (), timeout: float = 5.0) -> None:
    """Nothing left behind (zombies of gdb are reaped by whoever started it: give them a moment)."""
    deadline = time.monotonic() + timeout
    while True:
        left = leftovers(before, targets)
        if not left:
            return
        if time.monotonic() > deadline:
            raise AssertionError("left behind:\n" + "\n".join(left))
        time.sleep(0.1)


def answers(p: subprocess.Popen, expect: str, timeout: float = 5.0) -> bool:
    """Poke the victim program (SIGUSR1) and read the line it prints back."""
    os.kill(p.pid, signal.SIGUSR1)
    deadline = time.monotonic() + timeout
    assert p.stdout is not None
    os.set_blocking(p.stdout.fileno(), False)
    buf = b""
    while time.monotonic() < deadline:
        try:
            chunk = os.read(p.stdout.fileno(), 4096)
        except BlockingIOError:
            chunk = b""
        if chunk:
            buf += chunk
            if expect.encode() in buf:
                return True
        elif p.poll() is not None:
            return False
        time.sleep(0.02)
    return False
