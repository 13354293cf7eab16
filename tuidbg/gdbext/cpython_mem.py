"""Memory access for the CPython walker: the ``Target`` a debugger provides, and reads through a page cache.

``Target`` is the whole interface between the walker and a debugger (gdb's Python in
``gdb_target.py``, MI memory reads in ``tuidbg/engine/pystack_mi.py``). ``Memory`` reads
through it page by page, so one walk reads each page of a stopped process once.

Standard library only, Python 3.6 syntax (it runs inside old gdbs' Python too).
"""

import struct

PAGE = 4096


class WalkError(Exception):
    """A reason, meant for the user, why the Python stacks cannot be read."""


class NoPython(WalkError):
    """This process has no CPython runtime (yet)."""


class ReadError(Exception):
    """Memory at an address cannot be read."""

    def __init__(self, addr, size, why=""):
        self.addr = addr
        self.size = size
        self.why = why
        Exception.__init__(self, "cannot read %d bytes at %#x%s" % (size, addr, (": " + why) if why else ""))


# ---------------------------------------------------------------------------------------------
# What a debugger must provide


class NativeFrame(object):
    """One native frame, innermost = level 0. ``name`` and ``sp`` may be computed lazily."""

    __slots__ = ("level", "_name", "_sp", "_get_name", "_get_sp")

    def __init__(self, level, name=None, sp=None, get_name=None, get_sp=None):
        self.level = level
        self._name = name
        self._sp = sp
        self._get_name = get_name
        self._get_sp = get_sp

    @property
    def name(self):
        if self._name is None and self._get_name is not None:
            self._name = self._get_name() or ""
            self._get_name = None
        return self._name or ""

    @property
    def sp(self):
        if self._sp is None and self._get_sp is not None:
            try:
                self._sp = self._get_sp()
            except Exception:
                self._sp = None
            self._get_sp = None
        return self._sp


class GdbThread(object):
    """A thread as the debugger knows it."""

    __slots__ = ("num", "lwp", "pthread", "name")

    def __init__(self, num, lwp=None, pthread=None, name=None):
        self.num = num  # gdb's (global) thread number, as a string: MI's thread-id
        self.lwp = lwp
        self.pthread = pthread  # pthread_t, or None when unknown
        self.name = name


class Target(object):
    """The debugger-side operations the walker needs. Subclasses implement them."""

    def read(self, addr, size):
        """``size`` bytes at ``addr``; raises ReadError."""
        raise NotImplementedError

    def symbol(self, name):
        """Address of a (minimal or debug) symbol, or None."""
        raise NotImplementedError

    def objfile_of(self, addr):
        """Path of the object file that holds ``addr``, or None."""
        return None

    def sections(self, name, want=None):
        """[(start, end, objfile path or None for the main executable)] of every loaded section ``name``
        (``want``: a test of an object file's base name, to look in those only, where that is cheaper)."""
        return []

    def load_bias(self, path, elf):
        """Where the object file ``path`` (parsed ``elf``) is loaded relative to its link addresses, or None."""
        return None

    def objfile_paths(self):
        """Paths of the loaded object files, the main executable first."""
        return []

    def threads(self):
        """[GdbThread] of the process."""
        return []

    def pthread_of(self, thread):
        """pthread_t of a thread when ``threads()`` could not tell (e.g. the thread pointer register)."""
        return None

    def native_frames(self, thread):
        """Iterator of NativeFrame, innermost first, for a GdbThread."""
        return iter(())

    def dwarf_offsets(self, fields, near_addr):
        """{key: offset} from the interpreter's debug info, or None when it has none."""
        return None



# ---------------------------------------------------------------------------------------------
# Memory with a page cache (one walk = one consistent snapshot of a stopped process)


_U8 = struct.Struct("<B")
_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")
_U64 = struct.Struct("<Q")
_F64 = struct.Struct("<d")


class Memory(object):
    def __init__(self, target, page=PAGE):
        self.target = target
        self.page = page
        self.pages = {}
        self.bad_pages = set()
        self.reads = 0

    def _page(self, base):
        data = self.pages.get(base)
        if data is None:
            if base in self.bad_pages:
                return None
            try:
                self.reads += 1
                data = self.target.read(base, self.page)
                if len(data) != self.page:
                    raise ReadError(base, self.page, "short read")
            except ReadError:
                self.bad_pages.add(base)
                return None
            self.pages[base] = data
        return data

    def read(self, addr, size):
        if addr <= 0 or size < 0 or addr + size > 0xFFFFFFFFFFFFFFFF:
            raise ReadError(addr, size, "not an address")
        if size == 0:
            return b""
        page = self.page
        base = addr - (addr % page)
        end = addr + size
        if end <= base + page:
            data = self._page(base)
            if data is not None:
                off = addr - base
                return data[off:off + size]
        else:
            chunks = []
            b = base
            ok = True
            while b < end:
                data = self._page(b)
                if data is None:
                    ok = False
                    break
                chunks.append(data)
                b += page
            if ok:
                blob = b"".join(chunks)
                off = addr - base
                return blob[off:off + size]
        # A page could not be read whole (the edge of a mapping, a core without it): read exactly.
        self.reads += 1
        data = self.target.read(addr, size)
        if len(data) != size:
            raise ReadError(addr, size, "short read")
        return data

    def u8(self, addr):
        return self.read(addr, 1)[0]

    def i32(self, addr):
        return _I32.unpack(self.read(addr, 4))[0]

    def u32(self, addr):
        return _U32.unpack(self.read(addr, 4))[0]

    def i64(self, addr):
        return _I64.unpack(self.read(addr, 8))[0]

    def ptr(self, addr):
        # (the walk's and the task reader's most frequent read: straight from a cached page when
        # the 8 bytes are in one; the same as unpacking read(addr, 8), tests/gdbext/test_objects.py)
        off = addr % self.page
        if off <= self.page - 8:
            data = self.pages.get(addr - off)
            if data is not None:
                return _U64.unpack_from(data, off)[0]
        return _U64.unpack(self.read(addr, 8))[0]


def u64_at(buf, off):
    return _U64.unpack_from(buf, off)[0]


def i64_at(buf, off):
    return _I64.unpack_from(buf, off)[0]


def i32_at(buf, off):
    return _I32.unpack_from(buf, off)[0]


def u32_at(buf, off):
    return _U32.unpack_from(buf, off)[0]


def unpack_ptrs(buf):
    return list(struct.unpack("<%dQ" % (len(buf) // 8), buf))
