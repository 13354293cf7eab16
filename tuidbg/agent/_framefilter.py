"""A native PEP 523 frame filter for CPython 3.9-3.11 on x86-64: tracing only where breakpoints are.

On these versions any thread-wide trace or profile function slows *all* Python
code (1.3-3x on loops, 4-10x on call-heavy code): the interpreter takes its slow
dispatch path for every instruction once one is set. So the settrace backend
keeps every thread untraced and uses this filter to find out when a thread
enters a code object that holds a breakpoint:

``_PyInterpreterState_SetEvalFrameFunc`` installs a 100-byte function,
written here as x86-64 machine code, that CPython calls for every frame it
evaluates. It looks the frame's code object up in a direct-mapped table
(pointer -> flag). A known, uninteresting code object costs a few instructions
and a tail jump to the previous evaluation function (usually
``_PyEval_EvalFrameDefault``). An unknown one, or one that holds a breakpoint,
calls back into Python (``on_code``), which classifies it, fills the table
entry, and turns tracing on for the current thread when the code holds a
breakpoint. A busy byte keeps the callback from recursing into itself.

The table keeps a reference to each code object it holds, so an address in it
always belongs to that code object. Generators resumed with ``throw()`` skip
the filter (an exception is pending then; no Python may run).

Not used on aarch64 (the machine code is x86-64 only) or when another tool
(e.g. torch.compile on these versions) has replaced the evaluation function;
the settrace backend then traces every thread instead.
"""

import _thread
import ctypes
import platform
import sys
import types

# Assembled from (GNU as, Intel syntax), placeholders patched at run time:
#   f:    test edx, edx ; jne tail                       (generator.throw(): no callback)
#         mov rax, [rsi+0x20]                            (frame->f_code: 3.9/3.10 PyFrameObject, 3.11 _PyInterpreterFrame)
#         mov rcx, rax ; shr rcx, 4 ; and rcx, MASK
#         movabs r8, TABLE ; cmp rax, [r8+rcx*8] ; jne slow
#         movabs r8, FLAGS ; cmp byte [r8+rcx], 0 ; jne slow
#   tail: movabs rax, PREV ; jmp rax
#   slow: movabs r9, BUSY ; cmp [r9], rdi ; je tail      (rdi: the thread state; it is calling back already)
#         mov [r9], rdi ; push rdi ; push rsi ; push rdx ; mov rdi, rax ; movabs rax, CALLBACK ; call rax
#         pop rdx ; pop rsi ; pop rdi ; movabs r9, BUSY ; mov qword [r9], 0 ; jmp tail
# BUSY keeps the callback's own frame from calling back (that would never end). It is one word for all
# threads, and the GIL may switch threads inside the callback, so it only ever holds "the thread that
# called back last" and is cleared after each call: never a stale value that would lock a thread out.
# What keeps a thread's nested frames from classifying recursively is the per-thread guard in on_code.
_X86_64 = bytes.fromhex(
    "85d27533488b46204889c148c1e9044881e1ffff030049b81111111111111111493b04c8751d49b82222222222222222"
    "41803c0800750c48b83333333333333333ffe049b9555555555555555549393974e54989395756524889c748b8"
    "4444444444444444ffd05a5e5f49b9555555555555555549c70100000000ebba"
)
_MASK_AT = 0x12  # imm32 of "and rcx, MASK"
_CODE_OFFSET_AT = 0x07  # disp8 of "mov rax, [rsi+0x20]"

BITS = 16
SIZE = 1 << BITS


class FrameFilterError(Exception):
    pass


def available():
    m = platform.machine().lower()
    return m in ("x86_64", "amd64") and (3, 9) <= sys.version_info[:2] <= (3, 11)


class FrameFilter(object):
    def __init__(self, classify):
        """``classify(code) -> bool``: does this code object need tracing (it holds a breakpoint)?
        Called once per code object (until ``clear``) and again at each entry into one that does."""
        if not available():
            raise FrameFilterError("no frame filter for this machine and Python")
        self._classify = classify
        api = ctypes.pythonapi
        try:
            self._get = api._PyInterpreterState_GetEvalFrameFunc
            self._set = api._PyInterpreterState_SetEvalFrameFunc
            interp_get = api.PyInterpreterState_Get
        except AttributeError as exc:
            raise FrameFilterError(str(exc))
        self._get.restype = ctypes.c_void_p
        self._get.argtypes = [ctypes.c_void_p]
        self._set.restype = None
        self._set.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        interp_get.restype = ctypes.c_void_p
        self.interp = interp_get()
        self.table = (ctypes.c_void_p * SIZE)()
        self.flags = (ctypes.c_ubyte * SIZE)()
        self.busy = ctypes.c_void_p(0)
        self.refs = {}
        self._inside = set()  # threads in on_code now
        self._ident = _thread.get_ident  # a builtin: calling it evaluates no Python frame
        self._code_type = id(types.CodeType)
        self._cb = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(self._on_code)
        self.addr = None
        self.prev = None
        self.broken = None

    def _build(self, prev):
        code = bytearray(_X86_64)
        code[_MASK_AT:_MASK_AT + 4] = (SIZE - 1).to_bytes(4, "little")
        if code[_CODE_OFFSET_AT] != 0x20:
            raise FrameFilterError("frame filter machine code does not match its description")
        for pat, value in ((0x11, ctypes.addressof(self.table)), (0x22, ctypes.addressof(self.flags)),
                           (0x33, prev), (0x44, ctypes.cast(self._cb, ctypes.c_void_p).value),
                           (0x55, ctypes.addressof(self.busy))):
            placeholder = bytes([pat]) * 8
            if placeholder not in code:
                raise FrameFilterError("frame filter placeholder missing")
            code = code.replace(placeholder, value.to_bytes(8, "little"))
        libc = ctypes.CDLL(None, use_errno=True)
        mmap, mprotect = libc.mmap, libc.mprotect
        mmap.restype = ctypes.c_void_p
        mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        mprotect.restype = ctypes.c_int
        mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        addr = mmap(None, 4096, 3, 0x22, -1, 0)
        if not addr or addr == ctypes.c_void_p(-1).value:
            raise FrameFilterError("mmap failed")
        ctypes.memmove(addr, bytes(code), len(code))
        if mprotect(addr, 4096, 5) != 0:
            raise FrameFilterError("executable memory refused")
        return addr

    @property
    def installed(self):
        return self.addr is not None and self._get(self.interp) == self.addr

    def install(self):
        if self.installed:
            return
        prev = self._get(self.interp)
        if self.addr is None or prev != self.prev:
            self.prev = prev
            self.addr = self._build(prev)
        self._set(self.interp, self.addr)

    def uninstall(self):
        if self.addr is not None and self._get(self.interp) == self.addr:
            self._set(self.interp, self.prev)

    def clear(self):
        """Forget every classification (the breakpoints changed)."""
        ctypes.memset(self.table, 0, ctypes.sizeof(self.table))
        ctypes.memset(self.flags, 0, ctypes.sizeof(self.flags))
        self.refs = {}

    def _on_code(self, ptr):
        me = self._ident()
        if me in self._inside:
            return  # a frame run by this thread's own classification: leave it unclassified
        self._inside.add(me)
        try:
            if ctypes.c_void_p.from_address(ptr + 8).value != self._code_type:
                # Not a code object at frame->f_code: this build's layout is not the one assumed.
                self.broken = "unexpected frame layout"
                self.uninstall()
                return
            code = ctypes.cast(ctypes.c_void_p(ptr), ctypes.py_object).value
            idx = (ptr >> 4) & (SIZE - 1)
            wanted = bool(self._classify(code))
            self.table[idx] = ptr
            self.flags[idx] = 1 if wanted else 0
            self.refs[idx] = code
        except Exception as exc:  # never into the program
            self.broken = "%s: %s" % (type(exc).__name__, exc)
            self.uninstall()
        finally:
            self._inside.discard(me)
