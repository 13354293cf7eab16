"""Every thread's Python stack read straight from a live process: ``tuidbg dump``'s fast path.

``take(pid)`` locates the runtime and its offsets from the files on disk and memory that
does not change (``Interpreter``, before anything is stopped), stops every thread
(``Freeze``), runs the walker over ``/proc/PID/mem`` (``ProcTarget``), and lets the threads
go before it returns. With ``stop=False`` nothing is stopped: the threads run on while
their frames are read, so a stack may be torn (read half before and half after a call).

With ``tasks=True`` the asyncio tasks are read too, while the threads are stopped
(``gdbext.cpython_tasks``: ``Snapshot.tasks``, the walker's JSON-able dict of them, or None when
the program has no asyncio; ``Snapshot.tasks_error`` says why they could not be read).

With ``native=True`` each stopped thread's native stack is unwound too (``native``: registers
by ptrace, the CFI of the mapped files) and the Python frames get the native level of the
eval-loop frame that runs them (``Snapshot.stacks``); ``NativeUnsupported`` says why this
reader cannot (another architecture, a thread that did not stop, a stack it cannot unwind to
its end), and the caller reads the process through gdb instead. A process without a CPython
runtime (a C/C++ program) gives native stacks only (``interp`` None, ``no_python`` why).

Errors: ``NotAllowed`` (ptrace refused: permissions, Yama, a container without
CAP_SYS_PTRACE), ``ProcessGone``, ``Signalled`` (tuidbg got SIGTERM/SIGHUP/SIGQUIT; the
threads were let go), and the walker's ``NoPython`` / ``WalkError`` for a process this
reader cannot make sense of (a debugger may: the caller falls back to gdb).
"""

import errno
import os

from tuidbg.gdbext.cpython_walk import DEFAULT_MAX_FRAMES, Interpreter, NoPython, ReadError, StopCache, WalkError, walk
from tuidbg.gdbext.cpython_native import attach_native

from .freeze import Freeze, FreezeError, Signalled
from .proc import ProcessGone, alive, exiting
from .target import ProcTarget

__all__ = ["NativeUnsupported", "NoPython", "NotAllowed", "ProcessGone", "Signalled", "Snapshot", "WalkError", "take"]


class NotAllowed(FreezeError):
    """ptrace (or reading the process's memory) was refused."""


class NativeUnsupported(Exception):
    """This reader cannot read the native stacks of the process (the message says why)."""


class Snapshot(object):
    def __init__(self, pid, interp, recs, tids, stopped, stacks=None):
        self.pid = pid
        self.interp = interp
        self.recs = recs  # [PyThreadRec]: every thread state, its .gdb the thread that runs it (or None)
        self.tids = tids  # the threads, main thread first (thread number = index + 1)
        self.stopped = stopped  # False: read while running (--nonblocking)
        self.stacks = stacks  # native=True: {tid: native.Stack}
        self.no_python = None  # native=True: why there is no ``interp`` (no CPython runtime found)
        self.tasks = None  # tasks=True: cpython_tasks.tasks_dict of the program's asyncio tasks
        self.tasks_error = None


def _gone_or(pid, exc):
    if exiting(pid):
        return ProcessGone("process %d exited while its stacks were being read" % pid, errno.ESRCH)
    return exc


def take(pid, stop=True, max_frames=DEFAULT_MAX_FRAMES, timeout=1.0, native=False, tasks=False):
    if native:
        from .regs import Unsupported, check_arch

        try:
            check_arch()
        except Unsupported as exc:
            raise NativeUnsupported(str(exc))
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
        except NoPython as exc:
            if not native:
                raise _gone_or(pid, exc)
            interp = None  # (native stacks still: a C/C++ program)
            no_python = str(exc)
        except WalkError as exc:
            raise _gone_or(pid, exc)
        try:
            if stop:
                with Freeze(pid, timeout) as fz:
                    target.tids = fz.tids
                    stacks = _native(target, fz) if native else None
                    recs = _walk(target, interp, max_frames, stacks) if interp is not None else []
                    got = _tasks(interp, recs) if tasks and interp is not None else (None, None)
            else:
                stacks = None
                recs = _walk(target, interp, max_frames)
                got = _tasks(interp, recs) if tasks else (None, None)
        except FreezeError as exc:
            if exc.errno == errno.EPERM and not exiting(pid):
                raise NotAllowed(str(exc), exc.errno)
            raise _gone_or(pid, exc)
        except (NoPython, WalkError) as exc:
            raise _gone_or(pid, exc)
        if any(r.error for r in recs) and exiting(pid):
            raise ProcessGone("process %d exited while its stacks were being read" % pid, errno.ESRCH)
        snap = Snapshot(pid, interp, recs, list(target.tids or ()), stop, stacks)
        snap.tasks, snap.tasks_error = got
        if interp is None:
            snap.no_python = no_python
        return snap
    finally:
        target.close()


def _native(target, fz):
    """{tid: native.Stack} of every stopped thread; NativeUnsupported where one cannot be read whole."""
    from .native import Unwinder
    from .regs import Unsupported

    if fz.running:
        raise NativeUnsupported("thread %d did not stop: its registers cannot be read" % min(fz.running))
    unwinder = Unwinder(target)
    stacks = {}
    for tid in fz.tids:
        try:
            stack = unwinder.stack(tid)
        except Unsupported as exc:
            if not alive(target.pid, tid):
                continue  # (exited while stopped: it runs nothing)
            raise NativeUnsupported(str(exc))
        if stack.cut:
            raise NativeUnsupported("the native stack of thread %d was cut short: %s" % (tid, stack.cut))
        stacks[tid] = stack
    return stacks


def _tasks(interp, recs):
    """(the tasks as cpython_tasks.tasks_dict, None) or (None, why they could not be read); (None, None)
    for a program without asyncio."""
    paths = interp.target.objfile_paths()
    if not any(p.rsplit("/", 1)[-1].startswith("_asyncio") for p in paths) and not interp.sym("PyInit__asyncio"):
        return None, None  # (asyncio's C module is not loaded: no tasks, and nothing more imported)
    from tuidbg.gdbext.cpython_tasks import TaskReader, tasks_dict
    from tuidbg.gdbext.cpython_walk import Walker

    try:
        reader = TaskReader(Walker(interp, StopCache()), recs)
        if not reader.available():
            return None, None
        return tasks_dict(interp, reader.read()), None
    except (ReadError, ValueError, WalkError) as exc:
        return None, "the asyncio tasks could not be read: %s" % exc
    except Exception as exc:  # (memory that changed under a --nonblocking read, or a bug: the stacks still count)
        return None, "the asyncio tasks could not be read: %s: %s" % (type(exc).__name__, exc)


def _walk(target, interp, max_frames, stacks=None):
    try:
        if stacks is not None:
            target.stacks = stacks  # (what its native_frames gives attach_native)
        _w, recs = walk(target, interp, StopCache(), max_frames=max_frames, native="none" if stacks is None else _ANY)
    except ReadError as exc:
        raise WalkError("cannot read the program's memory: %s" % exc)
    unmapped = [r for r in recs if r.gdb is None and r.thread_id and not r.native_id]
    if unmapped:
        # (the walk gave these no native levels: it knew no thread to read them from)
        # 3.9/3.10: thread states name their thread by pthread_t; glibc's struct pthread has its LWP
        by_lwp = {g.lwp: g for g in target.threads()}
        for r in unmapped:
            r.gdb = by_lwp.get(target.lwp_of_pthread(r.thread_id))
        if stacks is not None:
            for r in unmapped:
                attach_native(target, r)
    return recs


class _Any(object):
    """The walker's ``native`` argument for "every thread it finds a thread for"."""

    def __contains__(self, _num):
        return True


_ANY = _Any()
