"""Evaluating Python at a native stop (SIGTRAP, ctrl+c, a native breakpoint, attach): ``pyprint``,
the watches and ``pylocals`` in a thread that stopped in C/C++ called from Python.

gdb writes the requests (``eval``, ``locals``, ``children``: the ops of an agent stop) into the
mailbox's input area, then calls :func:`eval_from_native` through a C function pointer (an inferior
call) in the selected thread. The front end calls it only where that thread holds the GIL (or, without
a GIL, is attached to the interpreter): ctypes' ``PyGILState_Ensure`` is then a no-op, and the thread
runs Python on top of the C frames it stopped in, as a C callback would. The frames are that thread's
own (``sys._getframe(1)`` is the Python frame that called into C), counted as the agent counts them.
The replies go to the mailbox's output area; gdb reads them once the call has returned.

*Bounded.* The expression runs the program's code (a ``__repr__``, a property). An exception is caught
and becomes the reply's error. An expression still running after ``timeout_ms`` gets an exception raised
in it (``PyThreadState_SetAsyncExc``, from a timer thread) at its next bytecode, so the call returns
with the error and the thread's Python state is as before. (gdb's own way to end a call, unwinding it
on a signal, would leave the interpreter's frame stack pointing into the unwound C stack.) A call blocked
in C (a lock another thread holds) ends when that thread releases it: the front end lets the
process's threads run during the call for that reason, and the agent's stop lock keeps their Python
stops from reaching gdb meanwhile.

Standard library only (runs in the target).
"""

import _thread
import ctypes
import sys
import threading
import time

from ._exceptions import user_frames

OPS = ("eval", "locals", "children")  # what may run at a native stop (not resume, set_bps, detach ...)
BUSY = 2  # another thread is stopping at a Python breakpoint (it holds the stop lock)


class EvaluationTimeout(Exception):
    """Raised in the evaluating thread when the expression runs past its time."""


def eval_from_native(agent, timeout_ms):
    """Run the mailbox's requests in the calling thread's Python frames; 1 when the replies are in the
    mailbox, 0 when the agent is off, BUSY. Never raises (a ctypes callback's exception would be printed
    in the program's stderr)."""
    try:
        if not agent._stop_lock.acquire(False):
            return BUSY
    except BaseException:
        return 0
    try:
        return _run(agent, timeout_ms)
    except BaseException as exc:  # (an EvaluationTimeout that came between two of our own lines)
        try:
            agent.mb.write_out({"replies": [{"op": "eval", "error": "%s: %s" % (type(exc).__name__, exc)}]})
        except BaseException:
            return 0
        return 1
    finally:
        agent._stop_lock.release()


class _Watchdog(object):
    """One daemon thread, started at the first evaluation, that raises EvaluationTimeout in an evaluation
    still running at its deadline (a thread a call starts would be left half-way through its exit when
    gdb stops the program at the call's end)."""

    def __init__(self):
        self.cond = threading.Condition(threading.Lock())
        self.job = None  # [deadline, ident, fired]
        self.thread = None

    def start(self, ident, seconds):
        with self.cond:
            if self.thread is None:
                self.thread = threading.Thread(target=self._loop, name="tuidbg-eval-watchdog", daemon=True)
                self.thread.start()
            job = self.job = [_monotonic() + seconds, ident, False]
            self.cond.notify()
        return job

    def finish(self, job):
        """The evaluation is over: True if its exception was raised meanwhile (withdrawn if not yet raised)."""
        with self.cond:
            if self.job is job:
                self.job = None
            fired = job[2]
        if fired:
            _async_exc(job[1], None)
        return fired

    def _loop(self):
        with self.cond:
            while True:
                job = self.job
                if job is None:
                    self.cond.wait()
                    continue
                left = job[0] - _monotonic()
                if left > 0:
                    self.cond.wait(left)
                    continue
                job[2] = True
                self.job = None
                _async_exc(job[1], EvaluationTimeout)


_watchdog = _Watchdog()


def _monotonic():
    return time.monotonic()


def _run(agent, timeout_ms):
    if not agent.enabled:
        return 0
    ident = _thread.get_ident()
    saved_frames, saved_answering = agent.stop_frames, agent._answering
    busy = agent._busy.get(ident)
    agent._busy[ident] = True  # (no Python stop in this thread while it evaluates: it holds the stop lock)
    job = None
    fired = False
    replies = []
    try:
        try:
            agent.stop_frames = user_frames(sys._getframe(1))
            msg = agent.mb.read_in()
            ops = [op for op in msg.get("ops", []) if isinstance(op, dict) and op.get("op") in OPS]
            if timeout_ms > 0:
                job = _watchdog.start(ident, timeout_ms / 1000.0)
            agent._answering = ident
            replies = agent.handle_ops(ops, stopped=True)[0]
        finally:
            if job is not None:
                fired = _watchdog.finish(job)
            agent.stop_frames, agent._answering = saved_frames, saved_answering
            if busy is None:
                agent._busy.pop(ident, None)
            else:
                agent._busy[ident] = busy
    except EvaluationTimeout:
        fired = True
    if fired:
        text = "the expression did not finish within %.3g s, and was stopped" % (timeout_ms / 1000.0)
        replies = [dict(r, error=text) if "EvaluationTimeout" in str(r.get("error", "")) else r for r in replies]
        if not replies:
            replies = [{"op": "eval", "error": text}]
    agent.mb.write_out({"replies": replies})
    return 1


_SET = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(("PyThreadState_SetAsyncExc", ctypes.pythonapi))
_CLEAR = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(("PyThreadState_SetAsyncExc", ctypes.pythonapi))


def _async_exc(ident, exc):
    """Raise ``exc`` in thread ``ident`` at its next bytecode (None: withdraw one not raised yet). Private
    prototypes: ``ctypes.pythonapi``'s own function objects are the program's too."""
    if exc is None:
        _CLEAR(ident, None)
    else:
        _SET(ident, exc)
