"""Every thread's Python stack read straight from a live process: ``tuidbg dump``'s fast path.

``take(pid)`` locates the runtime and its offsets from the files on disk and memory that
does not change (``Interpreter``, before anything is stopped), stops every thread
(``Freeze``), runs the walker over ``/proc/PID/mem`` (``ProcTarget``), and lets the threads
go before it returns. With ``stop=False`` nothing is stopped: the threads run on while
their frames are read, so a stack may be torn (read half before and half after a call).

Errors: ``NotAllowed`` (ptrace refused: permissions, Yama, a container without
CAP_SYS_PTRACE), ``ProcessGone``, ``Signalled`` (tuidbg got SIGTERM/SIGHUP/SIGQUIT; the
threads were let go), and the walker's ``NoPython`` / ``WalkError`` for a process this
reader cannot make sense of (a debugger may: the caller falls back to gdb).
"""

import errno
import os

from tuidbg.gdbext.cpython_walk import DEFAULT_MAX_FRAMES, Interpreter, NoPython, ReadError, StopCache, WalkError, walk

from .freeze import Freeze, FreezeError, Signalled
from .proc import ProcessGone, exiting
from .target import ProcTarget

__all__ = ["NoPython", "NotAllowed", "ProcessGone", "Signalled", "Snapshot", "WalkError", "take"]


class NotAllowed(FreezeError):
    """ptrace (or reading the process's memory) was refused."""


class Snapshot(object):
    def __init__(self, pid, interp, recs, tids, stopped):
        self.pid = pid
        self.interp = interp
        self.recs = recs  # [PyThreadRec]: every thread state, its .gdb the thread that runs it (or None)
        self.tids = tids  # the threads, main thread first (thread number = index + 1)
        self.stopped = stopped  # False: read while running (--nonblocking)


def _gone_or(pid, exc):
    if exiting(pid):
        return ProcessGone("process %d exited while its stacks were being read" % pid, errno.ESRCH)
    return exc


def take(pid, stop=True, max_frames=DEFAULT_MAX_FRAMES, timeout=1.0):
    try:
        target = ProcTarget(pid)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise NotAllowed("cannot read the memory of process %d: %s" % (pid, exc.strerror), exc.errno)
        raise ProcessGone("no process with ID %d" % pid, errno.ESRCH)
    try:
        try:
            interp = Interpreter(target)
        except ReadError as exc:
            raise _gone_or(pid, WalkError("cannot read the Python runtime: %s" % exc))
        except (NoPython, WalkError) as exc:
            raise _gone_or(pid, exc)
        try:
            if stop:
                with Freeze(pid, timeout) as fz:
                    target.tids = fz.tids
                    recs = _walk(target, interp, max_frames)
            else:
                recs = _walk(target, interp, max_frames)
        except FreezeError as exc:
            if exc.errno == errno.EPERM and not exiting(pid):
                raise NotAllowed(str(exc), exc.errno)
            raise _gone_or(pid, exc)
        except (NoPython, WalkError) as exc:
            raise _gone_or(pid, exc)
        if any(r.error for r in recs) and exiting(pid):
            raise ProcessGone("process %d exited while its stacks were being read" % pid, errno.ESRCH)
        return Snapshot(pid, interp, recs, list(target.tids or ()), stop)
    finally:
        target.close()


def _walk(target, interp, max_frames):
    try:
        _w, recs = walk(target, interp, StopCache(), max_frames=max_frames, native="none")
    except ReadError as exc:
        raise WalkError("cannot read the program's memory: %s" % exc)
    unmapped = [r for r in recs if r.gdb is None and r.thread_id and not r.native_id]
    if unmapped:
        # 3.9/3.10: thread states name their thread by pthread_t; glibc's struct pthread has its LWP
        by_lwp = {g.lwp: g for g in target.threads()}
        for r in unmapped:
            r.gdb = by_lwp.get(target.lwp_of_pthread(r.thread_id))
    return recs
