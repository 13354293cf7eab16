"""settrace backend (CPython 3.9-3.11): trace only where breakpoints and steps are.

With no breakpoint, no step and no exception filter, nothing is installed: the
program runs at full speed.

With breakpoints, on x86-64 a native frame filter (``_framefilter``) tells when
a thread enters a code object holding a breakpoint; only then, and only on that
thread, is a trace function set, and it is removed when the last such frame on
the thread returns. Code that cannot reach a breakpoint line runs untraced.

Elsewhere (aarch64, or another tool owns the frame evaluation function), and
while raised-exception filters are on, every thread gets the global trace
function; it answers each ``call`` with one dictionary lookup and only frames
whose code holds a breakpoint (or that a step is about) get the local trace
function. ``sys.settrace`` reaches the calling thread only; the other threads
of the process get it through ``_PyEval_SetTrace(tstate, trampoline, func)``
for each thread state (exported by 3.9-3.11; the trampoline is read back from
the calling thread's state after ``sys.settrace``), which is what 3.12's
``PyEval_SetTraceAllThreads`` does, and new threads through
``threading.settrace``.

``TUIDBG_AGENT_FRAMEFILTER=0`` in the program's environment turns the frame
filter off (every thread traced, as on aarch64).
"""

import _thread
import ctypes
import os
import sys
import threading

from . import protocol as P
from ._asyncio_steps import suspends
from ._framefilter import FrameFilter, FrameFilterError, available as _filter_available
from ._registry import AGENT_PREFIX, run_by_agent as _run_by_agent


class _CrossThread(object):
    """Set a Python trace function on every thread state of the interpreter."""

    def __init__(self):
        self.ok = False
        self.error = None
        try:
            api = ctypes.pythonapi
            self._set = api._PyEval_SetTrace
            self._set.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.py_object]
            self._set.restype = ctypes.c_int
            self._clear = api["_PyEval_SetTrace"]  # a second function object: NULL trace object
            self._clear.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
            self._clear.restype = ctypes.c_int
            self._head = api.PyInterpreterState_ThreadHead
            self._head.argtypes = [ctypes.c_void_p]
            self._head.restype = ctypes.c_void_p
            self._next = api.PyThreadState_Next
            self._next.argtypes = [ctypes.c_void_p]
            self._next.restype = ctypes.c_void_p
            self._get = api.PyThreadState_Get
            self._get.restype = ctypes.c_void_p
            self._interp = api.PyInterpreterState_Get
            self._interp.restype = ctypes.c_void_p
            self.trampoline = self._find_trampoline()
            self.ok = self.trampoline is not None
            if not self.ok:
                self.error = "cannot find CPython's trace trampoline"
        except (AttributeError, OSError, ValueError) as exc:
            self.error = str(exc)

    def _find_trampoline(self):
        ts = self._get()
        words = (ctypes.c_void_p * 48).from_address(ts)
        old = sys.gettrace()

        def probe(frame, event, arg):
            return None

        sys.settrace(probe)
        try:
            on = list(words)
        finally:
            sys.settrace(old)
        sys.settrace(None)
        try:
            off = list(words)
        finally:
            sys.settrace(old)
        # PyThreadState: ... c_profilefunc, c_tracefunc, c_profileobj, c_traceobj ...
        for i, w in enumerate(on):
            if w == id(probe) and i >= 2 and on[i - 2] and not off[i - 2] and not off[i]:
                return on[i - 2]
        return None

    def set_all(self, func):
        """Set ``func`` (or nothing) as the trace function of every other thread."""
        me = self._get()
        ts = self._head(self._interp())
        while ts:
            if ts != me:
                if func is None:
                    self._clear(ts, None, None)
                else:
                    self._set(ts, self.trampoline, func)
            ts = self._next(ts)


class SettraceBackend(object):
    name = "settrace"

    def __init__(self, agent):
        self.agent = agent
        self.cache = {}  # id(code) -> (code, local tracer or None)
        self.mode = None  # None (nothing installed), "filter" or "global"
        self.closed = False
        self.note = None
        self._cross = None
        self._filter = None
        self._traced = set()  # threads (ident) with a breakpoint frame on their stack
        # Keep the exact callables alive: CPython holds a borrowed reference while one runs.
        self._g = self._global
        self._gs = self._global_step
        self._l = self._local
        self._prof = self._profile
        self._step = None
        self._step_frames = []
        if _filter_available() and os.environ.get("TUIDBG_AGENT_FRAMEFILTER", "1") != "0":
            try:
                self._filter = FrameFilter(self._filter_classify)
                self.name = "settrace+framefilter"
            except FrameFilterError as exc:
                self.note = "frame filter unavailable: %s" % exc

    # -- installing ----------------------------------------------------------------------------

    def _cross_thread(self):
        if self._cross is None:
            self._cross = _CrossThread()
            if not self._cross.ok:
                self.note = "running threads cannot be traced (%s); new threads can" % self._cross.error
        return self._cross

    def _wanted_mode(self):
        a = self.agent
        if not a.bp_index and not a.opts["raise"] and a.step is None:
            return None
        if a.opts["raise"]:
            return "global"  # every frame may raise: every frame needs a tracer
        if self._filter is not None and self._filter.broken is None:
            return "filter"
        return "global"

    def _set_mode(self, mode):
        if mode == self.mode:
            return
        old = self.mode
        self.mode = mode
        if old == "global":
            threading.settrace(None)
            cross = self._cross_thread()
            if cross.ok:
                cross.set_all(None)
            sys.settrace(None)
        if old == "filter" and self._filter is not None:
            self._filter.uninstall()
        if mode is None:
            self._traced = set()
            self._clear_frames()
            if old == "filter" and self._cross is not None and self._cross.ok:
                self._cross.set_all(None)
            if sys.gettrace() in (self._g, self._gs):
                sys.settrace(None)
        elif mode == "global":
            cross = self._cross_thread()
            if cross.ok:
                cross.set_all(self._g)
            threading.settrace(self._g)
            sys.settrace(self._g)
        elif mode == "filter":
            try:
                self._filter.install()
            except FrameFilterError as exc:
                self._filter.broken = str(exc)
                self.mode = None
                self._set_mode("global")

    def _clear_frames(self):
        for top in list(sys._current_frames().values()):
            f = top
            while f is not None:
                if f.f_trace is self._l:
                    f.f_trace = None
                f = f.f_back

    def refresh(self):
        if self.closed:
            return
        self.cache = {}
        self._set_mode(self._wanted_mode())
        if self.mode is None:
            return
        if self.mode == "filter":
            if self._filter.broken is not None:
                self._set_mode("global")
            else:
                self._filter.clear()
                if not self._filter.installed:  # someone replaced it since
                    self.note = "another tool replaced the frame evaluation function; tracing every thread"
                    self._filter.broken = self.note
                    self._set_mode("global")
        # Frames already running code that now holds a breakpoint get the local tracer, and their
        # threads a trace function.
        agent = self.agent
        traced = set()
        me = _thread.get_ident()
        for ident, top in list(sys._current_frames().items()):
            f = top
            while f is not None:
                if agent.bp_lines_for_code(f.f_code):
                    f.f_trace = self._l
                    f.f_trace_lines = True
                    traced.add(ident)
                f = f.f_back
        self._traced = traced
        if self.mode == "filter":
            if traced - {me}:
                cross = self._cross_thread()
                if cross.ok:
                    cross.set_all(self._g)  # threads with nothing to trace drop it at their next call
            if me in traced or (self.agent.step is not None and self.agent.step.thread == me):
                if sys.gettrace() not in (self._g, self._gs):
                    sys.settrace(self._g)
            elif sys.gettrace() is self._g:
                sys.settrace(None)

    def close(self):
        if self.closed:
            return
        self.end_step()
        self.cache = {}
        self._set_mode(None)
        cross = self._cross_thread()  # threads that got a tracer on their own (the frame filter) too
        if cross.ok:
            cross.set_all(None)
        if self._filter is not None:
            self._filter.uninstall()
        self.closed = True

    # -- the frame filter's question --------------------------------------------------------------

    def _filter_classify(self, code):
        """A thread is about to run ``code``: does it hold a breakpoint? If so, trace this thread."""
        if self.mode != "filter" or not self.agent.bp_lines_for_code(code):
            return False
        if sys.gettrace() not in (self._g, self._gs):
            sys.settrace(self._g)
        self._traced.add(_thread.get_ident())
        return True

    def _drop_if_idle(self, frame=None):
        """Filter mode: turn tracing off on this thread if no breakpoint frame or step needs it."""
        if self.mode != "filter":
            return
        me = _thread.get_ident()
        st = self.agent.step
        if st is not None and st.thread == me:
            return
        if frame is not None:
            f = frame.f_back
            while f is not None:
                if self.agent.bp_lines_for_code(f.f_code):
                    return
                f = f.f_back
        elif me in self._traced:
            return
        self._traced.discard(me)
        sys.settrace(None)

    # -- trace functions --------------------------------------------------------------------------

    def _classify(self, frame):
        code = frame.f_code
        agent = self.agent
        tracer = None
        if not code.co_filename.startswith(AGENT_PREFIX):
            if agent.bp_lines_for_code(code):
                tracer = self._l
            elif agent.opts["raise"]:
                tracer = self._l
        if len(self.cache) > 200000:
            self.cache = {}
        self.cache[id(code)] = (code, tracer)
        return tracer

    def _global(self, frame, event, arg):
        if self.mode is None:
            sys.settrace(None)  # left over on this thread from before everything was switched off
            return None
        hit = self.cache.get(id(frame.f_code))
        if hit is not None and hit[0] is frame.f_code:
            tracer = hit[1]
        else:
            tracer = self._classify(frame)
        if tracer is None:
            if self.mode == "filter" and _thread.get_ident() not in self._traced:
                self._drop_if_idle()
            return None
        if not self.agent.bp_lines_for_code(frame.f_code):
            frame.f_trace_lines = False  # exception events only
        elif self.mode == "filter":
            self._traced.add(_thread.get_ident())
        return tracer

    def _global_step(self, frame, event, arg):
        """The stepping thread's global tracer during "step into": every new frame is a candidate."""
        st = self.agent.step
        if st is not None and _thread.get_ident() == st.thread and not _run_by_agent(frame):
            if self.agent.step_alive(st):
                st.frame = None  # stop on the first line of this new frame
                frame.f_trace_lines = True
                return self._l
        elif st is None or _thread.get_ident() != st.thread:
            sys.settrace(self._g)  # the step ended elsewhere: this thread goes back to the plain tracer
        return self._global(frame, event, arg)

    def _keep(self, frame):
        # None keeps the frame's trace function as it is now (cleared if tracing was just switched off).
        return self._l if self.mode is not None and frame.f_trace is self._l else None

    def _local(self, frame, event, arg):
        agent = self.agent
        st = agent.step
        if st is not None and _thread.get_ident() == st.thread:
            if not agent.step_alive(st):
                st = None
        else:
            st = None
        if event == "line":
            if st is not None and not st.leaving and (st.frame is None or frame is st.frame):
                agent.step_stop(frame)
                return self._keep(frame)
            if st is not None:
                st.unwinding = False
            lines = agent.bp_lines_for_code(frame.f_code)
            if lines and frame.f_lineno in lines:
                agent.on_bp_line(frame, frame.f_lineno)
        elif event == "opcode":
            if st is not None and frame is st.frame and not st.leaving:
                if st.native_first is not None and not st.native_reported:
                    agent.native_next(st, frame, st.native_first)  # (before the line's first instruction)
                elif (st.after_return or agent.want_return_to_python(st)) and not st.unwinding:
                    # (an exception out of the call: at the handler's line, not at its first instruction,
                    # which 3.11 gives no line of its own)
                    agent.step_stop(frame)
        elif event == "return":
            if st is not None and frame is st.frame and not st.unwinding and suspends(frame) \
                    and agent.step_suspends(st, frame):
                pass  # (waits for the frame to resume: an await, a yield)
            elif st is not None and (frame is st.frame or st.frame is None):
                agent.step_returned(st, frame, unwinding=st.unwinding)
            elif self.mode == "filter" and agent.bp_lines_for_code(frame.f_code):
                self._drop_if_idle(frame)
        elif event == "exception":
            # (a StopIteration without a traceback is the value of an awaited coroutine or of a `yield from`
            # coming back, which 3.9-3.11 report to the awaiting frame as an exception: nothing leaves it)
            if st is not None and frame is st.frame and not (arg[2] is None and issubclass(arg[0], StopIteration)):
                st.unwinding = True
            if agent.opts["raise"] and arg[2] is not None and arg[2].tb_next is None:
                if arg[2].tb_frame is frame and agent.exception_matches(arg[1], frame):
                    agent.stop_exception(P.R_EXCEPTION, arg[1], None, frame=frame)
        return self._keep(frame)

    def _profile(self, frame, event, arg):
        """During "step into native": 'c_call' names the builtin about to run."""
        st = self.agent.step
        if st is None or _thread.get_ident() != st.thread:
            sys.setprofile(None)  # the step ended on another thread; stop profiling this one
            return
        if event != "c_call":
            return
        if (st.mode == P.M_NATIVE and not st.native_reported
                and not frame.f_code.co_filename.startswith(AGENT_PREFIX) and self.agent.step_alive(st)):
            self.agent.native_call(st, frame, arg)

    # -- stepping ---------------------------------------------------------------------------------

    def _trace_frame(self, frame):
        frame.f_trace = self._l
        frame.f_trace_lines = True
        frame.f_trace_opcodes = True  # the instruction after a call returns (native -> Python)
        self._step_frames.append(frame)

    def start_step(self, st, frames):
        """Arm a step: ``frames`` get the local tracer with line and instruction events."""
        if self.closed:
            return
        self._step = st
        self._set_mode(self._wanted_mode())
        for f in frames:
            self._trace_frame(f)
        if _thread.get_ident() == st.thread:
            if st.mode == P.M_INTO:
                sys.settrace(self._gs)
            elif sys.gettrace() not in (self._g, self._gs):
                sys.settrace(self._g)
            if st.mode == P.M_NATIVE:
                sys.setprofile(self._prof)
        else:
            cross = self._cross_thread()
            if cross.ok:
                # Every thread gets the stepping tracer; the others drop it at their next call.
                cross.set_all(self._gs if st.mode == P.M_INTO else self._g)

    def follow(self, st, frame):
        if self.closed:
            return
        self._trace_frame(frame)

    def end_step(self):
        st = self._step
        if st is None:
            return
        self._step = None
        for f in self._step_frames:
            f.f_trace_opcodes = False
            if not self.agent.bp_lines_for_code(f.f_code):
                f.f_trace_lines = bool(self.agent.bp_index)
        self._step_frames = []
        if _thread.get_ident() == st.thread:
            if sys.getprofile() is self._prof:
                sys.setprofile(None)
            if sys.gettrace() is self._gs:
                sys.settrace(self._g)
        wanted = self._wanted_mode()
        if wanted is None:
            self._set_mode(None)
        elif self.mode == "filter" and _thread.get_ident() == st.thread:
            f = sys._getframe(0)
            while f is not None and not self.agent.bp_lines_for_code(f.f_code):
                f = f.f_back
            if f is None:
                self._traced.discard(st.thread)
                sys.settrace(None)


