"""gdb before 14 on a CPU with AMX: registers it cannot write, and the target description that lets it.

gdb 13 writes the vector registers of an x86-64 thread with ``PTRACE_SETREGSET NT_X86_XSTATE`` from a
buffer of the size it knows (2,696 bytes: up to AVX-512 and PKRU). A kernel that has enabled AMX
(Sapphire Rapids and later Xeons) saves more state (about 11 KB) and refuses any other size
(EFAULT: "Couldn't write extended state status: Bad address"). Reading still works; writing every
register does not, and that is what an inferior call does when it puts the registers back. The call
has run by then: the thread is left with half its registers, and a thread that was in a system call
returns ``-ERESTARTNOHAND`` to the program (CPython raises ``OSError: [Errno 514]`` in time.sleep and
the program dies). tuidbg makes two kinds of inferior call: loading the agent into an attached
process (``Py_AddPendingCall``) and arming a Python step from a native stop.

With a target description read from a file, gdb does not probe ``PTRACE_GETREGSET`` and uses the
older requests (``PTRACE_GETFPREGS``/``SETFPREGS``: the x87 and SSE state), which the kernel takes
at any size. ``amd64-sse-linux.xml`` (beside gdbext) describes the general, x87 and SSE registers,
``orig_rax`` and the segment bases; the price is that the AVX, AVX-512 and AMX registers are not
shown (the Registers pane lists xmm0-15, not ymm/zmm/k), and an inferior call leaves them as the
called function left them (tuidbg's calls run no vector code of their own). gdb keeps the setting
per inferior: it is set before each attach, and a forked child inherits it.

Checked on gdb 13.1 (Debian 12) on such a CPU: without it every inferior call fails as above; with
it they work. gdb 14 reads the size from CPUID and needs none of this.
"""

from __future__ import annotations

import os
import platform

TDESC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gdbext", "amd64-sse-linux.xml")
_FIXED_IN = (14,)


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> set[str]:
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def elf64(path: str | None) -> bool:
    """Whether ``path`` is a 64-bit ELF file (a 32-bit program gets gdb's own description)."""
    try:
        with open(str(path), "rb") as f:
            head = f.read(5)
    except (OSError, TypeError):
        return False
    return head[:4] == b"\x7fELF" and head[4:5] == b"\x02"


def needs_sse_description(gdb_version: tuple[int, ...], program: str | None, machine: str | None = None,
                          flags: set[str] | None = None) -> bool:
    """Whether gdb must be given ``TDESC`` to write registers of ``program`` (its executable) here."""
    machine = (machine or platform.machine()).lower()
    if machine not in ("x86_64", "amd64") or not gdb_version or tuple(gdb_version) >= _FIXED_IN:
        return False
    if "amx_tile" not in (cpu_flags() if flags is None else flags):
        return False
    return elf64(program) and os.path.exists(TDESC)
