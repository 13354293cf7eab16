"""Python objects the asyncio task reader follows, read from memory: a type by name and its bases'
names (``_asyncio.Task`` under a user's subclass), a module of ``sys.modules`` and a name in its dict,
an instance's attribute (``cpython_objects.ObjectReader.attributes``: wherever the version keeps it),
sets, ``WeakSet`` members, weak references, lists and closures.

Nothing runs in the program: every step is a read. Standard library only, Python 3.6 syntax.
"""

from .cpython_layouts import TPFLAGS_LONG_SUBCLASS, TPFLAGS_UNICODE_SUBCLASS
from .cpython_mem import ReadError
from .cpython_values import ValueFormatter

MAX_BASES = 64
MAX_MEMBERS = 1 << 22


class Objects(object):
    def __init__(self, walker):
        self.w = walker
        self.mem = walker.mem
        self.off = walker.off
        self.ip = walker.ip
        self.minor = walker.ip.minor
        self.header = 32 if walker.ip.free_threaded else 16
        self.fmt = ValueFormatter(walker)
        self._names = {}  # type address -> tp_name
        self._bases = {}  # type address -> (its names, its base types' names...)
        self._flags = {}  # type address -> tp_flags

    # -- types -----------------------------------------------------------------------------------

    def type_of(self, obj):
        return self.mem.ptr(obj + self.off["ob.type"])

    def type_name(self, tp):
        name = self._names.get(tp)
        if name is None:
            name = self._names[tp] = self.fmt.type_name(tp)
        return name

    def name_of(self, obj):
        """The type name (tp_name) of the object at ``obj``."""
        return self.type_name(self.type_of(obj))

    def lineage(self, tp):
        """tp_name of ``tp`` and of each of its bases, nearest first."""
        got = self._bases.get(tp)
        if got is None:
            names = []
            t = tp
            while t and len(names) < MAX_BASES:
                names.append(self.type_name(t))
                t = self.mem.ptr(t + self.off["tp.base"])
            got = self._bases[tp] = tuple(names)
        return got

    def is_a(self, obj, name):
        """Whether the object's type, or one of its bases, is named ``name``."""
        return name in self.lineage(self.type_of(obj))

    def flags(self, tp):
        fl = self._flags.get(tp)
        if fl is None:
            fl = self._flags[tp] = self.mem.ptr(tp + self.off["tp.flags"])
        return fl

    # -- strings and numbers -------------------------------------------------------------------

    def text(self, obj, limit=None):
        """(the text of a str object, or the digits of an int, else None; whether it was an int)."""
        if not obj:
            return None, False
        try:
            fl = self.flags(self.type_of(obj))
            if fl & TPFLAGS_UNICODE_SUBCLASS:
                return self.w.read_str(obj, limit), False
            if fl & TPFLAGS_LONG_SUBCLASS:
                return self.fmt.format(obj)[1], True
        except (ReadError, ValueError, UnicodeDecodeError):
            pass
        return None, False

    def int_value(self, obj):
        try:
            if self.flags(self.type_of(obj)) & TPFLAGS_LONG_SUBCLASS:
                return int(self.fmt.format(obj)[1])
        except (ReadError, ValueError):
            pass
        return None

    # -- dicts, modules, attributes ------------------------------------------------------------

    def dict_items(self, d):
        return self.fmt.dict_items(d, MAX_MEMBERS)

    def lookup(self, items, name):
        """The value of the str key ``name`` among (key, value) pairs, or None."""
        for k, v in items:
            try:
                if self.mem.i64(k + self.off["str.length"]) != len(name):
                    continue
                if self.w.read_str(k) == name:
                    return v
            except (ReadError, ValueError, UnicodeDecodeError):
                continue
        return None

    def modules_dict(self):
        """sys.modules of the main interpreter."""
        interp = self.mem.ptr(self.ip.runtime + self.off["rt.interp_head"])
        return self.mem.ptr(interp + self.off["is.modules"]) if interp else 0

    def module(self, name):
        """The module ``name`` of sys.modules (its address), or None."""
        mods = self.modules_dict()
        if not mods or self.type_of(mods) != self.ip.types.get("dict"):
            raise ValueError("sys.modules is not a dict at %#x: the offsets do not match this build" % mods)
        return self.lookup(self.dict_items(mods), name)

    def module_attr(self, mod, name):
        d = self.mem.ptr(mod + self.off["mod.dict"])
        return self.lookup(self.dict_items(d), name) if d else None

    def attr(self, obj, name):
        """The instance attribute ``name`` of ``obj`` (its value's address), or None."""
        tp = self.type_of(obj)
        for key, value in self.fmt.objects.attributes(obj, tp, self.flags(tp), MAX_MEMBERS):
            if key == name:
                return value
        return None
    # -- containers ------------------------------------------------------------------------------

    def set_members(self, s):
        return self.fmt.set_items(s, MAX_MEMBERS)

    def weakset_members(self, ws):
        """The live objects of a ``weakref.WeakSet`` (its ``data``: a set of weak references)."""
        data = self.attr(ws, "data")
        if not data:
            raise ValueError("the WeakSet at %#x has no data set" % ws)
        out = []
        none = self.ip.types.get("None")
        wro = self.off["wr.object"]
        for ref in self.set_members(data):
            try:
                target = self.mem.ptr(ref + wro)
            except ReadError:
                continue
            if target and target != none:  # (a cleared reference points to None)
                out.append(target)
        return out

    def tuple_items(self, t):
        return self.fmt._tuple_items(t)

    def list_items(self, lst):
        n = self.mem.i64(lst + self.off["list.size"])
        if n < 0 or n > MAX_MEMBERS:
            raise ValueError("list of %d items is not plausible" % n)
        items = self.mem.ptr(lst + self.off["list.items"])
        return [self.mem.ptr(items + 8 * i) for i in range(n)] if n else []

    def closure_cells(self, fn):
        """What the cells of a function's closure hold (addresses; 0 for an empty cell)."""
        clo = self.mem.ptr(fn + self.off["fn.closure"])
        if not clo:
            return []
        return [self.mem.ptr(c + self.off["cell.ref"]) for c in self.tuple_items(clo) if c]
