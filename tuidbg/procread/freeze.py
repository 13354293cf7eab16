"""Every thread of a process stopped for a moment with ptrace, and always let go again.

``Freeze(pid)`` is a context manager: on entry each thread is seized (``PTRACE_SEIZE``:
no signal is sent, the process does not see a SIGSTOP) and interrupted
(``PTRACE_INTERRUPT``), then waited for until it reports its stop; threads created
meanwhile are found by listing ``/proc/PID/task`` again until the list no longer grows
(a stopped thread cannot start new ones). On exit every thread is detached
(``PTRACE_DETACH``), with the signal it was stopped on, if any, handed back to it.

Letting go always happens: the ``with`` block's ``finally``; SIGINT, SIGTERM, SIGHUP and
SIGQUIT raise ``Signalled`` inside the block while the threads are held, so the same
``finally`` runs (one that comes while they are being let go waits for the end of it); if
tuidbg is killed outright
(SIGKILL) the kernel detaches its tracees and wakes them. A thread that does not stop
within ``timeout`` (asleep in the kernel, uninterruptibly) is read as it is: it runs no
Python code meanwhile.
"""

import errno
import os

# The signal module's C half: the module itself wraps numbers in enums, and importing enum
# costs `tuidbg dump` (timed end to end against py-spy) about 3 ms.
import _signal as signal

from .proc import ProcessGone, alive, list_threads

PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
PTRACE_EVENT_STOP = 128
WALL = 0x40000000  # __WALL: wait for threads (clones) too
_HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

_ptrace = None


class FreezeError(Exception):
    """The threads could not be stopped; ``errno`` says why (EPERM: ptrace refused)."""

    def __init__(self, message, err=0):
        Exception.__init__(self, message)
        self.errno = err


class Signalled(BaseException):
    """tuidbg got SIGTERM/SIGHUP/SIGQUIT while it held the threads (they have been let go)."""

    def __init__(self, signum):
        BaseException.__init__(self, signum)
        self.signum = signum


def _call():
    """libc's ``ptrace(long, long, void *, void *)`` as a ctypes function (errno kept), made on first use.

    Made from ``_ctypes``, ctypes' C half, as ``ctypes.CDLL(None, use_errno=True).ptrace`` with those
    argtypes and a ``c_long`` result would make it: importing the ``ctypes`` package costs ``tuidbg dump``
    (timed end to end against py-spy's) 1.5-2 ms, its C half 0.3 ms. ``tuidbg.procread.regs`` calls it
    with a ``ctypes`` buffer's address."""
    global _ptrace
    if _ptrace is None:
        import _ctypes

        class c_long(_ctypes._SimpleCData):
            _type_ = "l"

        class c_void_p(_ctypes._SimpleCData):
            _type_ = "P"

        class Function(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
            _restype_ = c_long

        class Libc(object):  # (what CFuncPtr((name, dll)) reads of a ctypes.CDLL: its handle)
            _handle = _ctypes.dlopen(None, getattr(os, "RTLD_NOW", 2))

        fn = Function(("ptrace", Libc))
        fn.argtypes = (c_long, c_long, c_void_p, c_void_p)
        _ptrace = fn
    return _ptrace


def get_errno():
    """The errno the last ``_call()`` function left (ctypes.get_errno)."""
    import _ctypes

    return _ctypes.get_errno()


def ptrace(request, tid, data=0):
    """0, or the errno of the failed call."""
    fn = _call()
    if fn(request, tid, None, data or None) == -1:
        return get_errno() or errno.EIO
    return 0


def _raise_signalled(signum, _frame):
    raise Signalled(signum)


def _alarm(_signum, _frame):
    raise _Timeout()


class _Timeout(Exception):
    pass


class Freeze(object):
    """``with Freeze(pid) as fz:`` every thread of ``pid`` is stopped inside the block; ``fz.tids``
    lists them (main thread first)."""

    def __init__(self, pid, timeout=1.0):
        self.pid = pid
        self.timeout = timeout
        self.tids = []
        self.stopped = {}  # tid -> signal to hand back at detach (0: none)
        self.running = set()  # seized, no stop reported yet
        self.exited = set()
        self._old_handlers = {}

    # -- entry and exit ----------------------------------------------------------------------

    def __enter__(self):
        try:
            for s in _HELD_SIGNALS:
                try:
                    self._old_handlers[s] = signal.signal(s, _raise_signalled)
                except (ValueError, OSError):  # not the main thread
                    pass
            self._freeze()
        except BaseException:
            self.release()
            raise
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    def release(self):
        """Detach every seized thread (idempotent), then put the signal handlers back; a signal
        that comes meanwhile waits until every thread is let go, then raises Signalled."""
        pending = []
        for s in self._old_handlers:
            try:
                signal.signal(s, lambda signum, _frame: pending.append(signum))
            except (ValueError, OSError):
                pass
        for tid in list(self.stopped):
            ptrace(PTRACE_DETACH, tid, self.stopped.pop(tid))
        for tid in list(self.running):
            # Seized but not stopped yet: PTRACE_DETACH needs a stopped tracee; wait a little for
            # the stop the interrupt asked for, else the kernel detaches it when tuidbg exits.
            self.running.discard(tid)
            if self._wait_one(tid, 0.2):
                ptrace(PTRACE_DETACH, tid, self.stopped.pop(tid, 0))
        for s, h in self._old_handlers.items():
            try:
                signal.signal(s, h)
            except (ValueError, OSError, TypeError):
                pass
        self._old_handlers = {}
        if pending:
            raise Signalled(pending[0])

    # -- stopping ----------------------------------------------------------------------------

    def _freeze(self):
        seen = set()
        while True:
            new = [t for t in list_threads(self.pid) if t not in seen]
            if not new:
                break
            for tid in new:
                seen.add(tid)
                err = ptrace(PTRACE_SEIZE, tid)
                if err == errno.ESRCH or (err == errno.EPERM and (self.stopped or self.running or not alive(self.pid, tid))):
                    # The thread exited meanwhile, or is exiting: that refuses with EPERM, the only
                    # reason left for it once another thread of the process was seized.
                    continue
                if err:
                    raise FreezeError("cannot stop thread %d of process %d: %s" % (tid, self.pid, os.strerror(err)), err)
                self.running.add(tid)
                if ptrace(PTRACE_INTERRUPT, tid):
                    self.running.discard(tid)  # gone between the two calls
                    self.exited.add(tid)
            self._wait_stops()
        if self.pid in self.exited or (not self.stopped and not self.running):
            raise ProcessGone("process %d exited while its stacks were being read" % self.pid)
        self.tids = [t for t in list_threads(self.pid) if t in self.stopped or t in self.running]

    def _note(self, tid, status):
        if os.WIFSTOPPED(status):
            sig = os.WSTOPSIG(status)
            event = status >> 16
            # PTRACE_EVENT_STOP: the interrupt's stop, or a group stop (a process stopped by
            # SIGSTOP stays stopped after). Event 0: a signal was on its way to the thread (a
            # signal-delivery stop): it is handed back at detach, as if tuidbg had not been there.
            keep = sig if event == 0 else 0
            self.running.discard(tid)
            self.stopped[tid] = keep
        elif os.WIFEXITED(status) or os.WIFSIGNALED(status):
            self.running.discard(tid)
            self.stopped.pop(tid, None)
            self.exited.add(tid)

    def _wait_stops(self):
        if not self.running:
            return
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, self.timeout)
        try:
            # one thread at a time (never -1: a caller's own children are not ours to reap); each
            # was interrupted already, so they stop meanwhile
            for tid in sorted(self.running):
                try:
                    got, status = os.waitpid(tid, WALL)
                except ChildProcessError:
                    self.running.discard(tid)
                    continue
                self._note(got, status)
        except _Timeout:
            pass  # threads asleep in the kernel: read as they are (they run no Python code)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)

    def _wait_one(self, tid, timeout):
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            while True:
                try:
                    got, status = os.waitpid(tid, WALL)
                except ChildProcessError:
                    return False
                self._note(got, status)
                if got == tid:
                    return tid in self.stopped
        except _Timeout:
            return False
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
