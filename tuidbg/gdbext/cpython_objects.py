"""Python objects beyond the built-in containers, read from memory as their value: the value types
(range, slice, complex, bytearray, Decimal, Fraction, datetime's types, pathlib's paths, enum members,
named tuples) as their repr would read, and an instance of a class of the program as its class name and
first attributes (``Point(x=1, y=2)``). No code of the program runs: everything is read from memory.

Where an instance keeps its attributes depends on the interpreter: a dict at ``tp_dictoffset``
(3.9/3.10), a "managed" dict before the object's header (3.11+: in 3.11 a dict pointer and a values
pointer, in 3.12 one tagged pointer, either; in 3.13+ the dict pointer), its values in an array whose
keys the class keeps (``ht_cached_keys``), inline after the object from 3.13 on; ``__slots__`` are
member descriptors at fixed offsets (the class's ``tp_members``). The fields of PyTypeObject sit at the
same offsets from ``tp_name`` in 3.9-3.14 (measured with ``offsetof``; a free-threaded build's longer
header moves them all alike); ``ht_cached_keys`` moves with PyHeapTypeObject's fields.

The agent renders the same values in the same words for the children it lists
(``tuidbg/agent/_objects.py``); tests compare the two.

Standard library only, Python 3.6 syntax.
"""

import struct

from .cpython_mem import ReadError, i64_at, u64_at

FIELDS = 5  # attributes an object's one line shows (then "…")

# tp_flags
HEAPTYPE = 1 << 9
MANAGED_DICT = 1 << 4  # 3.11+
INLINE_VALUES = 1 << 2  # 3.13+
T_OBJECT_EX = 16  # a __slots__ member's PyMemberDef type

# PyTypeObject fields, from tp_name (offsetof on 3.9-3.14, free-threaded 3.14 alike)
TP_BASICSIZE = 8
TP_MEMBERS = 216
TP_BASE = 232
TP_DICT = 240
TP_DICTOFFSET = 264
TP_MRO = 320
HT_CACHED_KEYS = {9: 840, 10: 848, 11: 848}  # 3.12+: 856
MEMBER_SIZE = 40  # sizeof(PyMemberDef): name, type, offset, flags, doc

_DATETIME = {"datetime.datetime": "datetime", "datetime.date": "date", "datetime.time": "time",
             "datetime.timedelta": "timedelta", "datetime.timezone": "timezone"}
_BUILTIN = {"range": "range", "slice": "slice", "complex": "complex", "bytearray": "bytearray"}
_F64 = struct.Struct("<d")
_NOT_OBJECTS = frozenset("type BaseException int float complex str bytes bytearray list tuple dict set frozenset".split())
_DEC_RADIX_DIGITS = 19  # libmpdec's 64-bit words hold 19 decimal digits


class TypeInfo(object):
    __slots__ = ("kind", "slots", "fields", "names")

    def __init__(self, kind, slots=(), fields=(), names=()):
        self.kind = kind  # what the value is read as (None: not read, "<Name at 0x...>")
        self.slots = slots  # [(name, offset)] of __slots__, base classes' first
        self.fields = fields  # a named tuple's field names
        self.names = names  # the names of its classes (its MRO)


class ObjectReader(object):
    """Reads what ``ValueFormatter`` leaves to it; ``text(obj, tp, tname, flags, depth)`` is the one line
    of an object, or None (the formatter says ``<Name at 0x...>``, or reads it as a container)."""

    def __init__(self, fmt):
        self.fmt = fmt
        self.w = fmt.w
        self.mem = fmt.mem
        self.off = fmt.off
        ip = fmt.w.ip
        self.minor = ip.minor
        self.free_threaded = bool(getattr(ip, "free_threaded", False))
        self.tn = self.off["tp.name"]
        self.hdr = self.off["ob.type"] + 8  # where an object's own fields begin (after its header)
        self._types = {}

    # -- the type ----------------------------------------------------------------------------

    def info(self, tp, tname, flags):
        got = self._types.get(tp)
        if got is None:
            try:
                got = self._info(tp, tname, flags)
            except (ReadError, ValueError, UnicodeDecodeError):
                got = TypeInfo(None)
            self._types[tp] = got
        return got

    def _info(self, tp, tname, flags):
        mem = self.mem
        basicsize = mem.i64(tp + self.tn + TP_BASICSIZE)
        if not flags & HEAPTYPE:
            kind = _BUILTIN.get(tname) or _DATETIME.get(tname)
            if tname == "decimal.Decimal" and basicsize == self.hdr + 88:
                kind = "decimal"
            return TypeInfo(kind)
        if tname == "decimal.Decimal" and basicsize == self.hdr + 88:
            return TypeInfo("decimal")  # (the C type, a heap type from 3.13 on)
        chain = []
        t = tp
        while t and len(chain) < 32:
            chain.append(t)
            t = mem.ptr(t + self.tn + TP_BASE)
        mro = mem.ptr(tp + self.tn + TP_MRO)  # (the names of all its classes: the chain above follows the layout only)
        classes = self.fmt._tuple_items(mro) if mro else chain
        names = [self.fmt.type_name(c) for c in classes]
        # an instance of a subclass of a built-in scalar, container, type or exception is not read as an object
        plain = not any(n in _NOT_OBJECTS and not mem.u32(c + self.off["tp.flags"]) & HEAPTYPE
                        for c, n in zip(classes, names))
        slots = []
        for c in reversed(chain):
            slots.extend(self._slots(c))
        slot_names = set(n for n, _ in slots)
        if flags & (1 << 26):  # a tuple subclass: a named tuple has _fields
            fields = self._class_attr_strs(chain, "_fields")
            if fields is not None:
                return TypeInfo("namedtuple", slots, fields, names)
            return TypeInfo(None, slots, (), names)
        if "PurePath" in names:
            kind = "path"
        elif "Fraction" in names and "_numerator" in slot_names:
            kind = "fraction"
        elif "Decimal" in names and "_int" in slot_names:
            kind = "pydecimal"
        else:
            kind = "object" if plain else None
        return TypeInfo(kind, slots, (), names)

    def _slots(self, tp):
        """[(name, offset)] of the __slots__ a class adds (its T_OBJECT_EX members), in the order its
        ``__slots__`` names them (the interpreter keeps them sorted)."""
        out = []
        members = self.mem.ptr(tp + self.tn + TP_MEMBERS)
        if not members:
            return out
        declared = self._declared_slots(tp)
        for i in range(64):
            raw = self.mem.read(members + i * MEMBER_SIZE, MEMBER_SIZE)
            name_p = u64_at(raw, 0)
            if not name_p:
                break
            if struct.unpack_from("<i", raw, 8)[0] != T_OBJECT_EX:
                continue
            name = self._cstr(name_p)
            if name and not (name.startswith("__") and name.endswith("__")):
                out.append((name, i64_at(raw, 16)))
        out.sort(key=lambda m: declared.index(m[0]) if m[0] in declared else len(declared))
        return out

    def _declared_slots(self, tp):
        """The names a class's ``__slots__`` gives, mangled as the interpreter does (``_Slotted__hidden``)."""
        d = self.mem.ptr(tp + self.tn + TP_DICT)
        found = None
        for k, v in (self.fmt.dict_items(d, 500) if d else ()):
            if self.w.str_or_none(k) == "__slots__":
                found = v
                break
        if not found:
            return []
        t = self.w.type_of(found)
        if t == self.fmt.types.get("str"):
            items = [found]
        elif t in (self.fmt.types.get("tuple"), self.fmt.types.get("list")):
            items = self._seq(found)
        else:
            return []
        cls = self.fmt.type_name(tp).lstrip("_")
        names = [self.w.str_or_none(x) or "" for x in items]
        return ["_%s%s" % (cls, n) if n.startswith("__") and not n.endswith("__") else n for n in names]

    def _cstr(self, p, limit=200):
        buf = bytearray()
        while len(buf) < limit:
            chunk = self.mem.read(p + len(buf), 32)
            z = chunk.find(b"\0")
            if z >= 0:
                buf += chunk[:z]
                break
            buf += chunk
        return buf.decode("utf-8", "replace")

    def _class_attr_strs(self, chain, key):
        """A tuple of str that a class along ``chain`` has as ``key`` in its dict (``_fields``), or None."""
        for c in chain:
            d = self.mem.ptr(c + self.tn + TP_DICT)
            if not d:
                continue
            for k, v in self.fmt.dict_items(d, 500):
                if self.w.str_or_none(k) == key:
                    items = self.fmt._tuple_items(v) if self.w.type_of(v) == self.fmt.types.get("tuple") else None
                    if items is None:
                        return None
                    return tuple(self.w.str_or_none(x) or "?" for x in items)
        return None

    # -- an instance's attributes ------------------------------------------------------------

    def attributes(self, obj, tp, flags, cap=64):
        """[(name, value address)] of an instance's attributes: its dict's (str keys) then its slots'."""
        out = [(self.w.str_or_none(k), v) for k, v in self._dict_items(obj, tp, flags, cap)]
        out = [(k, v) for k, v in out if k is not None]
        info = self._types.get(tp)
        for name, offset in (info.slots if info is not None else ()):
            v = self.mem.ptr(obj + offset)
            if v:
                out.append((name, v))
        return out

    def _dict_items(self, obj, tp, flags, cap):
        mem = self.mem
        if self.minor >= 11 and flags & MANAGED_DICT:
            if self.minor >= 13:
                if flags & INLINE_VALUES:
                    values = obj + mem.i64(tp + self.tn + TP_BASICSIZE)
                    if mem.u8(values + 3):  # (valid: the attributes are here, not in a dict)
                        return self.fmt.keys_items(self._cached_keys(tp), values, cap)
                d = mem.ptr(obj - (8 if self.free_threaded else 24))
            elif self.minor == 12:
                dorv = mem.ptr(obj - 24)
                if dorv & 1:
                    return self.fmt.keys_items(self._cached_keys(tp), dorv + 1, cap)  # (kept as the address - 1)
                d = dorv
            else:
                d = mem.ptr(obj - 24)
                if not d:
                    values = mem.ptr(obj - 32)
                    if values:
                        return self.fmt.keys_items(self._cached_keys(tp), values, cap)
            return self.fmt.dict_items(d, cap) if d else []
        dictoffset = mem.i64(tp + self.tn + TP_DICTOFFSET)
        if dictoffset > 0:  # (a negative one, of variable-size objects: an int subclass's, is not read)
            d = mem.ptr(obj + dictoffset)
            if d and self.w.type_of(d) == self.fmt.types.get("dict"):
                return self.fmt.dict_items(d, cap)
        return []

    def _cached_keys(self, tp):
        return self.mem.ptr(tp + self.tn + HT_CACHED_KEYS.get(self.minor, 856))

    def _named(self, items, name):
        for k, v in items:
            if k == name:
                return v
        return None

    # -- the one line ------------------------------------------------------------------------

    def text(self, obj, tp, tname, flags, depth):
        info = self.info(tp, tname, flags)
        kind = info.kind
        h = obj + self.hdr
        mem = self.mem
        if kind is None and not flags & HEAPTYPE:
            return None
        if kind == "range":
            start, stop, step = (self._sub(mem.ptr(h + 8 * i), depth) for i in range(3))
            return "range(%s, %s)" % (start, stop) if step == "1" else "range(%s, %s, %s)" % (start, stop, step)
        if kind == "slice":
            return "slice(%s, %s, %s)" % tuple(self._sub(mem.ptr(h + 8 * i), depth) for i in range(3))
        if kind == "complex":
            raw = mem.read(h, 16)
            return repr(complex(_F64.unpack_from(raw, 0)[0], _F64.unpack_from(raw, 8)[0]))
        if kind == "bytearray":
            size = mem.i64(h)
            if size < 0 or size > 1 << 40:
                raise ValueError("bytearray of %d bytes is not plausible" % size)
            data = mem.read(mem.ptr(h + 24), min(size, self.fmt.max_bytes)) if size else b""
            text = repr(bytes(data))
            if size > len(data):
                text = text[:-1] + "…" + text[-1] + " (%d bytes)" % size
            return "bytearray(%s)" % text
        if kind in ("datetime", "date", "time", "timedelta", "timezone"):
            return self._datetime(kind, obj, depth)
        if kind == "decimal":
            return "Decimal('%s')" % self._c_decimal(h)
        if not flags & HEAPTYPE:
            return None
        if "Enum" in info.names:
            return self._enum_member(obj, tp, tname, flags, self.attributes(obj, tp, flags), depth)
        if kind == "namedtuple":
            items = self.fmt._tuple_items(obj)
            return self._fields(tname, list(zip(info.fields, items)), depth)
        if kind is None:
            return None  # (a subclass of int, list, str...: read as its base)
        attrs = self.attributes(obj, tp, flags, FIELDS + 1 if kind == "object" else 64)
        if kind == "path":
            return "%s(%r)" % (tname, self._path(dict(attrs)))
        if kind == "fraction":
            a = dict(attrs)
            return "Fraction(%s, %s)" % (self._sub(a.get("_numerator"), depth), self._sub(a.get("_denominator"), depth))
        if kind == "pydecimal":
            return "Decimal('%s')" % self._py_decimal(dict(attrs))
        return self._fields(tname, attrs, depth)

    def _enum_member(self, obj, tp, tname, flags, attrs, depth):
        """``<Color.RED: 1>``: the member's name from its class's ``_member_map_`` (an IntEnum member's
        own attributes sit where an int's digits end: not read), its value its ``_value_`` or, an int
        enum's, the int it is."""
        value_p = self._named(attrs, "_value_")
        if value_p is not None:
            value = self._sub(value_p, depth)
        elif flags & (1 << 24):
            value = self.fmt._int(obj)
        else:
            return None
        name = None
        name_p = self._named(attrs, "_name_")
        if name_p:
            name = self.w.str_or_none(name_p)
        else:
            d = self.mem.ptr(tp + self.tn + TP_DICT)
            for k, v in (self.fmt.dict_items(d, 500) if d else ()):
                if self.w.str_or_none(k) == "_member_map_":
                    for mk, mv in self.fmt.dict_items(v, 500):
                        if mv == obj:
                            name = self.w.str_or_none(mk)
                            break
                    break
        return "<%s: %s>" % ("%s.%s" % (tname, name) if name is not None else tname, value)

    def _sub(self, p, depth):
        return self.fmt.format(p, depth + 1)[1] if p else "<NULL>"

    def _fields(self, tname, pairs, depth):
        if depth > 1:
            return "%s(…)" % tname if pairs else "%s()" % tname
        parts = ["%s=%s" % (k, self._sub(v, depth)) for k, v in pairs[:FIELDS]]
        if len(pairs) > FIELDS:
            parts.append("…")
        return "%s(%s)" % (tname, ", ".join(parts))

    def _path(self, a):
        """A pathlib path's text from its slots (``_str`` once made; else its parts, as 3.9-3.14 keep them)."""
        s = self.w.str_or_none(a.get("_str")) if a.get("_str") else None
        if s is not None:
            return s
        raw = a.get("_raw_paths")  # 3.12+: the arguments, joined as os.path.join does
        if raw:
            import posixpath
            parts = [self.w.str_or_none(x) or "" for x in self._seq(raw)]
            return posixpath.join(*parts) if parts else "."
        drv = self.w.str_or_none(a.get("_drv")) or "" if a.get("_drv") else ""
        root = self.w.str_or_none(a.get("_root")) or "" if a.get("_root") else ""
        parts = [self.w.str_or_none(x) or "" for x in self._seq(a.get("_parts"))] if a.get("_parts") else []
        if drv or root:
            return drv + root + "/".join(parts[1:])
        return "/".join(parts) or "."

    def _seq(self, p):
        tp = self.w.type_of(p)
        if tp == self.fmt.types.get("list"):
            n = self.mem.i64(p + self.off["list.size"])
            if n < 0 or n > 1 << 16:
                raise ValueError("list of %d paths is not plausible" % n)
            return struct.unpack("<%dQ" % n, self.mem.read(self.mem.ptr(p + self.off["list.items"]), 8 * n)) if n else ()
        return self.fmt._tuple_items(p)

    def _datetime(self, kind, obj, depth):
        mem = self.mem
        h = obj + self.hdr
        if kind == "timedelta":
            raw = mem.read(h + 8, 12)
            days, seconds, us = struct.unpack("<iii", raw)
            parts = ["%s=%d" % (n, v) for n, v in (("days", days), ("seconds", seconds), ("microseconds", us)) if v]
            return "datetime.timedelta(%s)" % (", ".join(parts) or "0")
        if kind == "timezone":
            offset, name = mem.ptr(h), mem.ptr(h + 8)
            off_text = self._sub(offset, depth)
            if off_text == "datetime.timedelta(0)" and not name:
                return "datetime.timezone.utc"
            if name:
                return "datetime.timezone(%s, %s)" % (off_text, self._sub(name, depth))
            return "datetime.timezone(%s)" % off_text
        has_tz = mem.u8(h + 8)
        size = {"datetime": 10, "date": 4, "time": 6}[kind]
        d = bytearray(mem.read(h + 9, size + 1))
        if kind == "date":
            return "datetime.date(%d, %d, %d)" % ((d[0] << 8) | d[1], d[2], d[3])
        if kind == "datetime":
            head = [(d[0] << 8) | d[1], d[2], d[3]]
            hour, minute, second, us, fold = d[4], d[5], d[6], (d[7] << 16) | (d[8] << 8) | d[9], d[10]
            tz_at = 24
        else:
            head = []
            hour, minute, second, us, fold = d[0], d[1], d[2], (d[3] << 16) | (d[4] << 8) | d[5], d[6]
            tz_at = 16
        args = head + [hour, minute]
        if us:
            args += [second, us]
        elif second:
            args.append(second)
        text = ", ".join(str(x) for x in args)
        if has_tz:
            tz = mem.ptr(h + tz_at)
            if tz and tz != self.fmt.types.get("None"):
                text += ", tzinfo=" + self._sub(tz, depth)
        if fold:
            text += ", fold=1"
        return "datetime.%s(%s)" % (kind, text)

    def _c_decimal(self, h):
        """The text of a C decimal (libmpdec's mpd_t: flags, exponent, digits, words of 19 digits)."""
        mem = self.mem
        flags = mem.u8(h + 8)
        exp = mem.i64(h + 16)
        n = mem.i64(h + 32)
        if n < 0 or n > 1 << 16:
            raise ValueError("decimal of %d words is not plausible" % n)
        words = struct.unpack("<%dQ" % n, mem.read(mem.ptr(h + 48), 8 * n)) if n else ()
        coeff = 0
        for w in reversed(words):
            coeff = coeff * 10 ** _DEC_RADIX_DIGITS + w
        sign = flags & 1
        if flags & 2:
            special = "F"
        elif flags & 4:
            special = "n"
        elif flags & 8:
            special = "N"
        else:
            special = None
        return _decimal_text(sign, str(coeff) if (coeff or special is None) else "", special or exp)

    def _py_decimal(self, a):
        """The text of a _pydecimal Decimal (its slots: _sign, _int, _exp)."""
        sign = self.fmt._int(a["_sign"]) if a.get("_sign") else "0"
        digits = self.w.str_or_none(a.get("_int")) or "0" if a.get("_int") else "0"
        exp_p = a.get("_exp")
        exp = self.w.str_or_none(exp_p) if exp_p and self.w.type_of(exp_p) == self.fmt.types.get("str") else None
        if exp is None:
            exp = int(self.fmt._int(exp_p)) if exp_p else 0
        return _decimal_text(int(sign), digits, exp)


def _decimal_text(sign, digits, exp):
    """str(Decimal(...)) of a sign, a coefficient's digits and an exponent ('F', 'n', 'N': special)."""
    import decimal

    if exp == "F":
        return "-Infinity" if sign else "Infinity"
    if exp in ("n", "N"):
        return ("-" if sign else "") + ("sNaN" if exp == "N" else "NaN") + (digits.lstrip("0") if digits else "")
    return str(decimal.Decimal((sign, tuple(int(c) for c in digits or "0"), exp)))
