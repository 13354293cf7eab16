"""Facts about a process read from ``/proc``: its threads, whether it is alive, who traces it.

Standard library only, no ctypes (``tuidbg.launch`` checks a PID with these before anything
starts).
"""

import errno
import os


class ProcessGone(Exception):
    """The process exited (or was never there)."""

    def __init__(self, message, err=errno.ESRCH):
        Exception.__init__(self, message)
        self.errno = err


def list_threads(pid):
    """The process's thread IDs, the main thread first, then in /proc's order (creation order)."""
    import os

    try:
        names = os.listdir("/proc/%d/task" % pid)
    except FileNotFoundError:
        raise ProcessGone("process %d exited" % pid)
    tids = [int(n) for n in names if n.isdigit()]
    if pid in tids:
        tids.remove(pid)
        tids.insert(0, pid)
    return tids


def alive(pid, tid=None):
    """The process (or its thread ``tid``) exists and has not exited (a zombie has)."""
    path = "/proc/%d/stat" % pid if tid is None else "/proc/%d/task/%d/stat" % (pid, tid)
    try:
        with open(path, "rb") as f:
            stat = f.read()
    except OSError:
        return False
    end = stat.rfind(b")")
    return stat[end + 2:end + 3] not in (b"Z", b"X", b"x", b"")


def start_time(pid):
    """When the process started (clock ticks after boot; with the PID it names one process for good), or
    None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
        return int(stat[stat.rfind(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def exiting(pid, wait=0.1):
    """The process has exited, or does within ``wait`` seconds: a process killed while it is read
    fails the reads (its memory is gone) a moment before /proc shows it as a zombie."""
    import time

    deadline = time.monotonic() + wait
    while alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.002)
    return True


def tracer_of(pid):
    """The PID of the process tracing ``pid`` (a debugger, strace), or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("TracerPid:"):
                    return int(line.split()[1]) or None
    except (OSError, ValueError, IndexError):
        return None
    return None


def ptrace_scope():
    """kernel.yama.ptrace_scope (0-3), or None where Yama is not there."""
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


ROLE_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE")  # how distributed launchers name a process's role


def parent_of(pid):
    """The PID of the process's parent, or None."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
        return int(stat[stat.rfind(b")") + 2:].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def role_env(pid, names=ROLE_VARS):
    """{name: value} of ``names`` in the environment the process was started with (where torchrun,
    srun and mpirun put RANK, LOCAL_RANK, WORLD_SIZE), in ``names``'s order; {} when /proc does not say."""
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            return roles_in(f.read(), names)
    except OSError:
        return {}


def roles_in(environ, names=ROLE_VARS):
    """``role_env`` of the contents of a /proc/PID/environ (read here, or on another node)."""
    found = {}
    for item in environ.split(b"\0"):
        k, eq, v = item.partition(b"=")
        key = k.decode("ascii", "replace")
        if eq and key in names:
            found[key] = v.decode("utf-8", "replace")
    return {k: found[k] for k in names if k in found}


def cmdline_of(pid):
    """The process's arguments, [] when /proc does not say (a zombie, another user's process)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def children_map():
    """Each process's children (PID -> child PIDs), from one walk of ``/proc/*/stat``."""
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        ppid = parent_of(int(name))
        if ppid is not None:
            kids.setdefault(ppid, []).append(int(name))
    return kids


def descendants(pid, kids=None):
    """Every descendant of ``pid``, depth first (each child's subtree after it), children by PID;
    tuidbg itself (``tuidbg dump --children $$``) left out. From ``/proc/*/stat`` (psutil would do
    the same, after 14 ms of importing itself), or from ``kids`` (``children_map``: one walk for the
    descendants of several processes)."""
    if kids is None:
        kids = children_map()
    out: list[int] = []
    me = os.getpid()
    todo = [pid]
    while todo:
        parent = todo.pop()
        below = sorted(c for c in kids.get(parent, ()) if c != me)
        if parent != pid:
            out.append(parent)
        todo.extend(reversed(below))
    return out
