"""C++ names: demangling, and the functions of an ELF file that a breakpoint's name means.

tuidbg starts gdb with ``set demangle-style none``: gdb then reads a large C++ library's
symbol table about three times faster (libtorch_cpu.so's 530,000 symbols: 0.7 s instead of
2.0 s), because it no longer demangles every name as it reads it. What that costs is made
good here, for the few names that are ever shown or asked for:

- ``demangle`` turns a mangled name into the one gdb would have shown (libstdc++'s
  ``__cxa_demangle``, the same libiberty demangler gdb uses), for frames, breakpoints and
  disassembly;
- ``NameSpec`` and ``functions_matching`` find, in one library's ELF symbol tables, the
  functions a breakpoint's location such as ``at::native::randn`` or ``Widget::poke(int)``
  names (gdb's own name lookup only sees mangled names in a library without debug info).

Libraries with DWARF are not concerned: gdb names their functions from the debug info.
Standard library only, Python 3.6 syntax; no gdb import (the front end imports it too).
"""

import mmap
import os
import re
import struct

from .elfsyms import open_regular, section_headers

_CACHE_MAX = 20000
_cache = {}
_lib = {"fn": None, "free": None, "tried": False}


def _load():
    import ctypes.util  # (here: importing ctypes is not free, and most sessions never demangle)

    _lib["tried"] = True
    names = ["libstdc++.so.6", ctypes.util.find_library("stdc++")]
    for name in names:
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
            fn = getattr(lib, "__cxa_demangle")
            free = ctypes.CDLL(None).free
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p  # (ctypes: imported with ctypes.util)
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        free.argtypes = [ctypes.c_void_p]
        free.restype = None
        _lib["fn"], _lib["free"] = fn, free
        return


def available():
    """Whether names can be demangled here (libstdc++ found)."""
    if not _lib["tried"]:
        _load()
    return _lib["fn"] is not None


def _cxa(name):
    import ctypes

    fn = _lib["fn"]
    status = ctypes.c_int(-1)
    try:
        raw = name.encode("utf-8")
    except UnicodeError:
        return None
    ptr = fn(raw, None, None, ctypes.byref(status))
    if not ptr:
        return None
    try:
        text = ctypes.string_at(ptr).decode("utf-8", "replace") if status.value == 0 else None
    finally:
        _lib["free"](ptr)
    return text


def demangle(name):
    """``_ZN2at6native5randnE...`` -> ``at::native::randn(c10::ArrayRef<long>, ...)``; a name that is
    not a mangled C++ name (C functions, names already demangled) comes back as it is. A version or
    PLT suffix (``@plt``, ``@@GLIBCXX_3.4``) is kept, as gdb shows it."""
    if not name or not name.startswith("_Z"):
        return name
    hit = _cache.get(name)
    if hit is not None:
        return hit
    if not available():
        return name
    base, at, suffix = name.partition("@")
    text = _cxa(base)
    out = name if text is None else text + at + suffix
    if len(_cache) >= _CACHE_MAX:
        _cache.clear()
    _cache[name] = out
    return out


_IN_ANGLES = re.compile(r"<(_Z[^+<>\s]*)((?:\+\d+)?)>")


def demangle_text(text):
    """Every ``<_Z...+N>`` in a line of disassembly, demangled (``call 0x... <_ZN2at3addEv+4>``)."""
    if not text or "<_Z" not in text:
        return text
    return _IN_ANGLES.sub(lambda m: "<" + demangle(m.group(1)) + m.group(2) + ">", text)


# -- what a breakpoint's location names ------------------------------------------------------

_OPEN = "<(["
_CLOSE = ">)]"


def _operator_end(s, i):
    """Index after an ``operator`` token's symbol starting at ``s[i]`` (``operator<<``, ``operator()``,
    ``operator new[]``...), or ``i`` when ``s[i:]`` does not start with one."""
    if not s.startswith("operator", i):
        return i
    j = i + len("operator")
    if j < len(s) and (s[j].isalnum() or s[j] == "_"):
        return i  # an identifier that starts with "operator"
    while j < len(s) and s[j] == " ":
        j += 1
    for sym in ("()", "[]", "<<=", ">>=", "->*", "<=>", "<<", ">>", "->", "new[]", "delete[]", "new", "delete"):
        if s.startswith(sym, j):
            return j + len(sym)
    if j < len(s) and s[j] in "+-*/%^&|~!=<>,":
        k = j + 1
        if k < len(s) and s[k] in "=+-&|":
            k += 1
        return k
    return j  # a conversion operator: its type follows as ordinary text


def split_function(demangled):
    """A demangled function name without its return type and parameters: ``float ns::twice<float>(float)``
    -> ``ns::twice<float>``, ``ns::Widget::poke(int) const`` -> ``ns::Widget::poke``; also returns the
    parameter list with its qualifiers (``(int) const``), or "" for a name without one."""
    s = re.sub(r" \[clone [^\]]*\]$", "", demangled)
    depth, start, i, params = 0, 0, 0, -1
    while i < len(s):
        if depth == 0:
            j = _operator_end(s, i)
            if j != i and (i == 0 or not (s[i - 1].isalnum() or s[i - 1] == "_")):
                i = j
                continue
        c = s[i]
        if c in _OPEN:
            if c == "(" and depth == 0:
                close = _matching(s, i)
                if not s.startswith("::", close + 1):
                    params = i
                    break
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif c == " " and depth == 0:
            start = i + 1  # what came before was the return type
        i += 1
    if params < 0:
        return s[start:].strip(), ""
    return s[start:params].strip(), s[params:].strip()


def _matching(s, i):
    depth = 0
    for k in range(i, len(s)):
        if s[k] in _OPEN:
            depth += 1
        elif s[k] in _CLOSE:
            depth -= 1
            if depth == 0:
                return k
    return len(s) - 1


def _components(name):
    """``a::b<c::d>::e`` -> ``["a", "b<c::d>", "e"]`` (``::`` inside template arguments or
    parentheses does not split)."""
    out, depth, cur, i = [], 0, [], 0
    while i < len(name):
        c = name[i]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        if depth == 0 and name.startswith("::", i):
            out.append("".join(cur))
            cur = []
            i += 2
            continue
        cur.append(c)
        i += 1
    out.append("".join(cur))
    return [p for p in out if p != ""]


def _squash(text):
    return re.sub(r"\s+", "", text)


_ABI_TAG = re.compile(r"\[abi:[^\]]*\]")


def _params(text):
    """A parameter list as the demangler spells it, without spaces: ``(void)`` is ``()``, and a
    leading ``const`` goes after its type (``(const char*)`` is ``(char const*)``)."""
    inner, _, quals = text.partition(")") if text.count(")") == 1 else (text, "", "")
    if text.count(")") == 1 and inner.startswith("("):
        parts = [p.strip() for p in inner[1:].split(",")] if "<" not in inner else [inner[1:]]
        fixed = []
        for p in parts:
            m = re.match(r"^const\s+([\w:]+)(.*)$", p)
            fixed.append(m.group(1) + " const" + m.group(2) if m else p)
        if fixed == ["void"]:
            fixed = []
        text = "(" + ", ".join(fixed) + ")" + quals
    return _squash(text)


_NOT_A_NAME = re.compile(r"^(\*|-|\+|\d)|\.[A-Za-z]+:\d|:\d+$")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _needle(components):
    """The bytes every mangled name of such a function contains: the source name of the location's
    last plain component with its length (``at::native::randn`` -> ``5randn``; for a constructor,
    destructor or operator, its class's name); None when there is no plain name to look for. (Only
    one component: a class's template arguments, which a location may leave out, come between its
    name and its members' in a mangled name.)"""
    comps = list(components)
    last = comps[-1]
    if last.startswith("~") or last.startswith("operator") or (
            len(comps) > 1 and last == comps[-2].split("<", 1)[0]):
        comps = comps[:-1]
    ident = comps[-1].split("<", 1)[0] if comps else ""
    if not _IDENT.fullmatch(ident):
        return None
    return (str(len(ident)) + ident).encode()


class NameSpec(object):
    """A breakpoint location that names a C++ function (``at::native::randn``, ``Widget::poke(int)``,
    ``hidden``), matched as gdb matches names: the location's components are the last components of
    the function's (``randn`` means every function named randn, in any namespace or class); with a
    parameter list, the parameters must be the same too."""

    def __init__(self, text, components, params):
        self.text = text
        self.components = components
        self.params = params
        self.needle = _needle(components)
        # What follows the needle in a mangled name of such a function: a function's own name ends
        # its nested name (E), has template arguments (I) or an ABI tag (B), and another component
        # (a digit) means the needle named a class or namespace; after the class's name come a
        # constructor's C1/C2, a destructor's D0/D1/D2, an operator's code (two lower-case letters)
        # or, for a class template, its arguments (I).
        last = components[-1]
        if last.startswith("~"):
            self.follows = lambda c: c in (b"D", b"I")
        elif last.startswith("operator"):
            self.follows = lambda c: c.islower() or c == b"I"
        elif len(components) > 1 and last == components[-2].split("<", 1)[0]:
            self.follows = lambda c: c in (b"C", b"I", b"E", b"B")  # (E, B: a foo::foo function)
        else:
            self.follows = lambda c: not c.isdigit()

    @classmethod
    def parse(cls, location):
        """The spec of ``location``, or None when it is not a function's name (``file.c:12``, ``*0x...``,
        explicit ``-source`` locations, probes)."""
        text = (location or "").strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            text = text[1:-1].strip()
        if text.startswith("-function "):
            text = text[len("-function "):].strip()
        if text.startswith("-qualified "):
            return None  # (a qualified lookup: not what a wild match would find)
        if not text or _NOT_A_NAME.search(text) or "/" in text or " if " in text:
            return None
        name, params = split_function(_ABI_TAG.sub("", text))
        comps = _components(name)
        if not comps or not all(re.match(r"^~?[A-Za-z_]|^operator", c) for c in comps):
            return None
        spec = cls(text, comps, _params(params) if params else None)
        return spec if spec.needle else None

    def matches(self, demangled):
        name, params = split_function(_ABI_TAG.sub("", demangled))
        if self.params is not None and _params(params) != self.params:
            return False
        comps = _components(name)
        n = len(self.components)
        if len(comps) < n:
            return False
        tail = comps[len(comps) - n:]
        for want, got in zip(self.components, tail):
            if _squash(want) != _squash(got):
                # a location without template arguments matches every instantiation
                if "<" in want or _squash(got).split("<", 1)[0] != _squash(want):
                    return False
        return True


# -- the functions of an ELF file --------------------------------------------------------------

_SHT_SYMTAB, _SHT_DYNSYM = 2, 11
_STT_FUNC, _STT_GNU_IFUNC = 2, 10


def _symbol_tables(mm):
    """[(symbols_offset, symbols_size, entsize, strings_offset, strings_size)] of .symtab and .dynsym."""
    secs = section_headers(mm) or []
    out = []
    for (_n, stype, _a, off, size, link, entsize) in secs:
        if stype in (_SHT_SYMTAB, _SHT_DYNSYM) and link < len(secs):
            strs = secs[link]
            out.append((off, size, entsize or 24, strs[3], strs[4]))
    return out


def has_debug_info(path, debug_dirs=("/usr/lib/debug",)):
    """Whether gdb finds DWARF for the ELF file at ``path``: a ``.debug_info`` section of its own, or a
    separate debug file where gdb looks for one (by build ID under ``debug_dirs``, or by
    ``.gnu_debuglink`` beside it, in its ``.debug`` folder or under ``debug_dirs``)."""
    return _debug_info(path, debug_dirs) is True


def lacks_debug_info(path, debug_dirs=("/usr/lib/debug",)):
    """Whether ``path`` is known to be an ELF file gdb finds no DWARF for (not: a file this cannot read,
    another ELF class, one that is not there)."""
    return _debug_info(path, debug_dirs) is False


def _debug_info(path, debug_dirs):
    """True, False, or None where ``path`` cannot be read as a 64-bit little-endian ELF file."""
    try:
        with open_regular(path) as f:
            secs = section_headers(f)
            if secs is None:
                return None
            found = {}
            for (name, _t, _a, off, size, _l, _e) in secs:
                if name in (".debug_info", ".zdebug_info", ".note.gnu.build-id", ".gnu_debuglink"):
                    f.seek(off)
                    found[name] = f.read(min(size, 4096))
            if ".debug_info" in found or ".zdebug_info" in found:
                return True
            note, link = found.get(".note.gnu.build-id"), found.get(".gnu_debuglink")
    except (OSError, struct.error, IndexError, ValueError):
        return None
    places = []
    if note and len(note) >= 16:
        namesz, descsz = struct.unpack_from("<II", note, 0)
        desc = note[12 + ((namesz + 3) & ~3):][:descsz]
        if len(desc) >= 2:
            hexid = "".join("%02x" % c for c in bytearray(desc))
            places += [os.path.join(d, ".build-id", hexid[:2], hexid[2:] + ".debug") for d in debug_dirs]
    if link:
        name = link.split(b"\0", 1)[0].decode("utf-8", "replace")
        here = os.path.dirname(os.path.abspath(path))
        places += [os.path.join(here, name), os.path.join(here, ".debug", name)]
        places += [os.path.join(d + here, name) for d in debug_dirs]
    real = os.path.realpath(path)
    if link and real != os.path.abspath(path):  # (gdb also looks beside the file a symlink names)
        places += [os.path.join(os.path.dirname(real), name), os.path.join(os.path.dirname(real), ".debug", name)]
    return any(os.path.isfile(p) for p in places if p != path)


def functions_matching(path, specs):
    """{spec: sorted mangled names} of the functions defined in the ELF file at ``path`` that each
    ``NameSpec`` means. Reads the file's symbol tables (mapped, not copied); a file that cannot be read
    gives no matches."""
    found = dict((s, set()) for s in specs)
    if not specs or not available():
        return dict((s, []) for s in specs)
    try:
        with open_regular(path) as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return dict((s, []) for s in specs)
    try:
        for table in _symbol_tables(mm):
            _scan(mm, table, specs, found)
    except (struct.error, ValueError, IndexError):
        pass
    finally:
        mm.close()
    return dict((s, sorted(v)) for s, v in found.items())


def _symbols_named(mm, sym_off, n, candidates):
    """(st_name, st_value, st_info, st_shndx) of the symbols whose name is one of ``candidates``
    (string-table offsets). A few: each found by its st_name's bytes, at C speed; many: the whole
    table read at once."""
    end = sym_off + n * 24
    if len(candidates) <= 24:
        for name_off in candidates:
            key = struct.pack("<I", name_off)
            pos = mm.find(key, sym_off, end)
            while pos >= 0:
                if (pos - sym_off) % 24 == 0:
                    info, _other, shndx, value = struct.unpack_from("<BBHQ", mm, pos + 4)
                    yield name_off, value, info, shndx
                pos = mm.find(key, pos + 1, end)
        return
    view = memoryview(mm)[sym_off:end]
    try:
        names = view.cast("I")[0::6].tolist()
    finally:
        view.release()
    for i, name_off in enumerate(names):
        if name_off in candidates:
            info, _other, shndx, value = struct.unpack_from("<BBHQ", mm, sym_off + i * 24 + 4)
            yield name_off, value, info, shndx


def _scan(mm, table, specs, found):
    sym_off, sym_size, entsize, str_off, str_size = table
    str_end = str_off + str_size
    candidates = {}  # string offset -> mangled name
    for spec in specs:
        pos = mm.find(spec.needle, str_off, str_end)
        while pos >= 0:
            start = mm.rfind(b"\0", str_off, pos) + 1
            if mm[start:start + 2] == b"_Z":
                end = mm.find(b"\0", pos, str_end)
                after = pos + len(spec.needle)
                # (a name outside any namespace is followed by its parameters, which may start
                # with a class's name: _Z5gfunc1G)
                if spec.follows(mm[after:after + 1]) or mm[start:pos] in (b"_Z", b"_ZL", b"_ZSt"):
                    candidates[start - str_off] = mm[start:end if end >= 0 else str_end].decode("utf-8", "replace")
            pos = mm.find(spec.needle, pos + len(spec.needle), str_end)
    if not candidates or entsize != 24:
        return
    defined = {}  # address -> one name (a destructor's D1 and D2 are often one function)
    for name_off, value, info, shndx in _symbols_named(mm, sym_off, sym_size // 24, candidates):
        if shndx != 0 and (info & 0xF) in (_STT_FUNC, _STT_GNU_IFUNC):
            name = candidates[name_off]
            if value not in defined or name < defined[value]:
                defined[value] = name
    for mangled in defined.values():
        text = demangle(mangled)
        if text.endswith(" [clone .cold]"):
            continue  # the cold part of a function, not its entry
        for spec in specs:
            if spec.needle in mangled.encode() and spec.matches(text):
                found[spec].add(mangled)
