"""sys.monitoring backend (CPython 3.12+): only code objects holding breakpoints get events.

- Breakpoints: LINE is turned on for the code objects whose lines hold a
  breakpoint, and for nothing else. No event is on globally (on 3.12 any global
  event makes the interpreter run every code object instrumented, 10-30 % slower
  on tight loops). The code objects of a file with breakpoints are found
  (all code nested in them comes along through ``co_consts``):
  * when its code is executed later (the ``__main__`` script, an import,
    ``runpy``, ``exec``): the audit hook's ``exec`` event hands over the module's
    code object before it runs (the interpreter raises it for the main script
    too);
  * already loaded: function, generator and coroutine objects (``gc``) and the
    frames on every thread's stack (``sys._current_frames()``), when the table
    changes.
  A LINE callback on a line without a breakpoint returns DISABLE.
- Stepping: LINE, PY_RETURN, PY_YIELD, CALL (+ C_RETURN/C_RAISE) on the
  stepping frame's code (a coroutine that suspends at an ``await`` keeps the step: "next" stops at
  its next line when it resumes), INSTRUCTION on the caller's code after a return (to
  stop on the call line), PY_UNWIND globally, and PY_START globally for "step
  into". Events are per interpreter, so every callback filters on the stepping
  thread; while a step is on, nothing returns DISABLE.
- Raised exceptions filtered by type: RAISE globally while a filter is set.
- Threads really running together (free-threaded 3.13t/3.14t): the breakpoint
  table is swapped in one store, and no callback returns DISABLE (see
  ``_disable``). Every ``set_local_events``, ``set_events``, ``restart_events``
  and ``sys._current_frames()`` stops the world in such a build: done while the
  others run, never while gdb holds them.
"""

import _thread
import gc
import sys
import types

from . import protocol as P
from ._lines import canon, nested_codes
from ._registry import AGENT_PREFIX, run_by_agent as _run_by_agent

mon = sys.monitoring
_FREE_THREADED = not getattr(sys, "_is_gil_enabled", lambda: True)()  # (as core's FREE_THREADED)
E = mon.events
DISABLE = mon.DISABLE

_STEP_LOCAL = E.LINE | E.PY_RETURN | E.PY_YIELD | E.CALL | E.C_RETURN | E.C_RAISE


def _pick_tool():
    for tool in (mon.DEBUGGER_ID, 3, 4, 2):
        if mon.get_tool(tool) is None:
            mon.use_tool_id(tool, "tuidbg")
            return tool
    raise RuntimeError("all sys.monitoring tool ids are taken")


class MonitoringBackend(object):
    name = "sys.monitoring"

    def __init__(self, agent):
        self.agent = agent
        self.tool = _pick_tool()
        self.bp_codes = {}  # id(code) -> (code, frozenset of breakpoint lines)
        self.local = {}  # id(code) -> (code, events we set on it)
        self.step_codes = {}  # id(code) -> code, instrumented for the step in progress
        self.global_events = 0
        self.closed = False
        self.file_codes = {}  # canonical path of a file with breakpoints -> {id(code): code} found so far
        self._hooked = False  # the audit hook goes in with the first breakpoint (it cannot be taken out)
        self.hook_kind = None  # "native" (x86-64: only "exec" reaches Python) or "python"
        self._disabled = False  # a callback returned DISABLE since the last restart_events()
        self.table_gen = 0  # counts new breakpoint tables (a callback that saw an older one never disables)
        reg = mon.register_callback
        t = self.tool
        reg(t, E.PY_START, self._on_start)
        reg(t, E.PY_RESUME, self._on_start)
        reg(t, E.LINE, self._on_line)
        reg(t, E.INSTRUCTION, self._on_instruction)
        reg(t, E.PY_RETURN, self._on_return)
        reg(t, E.PY_YIELD, self._on_yield)
        reg(t, E.PY_UNWIND, self._on_unwind)
        reg(t, E.CALL, self._on_call)
        reg(t, E.C_RETURN, self._on_c_return)
        reg(t, E.C_RAISE, self._on_c_return)
        reg(t, E.RAISE, self._on_raise)

    # -- bookkeeping -----------------------------------------------------------------------------
    # Maps are keyed by id(code) and keep the code object alive: hashing a code object
    # costs about a microsecond, an int a tenth of that.

    def _set_local(self, code, events):
        hit = self.local.get(id(code))
        old = hit[1] if hit is not None else 0
        if events == old:
            return
        if events:
            self.local[id(code)] = (code, events)
        else:
            self.local.pop(id(code), None)
        try:
            mon.set_local_events(self.tool, code, events)
        except ValueError:
            pass

    def _wanted_local(self, code):
        ev = E.LINE if id(code) in self.bp_codes else 0
        st = self.agent.step
        if st is not None and id(code) in self.step_codes:
            ev |= _STEP_LOCAL
            if st.frame is not None and st.frame.f_code is code and (
                    st.after_return or st.native_first is not None and not st.native_reported):
                ev |= E.INSTRUCTION
        return ev

    def _update_globals(self):
        ev = 0
        agent = self.agent
        if agent.opts["raise"]:
            ev |= E.RAISE
        st = agent.step
        if st is not None:
            ev |= E.PY_UNWIND
            if st.mode in (P.M_INTO, P.M_NATIVE):
                ev |= E.PY_START | E.PY_RESUME
        if ev != self.global_events:
            self.global_events = ev
            mon.set_events(self.tool, ev)

    def _note_bp_code(self, code):
        lines = self.agent.bp_lines_for_code(code)
        if lines:
            self.bp_codes[id(code)] = (code, lines)
            self._set_local(code, self._wanted_local(code))

    def _note_file_code(self, code, path):
        """``code`` (and the code nested in it) belongs to ``path``, a file with breakpoints."""
        known = self.file_codes.setdefault(path, {})
        for c in nested_codes(code):
            if id(c) not in known:
                known[id(c)] = c
                self._note_bp_code(c)

    def _on_exec(self, args):
        # The audit event "exec": code about to run (the __main__ script, an import, exec()).
        if self.closed or not self.agent.bp_index:
            return
        try:
            code = args[0]
            if type(code) is types.CodeType:
                path = canon(code.co_filename, self.agent._cwd)
                if path in self.agent.bp_index:
                    self._note_file_code(code, path)
        except Exception:
            pass  # never into the program

    def _scan(self, paths):
        """Code of these files that is loaded already: functions, generators, coroutines."""
        for obj in gc.get_objects():
            t = type(obj)
            if t is types.FunctionType:
                code = obj.__code__
            elif t in _GEN_TYPES:
                code = getattr(obj, _GEN_TYPES[t], None)
                if code is None:
                    continue
            else:
                continue
            path = canon(code.co_filename, self.agent._cwd)
            if path in paths:
                self._note_file_code(code, path)

    def refresh(self):
        """The breakpoint table or the exception options changed."""
        if self.closed:
            return
        files = set(self.agent.bp_index)
        if files and not self._hooked:
            from ._auditexec import install

            self.hook_kind = install(self._on_exec)
            self._hooked = True
        for path in list(self.file_codes):
            if path not in files:
                del self.file_codes[path]
        new_files = {f for f in files if f not in self.file_codes}
        for f in new_files:
            self.file_codes[f] = {}
        if new_files:
            self._scan(new_files)
        codes = {}
        for code, _ev in list(self.local.values()):
            codes[id(code)] = code
        for known in self.file_codes.values():
            codes.update(known)
        for top in list(sys._current_frames().values()):
            f = top
            while f is not None:
                codes[id(f.f_code)] = f.f_code
                f = f.f_back
        bp_codes = {}
        for code in codes.values():
            lines = self.agent.bp_lines_for_code(code)
            if lines:
                bp_codes[id(code)] = (code, lines)
        self.bp_codes = bp_codes  # in one store: a callback on another thread sees the old table or the new
        self.table_gen += 1
        for code in codes.values():
            self._set_local(code, self._wanted_local(code))
        self._update_globals()
        self._restart()

    def start_step(self, st, frames):
        """Arm a step: ``frames`` are the frames whose code must report lines and returns."""
        if self.closed:
            return
        self.step_codes = {}
        for f in frames:
            self._add_step_code(f.f_code)
        self._update_globals()
        self._restart()

    def _restart(self):
        """Events disabled by a callback come back (lines that now hold a breakpoint or a step). Only
        when some were disabled: on 3.12+ a restart makes every code object that runs afterwards pass
        through instrumentation once more (2 % of a pytest run)."""
        if self._disabled:
            self._disabled = False
            mon.restart_events()

    def _add_step_code(self, code):
        self.step_codes[id(code)] = code
        self._set_local(code, self._wanted_local(code))

    def follow(self, st, frame):
        """The step continues in ``frame`` (the caller of the frame that returned)."""
        if self.closed:
            return
        self._add_step_code(frame.f_code)

    def end_step(self):
        if self.closed:
            return
        codes = self.step_codes
        self.step_codes = {}
        for code in codes.values():
            self._set_local(code, self._wanted_local(code))
        self._update_globals()

    def close(self):
        if self.closed:
            return
        self.closed = True
        try:
            mon.set_events(self.tool, 0)
            for code, _ev in list(self.local.values()):
                mon.set_local_events(self.tool, code, 0)
            for ev in (E.PY_START, E.PY_RESUME, E.LINE, E.INSTRUCTION, E.PY_RETURN, E.PY_YIELD, E.PY_UNWIND,
                       E.CALL, E.C_RETURN, E.C_RAISE, E.RAISE):
                mon.register_callback(self.tool, ev, None)
            if hasattr(mon, "clear_tool_id"):  # 3.14: also drops local events on code we never saw again
                mon.clear_tool_id(self.tool)
            mon.free_tool_id(self.tool)
        except ValueError:
            pass
        self.local = {}
        self.bp_codes = {}

    # -- callbacks ---------------------------------------------------------------------------------

    def _stepping(self):
        st = self.agent.step
        if st is None or _thread.get_ident() != st.thread:
            return None
        if not self.agent.step_alive(st):
            return None
        return st

    def _on_start(self, code, offset):
        agent = self.agent
        st = agent.step
        if st is not None:
            if (st.mode in (P.M_INTO, P.M_NATIVE) and _thread.get_ident() == st.thread
                    and not _run_by_agent(sys._getframe(1)) and agent.step_alive(st)):
                # A new frame on the stepping thread. "into": stop on its first line. "native": watch its
                # calls too, and stop on its first line only if control came back from native code.
                self._add_step_code(code)
                if st.mode == P.M_INTO or agent.want_return_to_python(st):
                    st.frame = None
            if id(code) not in self.bp_codes:
                self._note_bp_code(code)
            return None
        gen = self.table_gen
        if id(code) not in self.bp_codes:
            self._note_bp_code(code)
        return self._disable(gen)

    def _disable(self, gen):
        """DISABLE, unless the breakpoint table changed since the callback began (``gen``): another
        thread put in a table this callback has not seen, and ran ``restart_events`` already; disabling
        now would hide a new breakpoint until the next one. With a GIL nothing between this test and the
        interpreter's handling of DISABLE lets the refresh's ``restart_events`` in.

        Free-threaded: never DISABLE. The interpreter handles a DISABLE in a stop-the-world of its own,
        which waits for one under way: the refresh's ``restart_events`` could come in between, and a
        DISABLE decided under the old table then removed a new breakpoint's line for good (a breakpoint
        set while eight threads spin on its line never fired: tests/agent/test_agent_threads8.py, 1 run
        in 18 under load). The cost: the lines of a code object that holds a breakpoint call back each
        time they run in such a build (only those code objects have LINE on)."""
        if _FREE_THREADED:
            return None
        self._disabled = True
        if gen != self.table_gen:
            return None
        return DISABLE

    def _on_line(self, code, line):
        agent = self.agent
        gen = self.table_gen
        st = agent.step
        if st is not None and _thread.get_ident() == st.thread and id(code) in self.step_codes:
            st = self._stepping()
            if st is not None:
                frame = sys._getframe(1)
                if st.leaving and frame is st.frame:
                    pass  # step out: not until this frame has returned
                elif st.frame is None or frame is st.frame or st.mode == P.M_INTO and not _is_agent(frame):
                    agent.step_stop(frame)
                    return None
        hit = self.bp_codes.get(id(code))
        if hit is not None and line in hit[1]:
            agent.on_bp_line(sys._getframe(1), line)
            return None
        if agent.step is None:
            return self._disable(gen)
        return None

    def _on_instruction(self, code, offset):
        st = self._stepping()
        if st is not None and st.native_first is not None and not st.native_reported:
            frame = sys._getframe(1)
            if frame is st.frame:
                self.agent.native_next(st, frame, st.native_first)  # (before the line's first instruction)
            return None
        if st is not None and st.after_return and not st.leaving:
            frame = sys._getframe(1)
            if frame is st.frame:
                self.agent.step_stop(frame)
        return None

    def _on_return(self, code, offset, retval):
        st = self._stepping()
        if st is not None:
            frame = sys._getframe(1)
            if frame is st.frame or st.frame is None:
                self.agent.step_returned(st, frame)
        return None

    def _on_yield(self, code, offset, retval):
        st = self._stepping()
        if st is not None:
            frame = sys._getframe(1)
            if frame is st.frame and self.agent.step_suspends(st, frame):
                return None  # (waits for the frame to resume: an await, a yield)
            if frame is st.frame or st.frame is None:
                self.agent.step_returned(st, frame)
        return None

    def _on_unwind(self, code, offset, exc):
        st = self._stepping()
        if st is not None:
            frame = sys._getframe(1)
            if frame is st.frame:
                self.agent.step_returned(st, frame, unwinding=True)
        return None

    def _on_call(self, code, offset, callable_, arg0):
        st = self._stepping()
        if st is not None and st.mode == P.M_NATIVE and not st.native_reported:
            frame = sys._getframe(1)
            if not _is_agent(frame):  # the stepping frame or one it called
                self.agent.native_call(st, frame, callable_)
        return None

    def _on_c_return(self, code, offset, callable_, arg0):
        st = self._stepping()
        if st is not None and self.agent.want_return_to_python(st):
            frame = sys._getframe(1)
            if frame is st.frame:
                self.agent.step_stop(frame, {"returned_from": getattr(callable_, "__name__", None)})
        return None

    def _on_raise(self, code, offset, exc):
        agent = self.agent
        if agent.opts["raise"]:
            frame = sys._getframe(1)
            if not _is_agent(frame) and agent.exception_matches(exc, frame):
                agent.stop_exception(P.R_EXCEPTION, exc, None, frame=frame)
        return None


_GEN_TYPES = {types.GeneratorType: "gi_code", types.CoroutineType: "cr_code", types.AsyncGeneratorType: "ag_code"}


def _is_agent(frame):
    return frame.f_code.co_filename.startswith(AGENT_PREFIX)
