"""The CPython walker's ``Target`` over ``/proc/PID``: no debugger.

- memory: ``pread`` on ``/proc/PID/mem`` (the same permission as ptrace: the caller must
  be allowed to trace the process);
- object files: the file-backed mappings of ``/proc/PID/maps``, the main executable first;
  their symbols and sections from the files themselves (``elfsyms``: ``.dynsym`` and the
  section headers), relocated by where ``maps`` shows them loaded. A process in another
  mount namespace (a container) is read through ``/proc/PID/root``;
- threads: ``/proc/PID/task`` (numbered as gdb numbers them on attach: the main thread 1,
  the others in /proc's order), named from ``/proc/PID/task/TID/comm``;
- no DWARF: offsets come from ``_Py_DebugOffsets`` or the walker's tables;
- native frames: those ``snapshot`` unwound (``procread.native``) and set as ``stacks``, for
  the walker's merge (``native_frames``).

On 3.9/3.10 a thread state knows its thread by ``pthread_t`` only: ``lwp_of_pthread``
reads the kernel thread ID from glibc's ``struct pthread``, at the offset glibc publishes
for libthread_db (``_thread_db_pthread_tid``).
"""

import os
import struct

from tuidbg.gdbext.cpython_mem import GdbThread, NativeFrame, ReadError, Target
from tuidbg.gdbext.elfsyms import read as read_elf

from .proc import list_threads


class Mapping(object):
    __slots__ = ("start", "end", "perms", "offset", "path")

    def __init__(self, start, end, perms, offset, path):
        self.start = start
        self.end = end
        self.perms = perms
        self.offset = offset
        self.path = path  # as this process can open it (through /proc/PID/root when it must)


def open_mem(pid):
    """An fd on /proc/PID/mem; OSError (EACCES/EPERM: not allowed, ENOENT/ESRCH: gone) otherwise."""
    return os.open("/proc/%d/mem" % pid, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))


class ProcTarget(Target):
    def __init__(self, pid):
        self.pid = pid
        self._fd = open_mem(pid)
        self.tids = None  # the threads, set by whoever stopped them (else listed from /proc)
        self._prefix = _root_prefix(pid)
        try:
            self.exe = self._local(os.readlink("/proc/%d/exe" % pid))
        except OSError:
            self.exe = None
        self.maps = self._read_maps()
        self._symbols = {}
        self._tid_offset = -1
        self.stacks = None  # {tid: native.Stack}, once unwound

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # -- memory --------------------------------------------------------------------------------

    def read(self, addr, size):
        try:
            data = os.pread(self._fd, size, addr)
        except OSError as exc:
            raise ReadError(addr, size, exc.strerror or str(exc))
        except (OverflowError, ValueError) as exc:
            raise ReadError(addr, size, str(exc))
        if len(data) != size:
            raise ReadError(addr, size, "short read" if data else "not mapped (or the process exited)")
        return data

    def read_upto(self, addr, size):
        """Up to ``size`` bytes from ``addr``: fewer where the mapped memory ends (a read of /proc/PID/mem stops at
        the first address it cannot read and returns what came before), b"" where none can be read."""
        try:
            return os.pread(self._fd, size, addr)
        except (OSError, OverflowError, ValueError):
            return b""

    # -- object files, symbols, sections -----------------------------------------------------------

    def _local(self, path):
        if path.endswith(" (deleted)"):
            return None  # replaced on disk since it was loaded: its symbols would be wrong
        return self._prefix + path if self._prefix else path

    def _read_maps(self):
        out = []
        try:
            with open("/proc/%d/maps" % self.pid) as f:
                lines = f.read().splitlines()
        except OSError:
            return out
        for line in lines:
            parts = line.split(None, 5)
            if len(parts) < 6 or not parts[5].startswith("/"):
                continue
            path = self._local(parts[5])
            if path is None:
                continue
            lo, _, hi = parts[0].partition("-")
            out.append(Mapping(int(lo, 16), int(hi, 16), parts[1], int(parts[2], 16), path))
        return out

    def objfile_paths(self):
        out = [self.exe] if self.exe else []
        for m in self.maps:
            if m.path not in out:
                out.append(m.path)
        return out

    def load_bias(self, path, elf):
        if elf.etype == 2:
            return 0  # ET_EXEC: at its link addresses
        if not elf.loads:
            return None
        p_offset, p_vaddr = elf.loads[0]
        page = p_offset & ~0xFFF
        for m in self.maps:
            if m.path == path and m.offset == page:
                return m.start - (p_vaddr & ~0xFFF)
        return None

    def objfile_of(self, addr):
        for m in self.maps:
            if m.start <= addr < m.end:
                return m.path
        return None

    def _elves(self, want=None):
        for path in self.objfile_paths():
            if want is not None and not want(path.rsplit("/", 1)[-1]):
                continue
            elf = read_elf(path)
            if elf is not None:
                bias = self.load_bias(path, elf)
                if bias is not None:
                    yield path, elf, bias

    def symbol(self, name):
        if name in self._symbols:
            return self._symbols[name]
        addr = None
        for _path, elf, bias in self._elves():
            v = elf.symbols.get(name)
            if v:
                addr = v + bias
                break
        self._symbols[name] = addr
        return addr

    def sections(self, name, want=None):
        out = []
        for path, elf, bias in self._elves(want):
            sec = elf.sections.get(name)
            if sec is not None and sec[0]:
                out.append((sec[0] + bias, sec[0] + sec[1] + bias, path))
        return out

    # -- threads -----------------------------------------------------------------------------------

    def threads(self):
        if self.tids is None:
            self.tids = list_threads(self.pid)
        return [GdbThread(str(i + 1), tid) for i, tid in enumerate(self.tids)]

    def native_frames(self, thread):
        stack = self.stacks.get(thread.lwp) if self.stacks else None
        return iter([NativeFrame(f.level, f.name or "??", f.sp) for f in stack.frames] if stack else ())

    def lwp_of_pthread(self, pthread):
        """The kernel thread ID of a glibc thread (``pthread_t``), or None."""
        if self._tid_offset == -1:
            self._tid_offset = self._glibc_tid_offset()
        if self._tid_offset is None or not pthread:
            return None
        try:
            return struct.unpack("<i", self.read(pthread + self._tid_offset, 4))[0] or None
        except ReadError:
            return None

    def _glibc_tid_offset(self):
        # libthread_db's descriptor of struct pthread's tid: {size in bits, count, offset}
        for _path, elf, bias in self._elves(lambda base: base.startswith(("libc.so", "libc-", "libpthread"))):
            v = elf.symbols.get("_thread_db_pthread_tid")
            if v:
                try:
                    bits, _count, offset = struct.unpack("<III", self.read(v + bias, 12))
                except ReadError:
                    return None
                return offset if bits == 32 and offset < 1 << 16 else None
        return None


def _root_prefix(pid):
    """"" when the process sees the same / as this one, else "/proc/PID/root"."""
    try:
        mine = os.stat("/")
        theirs = os.stat("/proc/%d/root" % pid)
    except OSError:
        return ""  # not allowed to look: read the paths as they are
    if (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino):
        return ""
    return "/proc/%d/root" % pid
