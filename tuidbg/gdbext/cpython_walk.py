"""A CPython stack walker that needs no debug info and runs no code in the program.

It reads the interpreter's own data structures (``_PyRuntime`` -> interpreters
-> thread states -> frames -> code objects) through a small ``Target``
interface, so the same code runs

- inside gdb's embedded Python (``tuidbg/gdbext/gdb_target.py``), and
- in tuidbg's front end over MI memory reads, for a gdb without Python
  (``tuidbg/engine/pystack_mi.py``).

Standard library only, Python 3.6 syntax. Nothing here imports gdb.

What a walk gives, per Python thread state: the Python frames (function,
qualified name on 3.11+, file, line from the version's line table, entry
flag), the gdb thread it runs on, and, when asked, the level of the native
frame (the eval-loop call) that executes each Python frame.
"""

import bisect
import re
import struct

from . import cpython_layouts as L
from . import elfsyms

MAX_INTERPRETERS = 64
MAX_THREADS = 10000
DEFAULT_MAX_FRAMES = 100000
PAGE = 4096
EVAL_NAME = "_PyEval_EvalFrameDefault"


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

    def sections(self, name):
        """[(start, end, objfile path or None for the main executable)] of every loaded section ``name``."""
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
        return _U64.unpack(self.read(addr, 8))[0]


def u64_at(buf, off):
    return _U64.unpack_from(buf, off)[0]


def i64_at(buf, off):
    return _I64.unpack_from(buf, off)[0]


def i32_at(buf, off):
    return _I32.unpack_from(buf, off)[0]


def u32_at(buf, off):
    return _U32.unpack_from(buf, off)[0]


# ---------------------------------------------------------------------------------------------
# Line tables


def _varint(data, i):
    b = data[i]
    i += 1
    val = b & 63
    shift = 0
    while b & 64:
        b = data[i]
        i += 1
        shift += 6
        val |= (b & 63) << shift
    return val, i


def _svarint(data, i):
    v, i = _varint(data, i)
    if v & 1:
        return -(v >> 1), i
    return v >> 1, i


def line_ranges(kind, table, firstlineno):
    """Decode a line table into (starts, ends, lines), byte offsets into the bytecode.

    ``kind`` is 'lnotab' (3.9), 'pep626' (3.10) or 'locations' (3.11+). A line of None
    means "no line" for that range.
    """
    starts, ends, lines = [], [], []
    n = len(table)
    if kind == "lnotab":
        # pairs (bytecode increment, signed line increment); a range runs until the next
        # entry that moves the bytecode offset
        addr = 0
        line = firstlineno
        i = 0
        while i + 1 < n:
            a = table[i]
            d = table[i + 1]
            if d >= 128:
                d -= 256
            if a:
                starts.append(addr)
                ends.append(addr + a)
                lines.append(line)
                addr += a
            line += d
            i += 2
        starts.append(addr)
        ends.append(1 << 62)
        lines.append(line)
        return starts, ends, lines
    if kind == "pep626":
        addr = 0
        line = firstlineno
        i = 0
        while i + 1 < n:
            sdelta = table[i]
            ldelta = table[i + 1]
            if ldelta >= 128:
                ldelta -= 256
            end = addr + sdelta
            if ldelta == -128:
                cur = None
            else:
                line += ldelta
                cur = line
            if end > addr:
                starts.append(addr)
                ends.append(end)
                lines.append(cur)
            addr = end
            i += 2
        return starts, ends, lines
    # 3.11+ location table (Objects/locations.md)
    addr = 0
    line = firstlineno
    i = 0
    while i < n:
        first = table[i]
        i += 1
        if not first & 0x80:
            break  # not at an entry start: a damaged table
        code = (first >> 3) & 15
        length = ((first & 7) + 1) * 2
        cur = None
        if code == 15:
            cur = None
        elif code == 14:
            d, i = _svarint(table, i)
            line += d
            cur = line
            _, i = _varint(table, i)
            _, i = _varint(table, i)
            _, i = _varint(table, i)
        elif code == 13:
            d, i = _svarint(table, i)
            line += d
            cur = line
        elif code >= 10:
            line += code - 10
            cur = line
            i += 2
        else:
            cur = line
            i += 1
        starts.append(addr)
        ends.append(addr + length)
        lines.append(cur)
        addr += length
    return starts, ends, lines


def line_at(ranges, addr):
    starts, ends, lines = ranges
    k = bisect.bisect_right(starts, addr) - 1
    if k < 0 or addr >= ends[k]:
        return None
    return lines[k]


# ---------------------------------------------------------------------------------------------
# The interpreter: where it is, which version, which offsets


_VERSION_IN_NAME = re.compile(r"python(\d)\.(\d+)")


class Interpreter(object):
    """A located CPython runtime with the offsets to read it. Costly to build; cache it per objfile set."""

    def __init__(self, target, runtime_from="auto"):
        self.target = target
        mem = Memory(target)
        self._objfile_hint = None
        self.runtime, self.runtime_source = self._locate(target, runtime_from)
        self.objfile = self._objfile_hint or target.objfile_of(self.runtime)
        self._elf, self._bias = self._elf_symbols()
        self.version, self.version_hex, self.free_threaded, self.debug_offsets = self._detect_version(target, mem)
        major, minor = self.version[0], self.version[1]
        if major != 3 or minor < 9:
            raise WalkError("unsupported Python %s: tuidbg reads CPython 3.9 to 3.14" % self.version_text)
        if minor > 14:
            raise WalkError("unsupported Python %s: tuidbg reads CPython 3.9 to 3.14 (this one is newer)" % self.version_text)
        if self.free_threaded:
            raise WalkError("unsupported Python %s: free-threaded builds (the 't' ABI) are not supported" % self.version_text)
        self.minor = minor
        self.feat = L.features(minor)
        self.off, self.offsets_source = self._offsets(target, mem)
        self.types = self._types(target)
        self.interp_text = self._text_ranges(target)

    # -- locate ------------------------------------------------------------------------------

    def _locate(self, target, how):
        if how in ("auto", "symbol"):
            # Reading the interpreter's own .dynsym is much cheaper than a symbol lookup through
            # the debugger (which searches every object file's debug info first).
            for path in _python_objfiles(target):
                elf = elfsyms.read(path)
                if elf is None or "_PyRuntime" not in elf.symbols:
                    continue
                bias = target.load_bias(path, elf)
                if bias is not None:
                    self._objfile_hint = path
                    return elf.symbols["_PyRuntime"] + bias, "symbol"
            addr = target.symbol("_PyRuntime")
            if addr:
                return addr, "symbol"
            if how == "symbol":
                raise NoPython("no _PyRuntime symbol in this process")
        secs = target.sections(".PyRuntime")
        if secs:
            return secs[0][0], "section"
        raise NoPython("no Python runtime in this process (no _PyRuntime symbol, no .PyRuntime section)")

    def _elf_symbols(self):
        """The interpreter file's own exported symbols, relocated (None when the file is unreadable)."""
        elf = elfsyms.read(self.objfile) if self.objfile else None
        if elf is None:
            return None, 0
        if self.runtime_source == "symbol" and "_PyRuntime" in elf.symbols:
            return elf, self.runtime - elf.symbols["_PyRuntime"]
        sec = elf.sections.get(".PyRuntime")
        if sec is not None:
            return elf, self.runtime - sec[0]
        return None, 0

    def sym(self, name):
        """Address of an exported symbol of the interpreter (its ELF file first, then the debugger)."""
        if self._elf is not None:
            v = self._elf.symbols.get(name)
            if v is not None:
                return v + self._bias
            return None
        return self.target.symbol(name)

    @property
    def version_text(self):
        v = self.version
        if len(v) >= 3 and v[2] is not None:
            return "%d.%d.%d" % (v[0], v[1], v[2])
        return "%d.%d" % (v[0], v[1])

    def _detect_version(self, target, mem):
        try:
            head = mem.read(self.runtime, 24)
        except ReadError as exc:
            raise WalkError("cannot read the Python runtime at %#x (%s)" % (self.runtime, exc))
        if head[:8] == b"xdebugpy":
            hexv = u64_at(head, 8)
            ft = u64_at(head, 16)
            return _split_hex(hexv), hexv, bool(ft), True
        addr = self.sym("Py_Version")
        if addr:
            try:
                hexv = mem.u32(addr)
            except ReadError:
                hexv = 0
            if hexv >> 24 == 3:
                return _split_hex(hexv), hexv, False, False
        name = self.objfile or ""
        m = _VERSION_IN_NAME.search(name.rsplit("/", 1)[-1]) or _VERSION_IN_NAME.search(name)
        by_symbol = None
        if self.sym("Py_Is"):
            by_symbol = 10
        elif self.sym("PyFrame_GetCode"):
            by_symbol = 9
        if m:
            minor = int(m.group(2))
            if by_symbol is not None and minor in (9, 10) and minor != by_symbol:
                raise WalkError(
                    "cannot tell the Python version: the file name %s says 3.%d, its symbols say 3.%d" % (name, minor, by_symbol)
                )
            return (3, minor, None), None, False, False
        if by_symbol is not None:
            return (3, by_symbol, None), None, False, False
        raise WalkError("cannot tell the Python version of %s (no Py_Version symbol; too old?)" % (name or "the program"))

    # -- offsets -----------------------------------------------------------------------------

    def _offsets(self, target, mem):
        minor = self.minor
        if minor == 14:
            off = dict(L.TABLE_314_BASE)
        else:
            off = dict(L.TABLES[minor])
        source = "table"
        if self.debug_offsets:
            do = self._read_debug_offsets(mem)
            off.update(do)
            if minor == 14:
                _derive_314(off)
            source = "debug_offsets"
        elif minor >= 13:
            raise WalkError("Python %s: _Py_DebugOffsets not found at the runtime" % self.version_text)
        eval_addr = self.sym(EVAL_NAME)
        dwarf = None
        try:
            dwarf = target.dwarf_offsets(L.DWARF_FIELDS, eval_addr or self.runtime)
        except Exception:
            dwarf = None
        if dwarf:
            required = L.REQUIRED_OBJECT if self.feat["frames"] == "object" else L.REQUIRED_INTERP
            if all(k in dwarf for k in required):
                for k, v in dwarf.items():
                    if k in L.DWARF_OPTIONAL and k not in off:
                        continue
                    off[k] = v
                source = "dwarf"
        required = L.REQUIRED_OBJECT if self.feat["frames"] == "object" else L.REQUIRED_INTERP
        missing = [k for k in required if k not in off]
        if missing:
            raise WalkError("Python %s: offsets missing for %s" % (self.version_text, ", ".join(missing)))
        return off, source

    def _read_debug_offsets(self, mem):
        layout = L.DEBUG_OFFSETS_LAYOUTS.get(self.minor)
        if layout is None:
            raise WalkError("unsupported Python %s: unknown _Py_DebugOffsets layout" % self.version_text)
        words = layout["_words"]
        try:
            raw = mem.read(self.runtime, 8 * words)
        except ReadError as exc:
            raise WalkError("cannot read _Py_DebugOffsets (%s)" % exc)
        vals = {}
        for name, idx in layout.items():
            if name == "_words":
                continue
            vals[name] = u64_at(raw, 8 * idx)
        for name, want in L.DEBUG_OFFSETS_EXPECT.items():
            if vals.get(name) != want:
                raise WalkError(
                    "Python %s: _Py_DebugOffsets does not have the expected layout (%s is %s, expected %s)"
                    % (self.version_text, name, vals.get(name), want)
                )
        out = {}
        for name, key in L.DEBUG_OFFSETS_KEYS.items():
            if name in vals:
                out[key] = vals[name]
        out["_do.code_size"] = vals.get("code.size")
        out["_do.iframe_size"] = vals.get("iframe.size")
        return out

    def _types(self, target):
        names = {
            "code": "PyCode_Type",
            "str": "PyUnicode_Type",
            "bytes": "PyBytes_Type",
            "int": "PyLong_Type",
            "bool": "PyBool_Type",
            "float": "PyFloat_Type",
            "tuple": "PyTuple_Type",
            "list": "PyList_Type",
            "dict": "PyDict_Type",
            "set": "PySet_Type",
            "frozenset": "PyFrozenSet_Type",
            "cell": "PyCell_Type",
            "None": "_Py_NoneStruct",
            "True": "_Py_TrueStruct",
            "False": "_Py_FalseStruct",
            "set_dummy": "_PySet_Dummy",
        }
        out = {}
        for key, sym in names.items():
            out[key] = self.sym(sym)
        return out

    def _text_ranges(self, target):
        if self._elf is not None:
            sec = self._elf.sections.get(".text")
            return [(sec[0] + self._bias, sec[0] + sec[1] + self._bias)] if sec else []
        out = []
        try:
            for start, end, objfile in target.sections(".text"):
                if _same_objfile(objfile, self.objfile, target):
                    out.append((start, end))
        except Exception:
            return []
        return out


def _python_objfiles(target):
    """Object files that may hold the interpreter: libpython*, python* and the main executable."""
    try:
        paths = target.objfile_paths()
    except Exception:
        return []
    out = [p for p in paths if "python" in p.rsplit("/", 1)[-1].lower()]
    if paths and paths[0] not in out:
        out.append(paths[0])
    return out


def _same_objfile(a, b, target):
    if a == b:
        return True
    if a is None or b is None:
        return False
    return a.rsplit("/", 1)[-1] == b.rsplit("/", 1)[-1]


def _split_hex(hexv):
    return ((hexv >> 24) & 0xFF, (hexv >> 16) & 0xFF, (hexv >> 8) & 0xFF)


def _derive_314(off):
    """3.14 fields not in _Py_DebugOffsets, placed relative to ones that are (as in 3.13)."""
    arg = off.get("co.argcount")
    if arg is not None:
        off["co.flags"] = arg - 4
        off["co.posonlyargcount"] = arg + 4
        off["co.kwonlyargcount"] = arg + 8
        off["co.firstlineno"] = off.get("co.firstlineno", arg + 16)
        off["co.nlocalsplus"] = arg + 20
    ca = off.get("co.code_adaptive")
    if ca is not None:
        off["co.firsttraceable"] = ca - 16
    off["str.compact_size"] = off.get("str.ascii_size", 40) + 16


# ---------------------------------------------------------------------------------------------
# Per-stop caches (code objects and strings can be freed and their memory reused after a resume)


class StopCache(object):
    def __init__(self):
        self.code = {}
        self.strings = {}
        self.lines = {}

    def clear(self):
        self.code.clear()
        self.strings.clear()
        self.lines.clear()


class CodeInfo(object):
    __slots__ = ("addr", "name", "qualname", "filename", "firstlineno", "linetable", "ranges", "code_start",
                 "firsttraceable", "flags", "argcount", "kwonlyargcount")

    def __init__(self):
        self.ranges = None


# ---------------------------------------------------------------------------------------------
# Results


class PyFrameRec(object):
    __slots__ = ("function", "qualname", "file", "line", "entry", "native_level", "code", "addr", "owner")

    def __init__(self, function, qualname, file, line, entry, code, addr, owner=None):
        self.function = function
        self.qualname = qualname
        self.file = file
        self.line = line
        self.entry = entry
        self.native_level = None
        self.code = code
        self.addr = addr
        self.owner = owner


class PyThreadRec(object):
    def __init__(self, tstate, interp_id, thread_id, native_id):
        self.tstate = tstate
        self.interp_id = interp_id
        self.thread_id = thread_id
        self.native_id = native_id
        self.gdb = None  # GdbThread
        self.frames = []
        self.segments = []  # [(first frame index, last frame index, anchor address or None)]
        self.truncated = False
        self.error = None
        self.merge = "not-requested"
        self.merge_note = ""


# ---------------------------------------------------------------------------------------------
# The walk


class Walker(object):
    def __init__(self, interp, cache=None):
        self.ip = interp
        self.off = interp.off
        self.feat = interp.feat
        self.mem = Memory(interp.target)
        self.cache = cache if cache is not None else StopCache()

    # -- objects -----------------------------------------------------------------------------

    def type_of(self, obj):
        return self.mem.ptr(obj + self.off["ob.type"])

    def read_str(self, addr, limit=None):
        """A str object's text (first ``limit`` characters). Raises ReadError / ValueError."""
        if limit is None:
            cached = self.cache.strings.get(addr)
            if cached is not None:
                return cached
        off = self.off
        asz = off["str.ascii_size"]
        hdr = self.mem.read(addr, asz)
        length = i64_at(hdr, off["str.length"])
        state = u32_at(hdr, off["str.state"])
        if length < 0 or length > (1 << 40):
            raise ValueError("str length %d is not plausible" % length)
        kind = (state >> L.STR_KIND_SHIFT) & L.STR_KIND_MASK
        if kind not in (1, 2, 4):
            raise ValueError("str of kind %d (not ready)" % kind)
        n = length if limit is None else min(length, limit)
        if state & L.STR_COMPACT_BIT:
            data = addr + (asz if state & L.STR_ASCII_BIT else off["str.compact_size"])
        else:
            data = self.mem.ptr(addr + off["str.compact_size"])
        raw = self.mem.read(data, n * kind) if n else b""
        if kind == 1:
            text = raw.decode("latin-1")
        elif kind == 2:
            text = raw.decode("utf-16-le", "surrogatepass")
        else:
            text = raw.decode("utf-32-le", "surrogatepass")
        if limit is None:
            self.cache.strings[addr] = text
        return text

    def str_or_none(self, addr):
        if not addr:
            return None
        try:
            return self.read_str(addr)
        except (ReadError, ValueError, UnicodeDecodeError):
            return None

    def read_bytes_obj(self, addr, limit=None):
        size = self.mem.i64(addr + self.off["bytes.size"])
        if size < 0 or size > (1 << 40):
            raise ValueError("bytes size %d is not plausible" % size)
        n = size if limit is None else min(size, limit)
        return self.mem.read(addr + self.off["bytes.data"], n) if n else b"", size

    def code_info(self, addr):
        ci = self.cache.code.get(addr)
        if ci is not None:
            return ci
        off = self.off
        types = self.ip.types
        if types.get("code"):
            t = self.type_of(addr)
            if t != types["code"]:
                raise ValueError("%#x is not a code object (its type is %#x)" % (addr, t))
        ci = CodeInfo()
        ci.addr = addr
        ci.name = self.str_or_none(self.mem.ptr(addr + off["co.name"])) or "?"
        q = off.get("co.qualname")
        ci.qualname = self.str_or_none(self.mem.ptr(addr + q)) if q is not None else None
        ci.filename = self.str_or_none(self.mem.ptr(addr + off["co.filename"])) or "?"
        ci.firstlineno = self.mem.i32(addr + off["co.firstlineno"])
        ci.linetable = self.mem.ptr(addr + off["co.linetable"])
        ca = off.get("co.code_adaptive")
        ci.code_start = addr + ca if ca is not None else None
        ft = off.get("co.firsttraceable")
        ci.firsttraceable = None
        if ft is not None:
            try:
                v = self.mem.i32(addr + ft)
                if 0 <= v < 1 << 20:
                    ci.firsttraceable = v
            except ReadError:
                pass
        ci.flags = self.mem.i32(addr + off["co.flags"]) if "co.flags" in off else 0
        ci.argcount = self.mem.i32(addr + off["co.argcount"]) if "co.argcount" in off else 0
        ci.kwonlyargcount = self.mem.i32(addr + off["co.kwonlyargcount"]) if "co.kwonlyargcount" in off else 0
        self.cache.code[addr] = ci
        return ci

    def line_of(self, ci, byte_offset):
        """The line for a bytecode offset (bytes), as the interpreter computes it."""
        if byte_offset < 0:
            return ci.firstlineno
        key = (ci.addr, byte_offset)
        hit = self.cache.lines.get(key, -2)
        if hit != -2:
            return hit
        if ci.ranges is None:
            try:
                table, _ = self.read_bytes_obj(ci.linetable)
            except (ReadError, ValueError):
                table = b""
            ci.ranges = line_ranges(self.feat["linetable"], bytearray(table), ci.firstlineno)
        line = line_at(ci.ranges, byte_offset)
        self.cache.lines[key] = line
        return line

    # -- threads -----------------------------------------------------------------------------

    def thread_states(self):
        off = self.off
        mem = self.mem
        out = []
        try:
            interp = mem.ptr(self.ip.runtime + off["rt.interp_head"])
        except ReadError as exc:
            raise WalkError("cannot read the interpreter list (%s)" % exc)
        seen = set()
        n_interp = 0
        while interp and interp not in seen and n_interp < MAX_INTERPRETERS:
            seen.add(interp)
            n_interp += 1
            try:
                interp_id = mem.i64(interp + off["is.id"]) if "is.id" in off else n_interp - 1
                ts = mem.ptr(interp + off["is.threads_head"])
            except ReadError as exc:
                raise WalkError("cannot read interpreter state %#x (%s)" % (interp, exc))
            tseen = set()
            while ts and ts not in tseen and len(out) < MAX_THREADS:
                tseen.add(ts)
                try:
                    owner = mem.ptr(ts + off["ts.interp"])
                    if owner != interp:
                        if not out:
                            raise WalkError(
                                "Python %s: thread state %#x does not point back to its interpreter; "
                                "the offsets do not match this build" % (self.ip.version_text, ts)
                            )
                        break  # a thread state being set up or torn down: the list ends here
                    tid = mem.ptr(ts + off["ts.thread_id"])
                    nid = mem.ptr(ts + off["ts.native_thread_id"]) if "ts.native_thread_id" in off else None
                    nxt = mem.ptr(ts + off["ts.next"])
                except ReadError as exc:
                    raise WalkError("cannot read thread state %#x (%s)" % (ts, exc))
                out.append(PyThreadRec(ts, interp_id, tid, nid))
                ts = nxt
            try:
                interp = mem.ptr(interp + off["is.next"])
            except ReadError:
                break
        return out

    def map_threads(self, recs, gthreads):
        """Attach each thread state to its gdb thread (LWP on 3.11+, pthread_t before)."""
        by_lwp = {}
        by_pthread = {}
        for g in gthreads:
            if g.lwp is not None:
                by_lwp[g.lwp] = g
            if g.pthread is not None:
                by_pthread[g.pthread] = g
        need_pthread = False
        for r in recs:
            g = None
            if r.native_id:
                g = by_lwp.get(r.native_id)
            if g is None and r.thread_id:
                g = by_pthread.get(r.thread_id)
                if g is None and r.native_id is None:
                    need_pthread = True
            r.gdb = g
        if need_pthread:
            # Old Pythons identify threads by pthread_t only; ask for the ones gdb did not report.
            for g in gthreads:
                if g.pthread is None:
                    try:
                        g.pthread = self.ip.target.pthread_of(g)
                    except Exception:
                        g.pthread = None
                    if g.pthread is not None:
                        by_pthread[g.pthread] = g
            for r in recs:
                if r.gdb is None and r.thread_id:
                    r.gdb = by_pthread.get(r.thread_id)

    # -- frames ------------------------------------------------------------------------------

    def walk_frames(self, rec, max_frames=DEFAULT_MAX_FRAMES, anchors=True):
        """Read a thread's Python frames (at most ``max_frames``); with ``anchors``, also where
        each run of them sits on the C stack (past the limit too, which costs reads)."""
        try:
            if self.feat["frames"] == "object":
                self._walk_object_frames(rec, max_frames)
            else:
                self._walk_interp_frames(rec, max_frames, anchors)
        except ReadError as exc:
            rec.error = "the Python stack is cut short: %s" % exc
        except ValueError as exc:
            rec.error = "the Python stack is cut short: %s" % exc

    def _walk_object_frames(self, rec, max_frames):
        off = self.off
        mem = self.mem
        f = mem.ptr(rec.tstate + off["ts.frame"])
        seen = set()
        lasti_unit = self.feat["lasti_unit"]
        minor = self.ip.minor
        hdr_size = off["fo.localsplus"]
        while f:
            if len(rec.frames) >= max_frames:
                rec.truncated = True
                break
            if f in seen:
                raise ValueError("the frame chain loops at %#x" % f)
            seen.add(f)
            raw = mem.read(f, hdr_size)
            code = u64_at(raw, off["fo.code"])
            lasti = i32_at(raw, off["fo.lasti"])
            ci = self.code_info(code)
            line = None
            if minor == 9:
                if u64_at(raw, off["fo.trace"]):
                    line = i32_at(raw, off["fo.lineno"])
            else:
                ln = i32_at(raw, off["fo.lineno"])
                if ln != 0:
                    line = ln
            if line is None:
                line = self.line_of(ci, lasti * lasti_unit)
            idx = len(rec.frames)
            rec.frames.append(PyFrameRec(ci.name, None, ci.filename, line, True, code, f))
            rec.segments.append((idx, idx, None))
            f = u64_at(raw, off["fo.back"])
        if self.feat["anchor"] == "cframe" and rec.frames:
            self._anchor_with_cframes(rec)

    def _anchor_with_cframes(self, rec):
        """3.10/3.11: the n-th run of Python frames belongs to the n-th CFrame (innermost first)."""
        cframes = self._cframes(rec)
        if len(cframes) == len(rec.segments) or (rec.truncated and len(cframes) >= len(rec.segments)):
            rec.segments = [(a, b, c) for (a, b, _), c in zip(rec.segments, cframes)]

    def _cframes(self, rec):
        """C-stack addresses of the CFrames of the eval-loop calls of a thread (3.10-3.12), innermost first."""
        off = self.off
        mem = self.mem
        out = []
        try:
            cf = mem.ptr(rec.tstate + off["ts.cframe"])
            seen = set()
            while cf and cf not in seen:
                seen.add(cf)
                prev = mem.ptr(cf + off["cf.previous"])
                if not prev:
                    break  # the root CFrame lives in the thread state, not on the C stack
                out.append(cf)
                cf = prev
        except ReadError:
            return []
        return out

    def _walk_interp_frames(self, rec, max_frames, anchors=True):
        off = self.off
        mem = self.mem
        feat = self.feat
        if feat["cframe_current"]:
            cf = mem.ptr(rec.tstate + off["ts.cframe"])
            f = mem.ptr(cf + off["cf.current_frame"]) if cf else 0
        else:
            f = mem.ptr(rec.tstate + off["ts.current_frame"])
        hdr = off["if.localsplus"] if "if.localsplus" in off else 80
        o_code, o_prev, o_instr, o_owner = off["if.code"], off["if.previous"], off["if.instr"], off["if.owner"]
        o_entry = off.get("if.is_entry")
        o_fobj = off.get("if.frame_obj")
        o_fo_lineno = off.get("fo.lineno")
        boundary = feat["boundary"]
        shim_owner = feat["shim_owner"]
        stackref = feat["stackref"]
        seg_start = 0
        seen = set()
        while f:
            if f in seen:
                raise ValueError("the frame chain loops at %#x" % f)
            seen.add(f)
            raw = mem.read(f, hdr)
            prev = u64_at(raw, o_prev)
            owner = raw[o_owner]
            if owner > 4:
                raise ValueError("frame %#x has owner %d: not an interpreter frame (wrong offsets?)" % (f, owner))
            if boundary == "shim" and owner >= shim_owner:
                # The entry frame an eval-loop call keeps on the C stack: it ends a run of Python
                # frames (an empty run when that call has not pushed its first frame yet).
                if len(rec.frames) > seg_start:
                    rec.frames[-1].entry = True
                rec.segments.append((seg_start, len(rec.frames) - 1, f))
                seg_start = len(rec.frames)
                if rec.truncated:
                    break
                f = prev
                continue
            if rec.truncated:
                # past the frame limit: only look for the anchor of the last run
                f = prev
                continue
            if len(rec.frames) >= max_frames:
                rec.truncated = True
                if boundary != "shim" or not anchors:
                    break
                f = prev
                continue
            code = u64_at(raw, o_code)
            if stackref:
                code &= ~7
            instr = u64_at(raw, o_instr)
            if not code:
                f = prev
                continue
            ci = self.code_info(code)
            if ci.code_start is None:
                raise ValueError("no bytecode offset for this version")
            lasti = (instr - ci.code_start) // 2 if instr else -1
            is_entry = bool(raw[o_entry]) if boundary == "is_entry" else False
            if owner != L.OWNER_GENERATOR and ci.firsttraceable is not None and lasti < ci.firsttraceable:
                # an incomplete frame (still setting up): the interpreter itself skips it
                if is_entry and len(rec.frames) > seg_start:
                    rec.frames[-1].entry = True
                    rec.segments.append((seg_start, len(rec.frames) - 1, None))
                    seg_start = len(rec.frames)
                f = prev
                continue
            line = None
            if o_fobj is not None and o_fo_lineno is not None:
                fobj = u64_at(raw, o_fobj)
                if fobj:
                    try:
                        ln = mem.i32(fobj + o_fo_lineno)
                        if ln > 0:
                            line = ln
                    except ReadError:
                        pass
            if line is None:
                line = self.line_of(ci, lasti * 2)
            rec.frames.append(PyFrameRec(ci.name, ci.qualname, ci.filename, line, is_entry, code, f, owner))
            if is_entry:
                rec.segments.append((seg_start, len(rec.frames) - 1, None))
                seg_start = len(rec.frames)
            f = prev
        if len(rec.frames) > seg_start:
            rec.segments.append((seg_start, len(rec.frames) - 1, None))
        if boundary == "is_entry":
            self._anchor_with_cframes(rec)

    # -- attaching Python frames to native frames --------------------------------------------

    def attach_native(self, rec, depth=100000):
        """Set native_level on rec's frames: by stack anchors, else by counting eval frames."""
        if rec.gdb is None:
            rec.merge = "unmerged"
            rec.merge_note = "no gdb thread runs this Python thread state"
            return
        segs = [s for s in rec.segments if s[1] >= s[0]]
        if not segs:
            rec.merge = "anchor"
            return
        natives = _LazyFrames(self.ip.target.native_frames(rec.gdb), depth)
        anchors = [s[2] for s in rec.segments]
        if all(a is not None for a in anchors):
            levels = _match_anchors(natives, anchors)
            if levels is not None:
                assigned = 0
                for (a, b, _), level in zip(rec.segments, levels):
                    if level is None:
                        continue
                    for i in range(a, b + 1):
                        rec.frames[i].native_level = level
                    if b >= a:
                        assigned += 1
                if assigned == len(segs):
                    rec.merge = "anchor"
                    return
                if assigned:
                    rec.merge = "partial"
                    rec.merge_note = "%d of %d runs of Python frames matched by stack address" % (assigned, len(segs))
                    if natives.limited:
                        rec.merge_note += " (native frames read up to level %d)" % (depth - 1)
                    return
        # Counting: the n-th eval-loop frame runs the n-th run of Python frames.
        evals = [nf.level for nf in natives.iter_all() if nf.name.startswith(EVAL_NAME)]
        if natives.limited:
            if len(evals) >= 1:
                for (a, b, _), level in zip(segs, evals):
                    for i in range(a, b + 1):
                        rec.frames[i].native_level = level
                rec.merge = "partial"
                rec.merge_note = "native frames read up to level %d only" % (depth - 1)
                return
        if rec.truncated:
            # only the innermost Python frames were read: align from the innermost
            for (a, b, _), level in zip(segs, evals):
                for i in range(a, b + 1):
                    rec.frames[i].native_level = level
            rec.merge = "partial"
            rec.merge_note = "counted from the innermost eval-loop frame (Python stack read in part)"
            return
        if len(evals) == len(segs) or len(evals) == len(segs) + 1:
            # align from the outermost: an extra eval frame is the innermost one (it has not
            # pushed its Python frame yet, or already popped it)
            evals = evals[len(evals) - len(segs):]
            for (a, b, _), level in zip(segs, evals):
                for i in range(a, b + 1):
                    rec.frames[i].native_level = level
            rec.merge = "count"
            return
        rec.merge = "unmerged"
        rec.merge_note = "%d eval-loop frames in the native stack for %d runs of Python frames" % (len(evals), len(segs))

    # -- locals ------------------------------------------------------------------------------

    def frame_locals(self, rec, index, fmt):
        """[(name, kind, value address or None, is_arg)] of Python frame ``index`` of a thread."""
        if index < 0 or index >= len(rec.frames):
            raise WalkError("thread has %d Python frames; there is no frame %d" % (len(rec.frames), index))
        fr = rec.frames[index]
        ci = self.code_info(fr.code)
        off = self.off
        mem = self.mem
        out = []
        optimized = ci.flags & 1
        nargs = ci.argcount + ci.kwonlyargcount
        if ci.flags & L.CO_VARARGS:
            nargs += 1
        if ci.flags & L.CO_VARKEYWORDS:
            nargs += 1
        if self.feat["frames"] == "object":
            if not optimized:
                return self._dict_locals(mem.ptr(fr.addr + off["fo.locals"]), fmt)
            names = []
            kinds = []
            for key, kind in (("co.varnames", "local"), ("co.cellvars", "cell"), ("co.freevars", "free")):
                t = mem.ptr(fr.code + off[key])
                for item in self._tuple_items(t):
                    names.append(self.str_or_none(item) or "?")
                    kinds.append(kind)
            base = fr.addr + off["fo.localsplus"]
            vals = _unpack_ptrs(mem.read(base, 8 * len(names))) if names else []
            for i, (name, kind, val) in enumerate(zip(names, kinds, vals)):
                if kind in ("cell", "free") and val:
                    val = self._cell_ref(val)
                if not val:
                    continue
                out.append((name, "arg" if i < nargs and kind == "local" else kind, val))
            return out
        if not optimized:
            loc = mem.ptr(fr.addr + off["if.locals"]) if "if.locals" in off else 0
            if loc:
                return self._dict_locals(loc, fmt)
        names_t = mem.ptr(fr.code + off["co.localsplusnames"])
        kinds_b = mem.ptr(fr.code + off["co.localspluskinds"])
        names = [self.str_or_none(x) or "?" for x in self._tuple_items(names_t)]
        kinds, _ = self.read_bytes_obj(kinds_b)
        kinds = bytearray(kinds)
        n = len(names)
        base = fr.addr + off["if.localsplus"]
        vals = _unpack_ptrs(mem.read(base, 8 * n)) if n else []
        stackref = self.feat["stackref"]
        for i in range(min(n, len(kinds), len(vals))):
            k = kinds[i]
            if k & L.CO_FAST_HIDDEN:
                continue
            val = vals[i]
            if stackref:
                if (val & 3) == 3:
                    out.append((names[i], "local", ("tagged-int", val >> 2)))
                    continue
                val &= ~7
            if not val:
                continue
            if k & (L.CO_FAST_CELL | L.CO_FAST_FREE):
                cell = self._cell_ref(val) if self._is_cell(val) else None
                if cell is not None:
                    val = cell
                elif k & L.CO_FAST_FREE:
                    continue
            if not val:
                continue
            kind = "free" if k & L.CO_FAST_FREE else ("cell" if k & L.CO_FAST_CELL else "local")
            if i < nargs and kind == "local":
                kind = "arg"
            out.append((names[i], kind, val))
        return out

    def _dict_locals(self, d, fmt):
        out = []
        if not d:
            return out
        for k, v in fmt.dict_items(d, 500):
            name = self.str_or_none(k) if k else None
            out.append((name if name is not None else fmt.format(k)[1], "global", v))
        return out

    def _tuple_items(self, t):
        if not t:
            return []
        n = self.mem.i64(t + self.off["tuple.size"])
        if n < 0 or n > 1 << 20:
            raise ValueError("tuple size %d is not plausible" % n)
        return _unpack_ptrs(self.mem.read(t + self.off["tuple.items"], 8 * n)) if n else []

    def _is_cell(self, obj):
        cell_t = self.ip.types.get("cell")
        try:
            return cell_t is not None and self.type_of(obj) == cell_t
        except ReadError:
            return False

    def _cell_ref(self, cell):
        try:
            if not self._is_cell(cell):
                return cell
            return self.mem.ptr(cell + self.off["cell.ref"])
        except ReadError:
            return 0


def _unpack_ptrs(buf):
    return list(struct.unpack("<%dQ" % (len(buf) // 8), buf))


class _LazyFrames(object):
    """Native frames read on demand, at most ``depth`` of them."""

    def __init__(self, it, depth):
        self.it = it
        self.depth = depth
        self.frames = []
        self.done = False
        self.limited = False

    def get(self, i):
        while len(self.frames) <= i and not self.done:
            if len(self.frames) >= self.depth:
                self.done = True
                self.limited = True
                break
            try:
                nf = next(self.it)
            except StopIteration:
                self.done = True
                break
            self.frames.append(nf)
        return self.frames[i] if i < len(self.frames) else None

    def iter_all(self):
        i = 0
        while True:
            nf = self.get(i)
            if nf is None:
                return
            yield nf
            i += 1


def _match_anchors(natives, anchors):
    """Level of the native frame whose [sp, caller's sp) holds each anchor (None when not found).

    Eval-loop frames are tried first (two stack-pointer reads each); the rest of the frames
    only for anchors that those do not hold (a stripped build may misname a .cold part).
    """
    result = [None] * len(anchors)
    todo = sorted(set(anchors))
    found = {}

    def span(i):
        nf = natives.get(i)
        if nf is None:
            return None
        lo = nf.sp
        nxt = natives.get(i + 1)
        hi = nxt.sp if nxt is not None else None
        if lo is None:
            return None
        if hi is None or hi < lo:
            hi = lo + (1 << 20)  # the outermost frame: its locals lie just above its sp
        return lo, hi

    # pass 1: frames named like the eval loop
    for nf in natives.iter_all():
        if not todo:
            break
        if not nf.name.startswith(EVAL_NAME):
            continue
        sp_range = span(nf.level)
        if sp_range is None:
            continue
        lo, hi = sp_range
        for a in list(todo):
            if lo <= a < hi:
                found[a] = nf.level
                todo.remove(a)
    # pass 2: every frame, for what is left
    if todo:
        for nf in natives.iter_all():
            if not todo:
                break
            sp_range = span(nf.level)
            if sp_range is None:
                continue
            lo, hi = sp_range
            if hi - lo >= (1 << 20):
                continue
            for a in list(todo):
                if lo <= a < hi:
                    found[a] = nf.level
                    todo.remove(a)
    if not found:
        return None
    for i, a in enumerate(anchors):
        result[i] = found.get(a)
    return result


# ---------------------------------------------------------------------------------------------
# Values, read from memory


class ValueFormatter(object):
    """Short reprs of Python objects read from memory: scalars, and shallow containers with caps."""

    def __init__(self, walker, max_items=10, max_str=200, max_bytes=64, max_len=400):
        self.w = walker
        self.mem = walker.mem
        self.off = walker.off
        self.types = walker.ip.types
        self.max_items = max_items
        self.max_str = max_str
        self.max_bytes = max_bytes
        self.max_len = max_len
        self._tp_names = {}

    def type_name(self, tp):
        name = self._tp_names.get(tp)
        if name is None:
            p = self.mem.ptr(tp + self.off["tp.name"])
            buf = bytearray()
            addr = p
            while len(buf) < 200:
                chunk = self.mem.read(addr, min(64, PAGE - addr % PAGE))
                z = chunk.find(b"\0")
                if z >= 0:
                    buf += chunk[:z]
                    break
                buf += chunk
                addr += len(chunk)
            name = buf.decode("utf-8", "replace") or "?"
            self._tp_names[tp] = name
        return name

    def format(self, obj, depth=0):
        """(type name, repr) of the object at ``obj``; raises nothing: unreadable values say why."""
        if isinstance(obj, tuple) and obj and obj[0] == "tagged-int":
            return "int", str(obj[1])
        try:
            return self._format(obj, depth)
        except ReadError as exc:
            return "?", "<unreadable: cannot read memory at %#x>" % exc.addr
        except (ValueError, UnicodeDecodeError, OverflowError, struct.error) as exc:
            return "?", "<unreadable: %s>" % exc

    def _format(self, obj, depth):
        t = self.types
        if obj == t.get("None"):
            return "NoneType", "None"
        if obj == t.get("True"):
            return "bool", "True"
        if obj == t.get("False"):
            return "bool", "False"
        tp = self.mem.ptr(obj + self.off["ob.type"])
        if not tp:
            raise ValueError("object %#x has no type" % obj)
        try:
            tname = self.type_name(tp)
        except ReadError:
            raise ValueError("object %#x has an unreadable type pointer %#x" % (obj, tp))
        flags = self.mem.u32(tp + self.off["tp.flags"]) if "tp.flags" in self.off else 0
        exact = {
            t.get("int"): "int", t.get("float"): "float", t.get("str"): "str", t.get("bytes"): "bytes",
            t.get("tuple"): "tuple", t.get("list"): "list", t.get("dict"): "dict", t.get("set"): "set",
            t.get("frozenset"): "frozenset",
        }.get(tp)
        kind = exact
        if kind is None:
            if flags & L.TPFLAGS_LONG_SUBCLASS:
                kind = "int"
            elif flags & L.TPFLAGS_UNICODE_SUBCLASS:
                kind = "str"
            elif flags & L.TPFLAGS_BYTES_SUBCLASS:
                kind = "bytes"
            elif flags & L.TPFLAGS_LIST_SUBCLASS:
                kind = "list"
            elif flags & L.TPFLAGS_TUPLE_SUBCLASS:
                kind = "tuple"
            elif flags & L.TPFLAGS_DICT_SUBCLASS:
                kind = "dict"
        if kind is None:
            return tname, "<%s at %#x>" % (tname, obj)
        if kind == "int":
            text = self._int(obj)
        elif kind == "float":
            text = repr(_F64.unpack(self.mem.read(obj + self.off["float.value"], 8))[0])
        elif kind == "str":
            text = self._str(obj)
        elif kind == "bytes":
            data, size = self.w.read_bytes_obj(obj, self.max_bytes)
            text = repr(bytes(data))
            if size > len(data):
                text = text[:-1] + "…" + text[-1] + " (%d bytes)" % size
        elif depth > 1:
            n = self._len(obj, kind)
            opener = {"list": "[", "tuple": "(", "dict": "{", "set": "{", "frozenset": "frozenset({"}[kind]
            closer = {"list": "]", "tuple": ")", "dict": "}", "set": "}", "frozenset": "})"}[kind]
            if n:
                text = "%s… %d item%s%s" % (opener, n, "" if n == 1 else "s", closer)
            else:
                text = "set()" if kind == "set" else ("frozenset()" if kind == "frozenset" else opener + closer)
        else:
            text = self._container(obj, kind, depth)
        if exact is None and kind not in ("list", "tuple", "dict"):
            text = "%s(%s)" % (tname, text)
        return tname, text

    def _int(self, obj):
        off = self.off
        if "long.tag" in off:
            tag = self.mem.ptr(obj + off["long.tag"])
            ndigits = tag >> 3
            sign = 1 - (tag & 3)
        else:
            size = self.mem.i64(obj + off["long.size"])
            ndigits = abs(size)
            sign = -1 if size < 0 else (1 if size else 0)
        if ndigits > 1 << 24:
            raise ValueError("int with %d digits is not plausible" % ndigits)
        if ndigits * L.LONG_SHIFT > 40000:
            return "<int of %d bits>" % (ndigits * L.LONG_SHIFT)
        raw = self.mem.read(obj + off["long.digits"], 4 * ndigits) if ndigits else b""
        val = 0
        for i, d in enumerate(struct.unpack("<%dI" % ndigits, raw)):
            val |= (d & ((1 << L.LONG_SHIFT) - 1)) << (L.LONG_SHIFT * i)
        if sign < 0:
            val = -val
        if val.bit_length() > 13000:
            return "%#x" % val
        return str(val)

    def _str(self, obj):
        text = self.w.read_str(obj, self.max_str)
        length = self.mem.i64(obj + self.off["str.length"])
        r = repr(text)
        if length > len(text):
            r = r[:-1] + "…" + r[-1] + " (%d characters)" % length
        return r

    def _len(self, obj, kind):
        off = self.off
        if kind in ("list", "tuple"):
            return self.mem.i64(obj + off[kind + ".size"])
        if kind == "dict":
            return self.mem.i64(obj + off["dict.used"])
        return self.mem.i64(obj + off["set.used"])

    def _container(self, obj, kind, depth):
        n = self._len(obj, kind)
        cap = self.max_items if depth == 0 else min(3, self.max_items)
        if n < 0 or n > 1 << 40:
            raise ValueError("%s of length %d is not plausible" % (kind, n))
        parts = []
        total = 0
        shown = 0
        if kind in ("list", "tuple"):
            if kind == "list":
                items_p = self.mem.ptr(obj + self.off["list.items"])
            else:
                items_p = obj + self.off["tuple.items"]
            k = min(n, cap)
            items = _unpack_ptrs(self.mem.read(items_p, 8 * k)) if k else []
            for it in items:
                s = self.format(it, depth + 1)[1] if it else "<NULL>"
                parts.append(s)
                shown += 1
                total += len(s) + 2
                if total > self.max_len:
                    break
        elif kind == "dict":
            for key, val in self.dict_items(obj, cap):
                s = "%s: %s" % (self.format(key, depth + 1)[1], self.format(val, depth + 1)[1] if val else "<NULL>")
                parts.append(s)
                shown += 1
                total += len(s) + 2
                if total > self.max_len:
                    break
        else:
            for key in self.set_items(obj, cap):
                s = self.format(key, depth + 1)[1]
                parts.append(s)
                shown += 1
                total += len(s) + 2
                if total > self.max_len:
                    break
        more = n - shown
        body = ", ".join(parts)
        if more > 0:
            body += ", … %d more" % more
        if kind == "list":
            return "[%s]" % body
        if kind == "tuple":
            return "(%s)" % (body + ("," if n == 1 else ""))
        if kind == "dict":
            return "{%s}" % body
        if not n:
            return "set()" if kind == "set" else "frozenset()"
        return ("{%s}" if kind == "set" else "frozenset({%s})") % body

    def dict_items(self, d, cap):
        """Up to ``cap`` (key, value) pairs of a dict, in entry order."""
        off = self.off
        mem = self.mem
        keys = mem.ptr(d + off["dict.keys"])
        values = mem.ptr(d + off["dict.values"])
        if not keys:
            return []
        if self.w.feat["dict_log2"]:
            head = mem.read(keys, off["dk.indices"])
            log2_size = head[off["dk.log2_size"]]
            log2_index_bytes = head[off["dk.log2_index_bytes"]]
            dk_kind = head[off["dk.kind"]]
            nentries = i64_at(head, off["dk.nentries"])
            if log2_size > 40 or log2_index_bytes > 43:
                raise ValueError("dict keys object %#x is not plausible" % keys)
            entries = keys + off["dk.indices"] + (1 << log2_index_bytes)
            esize = 24 if dk_kind == 0 else 16
        else:
            dk_size = mem.i64(keys + off["dk.size"])
            nentries = mem.i64(keys + off["dk.nentries"])
            if dk_size <= 0 or dk_size > 1 << 40:
                raise ValueError("dict keys object %#x is not plausible" % keys)
            if dk_size <= 0xFF:
                ib = 1
            elif dk_size <= 0xFFFF:
                ib = 2
            elif dk_size <= 0xFFFFFFFF:
                ib = 4
            else:
                ib = 8
            entries = keys + off["dk.indices"] + dk_size * ib
            esize = 24
        if nentries < 0 or nentries > 1 << 32:
            raise ValueError("dict with %d entries is not plausible" % nentries)
        out = []
        i = 0
        chunk = 64
        while i < nentries and len(out) < cap:
            k = min(chunk, nentries - i)
            raw = mem.read(entries + i * esize, k * esize)
            vals = None
            if values:
                vals = _unpack_ptrs(mem.read(values + off["dv.values"] + 8 * i, 8 * k))
            for j in range(k):
                e = j * esize
                if esize == 24:
                    key = u64_at(raw, e + 8)
                    val = u64_at(raw, e + 16)
                else:
                    key = u64_at(raw, e)
                    val = u64_at(raw, e + 8)
                if vals is not None:
                    val = vals[j]
                if key and val:
                    out.append((key, val))
                    if len(out) >= cap:
                        break
            i += k
        return out

    def set_items(self, s, cap):
        off = self.off
        mem = self.mem
        mask = mem.i64(s + off["set.mask"])
        table = mem.ptr(s + off["set.table"])
        if mask < 0 or mask > 1 << 40:
            raise ValueError("set %#x is not plausible" % s)
        dummy_p = self.types.get("set_dummy")
        dummy = None
        if dummy_p:
            try:
                dummy = mem.ptr(dummy_p)
            except ReadError:
                dummy = None
        out = []
        i = 0
        n = mask + 1
        while i < n and len(out) < cap:
            k = min(64, n - i)
            raw = mem.read(table + 16 * i, 16 * k)
            for j in range(k):
                key = u64_at(raw, 16 * j)
                if key and key != dummy:
                    out.append(key)
                    if len(out) >= cap:
                        break
            i += k
        return out


# ---------------------------------------------------------------------------------------------
# One call: every thread's Python stack (the MI/console commands and the MI-memory backend use this)


def walk(target, interp, cache=None, thread=None, max_frames=DEFAULT_MAX_FRAMES, native="all", native_depth=100000):
    """Walk the Python stacks.

    ``thread``: a gdb thread number (string) to report only that thread, or None for all.
    ``native``: 'all', 'none', or a collection of gdb thread numbers whose Python frames get
    native levels.
    Returns (walker, [PyThreadRec]).
    """
    w = Walker(interp, cache)
    recs = w.thread_states()
    gthreads = target.threads()
    w.map_threads(recs, gthreads)
    if thread is not None:
        recs = [r for r in recs if r.gdb is not None and r.gdb.num == str(thread)]
    for r in recs:
        want = native == "all" or (native != "none" and r.gdb is not None and r.gdb.num in native)
        w.walk_frames(r, max_frames, anchors=want)
    if native != "none":
        for r in recs:
            if native == "all" or (r.gdb is not None and r.gdb.num in native):
                w.attach_native(r, native_depth)
    return w, recs


def result_dict(interp, recs):
    """A compact JSON-able description (strings interned in a table)."""
    strings = []
    index = {}

    def s(x):
        if x is None:
            return -1
        i = index.get(x)
        if i is None:
            i = index[x] = len(strings)
            strings.append(x)
        return i

    threads = []
    for r in recs:
        g = r.gdb
        frames = []
        for f in r.frames:
            frames.append([
                s(f.function), s(f.qualname), s(f.file), f.line if f.line is not None else -1,
                1 if f.entry else 0, f.native_level if f.native_level is not None else -1, f.code, f.addr,
            ])
        threads.append({
            "tid": g.num if g is not None else None,
            "lwp": g.lwp if g is not None else r.native_id,
            "name": g.name if g is not None else None,
            "thread_id": r.thread_id,
            "native_id": r.native_id,
            "tstate": r.tstate,
            "interp": r.interp_id,
            "truncated": 1 if r.truncated else 0,
            "error": r.error,
            "merge": r.merge,
            "merge_note": r.merge_note,
            "frames": frames,
        })
    return {
        "v": 1,
        "python": interp.version_text,
        "runtime": interp.runtime,
        "runtime_from": interp.runtime_source,
        "offsets": interp.offsets_source,
        "objfile": interp.objfile,
        "text": [list(r) for r in interp.interp_text],
        "strings": strings,
        "threads": threads,
    }


def locals_result(interp, cache, tid, index, max_items=10, max_str=200):
    """The locals of Python frame ``index`` (0 = innermost) of gdb thread ``tid``, as a JSON-able dict."""
    w = Walker(interp, cache)
    recs = w.thread_states()
    w.map_threads(recs, interp.target.threads())
    rec = None
    for r in recs:
        if r.gdb is not None and r.gdb.num == str(tid):
            rec = r
            break
    if rec is None:
        return {"v": 1, "status": "error", "reason": "thread %s runs no Python code" % tid}
    w.walk_frames(rec, index + 1)
    fmt = ValueFormatter(w, max_items=max_items, max_str=max_str)
    rows = []
    for name, kind, addr in w.frame_locals(rec, index, fmt):
        tname, text = fmt.format(addr)
        err = None
        if text.startswith("<unreadable: "):
            err = text[len("<unreadable: "):-1]
        rows.append({
            "name": name,
            "kind": kind,
            "type": tname,
            "value": None if err else text,
            "error": err,
            "addr": addr if isinstance(addr, int) else None,
        })
    return {"v": 1, "status": "ok", "thread": str(tid), "frame": index, "locals": rows}
