"""The agent's native side: the mailbox, ctypes look-ups into the interpreter, threads and ptrace.

Everything the agent does through ctypes or the OS (besides the stop function,
``_stub``): the mailbox gdb reads and writes, the line of a frame from its
instruction offset (before 3.11), the C function a builtin runs, the address
ranges of the interpreter, the callback gdb calls to arm a step, thread names
and ids, and whether a debugger is attached.
"""

import ctypes
import json
import sys
import threading

from . import protocol as P


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


if sys.version_info < (3, 11):
    # Before 3.11 a frame with a trace function reports the line of its last 'line' event, which is stale
    # for frames traced without line events: compute it from the instruction offset instead.
    _addr2line = ctypes.pythonapi.PyCode_Addr2Line
    _addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
    _addr2line.restype = ctypes.c_int

    def lineno(frame):
        try:
            return _addr2line(frame.f_code, max(frame.f_lasti, 0))
        except (ValueError, TypeError, ctypes.ArgumentError):
            return frame.f_lineno or frame.f_code.co_firstlineno
else:

    def lineno(frame):
        n = frame.f_lineno
        return n if n is not None else frame.f_code.co_firstlineno


def thread_name(ident):
    t = threading._active.get(ident)  # no _DummyThread side effect for foreign threads
    return t.name if t is not None else None


def thread_names(limit=512):
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


def main_native_id():
    t = threading.main_thread()
    return getattr(t, "native_id", None)


def ident_of_native(native_id):
    for t in list(threading._active.values()):
        if getattr(t, "native_id", None) == native_id:
            return t.ident
    return None


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


# gdb calls this C function pointer (an inferior call) to arm a Python step from a native stop.
ARM_FUNC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_uint64)


# gdb calls this one to evaluate the mailbox's requests in a thread stopped in native code (_native_eval).
EVAL_FUNC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)


def eval_callback(fn):
    """(the ctypes callback to keep alive, its address) for ``fn(timeout_ms) -> int``."""
    cb = EVAL_FUNC(fn)
    return cb, ctypes.cast(cb, ctypes.c_void_p).value or 0


def arm_callback(fn):
    """(the ctypes callback to keep alive, its address) for ``fn(mode, k, token) -> int``."""
    cb = ARM_FUNC(fn)
    return cb, ctypes.cast(cb, ctypes.c_void_p).value or 0


_HEAD = object.__basicsize__  # sizeof(PyObject): larger on Py_TRACE_REFS and free-threaded builds
_PTR = ctypes.sizeof(ctypes.c_void_p)


def _read_ptr(addr):
    return ctypes.c_void_p.from_address(addr).value or 0


def c_entry(obj):
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


def interpreter_ranges():
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


_interp_ranges = []  # [interpreter_ranges()], computed once


def native_entry(obj):
    """(address, name) of the C function a callable runs, if it is one outside the interpreter."""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__
    return native_at(c_entry(obj), str(name))


def native_at(addr, name):
    """(address, name) of a C function, if it is one outside the interpreter (an extension's)."""
    if not addr:
        return None
    if not _interp_ranges:
        _interp_ranges.append(interpreter_ranges())
    for lo, hi in _interp_ranges[0]:
        if lo <= addr < hi:
            return None
    return addr, str(name)
