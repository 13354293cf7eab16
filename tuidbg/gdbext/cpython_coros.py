"""Coroutines, generators and async generators read from memory: where each is suspended and what
it awaits (``cr_await``, ``gi_yieldfrom``, ``ag_await``), as the interpreter's ``_PyGen_yf`` finds it,
without calling it.

The awaited object is on top of a suspended frame's value stack when the frame waits in ``yield
from`` / ``await``: 3.9/3.10 tell it by the next instruction (``YIELD_FROM``), 3.11/3.12 by the
``RESUME`` after it (its oparg), 3.13+ by the frame state (``FRAME_SUSPENDED_YIELD_FROM``). A chain
goes on through the awaited coroutine, an async generator's ``asend``/``athrow`` awaitable, a
``coroutine_wrapper``, to its end: a ``FutureIter`` (the future it waits for), a future, or a
coroutine suspended at a plain ``yield``. A coroutine that is executing has its frames on a
thread's stack, taken from the thread as walked.

Standard library only, Python 3.6 syntax.
"""

from .cpython_layouts import OWNER_GENERATOR
from .cpython_mem import _I32, _U64
from .cpython_objlayouts import FRAME_STATES, RESUME_OPCODES, YIELD_FROM_39
from .cpython_walk import PyFrameRec

MAX_CHAIN = 1000
GEN_TYPES = ("coroutine", "generator", "async_generator")


class Coroutines(object):
    """Coroutine chains of a stopped process (``walker``: its memory, offsets and code cache; ``o``: a
    ``cpython_taskobjs.Objects``; ``recs``: its threads as walked, which run the executing ones)."""

    def __init__(self, walker, o, recs):
        self.w = walker
        self.mem = walker.mem
        self.off = walker.off
        self.minor = walker.ip.minor
        self.o = o
        self.recs = recs
        self._on_stack = None
        self.last_index = None
        self._yf_at = {}  # 3.11/3.12: instruction address -> whether a frame suspended there awaits
        self._where = {}  # (code, instruction, tlbc copy) -> (name, qualname, file, line)
        off = self.off
        if walker.feat["frames"] == "interp":
            # (3.11+: where things are in a generator's head and its frame, read at once: the chain of
            # each of thousands of tasks goes through here)
            gi = off["gen.iframe"]
            self._gi = gi
            self._head = gi + off["if.localsplus"]
            self._state_at = off["gen.frame_state"]
            self._code_at = gi + off["if.code"]
            self._instr_at = gi + off["if.instr"]
            self._sp_at = gi + off["if.stackpointer"] if "if.stackpointer" in off else None
            self._top_at = gi + off["if.stacktop"] if "if.stacktop" in off else None
            self._tlbc_at = gi + off["if.tlbc_index"] if off.get("if.tlbc_index") is not None else None
            self._states = FRAME_STATES[min(self.minor, 14)]

    # -- coroutine chains ------------------------------------------------------------------------

    def on_stack(self):
        """{frame address: (thread, index)} of every Python frame of every thread."""
        if self._on_stack is None:
            self._on_stack = {}
            for r in self.recs:
                for i, f in enumerate(r.frames):
                    self._on_stack.setdefault(f.addr, (r, i))
        return self._on_stack

    def chain(self, obj):
        """(the frames of the coroutine ``obj`` and of what it awaits, innermost first; what the
        innermost awaits (a future's address) or 0; the thread it runs on, or None). When it runs,
        ``last_index`` is its frame's index in that thread's frames (else None)."""
        self.last_index = None
        frames = []
        seen = set()
        leaf = 0
        thread = None
        hdr = self.o.header
        off = self.off
        ptr = self.mem.ptr
        ob_type = off["ob.type"]
        names = self.o._names
        while obj and obj not in seen and len(seen) < MAX_CHAIN:
            seen.add(obj)
            tp = ptr(obj + ob_type)
            name = names.get(tp) or self.o.type_name(tp)
            if name in GEN_TYPES:
                got = self.gen_state(obj)
                if got is None:
                    break  # (finished)
                faddr, kind, yf = got[:3]
                if kind == "executing":
                    where = self.on_stack().get(faddr)
                    if where is not None:
                        thread, i = where
                        self.last_index = i
                        frames.extend(reversed(thread.frames[:i + 1]))
                    break
                frames.append(self.frame_rec(faddr, got[3] if len(got) > 3 else None))
                if yf is None:
                    break
                obj = yf
            elif name == "async_generator_asend":
                obj = self.mem.ptr(obj + off["asend.gen"])
            elif name == "async_generator_athrow":
                obj = self.mem.ptr(obj + off["athrow.gen"])
            elif name == "coroutine_wrapper":
                obj = self.mem.ptr(obj + hdr)
            elif name.endswith("FutureIter"):
                leaf = self.mem.ptr(obj + hdr)
                break
            else:
                leaf = obj
                break
        frames.reverse()
        return frames, leaf, thread

    def gen_state(self, gen):
        """(frame address, "created"|"suspended"|"executing", what it awaits or None) of a
        generator, coroutine or async generator; None once it has finished."""
        mem = self.mem
        off = self.off
        minor = self.minor
        if minor == 9:
            f = mem.ptr(gen + off["gen.frame"])
            if not f:
                return None
            if mem.u8(gen + off["gen.running"]):
                return f, "executing", None
            lasti = mem.i32(f + off["fo.lasti"])
            if lasti < 0:
                return f, "created", None
            if self._next_op(f, lasti + 2) != YIELD_FROM_39:
                return f, "suspended", None
            top = mem.ptr(f + off["fo.stacktop"])
            return f, "suspended", mem.ptr(top - 8) if top else None
        if minor == 10:
            f = mem.ptr(gen + off["gen.frame"])
            if not f:
                return None
            created, _susp, _yf, executing, completed = FRAME_STATES[10]
            st = mem.u8(f + off["fo.state"])
            if st > 127:
                st -= 256
            if st >= completed:
                return None
            if st == executing:
                return f, "executing", None
            if st == created:
                return f, "created", None
            lasti = mem.i32(f + off["fo.lasti"])
            if self._next_op(f, (lasti + 1) * 2) != YIELD_FROM_39:
                return f, "suspended", None
            depth = mem.i32(f + off["fo.stackdepth"])
            stack = mem.ptr(f + off["fo.valuestack"])
            return f, "suspended", mem.ptr(stack + 8 * (depth - 1)) if depth > 0 else None
        created, _susp, yield_from, executing, completed = self._states
        head = mem.read(gen, self._head)  # (the generator's head and its frame's)
        st = head[self._state_at]
        if st > 127:
            st -= 256
        iframe = gen + self._gi
        if st >= completed:
            return None
        if st == executing:
            return iframe, "executing", None
        if st == created:
            return iframe, "created", None, head
        if yield_from is None:
            # 3.11/3.12: suspended in yield from / await when the next instruction is a RESUME
            # with oparg >= 2 (many tasks wait at the same instruction)
            prev = _U64.unpack_from(head, self._instr_at)[0]
            yf_here = self._yf_at.get(prev)
            if yf_here is None:
                nxt = mem.read(prev + 2, 2)
                yf_here = self._yf_at[prev] = nxt[0] in RESUME_OPCODES[minor] and nxt[1] >= 2
            if not yf_here:
                return iframe, "suspended", None, head
        elif st != yield_from:
            return iframe, "suspended", None, head
        if self._sp_at is not None:
            sp = _U64.unpack_from(head, self._sp_at)[0]
            yf = mem.ptr(sp - 8) & ~7 if sp else 0
        else:
            top = _I32.unpack_from(head, self._top_at)[0]
            yf = mem.ptr(gen + self._head + 8 * (top - 1)) if top > 0 else 0
        return iframe, "suspended", yf or None, head

    def _next_op(self, f, offset):
        """3.9/3.10: the opcode at byte ``offset`` of the bytecode of frame object ``f``."""
        code = self.mem.ptr(f + self.off["fo.code"])
        co_code = self.mem.ptr(code + self.off["co.code"])
        return self.mem.u8(co_code + self.off["bytes.data"] + offset)

    def frame_rec(self, f, head=None):
        """A suspended (or not yet started) generator frame as the walker's PyFrameRec (``head``: its
        generator's head and the frame's, as ``gen_state`` read them, when it did)."""
        mem = self.mem
        off = self.off
        w = self.w
        if w.feat["frames"] == "object":
            code = mem.ptr(f + off["fo.code"])
            ci = w.code_info(code)
            lasti = mem.i32(f + off["fo.lasti"])
            line = None
            if self.minor == 10:
                ln = mem.i32(f + off["fo.lineno"])
                line = ln or None
            if line is None:
                line = w.line_of(ci, lasti * w.feat["lasti_unit"]) if lasti >= 0 else ci.firstlineno
            return PyFrameRec(ci.name, None, ci.filename, line, False, code, f, OWNER_GENERATOR)
        if head is None:
            head = mem.read(f - self._gi, self._head)
        code = _U64.unpack_from(head, self._code_at)[0]
        if w.feat["stackref"]:
            code &= ~7
        instr = _U64.unpack_from(head, self._instr_at)[0]
        tlbc = _I32.unpack_from(head, self._tlbc_at)[0] if self._tlbc_at is not None else 0
        hit = self._where.get((code, instr, tlbc))
        if hit is not None:
            return PyFrameRec(hit[0], hit[1], hit[2], hit[3], False, code, f, OWNER_GENERATOR)
        ci = w.code_info(code)
        start = ci.code_start
        if tlbc and instr:
            start = w._tlbc_start(code, tlbc, start)
        lasti = (instr - start) // 2 if instr and start is not None else -1
        line = w.line_of(ci, lasti * 2) if lasti >= 0 else ci.firstlineno
        if line is None:
            line = ci.firstlineno
        self._where[(code, instr, tlbc)] = (ci.name, ci.qualname, ci.filename, line)
        return PyFrameRec(ci.name, ci.qualname, ci.filename, line, False, code, f, OWNER_GENERATOR)
