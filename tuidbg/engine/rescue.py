"""Leaving nothing behind when gdb cannot be asked to: processes read and mended from ``/proc``.

gdb normally cleans up after itself: it removes its breakpoints and resumes an attached process
when it detaches, and a program it started dies with it (gdb sets ``PTRACE_O_EXITKILL`` on the
processes it starts). When gdb hangs or crashes that does not happen, and what is left can harm
the process tuidbg was asked to look at:

- its breakpoint instructions (``int3``) stay in the code of a process that runs without a
  debugger: the next thread to reach one dies of SIGTRAP;
- a process that gdb had stopped stays stopped (state ``T``) after the kernel detaches it;
- a program tuidbg started could outlive a gdb that did not take it down.

The functions here need no gdb: they read ``/proc/PID/{stat,status,maps,pagemap}`` and write
``/proc/PID/mem`` (allowed to whoever could ptrace the process, which gdb could). Only bytes that
hold a breakpoint instruction now and something else in the file the code was mapped from are
written back, and only in pages that were copied on write (gdb's writes copy the page): a
program's own code is never touched.
"""

from __future__ import annotations

import logging
import os
import stat
import platform
import signal
import struct
import time
from dataclasses import dataclass
from typing import Mapping

from tuidbg.procread.proc import children_map, descendants

log = logging.getLogger("tuidbg.engine")

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
# The breakpoint instruction gdb writes, per architecture.
BREAK_INSN = {"x86_64": b"\xcc", "amd64": b"\xcc", "i686": b"\xcc", "aarch64": b"\x00\x00\x20\xd4"}
MAX_SCAN = 256 * 1024 * 1024  # bytes of copied-on-write code compared when pagemap cannot narrow it


@dataclass(frozen=True)
class ProcInfo:
    pid: int
    state: str  # one letter: R S D T t Z X
    ppid: int
    start_time: int  # clock ticks after boot: with the pid, names one process for good
    tracer: int  # 0: not traced


def _stat_fields(path: str) -> list[str] | None:
    """The fields of a /proc ``stat`` file after the command name (state first), or None when it is gone."""
    try:
        with open(path, "rb") as f:
            stat = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()  # (the command name may hold spaces and parentheses)


def proc_info(pid: int) -> ProcInfo | None:
    """What /proc says of a process, or None when it is gone."""
    rest = _stat_fields(f"/proc/{pid}/stat")
    try:
        tracer = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("TracerPid:"):
                    tracer = int(line.split()[1])
                    break
        return ProcInfo(pid=pid, state=rest[0], ppid=int(rest[1]), start_time=int(rest[19]), tracer=tracer)
    except (OSError, ValueError, IndexError, TypeError):
        return None


def exit_status(pid: int) -> int | None:
    """The wait status of a process that has ended and is not reaped yet (a zombie: /proc's ``exit_code``,
    Linux 3.5+), or None."""
    rest = _stat_fields(f"/proc/{pid}/stat")
    try:
        return int(rest[49]) if rest and rest[0] in ("Z", "X") else None
    except (IndexError, ValueError):
        return None


def has_ended(pid: int) -> bool:
    """The process is gone, or every thread of it has exited (a zombie whose tracer has not reaped it; a
    leader that is a zombie while its other threads run has not ended)."""
    info = proc_info(pid)
    if info is None:
        return True
    if info.state not in ("Z", "X"):
        return False
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for tid in tids:
        rest = _stat_fields(f"/proc/{pid}/task/{tid}/stat")
        if rest and rest[0] not in ("Z", "X"):
            return False
    return True


def cpu_ticks(pid: int) -> int | None:
    """User + system CPU time of a process, in clock ticks (None when it is gone)."""
    rest = _stat_fields(f"/proc/{pid}/stat")
    try:
        return int(rest[11]) + int(rest[12])
    except (ValueError, IndexError, TypeError):
        return None


def same_process(pid: int, start_time: int | None) -> bool:
    info = proc_info(pid)
    return info is not None and info.state not in ("Z", "X") and (start_time is None or info.start_time == start_time)


def _wait(pred, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def kill_gdb(pid: int, timeout: float = 3.0) -> bool:
    """SIGKILL (works on a stopped gdb too); True once it is gone or a zombie waiting to be reaped."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return _wait(lambda: (proc_info(pid) or ProcInfo(pid, "X", 0, 0, 0)).state in ("Z", "X"), timeout)


def wake(pid: int) -> None:
    """SIGCONT a gdb stopped by SIGSTOP (frozen by hand, say), so that it can be asked again. Sent
    whatever its state says: a SIGSTOP may be on its way still (SIGCONT to a running gdb does nothing)."""
    try:
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass


def _maps(pid: int) -> list[tuple[int, int, int, str]]:
    """Executable mappings backed by a file: (start, end, file offset, path)."""
    out = []
    try:
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) < 6 or "x" not in parts[1]:
                    continue
                path = parts[5].strip()
                if not path.startswith("/") or path.endswith(" (deleted)"):
                    continue
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((lo, hi, int(parts[2], 16), path))
    except OSError:
        return []
    return out


def _copied_pages(pid: int, lo: int, hi: int) -> list[int] | None:
    """Pages of [lo, hi) that are present and no longer the file's (copied on write), or None when
    pagemap cannot be read (then every page is compared)."""
    n = (hi - lo) // PAGE
    try:
        with open(f"/proc/{pid}/pagemap", "rb") as f:
            f.seek((lo // PAGE) * 8)
            data = f.read(n * 8)
    except OSError:
        return None
    if len(data) != n * 8:
        return None
    pages = []
    for i, (entry,) in enumerate(struct.iter_unpack("<Q", data)):
        present = entry >> 63 & 1
        file_page = entry >> 61 & 1
        if present and not file_page:
            pages.append(lo + i * PAGE)
    return pages


def restore_code(pid: int, extra: Mapping[int, bytes] | None = None) -> int:
    """Write back the code bytes under breakpoints a vanished gdb left in a process. Returns how many
    breakpoints were removed. ``extra`` maps addresses outside mapped files (code a program made, such
    as tuidbg's agent's stop function) to their original bytes."""
    insn = BREAK_INSN.get(platform.machine().lower())
    if insn is None:
        return 0
    fixed = 0
    try:
        mem = os.open(f"/proc/{pid}/mem", os.O_RDWR)
    except OSError as exc:
        log.info("cannot open the memory of process %d: %s", pid, exc)
        return 0
    try:
        budget = MAX_SCAN
        for lo, hi, off, path in _maps(pid):
            pages = _copied_pages(pid, lo, hi)
            if pages is None:
                if hi - lo > budget:
                    continue
                budget -= hi - lo
                pages = list(range(lo, hi, PAGE))
            if not pages:
                continue
            try:  # (maps names it; it may be a FIFO by now: an open that cannot wait, a regular file only)
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    continue
                for page in pages:
                    fixed += _restore_page(mem, fd, page, off + (page - lo), insn)
            finally:
                os.close(fd)
        for addr, orig in (extra or {}).items():
            try:
                now = os.pread(mem, len(orig), addr)
            except OSError:
                continue
            if now[: len(insn)] == insn and orig[: len(insn)] != insn:
                os.pwrite(mem, orig[: len(insn)], addr)
                fixed += 1
    finally:
        os.close(mem)
    return fixed


def _restore_page(mem: int, fd: int, page: int, file_off: int, insn: bytes) -> int:
    try:
        now = os.pread(mem, PAGE, page)
        orig = os.pread(fd, PAGE, file_off)
    except OSError:
        return 0
    n = min(len(now), len(orig))
    fixed = 0
    start = 0
    while True:
        i = now.find(insn, start, n)
        if i < 0:
            return fixed
        start = i + 1
        if orig[i : i + len(insn)] != insn:
            try:
                os.pwrite(mem, orig[i : i + len(insn)], page + i)
                fixed += 1
            except OSError:
                return fixed


def stop_process(pid: int) -> None:
    """SIGSTOP: no thread runs into a breakpoint while its bytes are put back."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except OSError:
        pass


def read_memory(pid: int, addr: int, size: int) -> bytes | None:
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.pread(fd, size, addr)
    except OSError:
        return None
    finally:
        os.close(fd)


def stop_others(targets, gdb: int | None, gdb_alive: bool) -> list:
    """The further processes of ``attach PID PID...`` (``(pid, start time, was stopped)`` each) that gdb
    still traces, each stopped (while gdb lives: none may run into its breakpoints) and its code put back:
    ``[(target, stopped by us)]``, for ``release``."""
    more = []
    for t in targets:
        info = proc_info(t[0])
        if info is None or info.tracer not in (0, gdb) or not same_process(t[0], t[1]):
            continue
        if gdb_alive:
            stop_process(t[0])
        restore_code(t[0], {})
        more.append((t, gdb_alive))
    return more


def release(pid: int, start_time: int | None, leave_stopped: bool = False, stopped_by_us: bool = False,
            timeout: float = 3.0, calm: float = 0.3) -> str:
    """After its tracer is gone: make sure an attached process runs, untraced (unless it was stopped
    before tuidbg came: then it stays as it was). Returns what was done.

    A stop may still be on its way when the tracer goes (a SIGSTOP that a killed gdb, or
    ``stop_process``, sent arrives once the kernel has detached the process): the state is watched
    until it has been calm for ``calm`` seconds, and every stop seen is continued. After gdb's own
    detach there is none on its way (gdb waits for the SIGSTOPs it sent before it detaches a
    thread): ``calm`` 0 checks once."""
    if not same_process(pid, start_time):
        return f"process {pid} is gone"
    _wait(lambda: (proc_info(pid) or ProcInfo(pid, "X", 0, 0, 0)).tracer == 0, timeout)
    info = proc_info(pid)
    if info is None:
        return f"process {pid} is gone"
    if info.tracer:
        return f"process {pid} is still traced by process {info.tracer}"
    if leave_stopped:
        return f"process {pid} stays as it was before tuidbg (stopped)" if info.state == "T" else f"process {pid} runs on"
    if stopped_by_us or info.state in ("T", "t"):
        _cont(pid)
    deadline = time.monotonic() + timeout
    calm_since = time.monotonic()
    while time.monotonic() < deadline:
        info = proc_info(pid)
        if info is None or info.state in ("Z", "X"):
            return f"process {pid} is gone"
        if info.state in ("T", "t"):
            _cont(pid)
            calm_since = time.monotonic()
        elif time.monotonic() - calm_since >= calm:
            return f"process {pid} runs on, untraced"
        time.sleep(0.02)
    return f"process {pid} is still stopped"


def boot_ticks() -> int:
    """Now, in the clock ticks after boot that /proc's start times count (a process born from now on has
    this start time or a later one)."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK"))


_STOP_SIGNALS = sum(1 << (n - 1) for n in (signal.SIGSTOP, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU))


def _stop_pending(pid: int) -> bool:
    """A stop signal waits to be delivered to the process (/proc's SigPnd and ShdPnd)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            masks = [int(line.split()[1], 16) for line in f if line.startswith(("SigPnd:", "ShdPnd:"))]
    except (OSError, ValueError, IndexError):
        return False
    return any(m & _STOP_SIGNALS for m in masks)


def _born_below(roots: set[int], since: int) -> list[ProcInfo]:
    """The processes below ``roots`` (them included) born at ``since`` or later."""
    pids: set[int] = set()
    kids = children_map()  # (one walk of /proc for every root)
    for root in sorted(roots):  # (a parent before its children: a child's subtree is gathered once, with it)
        if root not in pids:
            pids |= {root, *descendants(root, kids)}
    return [info for pid in pids if (info := proc_info(pid)) is not None and info.start_time >= since]


def wake_born(roots, since: int, calm: float = 0.3, timeout: float = 3.0) -> list[int]:
    """After gdb is gone: the processes forked below ``roots`` (the session's) since ``since`` (``boot_ticks``
    at the session's start) that are left stopped, or have a stop signal on its way, are continued; returns
    their PIDs. gdb follows a fork by tracing the child from its birth, a SIGSTOP its first signal: a child
    forked as gdb detached or died (a pool replacing a worker) is let go with that SIGSTOP undelivered, and
    stops for good once it is (holding, say, the lock of the pool's task queue: the whole pool waits). A
    SIGCONT drops a pending stop too. Such a process was born under tuidbg: no stop of it predates tuidbg.
    Watched until none has stopped for ``calm`` seconds."""
    roots = {r for r in roots if r}
    woken: list[int] = []
    if not roots:
        return woken
    deadline = time.monotonic() + timeout
    calm_since = time.monotonic()
    while time.monotonic() < deadline:
        born = _born_below(roots, since)
        if not born:
            break
        left = [i for i in born if i.tracer == 0 and (i.state == "T" or _stop_pending(i.pid))]
        for info in left:
            _cont(info.pid)
            if info.pid not in woken:
                woken.append(info.pid)
        if left:
            calm_since = time.monotonic()
        elif time.monotonic() - calm_since >= calm:
            break
        time.sleep(0.02)
    if woken:
        log.info("continued %d process(es) forked under gdb and left stopped: %s", len(woken), woken)
    return woken


def let_go(target: tuple[int, int | None, bool] | None, detach: bool, stopped_by_us: bool, detached: bool,
           since: int, others: set[int]) -> str:
    """The end of a session, gdb gone: the program (``target``: pid, start time, stopped before tuidbg)
    released (``detach``; ``detached``: gdb detached it itself, no stop of gdb's on its way) or ended, then
    the processes forked below it and ``others`` since ``since`` woken (``wake_born``). Returns what became
    of the program."""
    said = "no program"
    if target is not None and detach:
        said = release(target[0], target[1], leave_stopped=target[2], stopped_by_us=stopped_by_us,
                       calm=0.0 if detached else 0.3)
    elif target is not None:
        end_program(target[0], target[1])
        said = f"process {target[0]} ended"
    wake_born(others | ({target[0]} if target else set()), since)
    return said


def _cont(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass


def end_program(pid: int, start_time: int | None, timeout: float = 3.0) -> None:
    """A program tuidbg started, after gdb is gone: it must not live on (gdb's EXITKILL usually saw to it)."""
    if not same_process(pid, start_time):
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        return
    _wait(lambda: not same_process(pid, start_time), timeout)
