"""Where the CPython runtime is in a process, which version it is, and the offsets to read it.

``Interpreter`` finds ``_PyRuntime`` (the interpreter's own ELF symbols first, then the
debugger, then the ``.PyRuntime`` section), tells the version (``_Py_DebugOffsets`` on
3.13+, ``Py_Version``, the file name and symbols before), and takes its struct offsets
from ``_Py_DebugOffsets``, the interpreter's DWARF, or the tables of ``cpython_layouts``.

Standard library only, Python 3.6 syntax.
"""

from .elfsyms import read as read_elf
from .cpython_layouts import (
    DEBUG_OFFSETS_EXPECT,
    DEBUG_OFFSETS_KEYS,
    DEBUG_OFFSETS_LAYOUTS,
    DWARF_FIELDS,
    DWARF_OPTIONAL,
    HEADER_SIZE,
    HEADER_SIZE_FREE_THREADED,
    REQUIRED_INTERP,
    REQUIRED_OBJECT,
    TABLE_314_BASE,
    TABLES,
    TUPLE_HASH_MINOR,
    features,
)
from .cpython_mem import Memory, NoPython, ReadError, WalkError, u64_at
from .cpython_objlayouts import SHIFTED

EVAL_NAME = "_PyEval_EvalFrameDefault"


_VERSION_IN_NAME = r"python(\d)\.(\d+)"  # (re is imported where it is used: `tuidbg dump` is timed from its start)


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
        if self.free_threaded and minor < 14:
            raise WalkError("unsupported Python %s: tuidbg reads free-threaded builds (the 't' ABI) from 3.14 on"
                            % self.version_text)
        self.minor = minor
        self.feat = features(minor)
        self.off, self.offsets_source = self._offsets(target, mem)
        self.types = self._types(target)
        self.interp_text = self._text_ranges(target)

    # -- locate ------------------------------------------------------------------------------

    def _locate(self, target, how):
        if how in ("auto", "symbol"):
            # Reading the interpreter's own .dynsym is much cheaper than a symbol lookup through
            # the debugger (which searches every object file's debug info first).
            for path in _python_objfiles(target):
                elf = read_elf(path)
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
        elf = read_elf(self.objfile) if self.objfile else None
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
        import re

        m = re.search(_VERSION_IN_NAME, name.rsplit("/", 1)[-1]) or re.search(_VERSION_IN_NAME, name)
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
            off = dict(TABLE_314_BASE)
        else:
            off = dict(TABLES[minor])
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
            dwarf = target.dwarf_offsets(DWARF_FIELDS, eval_addr or self.runtime)
        except Exception:
            dwarf = None
        if dwarf:
            required = REQUIRED_OBJECT if self.feat["frames"] == "object" else REQUIRED_INTERP
            if all(k in dwarf for k in required):
                for k, v in dwarf.items():
                    if k in DWARF_OPTIONAL and k not in off:
                        continue
                    off[k] = v
                source = "dwarf"
        required = REQUIRED_OBJECT if self.feat["frames"] == "object" else REQUIRED_INTERP
        missing = [k for k in required if k not in off]
        if missing:
            raise WalkError("Python %s: offsets missing for %s" % (self.version_text, ", ".join(missing)))
        return off, source

    def _read_debug_offsets(self, mem):
        layout = DEBUG_OFFSETS_LAYOUTS.get(self.minor)
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
        header = HEADER_SIZE_FREE_THREADED if self.free_threaded else HEADER_SIZE
        expect = {"pyobject.size": header}
        for name, rel in DEBUG_OFFSETS_EXPECT.items():
            expect[name] = header + rel + (8 if name == "tuple.ob_item" and self.minor >= TUPLE_HASH_MINOR else 0)
        for name, want in sorted(expect.items()):
            if vals.get(name) != want:
                raise WalkError(
                    "Python %s: _Py_DebugOffsets does not have the expected layout (%s is %s, expected %s)"
                    % (self.version_text, name, vals.get(name), want)
                )
        out = {}
        for name, key in DEBUG_OFFSETS_KEYS.items():
            if name in vals:
                out[key] = vals[name]
        out["_do.code_size"] = vals.get("code.size")
        out["_do.iframe_size"] = vals.get("iframe.size")
        out["_do.header"] = header
        if self.free_threaded:
            out["co.tlbc"] = vals.get("code.co_tlbc")
            out["if.tlbc_index"] = vals.get("iframe.tlbc_index")
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
    """3.14 fields not in _Py_DebugOffsets, placed relative to ones that are (as in 3.13).

    In a free-threaded build the object header is 16 bytes longer (``_do.header``): the
    3.13 table's offsets into objects move with it, and ``co_tlbc`` sits between
    ``_co_firsttraceable`` and the bytecode."""
    shift = off.get("_do.header", HEADER_SIZE) - HEADER_SIZE
    for key in ("cell.ref", "dict.used", "fo.lineno", "var.size") + SHIFTED:
        if key in off:
            off[key] += shift
    arg = off.get("co.argcount")
    if arg is not None:
        off["co.flags"] = arg - 4
        off["co.posonlyargcount"] = arg + 4
        off["co.kwonlyargcount"] = arg + 8
        off["co.firstlineno"] = off.get("co.firstlineno", arg + 16)
        off["co.nlocalsplus"] = arg + 20
    ca = off.get("co.code_adaptive")
    if ca is not None:
        off["co.firsttraceable"] = ca - (24 if off.get("co.tlbc") is not None else 16)
    off["str.compact_size"] = off.get("str.ascii_size", 40) + 16
