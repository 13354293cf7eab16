"""The agent proper: breakpoints, stepping, stops, and the conversation with the front end.

Runs inside the debugged Python (3.9-3.14), standard library only. See
``tuidbg/agent/__init__.py`` for the whole design; in short:

- the front end listens on a Unix socket; the agent connects, says hello (pid,
  Python version, the stop function's address, the mailbox's address) and
  waits for the breakpoint table before the program's own code runs;
- a stop calls the stop function (``_stub``) that gdb has a breakpoint on,
  with the stop described in the mailbox's out area;
- while stopped, gdb writes the answer (resume mode, new breakpoints, an
  expression to evaluate) into the mailbox's in area;
- while running, changes arrive on the socket and a daemon thread applies them.

Its parts: ``_native`` (the mailbox, ctypes look-ups, thread ids), ``_stub`` (the
stop function), ``_breakpoints`` (the breakpoint table), ``_exceptions`` (which
exceptions stop, and what such a stop shows), the backends ``_monitoring`` (3.12+)
and ``_settrace``. ``_registry`` holds the running agent: the backends, ``api`` and
``pytest_plugin`` find it there and never import this module.

About 920 lines, over the project's 600: the stop protocol (stop, answer, resume, arm a step,
the free-threaded deferrals) reads as one piece, and the entry points at the end (start, the
fork hook that gives a child kept by ``tuidbg run --children`` an agent of its own) make and
remake the Agent; what stands alone lives in the modules above.
"""

import _thread
import gc
import itertools
import json
import os
import socket
import sys
import threading
import time

from . import _follow, _registry, _shield
from . import protocol as P
from ._asyncio_steps import SUSPENDING, awaiter_frame
from ._breakpoints import Breakpoints
from ._exceptions import describe, frames_of, matches, safe_repr, user_frames
from . import _across, _native_eval, _values
from ._lines import canon
from ._native import (
    Mailbox,
    arm_callback,
    eval_callback,
    ident_of_native,
    lineno,
    main_native_id,
    native_entry,
    thread_name,
    thread_names,
    traced,
)
from ._registry import AGENT_DIR, is_agent_code
from ._stub import StubError, make_stub, traps_available

_HELLO_TIMEOUT = 120.0
# A free-threaded build (3.13t/3.14t) running without the GIL: Python threads really run together.
FREE_THREADED = not getattr(sys, "_is_gil_enabled", lambda: True)()
_DEBUG = bool(os.environ.get("TUIDBG_AGENT_DEBUG"))  # a few lines on stderr about what the agent does


def _json_or_none(raw):
    try:
        return json.loads(raw.decode("utf-8"))
    except ValueError:
        return None


def _clean_detach(msg):
    """Whether a message from tuidbg holds its proper detach (gdb lets go itself: no trap on its way)."""
    ops = msg.get("ops") if isinstance(msg, dict) else None
    return isinstance(ops, list) and any(isinstance(op, dict) and op.get("op") == "detach" and op.get("clean")
                                         for op in ops)


def _debug(text):
    if _DEBUG:
        sys.stderr.write("tuidbg agent: %s\n" % text)


def _qualname(code):
    return getattr(code, "co_qualname", None) or code.co_name


def _value_text(value, limit):
    """A torch value's line (no user code runs), else the repr."""
    line = _values.describe(value)
    return line[:limit] if line is not None else safe_repr(value, limit)


class Step(object):
    __slots__ = ("mode", "thread", "frame", "token", "after_return", "native_reported", "codes", "unwinding",
                 "leaving", "entry", "reason", "native_first")

    def __init__(self, mode, thread, frame, token):
        self.mode = mode
        self.thread = thread
        self.frame = frame  # the frame the step is about (moves to the caller on return)
        self.token = token
        self.after_return = False  # the frame returned: stop at the caller's next instruction
        self.native_reported = False
        self.unwinding = False  # settrace: an exception is leaving the frame
        self.codes = set()  # code objects the backend instrumented for this step
        self.leaving = mode == P.M_OUT  # step out: no stop in ``frame`` itself, only once it returned
        self.entry = False  # the stop at entry: the first line of the __main__ module
        self.reason = P.R_STEP  # what its stop says it is (set_trace: the breakpoint() that armed it)
        self.native_first = None  # "step into native": (addr, name) the line's first operator runs (_operators)


class Agent(object):
    def __init__(self, sock, how):
        self.sock = sock
        self.how = how  # "run", "attach" or "fork" (a child gdb kept)
        self.enabled = True
        self.error = None
        self.mb = Mailbox()
        self.stub_traps = False
        self.shielded = False
        try:
            self.stub_traps = bool(_children) and traps_available()
            self.stub_addr, self._stub = make_stub(self.stub_traps)
            # no trap meant for the debugger ends the process if the debugger vanishes (``_shield``;
            # the boot scripts put it in place already, a fork has its parent's)
            self.shielded = _shield.arm()
        except StubError as exc:
            self.stub_addr, self._stub = 0, None
            self.error = str(exc)
        self._cwd = os.getcwd()
        self.bpt = Breakpoints(self._cwd, self._verified_late)
        self.opts = {"uncaught": False, "raise": (), "failure": False}
        self._entry = False  # stop at the first line of the __main__ module (the "entry" request)
        self.step = None
        self.stop_frames = []
        self._busy = {}
        self._answering = None  # the thread answering a stop (its requests run while gdb holds the others)
        self._refresh_pending = False
        self._stop_lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._hooks_lock = threading.Lock()
        self._seq = 0
        self.control_native_id = None
        self._prev_excepthook = None
        self._prev_thread_excepthook = None
        self._prev_breakpointhook = None
        # "Python step from a native stop" (SIGTRAP, a native breakpoint, an interrupt): gdb calls this
        # C function pointer in the stopped thread, which holds the GIL then (tuidbg returns it to the
        # eval loop first), to arm a step in that thread's Python frame. ctypes callbacks take the GIL
        # with PyGILState_Ensure, which is a no-op for the thread that holds it.
        self._arm_cb, self.arm_addr = arm_callback(self._arm_from_native)
        # pyprint / watches at a native stop: gdb calls this one in the stopped thread that holds the GIL
        self._eval_cb, self.eval_addr = eval_callback(lambda ms: _native_eval.eval_from_native(self, ms))
        if sys.version_info >= (3, 12):
            from ._monitoring import MonitoringBackend as B
        else:
            from ._settrace import SettraceBackend as B
        self.backend = B(self)

    # -- start-up ----------------------------------------------------------------------

    def hello(self, token):
        return {
            "ev": "hello",
            "token": token,
            "pid": os.getpid(),
            "python": "%d.%d.%d" % sys.version_info[:3],
            "hexversion": sys.hexversion,
            "implementation": sys.implementation.name,
            "executable": sys.executable,
            "backend": self.backend.name,
            "stub": self.stub_addr,
            "stub_traps": self.stub_traps,
            "arm": self.arm_addr,
            "eval": self.eval_addr,
            "mailbox": self.mb.addr,
            "mailbox_size": P.MAILBOX_SIZE,
            "agent_dir": AGENT_DIR,
            "how": self.how,
            "free_threaded": FREE_THREADED,
            "main_native_id": main_native_id(),
            "error": self.error,
        }

    def handshake(self, token):
        """Start the agent's thread, which says hello and applies the front end's first answer (the
        breakpoints); wait for that. True if the front end answered. The thread is the only reader
        of the socket from then on."""
        self._ready = threading.Event()
        self._answered = False
        t = threading.Thread(target=self._control_loop, args=(token,), name=P.AGENT_THREAD_NAME, daemon=True)
        t.start()
        self._ready.wait(_HELLO_TIMEOUT)
        return self._answered and not self.error

    def install_hooks(self):
        """The exception and breakpoint() hooks. Under the hooks lock, and only while enabled: a detach
        that came in while the main thread finished the handshake must not find them installed after."""
        with self._hooks_lock:
            if self.enabled:
                self._install_hooks()

    def _install_hooks(self):
        self._prev_excepthook = sys.excepthook
        sys.excepthook = self._excepthook
        self._prev_thread_excepthook = threading.excepthook
        threading.excepthook = self._thread_excepthook
        if not os.environ.get("PYTHONBREAKPOINT") and getattr(sys.breakpointhook, "__module__", "") == "sys":
            # breakpoint() in the program stops in tuidbg instead of starting pdb on the program's terminal.
            from .api import set_trace

            self._prev_breakpointhook = sys.breakpointhook
            sys.breakpointhook = set_trace
        _at_fork_once()

    def _control_loop(self, token):
        self.control_native_id = threading.get_native_id()
        hello = self.hello(token)
        hello["control_native_id"] = self.control_native_id
        self._send(hello)
        try:
            f = self.sock.makefile("rb")
            for raw in f:
                try:
                    msg = json.loads(raw.decode("utf-8"))
                except ValueError:
                    msg = {}
                if not self.enabled:
                    # (switched off already, a stop nobody answered as tuidbg let go: its detach says clean)
                    if _clean_detach(msg):
                        _shield.disarm_after_detach(self._stop_lock)
                    break
                if not msg:
                    continue
                replies = self.handle_ops(msg.get("ops", []), stopped=False)[0]
                if msg.get("id") is not None:
                    self._send({"re": msg.get("id"), "replies": replies})
                if not self._ready.is_set():
                    self._answered = True
                    self._ready.set()
        except (OSError, ValueError):
            pass
        self._ready.set()
        if self.enabled:
            self.disable("the debugger closed the connection")

    def _send(self, obj):
        data = (json.dumps(obj, default=str) + "\n").encode("utf-8", "replace")
        with self._send_lock:
            try:
                self.sock.sendall(data)
            except (OSError, AttributeError):
                pass

    def _after_fork_child(self):
        # The parent's connection is the parent's: forget it quietly. A child that gdb keeps (tuidbg
        # --children) gets an agent of its own, connected before the child's code runs.
        self._release()
        if _children and traced():
            if start(_children[0], _children[1], "fork") is None:
                _follow.unfollow()

    def disable(self, why=""):
        """Stop doing anything: no events, no hooks, no connection."""
        _debug("disabled: %s" % why)
        with self._hooks_lock:
            if not self.enabled:
                return
            self._disable()

    def _untraced(self, why):
        """Switch off: the process is no longer traced. tuidbg may have detached properly meanwhile (its
        detach, sent before gdb let go, waits on the connection): the shield then comes out; else it stays
        (a debugger that vanished may still have a trap on its way)."""
        clean = False
        try:
            waiting = self.sock.recv(1 << 16, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            clean = any(_clean_detach(_json_or_none(line)) for line in waiting.split(b"\n"))
        except (OSError, AttributeError):
            pass
        self.disable(why)
        if clean:
            _shield.disarm_after_detach(self._stop_lock)

    def _disable(self):
        self.step = None
        _follow.unfollow()
        self.bpt.install({})
        if sys.excepthook == self._excepthook and self._prev_excepthook is not None:
            sys.excepthook = self._prev_excepthook
        if threading.excepthook == self._thread_excepthook and self._prev_thread_excepthook is not None:
            threading.excepthook = self._prev_thread_excepthook
        if self._prev_breakpointhook is not None:
            from .api import set_trace

            if sys.breakpointhook is set_trace:
                sys.breakpointhook = self._prev_breakpointhook
        self._release()

    def _release(self):
        """No more events, no connection, not the active agent."""
        self.enabled = False
        try:
            self.backend.close()
        except Exception as exc:  # (switching off must go on; but say so: hooks may be left behind)
            _internal_error(exc)
        try:
            self.sock.close()
        except OSError:
            pass
        _registry.unregister(self)

    # -- requests ---------------------------------------------------------------------------

    def handle_ops(self, ops, stopped):
        """Apply the front end's requests. Returns (replies, resume op or None, reply wanted)."""
        replies = []
        resume = None
        want_reply = False
        for op in ops:
            kind = op.get("op")
            try:
                if kind == "set_bps":
                    self.set_breakpoints(op.get("bps", []))
                    replies.append({"op": kind, "bps": self.bpt.statuses()})
                elif kind == "options":
                    self.set_options(op)
                    replies.append({"op": kind, "ok": True})
                elif kind == "eval":
                    replies.append(self._eval(op, stopped))
                elif kind == "locals":
                    replies.append(self._locals(op, stopped))
                elif kind == "children":
                    replies.append(self._children(op, stopped))
                elif kind == "eval_thread":  # (pyall: a frame of another thread, at a stop not the agent's)
                    replies.append(_across.eval_in_thread(op))
                elif kind == "resume":
                    resume = op
                elif kind == "reply":
                    want_reply = True
                elif kind == "detach":
                    self.disable("detached")
                    if op.get("clean"):  # (tuidbg detaches properly: not a debugger that vanished)
                        _shield.disarm_after_detach(self._stop_lock)
                    replies.append({"op": kind, "ok": True})
                    resume = {"op": "resume", "mode": P.M_CONTINUE}
                elif kind == "ping":
                    replies.append({"op": kind, "ok": True})
                elif kind == "entry":
                    self.arm_entry()
                    replies.append({"op": kind, "ok": True})
                else:
                    replies.append({"op": kind, "error": "unknown request %r" % kind})
            except Exception as exc:  # a request must never take the program down
                replies.append({"op": kind, "error": "%s: %s" % (type(exc).__name__, exc)})
        return replies, resume, want_reply

    def _refresh(self):
        """The backend takes a new table or options. Free-threaded, in a stop being answered (gdb holds the
        other threads): not before the program resumes, as instrumenting code stops the world there."""
        if FREE_THREADED and self._answering == _thread.get_ident():
            self._refresh_pending = True
        else:
            self.backend.refresh()

    def _refresh_if_pending(self):
        if self._refresh_pending:
            self._refresh_pending = False
            self.backend.refresh()

    def set_options(self, op):
        opts = dict(self.opts)
        for key in ("uncaught", "failure"):
            if key in op:
                opts[key] = bool(op[key])
        if "raise" in op:
            opts["raise"] = tuple(str(x) for x in (op["raise"] or ()))
        self.opts = opts
        self._refresh()

    # -- the stop at entry -------------------------------------------------------------------------

    def arm_entry(self):
        """Stop at the first line of the ``__main__`` module: the script's, or the ``-m`` module's (which
        runpy executes). Its code object is handed to the ``exec`` audit hook just before it runs (the
        interpreter raises the event for the main script too), and ``__main__.__file__`` is its file by
        then; a step into, armed there on that thread, stops at its first line."""
        self._entry = True
        if not _entry_hook:
            from ._auditexec import install

            _entry_hook.append(install(_on_exec_entry))

    def on_exec(self, code):
        """``code`` is about to run (the ``exec`` audit event): the ``__main__`` module's, for a stop at entry?"""
        if not self._entry or not self.enabled or getattr(code, "co_name", None) != "<module>":
            return
        main = sys.modules.get("__main__")
        path = getattr(main, "__file__", None)
        if not isinstance(path, str) or canon(path, self._cwd) != canon(code.co_filename, self._cwd):
            return
        self._entry = False
        step = Step(P.M_INTO, _thread.get_ident(), None, P.ENTRY_TOKEN)
        step.entry = True
        self.mb.ctl_token.value = step.token
        self.mb.ctl_flags.value = 0
        self.step = step
        self.backend.start_step(step, [])
        _debug("stop at entry armed for %s" % code.co_filename)

    def _frame_arg(self, op, stopped):
        if not stopped:
            raise ValueError("the program is running; stop it first")
        k = int(op.get("frame", 0) or 0)
        if not (0 <= k < len(self.stop_frames)):
            raise ValueError("no Python frame %d" % k)
        return self.stop_frames[k]

    def _eval(self, op, stopped):
        frame = self._frame_arg(op, stopped)
        expr = op.get("expr", "")
        try:
            try:
                code = compile(expr, "<tuidbg>", "eval")
            except SyntaxError:
                if op.get("mode") == "eval":  # a watch: an expression only, never a statement run at each stop
                    raise
                code = compile(expr, "<tuidbg>", "exec")
                exec(code, frame.f_globals, frame.f_locals)
                return {"op": "eval", "value": None, "type": None}
            value = eval(code, frame.f_globals, frame.f_locals)
        except Exception as exc:
            return {"op": "eval", "error": "%s: %s" % (type(exc).__name__, exc)}
        return {"op": "eval", "value": _value_text(value, 20000), "type": type(value).__name__,
                "expandable": _values.expandable(value)}

    def _locals(self, op, stopped):
        frame = self._frame_arg(op, stopped)
        out = []
        torch_only = bool(op.get("torch_only"))  # only the torch values: no repr of anything runs
        for name, value in list(frame.f_locals.items())[:500]:
            if torch_only:
                line = _values.describe(value)
                if line is not None:
                    out.append({"name": name, "type": type(value).__name__, "value": line[:1000],
                                "expandable": _values.expandable(value)})
                continue
            # (as the Locals pane reads a frame's locals from memory: no repr of the program's runs)
            out.append({"name": name, "type": type(value).__name__, "value": _values.line(value, 1000),
                        "expandable": _values.expandable(value)})
        return {"op": "locals", "vars": out}

    def _children(self, op, stopped):
        """Children of a value (a torch tensor, module or optimizer) named by an expression and a path."""
        frame = self._frame_arg(op, stopped)
        value = eval(compile(op.get("expr", ""), "<tuidbg>", "eval"), frame.f_globals, frame.f_locals)
        path = [str(k) for k in (op.get("path") or ())]
        return {"op": "children", "children": _values.children(value, path, bool(op.get("device_data")))}

    # -- breakpoints ------------------------------------------------------------------------

    @property
    def bp_index(self):
        """{canonical file: {line: [enabled Bp]}} (the backends look breakpoints up here)."""
        return self.bpt.index

    def set_breakpoints(self, defs):
        _debug("breakpoints %s" % [(d.get("file"), d.get("line"), d.get("enabled")) for d in defs])
        self.bpt.set(defs)
        self._refresh()

    def bp_lines_for_code(self, code):
        """The breakpoint lines inside ``code`` (a frozenset, empty if none). Cached per code object."""
        return self.bpt.lines_for_code(code)

    def _verified_late(self, statuses):
        self._send({"ev": "bps", "bps": statuses})

    def on_bp_line(self, frame, line):
        """A line holding breakpoints runs. Stops if one of them says so; returns the resume op or None."""
        if self._busy.get(_thread.get_ident()):
            return None
        extra = self.bpt.hit(frame, line)
        if extra is None:
            return None
        if "deleted_bp" in extra:
            self._refresh()
        return self.stop(P.R_BREAKPOINT, frame, extra)

    # -- exceptions ---------------------------------------------------------------------------

    def exception_matches(self, exc, frame=None):
        """Whether a raised exception stops the program (see ``_exceptions.matches``)."""
        return matches(self.opts["raise"], exc, frame, self._cwd)


    def _excepthook(self, tp, value, tb):
        if self.enabled and self.opts["uncaught"] and not issubclass(tp, SystemExit):
            self.stop_exception(P.R_UNCAUGHT, value, tb)
        prev = self._prev_excepthook or sys.__excepthook__
        prev(tp, value, tb)

    def _thread_excepthook(self, args):
        if self.enabled and self.opts["uncaught"] and args.exc_type is not SystemExit and args.exc_value is not None:
            self.stop_exception(P.R_UNCAUGHT, args.exc_value, args.exc_traceback)
        prev = self._prev_thread_excepthook or threading.__excepthook__
        prev(args)

    def stop_exception(self, reason, exc, tb, frame=None, extra_info=None):
        frames = frames_of(tb, frame)
        if not frames:
            return None
        info = {"exception": describe(exc, tb)}
        if extra_info:
            info.update(extra_info)
        return self.stop(reason, None, info, frames=frames)

    # -- stops ------------------------------------------------------------------------------

    def stop(self, reason, frame, extra=None, frames=None):
        """Stop the whole process here and wait for the front end. Returns the resume op."""
        if not self.enabled or self._stub is None:
            return None
        tid = _thread.get_ident()
        if self._busy.get(tid):
            return None
        self._stop_lock.acquire()
        if not self.enabled:  # (switched off while this thread waited for the lock: no trap any more)
            self._stop_lock.release()
            _shield.after_stop_lock(self._stop_lock)
            return None
        self._busy[tid] = True
        # Free-threaded: a collection stops the world, and while a stop is answered the other threads are
        # frozen by gdb (only this one runs): an automatic collection started by the answer (an expression
        # that allocates) would wait for them for ever. No automatic collection until the program resumes.
        gc_off = FREE_THREADED and gc.isenabled()
        if gc_off:
            gc.disable()
        try:
            if reason == P.R_BREAKPOINT and not self._still_stops(extra or {}):
                return None
            return self._stop_locked(reason, frame, extra or {}, frames, tid)
        except Exception as exc:  # never into the user's program
            _internal_error(exc)
            return None
        finally:
            if gc_off:
                gc.enable()
            self.stop_frames = []  # do not keep the program's frames (and their locals) alive
            self._busy.pop(tid, None)
            self._stop_lock.release()
            _shield.after_stop_lock(self._stop_lock)

    def _still_stops(self, extra):
        """A breakpoint this thread hit while another thread was stopped (it waited for the stop lock):
        not if the front end deleted or disabled it meanwhile (gdb drops such stale hits too)."""
        if "deleted_bp" in extra:
            return True  # this thread's own temporary breakpoint
        bp = self.bpt.by_id.get(extra.get("bp"))
        return bp is not None and bp.enabled

    def _stop_locked(self, reason, frame, extra, frames, tid):
        if frames is None:
            pairs = [(f, lineno(f)) for f in user_frames(frame)]
        else:
            pairs = frames
        self.stop_frames = [f for f, _ in pairs]
        descs = []
        for f, line in pairs:
            code = f.f_code
            descs.append({"file": canon(code.co_filename, self._cwd) or code.co_filename, "line": line,
                          "func": _qualname(code)})
        info = {
            "reason": reason,
            "thread": tid,
            "native_id": threading.get_native_id(),
            "thread_name": thread_name(tid),
            "frames": descs,
            "threads": thread_names(),
        }
        if descs:
            info["file"], info["line"], info["func"] = descs[0]["file"], descs[0]["line"], descs[0]["func"]
        info.update(extra)
        kind = P.STOP_EVENT
        self.step = None  # any stop ends the step in progress
        while True:
            self._seq += 1
            seq = self._seq
            info["seq"] = seq
            info["bps"] = self.bpt.statuses()
            self.mb.write_out(info)
            self.mb.stop_seq.value = seq
            # Give the GIL away and take it back: taking it clears a drop request another thread may
            # have posted. Otherwise, answering a request while gdb runs only this thread, the next
            # eval-breaker check would hand the GIL to a thread gdb keeps frozen and wait for it forever
            # (CPython's forced switching). Frozen threads cannot post a new request. Free-threaded: no
            # GIL, and detaching here could park this thread behind another one's stop-the-world.
            if not FREE_THREADED:
                time.sleep(0)
            if self.stub_traps and not traced():  # (a stop function that traps would end an untraced process)
                self._untraced("the debugger is gone")
                return None
            self._stub(kind, self.mb.addr)
            if self.mb.ack_seq.value != seq:
                _debug("stop %d (%s) not answered" % (seq, reason))
                self._refresh_if_pending()
                # Nobody answered: the debugger is gone, or the user continued with plain gdb.
                if not traced():
                    self._untraced("no debugger")
                self.backend.end_step()
                return None
            msg = self.mb.read_in()
            self._answering = tid
            try:
                replies, resume, want_reply = self.handle_ops(msg.get("ops", []), stopped=True)
            finally:
                self._answering = None
            if resume is not None or not want_reply:
                return self._apply_resume(resume, reason)
            info = {"reason": P.R_REPLY, "thread": tid, "native_id": threading.get_native_id(), "replies": replies}
            kind = P.STOP_REPLY

    def _apply_resume(self, op, reason):
        self._refresh_if_pending()  # (every thread runs again)
        self.backend.end_step()
        if op is None or not self.enabled:
            return op
        mode = op.get("mode", P.M_CONTINUE)
        if mode == P.M_CONTINUE or reason in (P.R_UNCAUGHT, P.R_FAILURE):
            return op
        frames = self.stop_frames
        target = None
        tid = _thread.get_ident()
        want_thread = op.get("thread")
        if want_thread and want_thread != threading.get_native_id():
            # Another thread: it runs on while this one arms the step, so no frame of it can be the
            # target; it stops at the next Python line it runs, wherever that is.
            ident = ident_of_native(want_thread)
            if ident is None:
                return op
            step = Step(P.M_INTO, ident, None, int(op.get("token", 0) or 0))
            self.mb.ctl_token.value = step.token
            self.step = step
            self.backend.start_step(step, user_frames(sys._current_frames().get(ident)))
            return op
        k = int(op.get("frame", 0) or 0)
        if 0 <= k < len(frames):
            target = frames[k]
        if target is None:
            return op
        token = int(op.get("token", 0) or 0)
        if mode == P.M_NATIVE_ARMED:
            mode = P.M_NATIVE
        step = Step(mode, tid, target, token)
        if op.get("mode") == P.M_NATIVE_ARMED:
            step.native_reported = True
        elif mode == P.M_NATIVE:
            from ._operators import line_native_target

            step.native_first = line_native_target(target)  # (a @ b, t[i], t.shape: no call the backends see)
        if reason == P.R_EXCEPTION and k == 0:
            step.unwinding = True  # stopped where it was raised: the frame may be leaving with it
        self.mb.ctl_token.value = token
        self.step = step
        self.backend.start_step(step, [target])
        return op

    def _arm_from_native(self, mode, k, token):
        """Called by gdb (an inferior call) in a thread stopped in native code under its Python frames:
        arm a Python step (``mode``: index into ARM_MODES) for the k-th of its user frames. Returns 1 if
        armed, 0 if not (no such frame, the agent is off), 2 if another thread is stopping at a Python
        breakpoint. The others may run during the call (the GIL can go to them); holding the stop lock
        keeps their Python stops from reaching gdb before the call is over."""
        if not self._stop_lock.acquire(False):
            return 2
        try:
            if not self.enabled or not 0 <= mode < len(P.ARM_MODES):
                return 0
            frames = user_frames(sys._getframe(1))
            if not 0 <= k < len(frames):
                return 0
            self.backend.end_step()
            step = Step(P.ARM_MODES[mode], _thread.get_ident(), frames[k], int(token))
            self.mb.ctl_token.value = step.token
            self.mb.ctl_flags.value = 0
            self.step = step
            self.backend.start_step(step, [frames[k]])
            _debug("step %s armed from a native stop in %s" % (step.mode, frames[k].f_code.co_name))
            return 1
        except Exception as exc:  # never into the program
            _internal_error(exc)
            return 0
        finally:
            self._stop_lock.release()

    def stop_here(self, frame, reason=P.R_SET_TRACE, extra=None):
        return self.stop(reason, frame, extra)

    def break_after(self, frame):
        """``breakpoint()`` / ``tuidbg.set_trace()`` called from ``frame``: stop at the next line it runs once
        the call has returned (where pdb stops), as a step over armed here whose stop is the set_trace stop.
        If another thread's step is in progress (the agent steps one thread at a time), stop here now."""
        if not self.enabled or self._stub is None:
            return None
        cur = self.step
        if cur is not None and cur.thread != _thread.get_ident():
            return self.stop_here(frame)
        if not self._stop_lock.acquire(False):
            return self.stop_here(frame)  # (another thread is stopping: this one waits its turn, and stops here)
        try:
            self.backend.end_step()
            step = Step(P.M_OVER, _thread.get_ident(), frame, next(_own_tokens))
            step.reason = P.R_SET_TRACE
            self.mb.ctl_token.value = step.token
            self.mb.ctl_flags.value = 0
            self.step = step
            self.backend.start_step(step, [frame])
        except Exception as exc:  # never into the program
            _internal_error(exc)
        finally:
            self._stop_lock.release()
        return None

    # -- stepping (called by the backends on the stepping thread) -------------------------------

    def step_alive(self, st):
        """False (and the step is dropped) if the front end cancelled it at a native stop."""
        if self.mb.ctl_token.value != st.token or not self.enabled:
            _debug("step cancelled (token %s, mailbox %s)" % (st.token, self.mb.ctl_token.value))
            if self.step is st:
                self.step = None
                self.backend.end_step()
            return False
        return True

    def want_return_to_python(self, st):
        return bool(self.mb.ctl_flags.value & P.CTL_RETURN_TO_PYTHON)

    def step_stop(self, frame, extra=None):
        """The step is complete at ``frame``."""
        ex = {"step_mode": self.step.mode if self.step else None}
        if self.step is not None and self.step.mode == P.M_NATIVE and not self.step.native_reported:
            ex["message"] = "step into native: no call or operator of the line went into an extension module"
        if extra:
            ex.update(extra)
        self.mb.ctl_flags.value = 0
        st = self.step
        return self.stop(P.R_ENTRY if st is not None and st.entry else st.reason if st is not None else P.R_STEP,
                         frame, ex)

    def step_returned(self, st, frame, unwinding=False):
        """``frame`` (the step's frame) returns or unwinds: go on in the caller.

        After a return, the step stops at the caller's next instruction (the line that made the call);
        after an exception, at the caller's next line (its handler), as its next instruction is the
        interpreter's exception handling."""
        caller = frame.f_back
        while caller is not None and is_agent_code(caller.f_code):
            caller = caller.f_back
        if frame.f_code.co_flags & SUSPENDING and (caller is None or not caller.f_code.co_flags & SUSPENDING):
            # The coroutine of an asyncio task returns to the event loop: the step goes on in the task
            # that awaits this one, once it resumes (not in the loop's own code).
            awaiter = awaiter_frame()
            if awaiter is not None:
                caller = awaiter
        if caller is None:
            self.step = None
            self.backend.end_step()
            return
        st.frame = caller
        st.leaving = False
        st.after_return = not unwinding
        st.unwinding = False
        self.backend.follow(st, caller)

    def step_suspends(self, st, frame):
        """The step's frame (a coroutine, a generator) suspends at an ``await`` or a ``yield``: True when
        the step waits for it to resume ("next": its next line; "finish": its return), as pdb does since
        3.12; other tasks run meanwhile. False: the backend goes on as after a return."""
        if frame is not st.frame or st.mode not in (P.M_OVER, P.M_OUT):
            return False
        st.after_return = False
        return True

    def native_call(self, st, frame, callee):
        """``step into native``: ``callee`` is about to be called from the step's frame."""
        return self.native_next(st, frame, native_entry(callee))

    def native_next(self, st, frame, entry):
        """``step into native``: the C function ``entry`` (address, name) is what the step's frame runs next
        (a call, or an operator's slot: ``Step.native_first``)."""
        if entry is None:
            return None
        addr, name = entry
        st.native_reported = True
        return self.stop(P.R_NATIVE_CALL, frame, {"native": {"addr": addr, "name": name}, "step_token": st.token})

# -- helpers --------------------------------------------------------------------------------------


# The tokens of steps the agent arms itself (breakpoint()): the high half, never one the front end gives.
_own_tokens = itertools.count((1 << 63) + 1)


_reported = []


def _internal_error(exc):
    if not _reported:
        _reported.append(exc)
        sys.stderr.write("tuidbg agent: internal error (ignored): %s: %s\n" % (type(exc).__name__, exc))


# -- entry points ---------------------------------------------------------------------------------


def start(sock_path, token, how):
    """Create the agent, connect to the front end and wait for its breakpoints. Returns the agent or None."""
    old = _registry.current()
    if old is not None:
        old.disable("replaced by a new agent")
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect(sock_path)
        s.settimeout(None)
    except OSError as exc:
        sys.stderr.write("tuidbg agent: cannot reach the debugger at %s: %s\n" % (sock_path, exc))
        return None
    agent = Agent(s, how)
    ok = False
    try:
        ok = agent.handshake(token)
    except (OSError, ValueError) as exc:
        agent.error = agent.error or str(exc)
    if not ok:
        if agent.error:
            sys.stderr.write("tuidbg agent: disabled: %s\n" % agent.error)
        agent.disable()
        return None
    if not agent.enabled:  # detached during the handshake
        return None
    _registry.register(agent)
    agent.install_hooks()
    return agent


_fork_hook = []
_entry_hook = []  # the exec audit hook of the stop at entry, once per process (a hook cannot be taken out)


def _on_exec_entry(args):
    a = _registry.current()
    if a is not None and args:
        a.on_exec(args[0])



def _at_fork_once():
    """One fork hook per process, however many agents come and go (``os.register_at_fork`` cannot be
    undone, and a hook holding a detached agent would keep it alive): in a child, the parent's agent
    is forgotten quietly (gdb follows the parent)."""
    if _fork_hook or not hasattr(os, "register_at_fork"):
        return
    _fork_hook.append(True)
    os.register_at_fork(after_in_child=_forget_in_child)


def _forget_in_child():
    a = _registry.current()
    if a is not None:
        a._after_fork_child()


_children = []  # (socket, token) when tuidbg keeps the program's children: forked ones connect too



def start_run(sock_path, token, children=False):
    """``tuidbg run``: start the agent if this process is one gdb debugs (not a child that inherited the
    variables but was let go)."""
    if not traced():
        return None
    if children:
        _children[:] = [sock_path, token]
        _follow.adopt()
    argv = _cmdline()
    try:
        from .pytest_plugin import register_if_pytest

        register_if_pytest(argv)
    except Exception:
        pass
    return start(sock_path, token, "run")


def start_attach(sock_path, token, several=False, children=False):
    """``tuidbg attach``, from the boot script gdb's injection runs. ``several``: tuidbg debugs other
    processes too (the stop function traps by itself, as gdb would put its breakpoint into all of
    them); ``children``: tuidbg keeps this process's children from now on (``attach --children``),
    which load the agent too (``_follow``)."""
    if several or children:
        _children[:] = [sock_path, token]
    agent = start(sock_path, token, "attach")  # (after an agent it replaces has put its changes back)
    if agent is None:
        _children[:] = []
    elif children:
        _follow.follow(sock_path, token, os.path.join(AGENT_DIR, "boot"))
    return agent


def _cmdline():
    try:
        with open("/proc/self/cmdline", "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return list(sys.argv)

