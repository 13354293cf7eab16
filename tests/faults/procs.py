"""What the fault tests look for in /proc: a process that is gone, stopped, traced, or a gdb left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass

from helpers import LOADED_FLOOR


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


def descendants(root: int) -> set[int]:
    """Every process below ``root`` now (recorded before the fault: orphans are re-parented later)."""
    children: dict[int, list[int]] = {}
    for p in all_procs().values():
        children.setdefault(p.ppid, []).append(p.pid)
    out, todo = set(), [root]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def tree_states(root: int) -> str:
    """``root`` and every process below it now, each with its state and tracer (for a failure's message)."""
    tree = {q: proc(q) for q in [root, *sorted(descendants(root))]}
    return ", ".join(f"{q} {p.state} tracer {p.tracer}" for q, p in tree.items() if p is not None)


def leftovers(pids: set[int], targets: tuple[int, ...] = ()) -> list[str]:
    """What tuidbg must never leave behind: any of ``pids`` (tuidbg, its gdb, the program it started)
    still there (a zombie counts: nobody reaped it), and among ``targets`` (processes it attached to) one
    stopped (T), traced-stopped (t) or still traced."""
    found = []
    for pid in pids:
        p = proc(pid)
        if p is not None and pid not in targets:
            found.append(f"left behind: {p}")
    for pid in targets:
        p = proc(pid)
        if p is None:
            found.append(f"target {pid} is gone")
        elif p.state in ("T", "t", "Z"):
            found.append(f"target stopped or dead: {p}")
        elif p.tracer:
            found.append(f"target still traced: {p}")
    return found


def wait_until(pred, timeout: float, what) -> None:
    """``what``: text, or a function that says it (what is found then, for the failure's message)."""
    timeout = max(timeout, LOADED_FLOOR)  # (a loaded machine: see helpers.LOADED_FLOOR)
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what() if callable(what) else what}")
        time.sleep(0.05)


def assert_clean(pids: set[int], targets: tuple[int, ...] = (), timeout: float = LOADED_FLOOR) -> None:
    """Nothing left behind (a zombie is given a moment to be reaped by its parent)."""
    deadline = time.monotonic() + timeout
    while True:
        left = leftovers(pids, targets)
        if not left:
            return
        if time.monotonic() > deadline:
            raise AssertionError("\n".join(left))
        time.sleep(0.1)


def answers(p: subprocess.Popen, expect: str, timeout: float = LOADED_FLOOR) -> bool:
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


def kill_group(p: subprocess.Popen) -> None:
    """``p`` and its process group killed (a test's program tree, started with a group of its own), reaped."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass
    p.wait()
