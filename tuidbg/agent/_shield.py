"""The SIGTRAP shield: a process whose debugger vanished does not die of a trap meant for it.

A debugger that is killed (``kill -9`` of gdb, or of tuidbg and then gdb) leaves its processes to
the kernel, which detaches them and delivers to each thread the signal it was stopped with. A
thread that stopped at a trap (the agent's own ``int3``, one of gdb's breakpoints) then gets its
SIGTRAP, whose default action ends the process. Likewise an ``int3`` run while nobody traces the
process: the agent's stop function called in the moment a debugger let go of it, or a breakpoint
instruction gdb left in the code when it was killed while the program ran.

While the agent is loaded, a handler for SIGTRAP written in machine code (x86-64, in the stop
function's page, ``_stub``; installed with ``sigaction`` through ctypes: no Python runs in it, and
CPython's own signal machinery is not involved) makes each of those survivable:

- a trap from the stop function (its ``int3``, or gdb's breakpoint on the plain one): return, to
  the ``ret`` after it; the agent sees its stop unanswered and switches itself off;
- a SIGTRAP delivered after the tracer died, at a pc that gdb moved back onto a breakpoint's
  address (all-stop gdb takes its breakpoints out at every stop): return, and the original
  instruction runs;
- an ``int3`` that gdb left in the code (it died with its breakpoints in): the byte it came from
  is watched, for up to 2 s, until tuidbg (``engine.rescue``, from ``/proc``) writes the original
  back; then the pc is moved back onto it, which runs as if nothing had happened;
- single-stepping (the trap flag) a dead tracer left on is switched off.

The boot scripts put it in place first thing, before the agent's own imports load libraries (gdb
stops at each library load and steps over its breakpoint there), and only in a process a debugger
traces; where SIGTRAP has its default action (or is ignored): a program with its own handler keeps
it. It is taken out again when tuidbg detaches properly (gdb then passes
no SIGTRAP on); after a debugger that vanished, it stays for the life of the process (a SIGTRAP
sent to it later is then ignored instead of ending it), since a trap may still be on its way. A
forked child that no debugger keeps gets the disposition back at once.
"""

import _thread
import ctypes
import os
import signal
import threading
import time

from . import _stub
from ._native import traced as _traced

_SA_SIGINFO = 0x4
_SA_ONSTACK = 0x08000000
_SA_RESTART = 0x10000000
_SIG_DFL, _SIG_IGN = 0, 1


class _SigAction(ctypes.Structure):
    """glibc's (and musl's) ``struct sigaction`` on x86-64 Linux."""

    _fields_ = [
        ("handler", ctypes.c_void_p),
        ("mask", ctypes.c_ulong * 16),
        ("flags", ctypes.c_int),
        ("restorer", ctypes.c_void_p),
    ]


_lock = threading.Lock()
_original = []  # [the _SigAction SIGTRAP had before the shield was put in place]
_armed = [0]  # how many times the shield was put in place (a disarm meant for an earlier time does nothing)
_pending = [None]  # a generation to disarm once no thread holds the agent's stop lock
_fork_hook = []  # [True] once the fork hook is registered (it cannot be taken back)


def _sigaction(new):
    """Install ``new`` (or only read, with None); returns the action that was in force, or None."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).sigaction
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    old = _SigAction()
    if fn(int(signal.SIGTRAP), ctypes.byref(new) if new is not None else None, ctypes.byref(old)) != 0:
        return None
    return old


def current():
    """SIGTRAP's handler address now (0: default, 1: ignored), or None when it cannot be read."""
    old = _sigaction(None)
    return None if old is None else (old.handler or 0)


def handler_address():
    """The shield's handler in this process (0: none here)."""
    if not _stub.shield_available():
        return 0
    try:
        return _stub.page() + _stub.HANDLER_OFFSET
    except _stub.StubError:
        return 0


def armed():
    return bool(_original) and current() == handler_address() != 0


def generation():
    """Names the shield's current time in place, for ``disarm``."""
    return _armed[0]


def arm():
    """Put the shield in place (where SIGTRAP has its default action, or is ignored). True if it is."""
    handler = handler_address()
    if not handler:
        return False
    with _lock:
        now = _sigaction(None)
        if now is None:
            return False
        if (now.handler or 0) not in (_SIG_DFL, _SIG_IGN, handler):
            return False  # the program's own handler: left alone
        act = _SigAction()
        act.handler = handler
        act.flags = _SA_SIGINFO | _SA_ONSTACK | _SA_RESTART
        old = _sigaction(act)
        if old is None:
            return False
        if not _original:
            _original.append(old)
        _armed[0] += 1
        if not _fork_hook and hasattr(os, "register_at_fork"):
            _fork_hook.append(True)
            os.register_at_fork(after_in_child=_after_fork)
        return True


def _after_fork():
    """A forked child that no debugger keeps: nothing of the parent's debugger can reach it."""
    if _original and not _traced():
        disarm()


def arm_if_traced():
    """``arm`` in a process a debugger traces (a Python a program started anew loads the agent only then)."""
    return _traced() and arm()


def disarm(gen=None):
    """SIGTRAP's disposition as it was before the shield, if the shield is what is in force (and, with
    ``gen``, it was not put in place again since ``generation()`` said ``gen``)."""
    with _lock:
        if not _original or (gen is not None and gen != _armed[0]):
            return
        now = _sigaction(None)
        if now is not None and (now.handler or 0) == handler_address():
            _sigaction(_original[0])
        del _original[:]  # (the next arm reads what is in force then)


def disarm_after_detach(stop_lock):
    """tuidbg detaches properly (gdb passes no SIGTRAP on as it lets go): the shield comes out once gdb
    has let go of the process, and a moment later (a gdb killed while it detached has had its traps
    delivered by then). A bare thread waits for that: nothing of the program's sees it. ``stop_lock``:
    the agent's, which a thread holds from its check for a debugger to the stop function's ``int3``."""
    gen = generation()

    def wait():
        deadline = time.monotonic() + 300
        while _traced():
            if time.monotonic() > deadline:
                return  # (still traced: by another debugger, which may have an agent of its own here)
            time.sleep(0.02)
        time.sleep(0.25)
        _disarm_when_free(stop_lock, gen)

    _start_bare_thread(wait)


def _start_bare_thread(fn, timeout=5.0):
    """Run ``fn`` in a thread of ``_thread``'s (not in ``threading.enumerate()``), once it has started:
    as ``threading.Thread.start`` does, return only when the thread runs. A thread started just before
    the program ends (its main thread returning from the stop that said detach) and not yet running when
    the interpreter finalizes took its thread state from under it: CPython 3.11 then crashed in the new
    thread's start (``_PyThreadState_SetCurrent`` on a freed state, SIGSEGV after tuidbg let go)."""
    started = _thread.allocate_lock()
    started.acquire()

    def run():
        started.release()
        fn()

    try:
        _thread.start_new_thread(run, ())
    except RuntimeError:  # (the interpreter is finalizing: the process is ending)
        return
    started.acquire(True, timeout)


def _disarm_when_free(stop_lock, gen):
    """Disarm now, unless a thread is at the stop function: then the last one to leave it does it."""
    _pending[0] = gen
    if stop_lock.acquire(False):
        try:
            _pending[0] = None
            disarm(gen)
        finally:
            stop_lock.release()


def after_stop_lock(stop_lock):
    """Called by the agent as a thread lets go of its stop lock."""
    gen = _pending[0]
    if gen is not None:
        _disarm_when_free(stop_lock, gen)
