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
"""

import _thread
import ctypes
import json
import os
import socket
import sys
import threading
import time

from . import protocol as P
from ._lines import canon, code_lines, resolve_line
from ._stub import StubError, make_stub

AGENT_DIR = os.path.dirname(os.path.abspath(__file__))
_AGENT_PREFIX = AGENT_DIR + os.sep
MAX_FRAMES = 256
_HELLO_TIMEOUT = 120.0
_DEBUG = bool(os.environ.get("TUIDBG_AGENT_DEBUG"))  # a few lines on stderr about what the agent does


def _debug(text):
    if _DEBUG:
        sys.stderr.write("tuidbg agent: %s\n" % text)

_agent = None  # the active Agent


def active():
    """The agent of this process if one is running and connected, else None."""
    a = _agent
    if a is not None and a.enabled:
        return a
    return None


def is_agent_code(code):
    return code.co_filename.startswith(_AGENT_PREFIX)


def traced():
    """Whether a debugger (ptrace) is attached to this process."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("TracerPid:"):
                    return int(line.split()[1]) != 0
    except (OSError, ValueError, IndexError):
        pass
    return False


def _qualname(code):
    return getattr(code, "co_qualname", None) or code.co_name


if sys.version_info < (3, 11):
    # Before 3.11 a frame with a trace function reports the line of its last 'line' event, which is stale
    # for frames traced without line events: compute it from the instruction offset instead.
    _addr2line = ctypes.pythonapi.PyCode_Addr2Line
    _addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
    _addr2line.restype = ctypes.c_int

    def _lineno(frame):
        try:
            return _addr2line(frame.f_code, max(frame.f_lasti, 0))
        except (ValueError, TypeError, ctypes.ArgumentError):
            return frame.f_lineno or frame.f_code.co_firstlineno
else:

    def _lineno(frame):
        n = frame.f_lineno
        return n if n is not None else frame.f_code.co_firstlineno


def _thread_name(ident):
    t = threading._active.get(ident)  # no _DummyThread side effect for foreign threads
    return t.name if t is not None else None


def _thread_names(limit=512):
    """[[native_id, name], ...] of the Python threads (threading's names: the OS knows none of them)."""
    out = []
    try:
        for t in list(threading._active.values())[:limit]:  # a copy under the GIL, no lock taken
            nid = getattr(t, "native_id", None)
            if nid:
                out.append([nid, str(t.name)[:64]])
    except Exception:  # (a Thread subclass with an odd name property): names are a nicety, the stop is not
        return out
    return out


class Mailbox(object):
    def __init__(self):
        self.buf = ctypes.create_string_buffer(P.MAILBOX_SIZE)
        a = self.addr = ctypes.addressof(self.buf)
        ctypes.memmove(a + P.OFF_MAGIC, P.MAGIC, len(P.MAGIC))
        ctypes.c_uint32.from_address(a + P.OFF_VERSION).value = P.VERSION
        ctypes.c_uint32.from_address(a + P.OFF_SIZE).value = P.MAILBOX_SIZE
        self.stop_seq = ctypes.c_uint64.from_address(a + P.OFF_STOP_SEQ)
        self.ack_seq = ctypes.c_uint64.from_address(a + P.OFF_ACK_SEQ)
        self.out_len = ctypes.c_uint32.from_address(a + P.OFF_OUT_LEN)
        self.in_len = ctypes.c_uint32.from_address(a + P.OFF_IN_LEN)
        self.ctl_token = ctypes.c_uint64.from_address(a + P.OFF_CTL_TOKEN)
        self.ctl_flags = ctypes.c_uint32.from_address(a + P.OFF_CTL_FLAGS)

    def write_out(self, obj):
        data = json.dumps(obj, default=str).encode("utf-8", "replace")
        if len(data) > P.OUT_SIZE:
            # Keep the essentials when a stop description is too big (huge reprs, deep stacks).
            small = dict(obj)
            small["frames"] = small.get("frames", [])[:32]
            small.pop("threads", None)
            small.pop("replies", None) if len(json.dumps(small, default=str)) > P.OUT_SIZE else None
            data = json.dumps(small, default=str).encode("utf-8", "replace")[: P.OUT_SIZE]
        ctypes.memmove(self.addr + P.OUT_OFFSET, data, len(data))
        self.out_len.value = len(data)

    def read_in(self):
        n = self.in_len.value
        if n <= 0 or n > P.IN_SIZE:
            return {}
        try:
            return json.loads(ctypes.string_at(self.addr + P.IN_OFFSET, n).decode("utf-8"))
        except ValueError:
            return {}


class Bp(object):
    __slots__ = ("id", "file", "req_line", "line", "cond", "code", "ignore", "ignore_left", "enabled",
                 "temporary", "hits", "verified", "message", "rev")

    def status(self):
        return {"id": self.id, "line": self.line, "verified": self.verified, "hits": self.hits,
                "message": self.message, "ignore_left": self.ignore_left}


class Step(object):
    __slots__ = ("mode", "thread", "frame", "token", "after_return", "native_reported", "codes", "unwinding",
                 "leaving")

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


class Agent(object):
    def __init__(self, sock, how):
        self.sock = sock
        self.how = how  # "run" or "attach"
        self.enabled = True
        self.error = None
        self.mb = Mailbox()
        try:
            self.stub_addr, self._stub = make_stub()
        except StubError as exc:
            self.stub_addr, self._stub = 0, None
            self.error = str(exc)
        self.bps = {}
        self.bp_index = {}  # canonical file -> {line: [Bp]}
        self.opts = {"uncaught": False, "raise": (), "failure": False}
        self.step = None
        self.stop_frames = []
        self._code_cache = {}
        self._busy = {}
        self._stop_lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._seq = 0
        self._cwd = os.getcwd()
        self._interp_ranges = None
        self._stdlib_dirs = None
        self.control_native_id = None
        self._prev_excepthook = None
        self._prev_thread_excepthook = None
        self._prev_breakpointhook = None
        # "Python step from a native stop" (SIGTRAP, a native breakpoint, an interrupt): gdb calls this
        # C function pointer in the stopped thread, which holds the GIL then (tuidbg returns it to the
        # eval loop first), to arm a step in that thread's Python frame. ctypes callbacks take the GIL
        # with PyGILState_Ensure, which is a no-op for the thread that holds it.
        self._arm_cb = _ARM_FUNC(self._arm_from_native)
        self.arm_addr = ctypes.cast(self._arm_cb, ctypes.c_void_p).value or 0
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
            "arm": self.arm_addr,
            "mailbox": self.mb.addr,
            "mailbox_size": P.MAILBOX_SIZE,
            "agent_dir": AGENT_DIR,
            "how": self.how,
            "main_native_id": _main_native_id(),
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
        self._prev_excepthook = sys.excepthook
        sys.excepthook = self._excepthook
        self._prev_thread_excepthook = threading.excepthook
        threading.excepthook = self._thread_excepthook
        if not os.environ.get("PYTHONBREAKPOINT") and getattr(sys.breakpointhook, "__module__", "") == "sys":
            # breakpoint() in the program stops in tuidbg instead of starting pdb on the program's terminal.
            from .api import set_trace

            self._prev_breakpointhook = sys.breakpointhook
            sys.breakpointhook = set_trace
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._after_fork_child)

    def _control_loop(self, token):
        self.control_native_id = threading.get_native_id()
        hello = self.hello(token)
        hello["control_native_id"] = self.control_native_id
        self._send(hello)
        try:
            f = self.sock.makefile("rb")
            for raw in f:
                if not self.enabled:
                    break
                try:
                    msg = json.loads(raw.decode("utf-8"))
                except ValueError:
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
        # The child is not debugged (gdb follows the parent): forget everything quietly.
        self._release()

    def disable(self, why=""):
        """Stop doing anything: no events, no hooks, no connection."""
        _debug("disabled: %s" % why)
        if not self.enabled:
            return
        self.step = None
        self.bps = {}
        self.bp_index = {}
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
        global _agent
        self.enabled = False
        try:
            self.backend.close()
        except Exception:
            pass
        try:
            self.sock.close()
        except OSError:
            pass
        if _agent is self:
            _agent = None

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
                    replies.append({"op": kind, "bps": [b.status() for b in self.bps.values()]})
                elif kind == "options":
                    self.set_options(op)
                    replies.append({"op": kind, "ok": True})
                elif kind == "eval":
                    replies.append(self._eval(op, stopped))
                elif kind == "locals":
                    replies.append(self._locals(op, stopped))
                elif kind == "resume":
                    resume = op
                elif kind == "reply":
                    want_reply = True
                elif kind == "detach":
                    self.disable("detached")
                    replies.append({"op": kind, "ok": True})
                    resume = {"op": "resume", "mode": P.M_CONTINUE}
                elif kind == "ping":
                    replies.append({"op": kind, "ok": True})
                else:
                    replies.append({"op": kind, "error": "unknown request %r" % kind})
            except Exception as exc:  # a request must never take the program down
                replies.append({"op": kind, "error": "%s: %s" % (type(exc).__name__, exc)})
        return replies, resume, want_reply

    def set_options(self, op):
        opts = dict(self.opts)
        for key in ("uncaught", "failure"):
            if key in op:
                opts[key] = bool(op[key])
        if "raise" in op:
            opts["raise"] = tuple(str(x) for x in (op["raise"] or ()))
        self.opts = opts
        self.backend.refresh()

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
        return {"op": "eval", "value": _safe_repr(value, 20000), "type": type(value).__name__}

    def _locals(self, op, stopped):
        frame = self._frame_arg(op, stopped)
        out = []
        for name, value in list(frame.f_locals.items())[:500]:
            out.append({"name": name, "type": type(value).__name__, "value": _safe_repr(value, 1000)})
        return {"op": "locals", "vars": out}

    # -- breakpoints ------------------------------------------------------------------------

    def set_breakpoints(self, defs):
        _debug("breakpoints %s" % [(d.get("file"), d.get("line"), d.get("enabled")) for d in defs])
        old = self.bps
        new = {}
        for d in defs:
            bp = Bp()
            bp.id = int(d["id"])
            bp.file = canon(d["file"], self._cwd) or d["file"]
            bp.req_line = int(d["line"])
            bp.cond = d.get("cond") or None
            bp.code = None
            if bp.cond:
                try:
                    bp.code = compile(bp.cond, "<condition>", "eval")
                except SyntaxError as exc:
                    bp.code = exc
            bp.ignore = int(d.get("ignore", 0) or 0)
            bp.enabled = bool(d.get("enabled", True))
            bp.temporary = bool(d.get("temporary", False))
            bp.rev = d.get("rev", 0)
            line, msg = resolve_line(bp.file, bp.req_line)
            bp.verified = line is not None
            bp.line = line if line is not None else bp.req_line
            bp.message = msg
            prev = old.get(bp.id)
            if prev is not None and prev.file == bp.file and prev.req_line == bp.req_line:
                # The same breakpoint, changed (enabled, a condition): it keeps its hit count, as in
                # gdb; the hits left to ignore start again only when the ignore count was set.
                bp.hits = prev.hits
                bp.ignore_left = prev.ignore_left if prev.rev == bp.rev or prev.ignore == bp.ignore else bp.ignore
            else:
                bp.hits = 0
                bp.ignore_left = bp.ignore
            new[bp.id] = bp
        self._install_bps(new)

    def _install_bps(self, bps):
        index = {}
        for bp in bps.values():
            if bp.enabled:
                index.setdefault(bp.file, {}).setdefault(bp.line, []).append(bp)
        self.bps = bps
        self.bp_index = index
        self._code_cache = {}
        self.backend.refresh()

    def bp_lines_for_code(self, code):
        """The breakpoint lines inside ``code`` (a frozenset, empty if none). Cached per code object."""
        hit = self._code_cache.get(id(code))
        if hit is not None and hit[0] is code:
            return hit[1]
        lines = frozenset()
        if self.bp_index and not is_agent_code(code):
            path = canon(code.co_filename, self._cwd)
            per_file = self.bp_index.get(path) if path else None
            if per_file:
                mine = code_lines(code)
                lines = frozenset(n for n in per_file if n in mine)
                self._verify_late(path, per_file, mine)
        if len(self._code_cache) > 100000:
            self._code_cache = {}
        self._code_cache[id(code)] = (code, lines)
        return lines

    def _verify_late(self, path, per_file, code_lines_):
        """Breakpoints on files that could not be read when they were set: verify against live code."""
        changed = []
        for line, bps in per_file.items():
            for bp in bps:
                if not bp.verified and line in code_lines_:
                    bp.verified = True
                    bp.message = None
                    changed.append(bp.status())
        if changed:
            self._send({"ev": "bps", "bps": changed})

    def on_bp_line(self, frame, line):
        """A line holding breakpoints runs. Stops if one of them says so; returns the resume op or None."""
        if self._busy.get(_thread.get_ident()):
            return None
        path = canon(frame.f_code.co_filename, self._cwd)
        bps = self.bp_index.get(path, {}).get(line)
        if not bps:
            return None
        for bp in list(bps):
            if not bp.enabled:
                continue
            message = None
            if bp.code is not None:
                if isinstance(bp.code, SyntaxError):
                    message = "condition %r is not valid Python: %s" % (bp.cond, bp.code)
                else:
                    try:
                        if not eval(bp.code, frame.f_globals, frame.f_locals):
                            continue
                    except Exception as exc:
                        message = "error in condition %r: %s: %s" % (bp.cond, type(exc).__name__, exc)
            bp.hits += 1
            if message is None and bp.ignore_left > 0:
                bp.ignore_left -= 1
                continue
            extra = {"bp": bp.id, "hits": bp.hits}
            if message:
                extra["message"] = message
            if bp.temporary:
                new = dict(self.bps)
                new.pop(bp.id, None)
                self._install_bps(new)
                extra["deleted_bp"] = bp.id
            return self.stop(P.R_BREAKPOINT, frame, extra)
        return None

    # -- exceptions ---------------------------------------------------------------------------

    def exception_matches(self, exc, frame=None):
        """Whether a raised exception stops the program: its class (or a base) is in the filter, and it was
        not raised inside the standard library (which raises and catches KeyError, StopIteration, ... all
        the time)."""
        names = self.opts["raise"]
        if not names:
            return False
        if frame is not None and self._in_stdlib(frame.f_code):
            return False
        for cls in type(exc).__mro__:
            if cls.__name__ in names or ("%s.%s" % (cls.__module__, cls.__qualname__)) in names:
                return True
        return "*" in names

    def _in_stdlib(self, code):
        dirs = self._stdlib_dirs
        if dirs is None:
            import sysconfig

            paths = sysconfig.get_paths()
            dirs = self._stdlib_dirs = tuple(
                sorted({os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if paths.get(k)})
            )
        path = canon(code.co_filename, self._cwd)
        if path is None:
            return code.co_filename.startswith("<frozen")
        site = os.sep + "site-packages" + os.sep
        return any(path.startswith(d) and site not in path[len(d) - 1:] for d in dirs)

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
        entries = []
        t = tb
        while t is not None:
            if not is_agent_code(t.tb_frame.f_code):
                entries.append((t.tb_frame, t.tb_lineno))
            t = t.tb_next
        entries.reverse()  # innermost first
        frames = list(entries)
        if entries:
            f = entries[-1][0].f_back
            while f is not None and len(frames) < MAX_FRAMES:
                if not is_agent_code(f.f_code):
                    frames.append((f, _lineno(f)))
                f = f.f_back
        elif frame is not None:
            frames = [(f, _lineno(f)) for f in self._user_frames(frame)]
        if not frames:
            return None
        import traceback

        text = "".join(traceback.format_exception(type(exc), exc, tb))
        info = {
            "exception": {
                "type": "%s.%s" % (type(exc).__module__, type(exc).__qualname__),
                "message": _safe_str(exc, 4000),
                "traceback": text[-20000:],
            }
        }
        if extra_info:
            info.update(extra_info)
        return self.stop(reason, None, info, frames=frames)

    # -- stops ------------------------------------------------------------------------------

    def _user_frames(self, frame):
        out = []
        f = frame
        while f is not None and len(out) < MAX_FRAMES:
            if not is_agent_code(f.f_code):
                out.append(f)
            f = f.f_back
        return out

    def stop(self, reason, frame, extra=None, frames=None):
        """Stop the whole process here and wait for the front end. Returns the resume op."""
        if not self.enabled or self._stub is None:
            return None
        tid = _thread.get_ident()
        if self._busy.get(tid):
            return None
        self._stop_lock.acquire()
        self._busy[tid] = True
        try:
            return self._stop_locked(reason, frame, extra or {}, frames, tid)
        except Exception as exc:  # never into the user's program
            _internal_error(exc)
            return None
        finally:
            self.stop_frames = []  # do not keep the program's frames (and their locals) alive
            self._busy.pop(tid, None)
            self._stop_lock.release()

    def _stop_locked(self, reason, frame, extra, frames, tid):
        if frames is None:
            pairs = [(f, _lineno(f)) for f in self._user_frames(frame)]
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
            "thread_name": _thread_name(tid),
            "frames": descs,
            "threads": _thread_names(),
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
            info["bps"] = [b.status() for b in self.bps.values()]
            self.mb.write_out(info)
            self.mb.stop_seq.value = seq
            # Give the GIL away and take it back: taking it clears a drop request another thread may
            # have posted. Otherwise, answering a request while gdb runs only this thread, the next
            # eval-breaker check would hand the GIL to a thread gdb keeps frozen and wait for it forever
            # (CPython's forced switching). Frozen threads cannot post a new request.
            time.sleep(0)
            self._stub(kind, self.mb.addr)
            if self.mb.ack_seq.value != seq:
                _debug("stop %d (%s) not answered" % (seq, reason))
                # Nobody answered: the debugger is gone, or the user continued with plain gdb.
                if not traced():
                    self.disable("no debugger")
                self.backend.end_step()
                return None
            msg = self.mb.read_in()
            replies, resume, want_reply = self.handle_ops(msg.get("ops", []), stopped=True)
            if resume is not None or not want_reply:
                return self._apply_resume(resume, reason)
            info = {"reason": P.R_REPLY, "thread": tid, "native_id": threading.get_native_id(), "replies": replies}
            kind = P.STOP_REPLY

    def _apply_resume(self, op, reason):
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
            ident = _ident_of_native(want_thread)
            if ident is None:
                return op
            step = Step(P.M_INTO, ident, None, int(op.get("token", 0) or 0))
            self.mb.ctl_token.value = step.token
            self.step = step
            self.backend.start_step(step, self._user_frames(sys._current_frames().get(ident)))
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
        if reason == P.R_EXCEPTION and k == 0:
            step.unwinding = True  # stopped where it was raised: the frame may be leaving with it
        self.mb.ctl_token.value = token
        self.step = step
        self.backend.start_step(step, [target])
        return op

    def _arm_from_native(self, mode, k, token):
        """Called by gdb (an inferior call) in a thread stopped in native code under its Python frames:
        arm a Python step (``mode``: index into ARM_MODES) for the k-th of its user frames. Returns 1 if
        armed, 0 if not (no such frame, the agent is off)."""
        try:
            if not self.enabled or not 0 <= mode < len(P.ARM_MODES):
                return 0
            frames = self._user_frames(sys._getframe(1))
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

    def stop_here(self, frame, reason=P.R_SET_TRACE, extra=None):
        return self.stop(reason, frame, extra)

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
        if extra:
            ex.update(extra)
        self.mb.ctl_flags.value = 0
        return self.stop(P.R_STEP, frame, ex)

    def step_returned(self, st, frame, unwinding=False):
        """``frame`` (the step's frame) returns or unwinds: go on in the caller.

        After a return, the step stops at the caller's next instruction (the line that made the call);
        after an exception, at the caller's next line (its handler), as its next instruction is the
        interpreter's exception handling."""
        caller = frame.f_back
        while caller is not None and is_agent_code(caller.f_code):
            caller = caller.f_back
        if caller is None:
            self.step = None
            self.backend.end_step()
            return
        st.frame = caller
        st.leaving = False
        st.after_return = not unwinding
        st.unwinding = False
        self.backend.follow(st, caller)

    def native_call(self, st, frame, callee):
        """``step into native``: ``callee`` is about to be called from the step's frame."""
        entry = self.native_entry(callee)
        if entry is None:
            return None
        addr, name = entry
        st.native_reported = True
        return self.stop(P.R_NATIVE_CALL, frame, {"native": {"addr": addr, "name": name}, "step_token": st.token})

    def native_entry(self, obj):
        """(address, name) of the C function a callable runs, if it is one outside the interpreter."""
        addr = _c_entry(obj)
        if not addr:
            return None
        if self._interp_ranges is None:
            self._interp_ranges = _interpreter_ranges()
        for lo, hi in self._interp_ranges:
            if lo <= addr < hi:
                return None
        name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__
        return addr, str(name)


# -- helpers --------------------------------------------------------------------------------------


_reported = []


def _internal_error(exc):
    if not _reported:
        _reported.append(exc)
        sys.stderr.write("tuidbg agent: internal error (ignored): %s: %s\n" % (type(exc).__name__, exc))


def _safe_repr(value, limit):
    try:
        text = repr(value)
    except Exception as exc:
        text = "<repr failed: %s: %s>" % (type(exc).__name__, exc)
    if len(text) > limit:
        text = text[:limit] + "..."
    return text


def _safe_str(value, limit):
    try:
        text = str(value)
    except Exception:
        text = _safe_repr(value, limit)
    return text[:limit]


def _main_native_id():
    t = threading.main_thread()
    return getattr(t, "native_id", None)


def _ident_of_native(native_id):
    for t in list(threading._active.values()):
        if getattr(t, "native_id", None) == native_id:
            return t.ident
    return None


_ARM_FUNC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_uint64)

_HEAD = object.__basicsize__  # sizeof(PyObject): larger on Py_TRACE_REFS and free-threaded builds
_PTR = ctypes.sizeof(ctypes.c_void_p)


def _read_ptr(addr):
    return ctypes.c_void_p.from_address(addr).value or 0


def _c_entry(obj):
    """The C function a builtin, method descriptor or ctypes function pointer runs (or 0)."""
    t = type(obj)
    try:
        if t is type(len):  # builtin_function_or_method: m_ml follows the object header
            ml = _read_ptr(id(obj) + _HEAD)
            return _read_ptr(ml + _PTR) if ml else 0  # PyMethodDef.ml_meth
        if t is type(str.join) or t is type(dict.__dict__["fromkeys"]):
            # method_descriptor / classmethod_descriptor: d_type, d_name, d_qualname, then d_method
            ml = _read_ptr(id(obj) + _HEAD + 3 * _PTR)
            return _read_ptr(ml + _PTR) if ml else 0
        cf = getattr(sys.modules.get("ctypes"), "_CFuncPtr", None)
        if cf is not None and isinstance(obj, cf):
            return ctypes.cast(obj, ctypes.c_void_p).value or 0
    except (ValueError, TypeError, OSError):
        return 0
    return 0


def _interpreter_ranges():
    """Address ranges of the file that holds the interpreter (python or libpython)."""
    try:
        anchor = ctypes.cast(ctypes.pythonapi.Py_IncRef, ctypes.c_void_p).value
    except (AttributeError, ValueError):
        return []
    maps = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                maps.append((lo, hi, parts[5].strip() if len(parts) > 5 else ""))
    except (OSError, ValueError):
        return []
    path = None
    for lo, hi, p in maps:
        if lo <= anchor < hi:
            path = p
            break
    if not path:
        return []
    return [(lo, hi) for lo, hi, p in maps if p == path]


# -- entry points ---------------------------------------------------------------------------------


def start(sock_path, token, how):
    """Create the agent, connect to the front end and wait for its breakpoints. Returns the agent or None."""
    global _agent
    old = _agent
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
    _agent = agent
    agent.install_hooks()
    return agent


def start_run(sock_path, token):
    """``tuidbg run``: start the agent if this process is the one gdb debugs (not a child that inherited it)."""
    if not traced():
        return None
    argv = _cmdline()
    try:
        from .pytest_plugin import register_if_pytest

        register_if_pytest(argv)
    except Exception:
        pass
    return start(sock_path, token, "run")


def _cmdline():
    try:
        with open("/proc/self/cmdline", "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return list(sys.argv)


def wait_for(timeout=None):
    """Wait until an agent is active (``TUIDBG_ON_BREAK=wait``); returns it or None."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        a = active()
        if a is not None:
            return a
        if deadline is not None and time.monotonic() > deadline:
            return None
        time.sleep(0.1)
