"""The exported symbols and section addresses of an ELF file on disk (64-bit little-endian).

Looking a symbol up through gdb searches every object file's debug info first
(milliseconds each with a libc that has debug info); the interpreter's own
``.dynsym`` gives the dozen addresses the walker needs at once. Standard
library only, Python 3.6 syntax.
"""

import errno
import os
import stat
import struct
import sys

_cache = {}


def open_regular(path):
    """``open(path, "rb")`` of a regular file only. An ELF file is named by gdb or by the process's
    maps, which a process can point at a FIFO or a device: that raises OSError at once, where a plain
    open would wait for a writer forever (the open is O_NONBLOCK) or a read never end. (The engine's
    ``tuidbg.engine.files`` is the same rule, for the files tuidbg reads whole.)"""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class ElfInfo(object):
    def __init__(self, path):
        self.path = path
        self.symbols = {}  # name -> st_value (defined dynamic symbols): a DynSymbols, or {} without .dynsym
        self.sections = {}  # name -> (sh_addr, sh_size)
        self.etype = 0  # 2: executable at a fixed address, 3: position independent (PIE or library)
        self.entry = 0
        self.loads = []  # [(p_offset, p_vaddr)] of the PT_LOAD segments, in file order


def read(path):
    """ElfInfo of ``path``, or None when it is not a readable 64-bit little-endian ELF file."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (path, st.st_mtime, st.st_size)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    try:
        info = _parse(path)
    except (OSError, struct.error, ValueError, IndexError):
        info = None
    if info is not None:
        _cache[key] = info
    return info


def section_headers(f):
    """[(name, sh_type, sh_addr, sh_offset, sh_size, sh_link, sh_entsize)] of the 64-bit little-endian
    ELF file open in ``f`` (anything with seek and read: a file, an mmap), or None when it is not one."""
    f.seek(0)
    ident = f.read(64)
    if len(ident) < 64 or ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1:
        return None
    shoff = struct.unpack_from("<Q", ident, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", ident, 0x3A)
    if not shoff or shentsize < 64 or not shnum or shstrndx >= shnum:
        return None
    f.seek(shoff)
    raw = f.read(shentsize * shnum)
    secs = []
    for i in range(shnum):
        (name, stype, _flags, addr, off, size, link, _info, _align, entsize) = struct.unpack_from(
            "<IIQQQQIIQQ", raw, i * shentsize
        )
        secs.append((name, stype, addr, off, size, link, entsize))
    f.seek(secs[shstrndx][3])
    shstr = f.read(secs[shstrndx][4])
    return [(_cstr(shstr, s[0]),) + s[1:] for s in secs]


def _parse(path):
    with open_regular(path) as f:
        secs = section_headers(f)
        if secs is None:
            return None
        f.seek(0)
        ident = f.read(64)
        etype = struct.unpack_from("<H", ident, 0x10)[0]
        entry = struct.unpack_from("<Q", ident, 0x18)[0]
        phoff = struct.unpack_from("<Q", ident, 0x20)[0]
        phentsize, phnum = struct.unpack_from("<HH", ident, 0x36)

        def blob(idx):
            s = secs[idx]
            f.seek(s[3])
            return f.read(s[4])

        info = ElfInfo(path)
        info.etype = etype
        info.entry = entry
        if phoff and phentsize >= 56:
            f.seek(phoff)
            ph = f.read(phentsize * phnum)
            for i in range(len(ph) // phentsize):
                p_type, _pflags, p_offset, p_vaddr = struct.unpack_from("<IIQQ", ph, i * phentsize)
                if p_type == 1:  # PT_LOAD
                    info.loads.append((p_offset, p_vaddr))
        for s in secs:
            if s[0]:
                info.sections[s[0]] = (s[2], s[4])
        for s in secs:
            if s[1] == 11:  # SHT_DYNSYM (one per file)
                info.symbols = DynSymbols(blob(secs.index(s)), blob(s[5]), s[6] or 24)
                break
    return info


class DynSymbols(object):
    """name -> st_value of the defined OBJECT and FUNC symbols of a ``.dynsym`` (the first one of a name wins),
    looked up one name at a time: the name's offsets in the string table found with ``bytes.find``, then the
    entries that point there. ``tuidbg dump`` needs a few names of a table of thousands; building the whole
    dict took 1.5 ms of its ~20 (python3.11's 1,700 symbols). ``all_symbols`` builds the same mapping
    whole (tests/gdbext/test_elfsyms.py checks that both agree on every name of real files)."""

    def __init__(self, data, strs, ent):
        self._data = data
        self._strs = strs
        self._ent = ent
        self._hits = {}
        self._st_names = None  # every entry's st_name packed (u32 LE), in table order: made on the first lookup

    def _find(self, name):
        if name in self._hits:
            return self._hits[name]
        data, strs, ent = self._data, self._strs, self._ent
        if self._st_names is None:
            n = len(data) // ent
            if ent % 4 == 0 and sys.byteorder == "little":
                self._st_names = memoryview(data[:n * ent]).cast("I")[::ent // 4].tobytes()
            else:
                self._st_names = struct.pack("<%dI" % n, *(struct.unpack_from("<I", data, j * ent)[0] for j in range(n)))
        st_names = self._st_names
        needle = name.encode("utf-8", "replace") + b"\0"
        best = None  # (index, st_value)
        off = strs.find(needle, 1) if name else -1
        while off >= 0:
            key = struct.pack("<I", off)
            at = st_names.find(key)
            while at >= 0 and (best is None or at // 4 < best[0]):
                if at % 4 == 0:
                    idx = at // 4
                    _n, st_info, _other, st_shndx, st_value, _size = struct.unpack_from("<IBBHQQ", data, idx * ent)
                    if st_shndx != 0 and (st_info & 0xF) in (1, 2):
                        best = (idx, st_value)
                        break
                at = st_names.find(key, at + 1)
            off = strs.find(needle, off + 1)
        value = None if best is None else best[1]
        self._hits[name] = value
        return value

    def get(self, name, default=None):
        v = self._find(name)
        return default if v is None else v

    def __contains__(self, name):
        return self._find(name) is not None

    def __getitem__(self, name):
        v = self._find(name)
        if v is None:
            raise KeyError(name)
        return v


def all_symbols(path):
    """{name: st_value} of every defined OBJECT and FUNC symbol of ``path``'s ``.dynsym``, the first of a
    name winning, built whole: the plain form of ``DynSymbols`` (for tests, and for whoever wants them all)."""
    out = {}
    with open_regular(path) as f:
        secs = section_headers(f) or []
        for s in secs:
            if s[1] != 11:
                continue
            f.seek(s[3])
            data = f.read(s[4])
            f.seek(secs[s[5]][3])
            strs = f.read(secs[s[5]][4])
            ent = s[6] or 24
            for j in range(len(data) // ent):
                st_name, st_info, _other, st_shndx, st_value, _size = struct.unpack_from("<IBBHQQ", data, j * ent)
                if st_shndx == 0 or not st_name:
                    continue  # undefined (imported) symbol
                if (st_info & 0xF) not in (1, 2):  # OBJECT, FUNC
                    continue
                nm = _cstr(strs, st_name)
                if nm and nm not in out:
                    out[nm] = st_value
            break
    return out


def _cstr(buf, off):
    end = buf.find(b"\0", off)
    if end < 0:
        return ""
    return buf[off:end].decode("utf-8", "replace")
