"""Python values read from memory: a frame's locals, and short reprs of objects.

``ValueFormatter`` reads the locals of a Python frame that the walker found (fast
locals, cells, or the locals dict) and formats objects without running code in the
program: scalars exactly, containers shallowly and capped.

Standard library only, Python 3.6 syntax.
"""

import struct

from .cpython_layouts import (
    CO_FAST_CELL,
    CO_FAST_FREE,
    CO_FAST_HIDDEN,
    CO_VARARGS,
    CO_VARKEYWORDS,
    LONG_SHIFT,
    TPFLAGS_BYTES_SUBCLASS,
    TPFLAGS_DICT_SUBCLASS,
    TPFLAGS_LIST_SUBCLASS,
    TPFLAGS_LONG_SUBCLASS,
    TPFLAGS_TUPLE_SUBCLASS,
    TPFLAGS_UNICODE_SUBCLASS,
)
from .cpython_mem import PAGE, ReadError, WalkError, i64_at, u64_at, unpack_ptrs
from .cpython_objects import HEAPTYPE, ObjectReader

_F64 = struct.Struct("<d")


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
        self.objects = ObjectReader(self)

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
            if flags & TPFLAGS_LONG_SUBCLASS:
                kind = "int"
            elif flags & TPFLAGS_UNICODE_SUBCLASS:
                kind = "str"
            elif flags & TPFLAGS_BYTES_SUBCLASS:
                kind = "bytes"
            elif flags & TPFLAGS_LIST_SUBCLASS:
                kind = "list"
            elif flags & TPFLAGS_TUPLE_SUBCLASS:
                kind = "tuple"
            elif flags & TPFLAGS_DICT_SUBCLASS:
                kind = "dict"
        if exact is None and (kind is None or flags & HEAPTYPE):
            # a value type (range, datetime...), an enum member, a named tuple, an instance of a class
            text = self.objects.text(obj, tp, tname, flags, depth)
            if text is not None:
                return tname, text
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
        if ndigits * LONG_SHIFT > 40000:
            return "<int of %d bits>" % (ndigits * LONG_SHIFT)
        raw = self.mem.read(obj + off["long.digits"], 4 * ndigits) if ndigits else b""
        val = 0
        for i, d in enumerate(struct.unpack("<%dI" % ndigits, raw)):
            val |= (d & ((1 << LONG_SHIFT) - 1)) << (LONG_SHIFT * i)
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
            items = unpack_ptrs(self.mem.read(items_p, 8 * k)) if k else []
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
        keys = self.mem.ptr(d + off["dict.keys"])
        values = self.mem.ptr(d + off["dict.values"])
        return self.keys_items(keys, values, cap)

    def keys_items(self, keys, values, cap):
        """Up to ``cap`` (key, value) pairs of a dict's keys object, the values in ``values`` (a split
        dict's values, an instance's, 3.11+) or in the entries (0)."""
        off = self.off
        mem = self.mem
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
                vals = unpack_ptrs(mem.read(values + off["dv.values"] + 8 * i, 8 * k))
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

    # -- a frame's locals ---------------------------------------------------------------------

    def frame_locals(self, rec, index):
        """[(name, kind, value address or None, is_arg)] of Python frame ``index`` of a thread."""
        if index < 0 or index >= len(rec.frames):
            raise WalkError("thread has %d Python frames; there is no frame %d" % (len(rec.frames), index))
        fr = rec.frames[index]
        ci = self.w.code_info(fr.code)
        off = self.off
        mem = self.mem
        out = []
        optimized = ci.flags & 1
        nargs = ci.argcount + ci.kwonlyargcount
        if ci.flags & CO_VARARGS:
            nargs += 1
        if ci.flags & CO_VARKEYWORDS:
            nargs += 1
        if self.w.feat["frames"] == "object":
            if not optimized:
                return self._dict_locals(mem.ptr(fr.addr + off["fo.locals"]))
            names = []
            kinds = []
            for key, kind in (("co.varnames", "local"), ("co.cellvars", "cell"), ("co.freevars", "free")):
                t = mem.ptr(fr.code + off[key])
                for item in self._tuple_items(t):
                    names.append(self.w.str_or_none(item) or "?")
                    kinds.append(kind)
            base = fr.addr + off["fo.localsplus"]
            vals = unpack_ptrs(mem.read(base, 8 * len(names))) if names else []
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
                return self._dict_locals(loc)
        names_t = mem.ptr(fr.code + off["co.localsplusnames"])
        kinds_b = mem.ptr(fr.code + off["co.localspluskinds"])
        names = [self.w.str_or_none(x) or "?" for x in self._tuple_items(names_t)]
        kinds, _ = self.w.read_bytes_obj(kinds_b)
        kinds = bytearray(kinds)
        n = len(names)
        base = fr.addr + off["if.localsplus"]
        vals = unpack_ptrs(mem.read(base, 8 * n)) if n else []
        stackref = self.w.feat["stackref"]
        for i in range(min(n, len(kinds), len(vals))):
            k = kinds[i]
            if k & CO_FAST_HIDDEN:
                continue
            val = vals[i]
            if stackref:
                if (val & 3) == 3:
                    out.append((names[i], "local", ("tagged-int", val >> 2)))
                    continue
                val &= ~7
            if not val:
                continue
            if k & (CO_FAST_CELL | CO_FAST_FREE):
                cell = self._cell_ref(val) if self._is_cell(val) else None
                if cell is not None:
                    val = cell
                elif k & CO_FAST_FREE:
                    continue
            if not val:
                continue
            kind = "free" if k & CO_FAST_FREE else ("cell" if k & CO_FAST_CELL else "local")
            if i < nargs and kind == "local":
                kind = "arg"
            out.append((names[i], kind, val))
        return out

    def _dict_locals(self, d):
        out = []
        if not d:
            return out
        for k, v in self.dict_items(d, 500):
            name = self.w.str_or_none(k) if k else None
            out.append((name if name is not None else self.format(k)[1], "global", v))
        return out

    def _tuple_items(self, t):
        if not t:
            return []
        n = self.mem.i64(t + self.off["tuple.size"])
        if n < 0 or n > 1 << 20:
            raise ValueError("tuple size %d is not plausible" % n)
        return unpack_ptrs(self.mem.read(t + self.off["tuple.items"], 8 * n)) if n else []

    def _is_cell(self, obj):
        cell_t = self.types.get("cell")
        try:
            return cell_t is not None and self.w.type_of(obj) == cell_t
        except ReadError:
            return False

    def _cell_ref(self, cell):
        try:
            if not self._is_cell(cell):
                return cell
            return self.mem.ptr(cell + self.off["cell.ref"])
        except ReadError:
            return 0
