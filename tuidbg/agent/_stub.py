"""The stop function: one machine instruction that gdb puts a breakpoint on.

The agent maps a page, writes a bare ``ret`` into it, makes it read+execute
and calls it through ctypes with ``(reason, mailbox)``. Without a debugger the
call returns at once; under tuidbg, gdb has a breakpoint on its address, so
the call stops every thread of the process (all-stop mode) with the arguments
in the first two argument registers. Nothing depends on debug information, the
user's own SIGTRAPs stay theirs, and a process that is not debugged cannot be
killed by it.

The function type is ``ctypes.PYFUNCTYPE``: the calling thread keeps the GIL
while it is stopped, so no other Python thread runs between the stop and the
moment the agent has read the front end's commands.
"""

import ctypes
import platform

# A bare return, per architecture.
_CODE = {
    "x86_64": b"\xc3",  # ret
    "amd64": b"\xc3",
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
# it only while a debugger traces the process (a SIGTRAP would end it otherwise).
_TRAP_CODE = {"x86_64": b"\xcc\xc3", "amd64": b"\xcc\xc3"}


def traps_available():
    return machine() in _TRAP_CODE


def make_stub(trap=False):
    """Return (address, callable(reason, mailbox_address)); ``trap``: the one that traps by itself
    (``traps_available()``). Raises StubError."""
    code = (_TRAP_CODE if trap else _CODE).get(machine())
    if code is None:
        raise StubError("unsupported architecture %r (tuidbg's agent knows x86-64 and aarch64)" % machine())
    addr = map_code(code)
    proto = ctypes.PYFUNCTYPE(None, ctypes.c_long, ctypes.c_void_p)
    return addr, proto(addr)
