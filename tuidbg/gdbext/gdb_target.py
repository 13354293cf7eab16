"""The stack walker's Target, implemented with gdb's Python API (runs inside gdb).

Written for old gdbs too (cuda-gdb 11.8 is gdb 10.2, whose embedded Python does
not hand back Python's own None: every value from gdb is checked with
isinstance, never with ``is None``).
"""

import re

import gdb

from .cpython_mem import GdbThread, NativeFrame, ReadError, Target
from .cxxnames import demangle

_INFO_FILES_LINE = re.compile(r"^\s*(0x[0-9a-fA-F]+) - (0x[0-9a-fA-F]+) is (\S+)(?: in (.+?))?\s*$")
_SHLIB_LINE = re.compile(r"^\s*(0x[0-9a-fA-F]+)\s+(0x[0-9a-fA-F]+)\s+(?:Yes|No)(?: \(\*\))?\s+(/.+?)\s*$")
_ENTRY = re.compile(r"Entry point: (0x[0-9a-fA-F]+)")


def _str(x):
    return x if isinstance(x, str) else None


class KeepSelection(object):
    """Restore gdb's selected thread and frame after the walker switched threads to unwind them."""

    def __enter__(self):
        self.thread = None
        self.frame = None
        try:
            t = gdb.selected_thread()
            if isinstance(t, gdb.InferiorThread):
                self.thread = t
        except gdb.error:
            pass
        try:
            f = gdb.selected_frame()
            if isinstance(f, gdb.Frame):
                self.frame = f
        except gdb.error:
            pass
        return self

    def __exit__(self, *exc):
        try:
            if self.thread is not None and self.thread.is_valid():
                cur = gdb.selected_thread()
                if not isinstance(cur, gdb.InferiorThread) or cur.ptid != self.thread.ptid:
                    self.thread.switch()
            if self.frame is not None and self.frame.is_valid():
                self.frame.select()
        except gdb.error:
            pass
        return False


class GdbTarget(Target):
    def __init__(self):
        self.inferior = gdb.selected_inferior()
        self._symbols = {}
        self._info_files = None
        self._types = {}

    # -- memory and symbols --------------------------------------------------------------------

    def read(self, addr, size):
        try:
            return bytes(self.inferior.read_memory(addr, size))
        except gdb.MemoryError as exc:
            raise ReadError(addr, size, str(exc))
        except (gdb.error, OverflowError, ValueError) as exc:
            raise ReadError(addr, size, str(exc))

    def symbol(self, name):
        if name in self._symbols:
            return self._symbols[name]
        addr = None
        try:
            addr = int(gdb.parse_and_eval("(unsigned long)&%s" % name))
        except (gdb.error, RuntimeError, ValueError, OverflowError):
            addr = None
        self._symbols[name] = addr or None
        return addr or None

    def _exec_file(self):
        try:
            return _str(gdb.current_progspace().filename)
        except (gdb.error, AttributeError):
            return None

    def objfile_paths(self):
        out = []
        exe = self._exec_file()
        if exe:
            out.append(exe)
        try:
            for o in gdb.objfiles():
                name = _str(o.filename)
                if name and name not in out:
                    out.append(name)
        except gdb.error:
            pass
        return out

    def load_bias(self, path, elf):
        if path == self._exec_file():
            if elf.etype == 2:
                return 0
            try:
                m = _ENTRY.search(gdb.execute("info files", to_string=True))
            except gdb.error:
                return None
            return int(m.group(1), 16) - elf.entry if m else None
        text = elf.sections.get(".text")
        if text is None:
            return None
        try:
            listing = gdb.execute("info sharedlibrary", to_string=True)
        except gdb.error:
            return None
        for line in listing.splitlines():
            m = _SHLIB_LINE.match(line)
            if m and m.group(3) == path:
                return int(m.group(1), 16) - text[0]
        return None

    def objfile_of(self, addr):
        try:
            name = _str(gdb.solib_name(addr))
        except (gdb.error, RuntimeError):
            name = None
        return name or self._exec_file()

    def sections(self, name, want=None):
        if self._info_files is None:
            try:
                text = gdb.execute("info files", to_string=True)
            except gdb.error:
                text = ""
            exe = self._exec_file()
            rows = []
            for line in text.splitlines():
                m = _INFO_FILES_LINE.match(line)
                if m:
                    rows.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3), m.group(4) or exe))
            self._info_files = rows
        return [(a, b, obj) for a, b, sec, obj in self._info_files if sec == name]

    # -- threads and native frames ---------------------------------------------------------------

    def _gdb_threads(self):
        try:
            return [t for t in self.inferior.threads() if isinstance(t, gdb.InferiorThread)]
        except gdb.error:
            return []

    def threads(self):
        out = []
        for t in self._gdb_threads():
            pid, lwp, _ = t.ptid
            pthread = None
            try:
                h = t.handle()
                if isinstance(h, (bytes, bytearray)) and len(h) == 8:
                    pthread = int.from_bytes(bytes(h), "little") or None
            except (gdb.error, AttributeError, RuntimeError, TypeError):
                pthread = None
            name = None
            try:
                name = _str(t.name)
            except (gdb.error, RuntimeError):
                pass
            out.append(GdbThread(str(t.global_num), lwp or pid, pthread, name))
        return out

    def _find(self, gthread):
        for t in self._gdb_threads():
            if str(t.global_num) == gthread.num:
                return t
        return None

    def pthread_of(self, gthread):
        t = self._find(gthread)
        if t is None:
            return None
        t.switch()
        for reg in ("$fs_base",):
            try:
                v = int(gdb.parse_and_eval(reg))
                if v:
                    return v
            except (gdb.error, RuntimeError, ValueError):
                continue
        return None

    def native_frames(self, gthread):
        t = self._find(gthread)
        if t is None:
            return
        t.switch()
        try:
            f = gdb.newest_frame()
        except gdb.error:
            return
        level = 0
        while isinstance(f, gdb.Frame):
            yield NativeFrame(level, get_name=_namer(f), get_sp=_sper(f))
            try:
                f = f.older()
            except gdb.error:
                return
            level += 1

    # -- DWARF -------------------------------------------------------------------------------------

    def dwarf_offsets(self, fields, near_addr):
        try:
            block = gdb.block_for_pc(near_addr)
        except (gdb.error, RuntimeError):
            return None
        if not isinstance(block, gdb.Block):
            return None  # the interpreter has no debug info
        out = {}
        for key, alts in fields.items():
            for tname, path in alts:
                try:
                    if tname == "sizeof":
                        t = self._type(path, block)
                        if t is not None:
                            out[key] = t.sizeof
                            break
                        continue
                    t = self._type(tname, block)
                    if t is None:
                        continue
                    off = _field_offset(t, path)
                    if off is not None:
                        out[key] = off
                        break
                except (gdb.error, RuntimeError):
                    continue
        return out or None

    def _type(self, name, block):
        if name in self._types:
            return self._types[name]
        try:
            t = gdb.lookup_type(name, block)
        except (gdb.error, RuntimeError):
            t = None
        if not isinstance(t, gdb.Type):
            t = None
        self._types[name] = t
        return t


def _field_offset(t, path):
    off = 0
    t = t.strip_typedefs()
    for part in path.split("."):
        for f in t.fields():
            if f.name == part:
                off += f.bitpos // 8
                t = f.type.strip_typedefs()
                break
        else:
            return None
    return off


def _namer(frame):
    def get():
        try:
            return demangle(_str(frame.name()) or "")
        except gdb.error:
            return ""

    return get


def _sper(frame):
    def get():
        return int(frame.read_register("sp"))

    return get
