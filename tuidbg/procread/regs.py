"""A stopped thread's registers, read with ``PTRACE_GETREGS`` (x86-64 only), in DWARF's numbering.

The thread must be stopped by this process (``procread.freeze``). ``registers(tid)`` gives a
list indexed by DWARF register number (x86-64 psABI: 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi,
6 rbp, 7 rsp, 8-15 r8-r15, 16 the return address column, here rip), which is what the CFI of
``.eh_frame`` speaks of. On another architecture ``Unsupported`` says so (the caller reads
through gdb instead).
"""

import ctypes
import os

from .freeze import _call

PTRACE_GETREGS = 12
NREGS = 17  # DWARF 0-16

# struct user_regs_struct (sys/user.h), in its order
_FIELDS = ("r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx", "rdx", "rsi", "rdi",
           "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs", "gs")
_DWARF = ("rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13", "r14",
          "r15", "rip")
_INDEX = tuple(_FIELDS.index(n) for n in _DWARF)


class Unsupported(Exception):
    """This reader cannot read the registers here (another architecture, ptrace refused)."""


def check_arch():
    """Raise Unsupported unless this is x86-64 Linux (what the unwinder knows)."""
    machine = os.uname().machine
    if machine not in ("x86_64", "amd64"):
        raise Unsupported("native frames without gdb: x86-64 only (this machine is %s)" % machine)


def registers(tid):
    """[value of DWARF register 0..16] of stopped thread ``tid``; Unsupported when ptrace refuses."""
    buf = (ctypes.c_ulong * len(_FIELDS))()
    fn = _call()
    if fn(PTRACE_GETREGS, tid, None, ctypes.addressof(buf)) == -1:
        err = ctypes.get_errno()
        raise Unsupported("cannot read the registers of thread %d: %s" % (tid, os.strerror(err) if err else "error"))
    return [buf[i] for i in _INDEX]
