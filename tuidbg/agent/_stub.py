"""The stop function: one machine instruction that gdb puts a breakpoint on.

The agent maps a page, writes a bare ``ret`` into it, makes it read+execute
and calls it through ctypes with ``(reason, mailbox)``. Without a debugger the
call returns at once; under tuidbg, gdb has a breakpoint on its address, so
the call stops every thread of the process (all-stop mode) with the arguments
in the first two argument registers. Nothing depends on debug information, the
user's own SIGTRAPs stay theirs, and a process that is not debugged cannot be
killed by it.

One page per process (a fork keeps its parent's, at the same address), made
once: on x86-64 it holds the stop function that traps by itself (``int3; ret``,
at its start), the plain one (``ret; ret`` at +4: a breakpoint gdb left at the
first ``ret`` returns from the second) and the SIGTRAP shield's handler
(``_shield``, at +16), which tells the traps of these bytes from others.

The function type is ``ctypes.PYFUNCTYPE``: the calling thread keeps the GIL
while it is stopped, so no other Python thread runs between the stop and the
moment the agent has read the front end's commands.
"""

import ctypes
import platform

# aarch64: a bare return (x86-64: the page below).
_CODE = {
    "aarch64": b"\xc0\x03\x5f\xd6",  # ret (x30)
    "arm64": b"\xc0\x03\x5f\xd6",
}

_PROT_READ, _PROT_WRITE, _PROT_EXEC = 1, 2, 4
_MAP_PRIVATE, _MAP_ANONYMOUS = 0x02, 0x20
_PAGE = 4096


class StubError(Exception):
    pass


def machine():
    return platform.machine().lower()


def map_code(code):
    """Machine code in a page of its own, read+execute; returns its address. Raises StubError."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        mmap = libc.mmap
        mprotect = libc.mprotect
    except (OSError, AttributeError) as exc:
        raise StubError("cannot reach libc's mmap through ctypes: %s" % exc)
    mmap.restype = ctypes.c_void_p
    mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    mprotect.restype = ctypes.c_int
    mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    addr = mmap(None, _PAGE, _PROT_READ | _PROT_WRITE, _MAP_PRIVATE | _MAP_ANONYMOUS, -1, 0)
    if addr is None or addr == ctypes.c_void_p(-1).value:
        raise StubError("mmap failed (errno %d)" % ctypes.get_errno())
    ctypes.memmove(addr, code, len(code))
    if mprotect(addr, _PAGE, _PROT_READ | _PROT_EXEC) != 0:
        raise StubError("mprotect(PROT_EXEC) refused (errno %d); the system forbids executable memory" % ctypes.get_errno())
    return addr


# ``int3; ret``: the stop function that traps by itself, for a process among several (``tuidbg run
# --children``). gdb makes an address breakpoint in every process it debugs, and refuses to resume one
# where the address is not mapped (a child that exec'd); this one needs no breakpoint. The agent calls
# it only while a debugger traces the process (and the shield catches the trap of a debugger that let
# go in between).

# x86-64: the whole page, the SIGTRAP shield's handler (``_shield``) at HANDLER_OFFSET:
# ``void handler(int sig, siginfo_t *info, ucontext_t *uc)``. It uses only registers a call may
# clobber (a syscall keeps r8-r10) and two words of stack. The source, for GNU as (``--64``);
# tests/agent/test_shield.py assembles it and compares the bytes:
PAGE_ASM = """
    .intel_syntax noprefix
    .text
page:
    int3                                # +0: the stop function that traps by itself
    ret
    .byte 0xcc, 0xcc
    ret                                 # +4: the plain stop function (gdb's breakpoint goes here)
    ret
    .balign 16, 0xcc
handler:
    and qword ptr [rdx+176], ~0x100     # uc_mcontext.gregs[REG_EFL]: no single-step left by a dead tracer
    mov rax, [rdx+168]                  # gregs[REG_RIP]
    lea r8, [rax-1]                     # where the trap's int3 was, if it was one
    lea r9, [rip+page]
    mov rcx, r8
    sub rcx, r9
    cmp rcx, 16
    jb 3f                               # an int3 of the stop functions: return, to their ret
    test eax, 0xfff
    jz 3f                               # (the byte before a page's start may be unmapped)
    cmp byte ptr [r8], 0xcc
    jne 3f                              # no int3 there: a pc gdb moved back onto its breakpoint, a single
                                        # step, a signal sent: return, and the instruction at the pc runs
    mov r10, rdx
    mov r9d, 200                        # an int3 gdb left: up to 200 x 10 ms for its byte to be put back
1:
    push 10000000                       # struct timespec {0 s, 10 ms}
    push 0
    mov rdi, rsp
    xor esi, esi
    mov eax, 35                         # nanosleep
    syscall
    add rsp, 16
    cmp byte ptr [r8], 0xcc
    jne 2f
    dec r9d
    jnz 1b
    jmp 3f                              # (never put back: go on after it, as gdb's continue would)
2:
    mov [r10+168], r8                   # the original is back: run it
3:
    ret
"""
_X86_PAGE = bytes.fromhex(
    "ccc3ccccc3c3cccccccccccccccccccc"
    "4881a2b0000000fffeffff488b82a80000004c8d40ff4c8d0dd3ffffff4c89c14c29c94883f9107241a9ff0f0000"
    "743a418038cc75344989d241b9c800000068809698006a004889e731f6b8230000000f054883c410418038cc7507"
    "41ffc975deeb074d8982a8000000c3"
)
TRAP_OFFSET, PLAIN_OFFSET, HANDLER_OFFSET = 0, 4, 16
_PAGES = {"x86_64": _X86_PAGE, "amd64": _X86_PAGE}

_page = []  # [address of this process's page]


def traps_available():
    return machine() in _PAGES


def shield_available():
    return machine() in _PAGES


def page():
    """This process's page (made on the first call). Raises StubError."""
    if not _page:
        code = _PAGES.get(machine()) or _CODE.get(machine())
        if code is None:
            raise StubError("unsupported architecture %r (tuidbg's agent knows x86-64 and aarch64)" % machine())
        _page.append(map_code(code))
    return _page[0]


def make_stub(trap=False):
    """Return (address, callable(reason, mailbox_address)); ``trap``: the one that traps by itself
    (``traps_available()``). Raises StubError."""
    if trap and not traps_available():
        raise StubError("no stop function that traps by itself on %r" % machine())
    base = page()
    addr = base + (TRAP_OFFSET if trap else PLAIN_OFFSET) if machine() in _PAGES else base
    proto = ctypes.PYFUNCTYPE(None, ctypes.c_long, ctypes.c_void_p)
    return addr, proto(addr)
