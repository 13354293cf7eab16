"""A CPython stack walker that needs no debug info and runs no code in the program.

It reads the interpreter's own data structures (``_PyRuntime`` -> interpreters
-> thread states -> frames -> code objects) through a small ``Target``
interface, so the same code runs

- inside gdb's embedded Python (``tuidbg/gdbext/gdb_target.py``), and
- in tuidbg's front end over MI memory reads, for a gdb without Python
  (``tuidbg/engine/pystack_mi.py``).

Standard library only, Python 3.6 syntax. Nothing here imports gdb.

What a walk gives, per Python thread state: the Python frames (function,
qualified name on 3.11+, file, line from the version's line table, entry
flag), the gdb thread it runs on, and, when asked, the level of the native
frame (the eval-loop call) that executes each Python frame.

The walk itself (thread states -> frames -> code objects) is here; its parts are

- ``cpython_mem``: the ``Target`` interface and memory reads through a page cache,
- ``cpython_interp``: finding the runtime, the version and the struct offsets
  (``cpython_layouts`` holds the per-version layouts),
- ``cpython_lines``: the per-version line tables,
- ``cpython_native``: which native frame runs each run of Python frames,
- ``cpython_values``: a frame's locals and short reprs of objects,
- ``cpython_results``: a walk as a compact JSON-able dict (strings interned).

This module re-exports what the front end and the tests use (``__all__``).
"""

from .cpython_interp import EVAL_NAME, Interpreter
from .cpython_layouts import (
    OWNER_GENERATOR,
    STR_ASCII_BIT,
    STR_ASCII_BIT_FREE_THREADED,
    STR_COMPACT_BIT,
    STR_COMPACT_BIT_FREE_THREADED,
    STR_KIND_MASK,
    STR_KIND_SHIFT,
    STR_KIND_SHIFT_FREE_THREADED,
)
from .cpython_lines import line_at, line_ranges
from .cpython_mem import GdbThread, Memory, NativeFrame, NoPython, ReadError, Target, WalkError, i32_at, i64_at, u32_at, u64_at
from .cpython_native import attach_native
from .cpython_results import result_dict
from .cpython_values import ValueFormatter

# What the front end (tuidbg/engine/pystack_mi.py) and the tests use from this module: the
# walker's whole public surface, wherever it is defined.
__all__ = [
    "DEFAULT_MAX_FRAMES", "EVAL_NAME", "GdbThread", "Interpreter", "NativeFrame", "NoPython", "PyFrameRec",
    "PyThreadRec", "ReadError", "StopCache", "Target", "ValueFormatter", "WalkError", "Walker", "line_at",
    "line_ranges", "locals_result", "locals_rows", "result_dict", "walk",
]

MAX_INTERPRETERS = 64
MAX_THREADS = 10000
DEFAULT_MAX_FRAMES = 100000


# ---------------------------------------------------------------------------------------------
# Per-stop caches (code objects and strings can be freed and their memory reused after a resume)


class StopCache(object):
    def __init__(self):
        self.code = {}
        self.strings = {}
        self.lines = {}

    def clear(self):
        self.code.clear()
        self.strings.clear()
        self.lines.clear()


class CodeInfo(object):
    __slots__ = ("addr", "name", "qualname", "filename", "firstlineno", "linetable", "ranges", "code_start",
                 "firsttraceable", "flags", "argcount", "kwonlyargcount")

    def __init__(self):
        self.ranges = None


# ---------------------------------------------------------------------------------------------
# Results


class PyFrameRec(object):
    __slots__ = ("function", "qualname", "file", "line", "entry", "native_level", "code", "addr", "owner")

    def __init__(self, function, qualname, file, line, entry, code, addr, owner=None):
        self.function = function
        self.qualname = qualname
        self.file = file
        self.line = line
        self.entry = entry
        self.native_level = None
        self.code = code
        self.addr = addr
        self.owner = owner


class PyThreadRec(object):
    def __init__(self, tstate, interp_id, thread_id, native_id):
        self.tstate = tstate
        self.interp_id = interp_id
        self.thread_id = thread_id
        self.native_id = native_id
        self.gdb = None  # GdbThread
        self.frames = []
        self.segments = []  # [(first frame index, last frame index, anchor address or None)]
        self.truncated = False
        self.error = None
        self.merge = "not-requested"
        self.merge_note = ""


# ---------------------------------------------------------------------------------------------
# The walk


class Walker(object):
    def __init__(self, interp, cache=None):
        self.ip = interp
        self.off = interp.off
        self.feat = interp.feat
        self.mem = Memory(interp.target)
        self.cache = cache if cache is not None else StopCache()
        if interp.free_threaded:
            self.str_bits = (STR_KIND_SHIFT_FREE_THREADED, STR_COMPACT_BIT_FREE_THREADED, STR_ASCII_BIT_FREE_THREADED)
        else:
            self.str_bits = (STR_KIND_SHIFT, STR_COMPACT_BIT, STR_ASCII_BIT)

    # -- objects -----------------------------------------------------------------------------

    def type_of(self, obj):
        return self.mem.ptr(obj + self.off["ob.type"])

    def read_str(self, addr, limit=None):
        """A str object's text (first ``limit`` characters). Raises ReadError / ValueError."""
        if limit is None:
            cached = self.cache.strings.get(addr)
            if cached is not None:
                return cached
        off = self.off
        asz = off["str.ascii_size"]
        hdr = self.mem.read(addr, asz)
        length = i64_at(hdr, off["str.length"])
        state = u32_at(hdr, off["str.state"])
        if length < 0 or length > (1 << 40):
            raise ValueError("str length %d is not plausible" % length)
        shift, compact_bit, ascii_bit = self.str_bits
        kind = (state >> shift) & STR_KIND_MASK
        if kind not in (1, 2, 4):
            raise ValueError("str of kind %d (not ready)" % kind)
        n = length if limit is None else min(length, limit)
        if state & compact_bit:
            data = addr + (asz if state & ascii_bit else off["str.compact_size"])
        else:
            data = self.mem.ptr(addr + off["str.compact_size"])
        raw = self.mem.read(data, n * kind) if n else b""
        if kind == 1:
            text = raw.decode("latin-1")
        elif kind == 2:
            text = raw.decode("utf-16-le", "surrogatepass")
        else:
            text = raw.decode("utf-32-le", "surrogatepass")
        if limit is None:
            self.cache.strings[addr] = text
        return text

    def str_or_none(self, addr):
        if not addr:
            return None
        try:
            return self.read_str(addr)
        except (ReadError, ValueError, UnicodeDecodeError):
            return None

    def read_bytes_obj(self, addr, limit=None):
        size = self.mem.i64(addr + self.off["bytes.size"])
        if size < 0 or size > (1 << 40):
            raise ValueError("bytes size %d is not plausible" % size)
        n = size if limit is None else min(size, limit)
        return self.mem.read(addr + self.off["bytes.data"], n) if n else b"", size

    def code_info(self, addr):
        ci = self.cache.code.get(addr)
        if ci is not None:
            return ci
        off = self.off
        types = self.ip.types
        if types.get("code"):
            t = self.type_of(addr)
            if t != types["code"]:
                raise ValueError("%#x is not a code object (its type is %#x)" % (addr, t))
        ci = CodeInfo()
        ci.addr = addr
        ci.name = self.str_or_none(self.mem.ptr(addr + off["co.name"])) or "?"
        q = off.get("co.qualname")
        ci.qualname = self.str_or_none(self.mem.ptr(addr + q)) if q is not None else None
        ci.filename = self.str_or_none(self.mem.ptr(addr + off["co.filename"])) or "?"
        ci.firstlineno = self.mem.i32(addr + off["co.firstlineno"])
        ci.linetable = self.mem.ptr(addr + off["co.linetable"])
        ca = off.get("co.code_adaptive")
        ci.code_start = addr + ca if ca is not None else None
        ft = off.get("co.firsttraceable")
        ci.firsttraceable = None
        if ft is not None:
            try:
                v = self.mem.i32(addr + ft)
                if 0 <= v < 1 << 20:
                    ci.firsttraceable = v
            except ReadError:
                pass
        ci.flags = self.mem.i32(addr + off["co.flags"]) if "co.flags" in off else 0
        ci.argcount = self.mem.i32(addr + off["co.argcount"]) if "co.argcount" in off else 0
        ci.kwonlyargcount = self.mem.i32(addr + off["co.kwonlyargcount"]) if "co.kwonlyargcount" in off else 0
        self.cache.code[addr] = ci
        return ci

    def line_of(self, ci, byte_offset):
        """The line for a bytecode offset (bytes), as the interpreter computes it."""
        if byte_offset < 0:
            return ci.firstlineno
        key = (ci.addr, byte_offset)
        hit = self.cache.lines.get(key, -2)
        if hit != -2:
            return hit
        if ci.ranges is None:
            try:
                table, _ = self.read_bytes_obj(ci.linetable)
            except (ReadError, ValueError):
                table = b""
            ci.ranges = line_ranges(self.feat["linetable"], bytearray(table), ci.firstlineno)
        line = line_at(ci.ranges, byte_offset)
        self.cache.lines[key] = line
        return line

    # -- threads -----------------------------------------------------------------------------

    def thread_states(self):
        off = self.off
        mem = self.mem
        out = []
        try:
            interp = mem.ptr(self.ip.runtime + off["rt.interp_head"])
        except ReadError as exc:
            raise WalkError("cannot read the interpreter list (%s)" % exc)
        seen = set()
        n_interp = 0
        while interp and interp not in seen and n_interp < MAX_INTERPRETERS:
            seen.add(interp)
            n_interp += 1
            try:
                interp_id = mem.i64(interp + off["is.id"]) if "is.id" in off else n_interp - 1
                ts = mem.ptr(interp + off["is.threads_head"])
            except ReadError as exc:
                raise WalkError("cannot read interpreter state %#x (%s)" % (interp, exc))
            tseen = set()
            while ts and ts not in tseen and len(out) < MAX_THREADS:
                tseen.add(ts)
                try:
                    owner = mem.ptr(ts + off["ts.interp"])
                    if owner != interp:
                        if not out:
                            raise WalkError(
                                "Python %s: thread state %#x does not point back to its interpreter; "
                                "the offsets do not match this build" % (self.ip.version_text, ts)
                            )
                        break  # a thread state being set up or torn down: the list ends here
                    tid = mem.ptr(ts + off["ts.thread_id"])
                    nid = mem.ptr(ts + off["ts.native_thread_id"]) if "ts.native_thread_id" in off else None
                    nxt = mem.ptr(ts + off["ts.next"])
                except ReadError as exc:
                    raise WalkError("cannot read thread state %#x (%s)" % (ts, exc))
                out.append(PyThreadRec(ts, interp_id, tid, nid))
                ts = nxt
            try:
                interp = mem.ptr(interp + off["is.next"])
            except ReadError:
                break
        return out

    def map_threads(self, recs, gthreads):
        """Attach each thread state to its gdb thread (LWP on 3.11+, pthread_t before)."""
        by_lwp = {}
        by_pthread = {}
        for g in gthreads:
            if g.lwp is not None:
                by_lwp[g.lwp] = g
            if g.pthread is not None:
                by_pthread[g.pthread] = g
        need_pthread = False
        for r in recs:
            g = None
            if r.native_id:
                g = by_lwp.get(r.native_id)
            if g is None and r.thread_id:
                g = by_pthread.get(r.thread_id)
                if g is None and r.native_id is None:
                    need_pthread = True
            r.gdb = g
        if need_pthread:
            # Old Pythons identify threads by pthread_t only; ask for the ones gdb did not report.
            for g in gthreads:
                if g.pthread is None:
                    try:
                        g.pthread = self.ip.target.pthread_of(g)
                    except Exception:
                        g.pthread = None
                    if g.pthread is not None:
                        by_pthread[g.pthread] = g
            for r in recs:
                if r.gdb is None and r.thread_id:
                    r.gdb = by_pthread.get(r.thread_id)

    # -- frames ------------------------------------------------------------------------------

    def walk_frames(self, rec, max_frames=DEFAULT_MAX_FRAMES, anchors=True):
        """Read a thread's Python frames (at most ``max_frames``); with ``anchors``, also where
        each run of them sits on the C stack (past the limit too, which costs reads)."""
        try:
            if self.feat["frames"] == "object":
                self._walk_object_frames(rec, max_frames)
            else:
                self._walk_interp_frames(rec, max_frames, anchors)
        except ReadError as exc:
            rec.error = "the Python stack is cut short: %s" % exc
        except ValueError as exc:
            rec.error = "the Python stack is cut short: %s" % exc

    def _walk_object_frames(self, rec, max_frames):
        off = self.off
        mem = self.mem
        f = mem.ptr(rec.tstate + off["ts.frame"])
        seen = set()
        lasti_unit = self.feat["lasti_unit"]
        minor = self.ip.minor
        hdr_size = off["fo.localsplus"]
        while f:
            if len(rec.frames) >= max_frames:
                rec.truncated = True
                break
            if f in seen:
                raise ValueError("the frame chain loops at %#x" % f)
            seen.add(f)
            raw = mem.read(f, hdr_size)
            code = u64_at(raw, off["fo.code"])
            lasti = i32_at(raw, off["fo.lasti"])
            ci = self.code_info(code)
            line = None
            if minor == 9:
                if u64_at(raw, off["fo.trace"]):
                    line = i32_at(raw, off["fo.lineno"])
            else:
                ln = i32_at(raw, off["fo.lineno"])
                if ln != 0:
                    line = ln
            if line is None:
                line = self.line_of(ci, lasti * lasti_unit)
            idx = len(rec.frames)
            rec.frames.append(PyFrameRec(ci.name, None, ci.filename, line, True, code, f))
            rec.segments.append((idx, idx, None))
            f = u64_at(raw, off["fo.back"])
        if self.feat["anchor"] == "cframe" and rec.frames:
            self._anchor_with_cframes(rec)

    def _anchor_with_cframes(self, rec):
        """3.10/3.11: the n-th run of Python frames belongs to the n-th CFrame (innermost first)."""
        cframes = self._cframes(rec)
        if len(cframes) == len(rec.segments) or (rec.truncated and len(cframes) >= len(rec.segments)):
            rec.segments = [(a, b, c) for (a, b, _), c in zip(rec.segments, cframes)]

    def _cframes(self, rec):
        """C-stack addresses of the CFrames of the eval-loop calls of a thread (3.10-3.12), innermost first."""
        off = self.off
        mem = self.mem
        out = []
        try:
            cf = mem.ptr(rec.tstate + off["ts.cframe"])
            seen = set()
            while cf and cf not in seen:
                seen.add(cf)
                prev = mem.ptr(cf + off["cf.previous"])
                if not prev:
                    break  # the root CFrame lives in the thread state, not on the C stack
                out.append(cf)
                cf = prev
        except ReadError:
            return []
        return out

    def _tlbc_start(self, code, index, default):
        """Free-threaded 3.14: a thread may run its own copy of the bytecode (``co_tlbc``, an array
        {size, entries[]}; entry 0 is ``co_code_adaptive``): where copy ``index`` starts."""
        if index <= 0:
            return default
        try:
            arr = self.mem.ptr(code + self.off["co.tlbc"])
            if not arr or index >= self.mem.i64(arr):
                return default
            return self.mem.ptr(arr + 8 + 8 * index) or default
        except ReadError:
            return default

    def _walk_interp_frames(self, rec, max_frames, anchors=True):
        off = self.off
        mem = self.mem
        feat = self.feat
        if feat["cframe_current"]:
            cf = mem.ptr(rec.tstate + off["ts.cframe"])
            f = mem.ptr(cf + off["cf.current_frame"]) if cf else 0
        else:
            f = mem.ptr(rec.tstate + off["ts.current_frame"])
        hdr = off["if.localsplus"] if "if.localsplus" in off else 80
        o_code, o_prev, o_instr, o_owner = off["if.code"], off["if.previous"], off["if.instr"], off["if.owner"]
        o_tlbc = off.get("if.tlbc_index")
        o_entry = off.get("if.is_entry")
        o_fobj = off.get("if.frame_obj")
        o_fo_lineno = off.get("fo.lineno")
        boundary = feat["boundary"]
        shim_owner = feat["shim_owner"]
        stackref = feat["stackref"]
        seg_start = 0
        seen = set()
        while f:
            if f in seen:
                raise ValueError("the frame chain loops at %#x" % f)
            seen.add(f)
            raw = mem.read(f, hdr)
            prev = u64_at(raw, o_prev)
            owner = raw[o_owner]
            if owner > 4:
                raise ValueError("frame %#x has owner %d: not an interpreter frame (wrong offsets?)" % (f, owner))
            if boundary == "shim" and owner >= shim_owner:
                # The entry frame an eval-loop call keeps on the C stack: it ends a run of Python
                # frames (an empty run when that call has not pushed its first frame yet).
                if len(rec.frames) > seg_start:
                    rec.frames[-1].entry = True
                rec.segments.append((seg_start, len(rec.frames) - 1, f))
                seg_start = len(rec.frames)
                if rec.truncated:
                    break
                f = prev
                continue
            if rec.truncated:
                # past the frame limit: only look for the anchor of the last run
                f = prev
                continue
            if len(rec.frames) >= max_frames:
                rec.truncated = True
                if boundary != "shim" or not anchors:
                    break
                f = prev
                continue
            code = u64_at(raw, o_code)
            if stackref:
                code &= ~7
            instr = u64_at(raw, o_instr)
            if not code:
                f = prev
                continue
            ci = self.code_info(code)
            if ci.code_start is None:
                raise ValueError("no bytecode offset for this version")
            start = ci.code_start
            if o_tlbc is not None and instr:
                start = self._tlbc_start(code, i32_at(raw, o_tlbc), start)
            lasti = (instr - start) // 2 if instr else -1
            is_entry = bool(raw[o_entry]) if boundary == "is_entry" else False
            if owner != OWNER_GENERATOR and ci.firsttraceable is not None and lasti < ci.firsttraceable:
                # an incomplete frame (still setting up): the interpreter itself skips it
                if is_entry and len(rec.frames) > seg_start:
                    rec.frames[-1].entry = True
                    rec.segments.append((seg_start, len(rec.frames) - 1, None))
                    seg_start = len(rec.frames)
                f = prev
                continue
            line = None
            if o_fobj is not None and o_fo_lineno is not None:
                fobj = u64_at(raw, o_fobj)
                if fobj:
                    try:
                        ln = mem.i32(fobj + o_fo_lineno)
                        if ln > 0:
                            line = ln
                    except ReadError:
                        pass
            if line is None:
                line = self.line_of(ci, lasti * 2)
            rec.frames.append(PyFrameRec(ci.name, ci.qualname, ci.filename, line, is_entry, code, f, owner))
            if is_entry:
                rec.segments.append((seg_start, len(rec.frames) - 1, None))
                seg_start = len(rec.frames)
            f = prev
        if len(rec.frames) > seg_start:
            rec.segments.append((seg_start, len(rec.frames) - 1, None))
        if boundary == "is_entry":
            self._anchor_with_cframes(rec)


# ---------------------------------------------------------------------------------------------
# One call: every thread's Python stack (the MI/console commands and the MI-memory backend use this)


def walk(target, interp, cache=None, thread=None, max_frames=DEFAULT_MAX_FRAMES, native="all", native_depth=100000):
    """Walk the Python stacks.

    ``thread``: a gdb thread number (string) to report only that thread, or None for all.
    ``native``: 'all', 'none', or a collection of gdb thread numbers whose Python frames get
    native levels.
    Returns (walker, [PyThreadRec]).
    """
    w = Walker(interp, cache)
    recs = w.thread_states()
    gthreads = target.threads()
    w.map_threads(recs, gthreads)
    if thread is not None:
        recs = [r for r in recs if r.gdb is not None and r.gdb.num == str(thread)]
    for r in recs:
        want = native == "all" or (native != "none" and r.gdb is not None and r.gdb.num in native)
        w.walk_frames(r, max_frames, anchors=want)
    if native != "none":
        for r in recs:
            if native == "all" or (r.gdb is not None and r.gdb.num in native):
                attach_native(target, r, native_depth)
    return w, recs


def locals_result(interp, cache, tid, index, max_items=10, max_str=200):
    """The locals of Python frame ``index`` (0 = innermost) of gdb thread ``tid``, as a JSON-able dict."""
    w = Walker(interp, cache)
    recs = w.thread_states()
    w.map_threads(recs, interp.target.threads())
    rec = None
    for r in recs:
        if r.gdb is not None and r.gdb.num == str(tid):
            rec = r
            break
    if rec is None:
        return {"v": 1, "status": "error", "reason": "thread %s runs no Python code" % tid}
    w.walk_frames(rec, index + 1)
    fmt = ValueFormatter(w, max_items=max_items, max_str=max_str)
    return {"v": 1, "status": "ok", "thread": str(tid), "frame": index, "locals": locals_rows(fmt, rec, index)}


def locals_rows(fmt, rec, index):
    """The locals of Python frame ``index`` of ``rec`` (a walked thread, or a coroutine's frame) as rows."""
    rows = []
    for name, kind, addr in fmt.frame_locals(rec, index):
        tname, text = fmt.format(addr)
        err = None
        if text.startswith("<unreadable: "):
            err = text[len("<unreadable: "):-1]
        rows.append({
            "name": name,
            "kind": kind,
            "type": tname,
            "value": None if err else text,
            "error": err,
            "addr": addr if isinstance(addr, int) else None,
        })
    return rows
