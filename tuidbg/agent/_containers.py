"""Children of Python containers and objects at a Python stop, read without user code.

Runs inside the debugged program, stdlib only, Python 3.9 syntax. What expands: lists, tuples, dicts (and
dict subclasses: OrderedDict, defaultdict, Counter...), sets, frozensets, deques, and objects with instance
attributes (their ``__dict__`` and ``__slots__``: attributes, not methods nor class attributes). Children are
named ``[0]`` (sequences, sets in iteration order), ``[<key>]`` (dicts: ``['a']``, ``[3]``) and ``.attr``.

No code of the program runs, not even the code its one-line values in the Locals pane run (that pane reads
them from memory):

- containers are read with the built-in types' own methods (``dict.items(d)``, ``list.__getitem__``,
  ``set.__iter__``), never a subclass's overrides (its ``__getitem__``, ``items``, ``__iter__``,
  ``__missing__``, ``__len__``);
- an object's ``__dict__`` is read through the descriptor that the interpreter made for it (found in the raw
  class dicts of its MRO, the ``__get__`` of a C getset or member descriptor), ``__slots__`` through their member
  descriptors: no ``__getattribute__``, ``__getattr__`` or property of the program runs, and a class that
  defines its own ``__dict__`` attribute shows no instance attributes rather than run it;
- types are looked at through ``type(obj)`` and the raw ``__mro__``, never ``isinstance`` (which may ask an
  object for its ``__class__``), and compared by identity (``in`` would ask a metaclass's ``__eq__``);
- an OrderedDict is shown in its own order (``move_to_end``) when its keys are of built-in types; its order
  is known only to its iterator, which hashes each key, so with other keys (whose ``__hash__`` is the
  program's) it is shown in the order the keys were first inserted;
- the one-line text of a child (``text``) is the built-in ``repr`` of the built-in scalar types (int, float,
  complex, bool, str, bytes, None), a torch value's line (the caller's ``special``), a value type's or an
  object's line as the Locals pane reads it from memory (``object_text``: ``range(0, 5)``,
  ``datetime.date(2024, 5, 6)``, ``<Color.RED: 1>``, ``Point(x=1, y=2)``), a bounded repr made here of
  built-in containers, else ``<TypeName at 0x...>``.

``child`` raises ValueError with a sentence when a name is not (or no longer) a child.
"""

import collections
import itertools
import sys

_TYPE_DICT = type.__dict__["__dict__"]  # the raw class dict (a mappingproxy) of any class
_MRO = type.__dict__["__mro__"]
_NAME = type.__dict__["__name__"]
_GETSET = type(_TYPE_DICT)
_MEMBER = type(type.__dict__["__dictoffset__"])

_SCALARS = (int, float, complex, bool, str, bytes, type(None))
_HASHED = (int, float, bool, str, bytes, type(None))  # keys whose hash is the built-in one
# (base type, its iterator) of the containers that expand, the first in an object's MRO wins
_SEQUENCES = (list, tuple, collections.deque)
_SETS = (set, frozenset)
ITEMS = 10  # items a one-line text of a container shows
DEPTH = 2  # containers nested deeper show their size only
FIELDS = 5  # attributes an object's one line shows (then "…")
BYTES = 64  # bytes of a bytearray shown


def type_name(obj):
    return _NAME.__get__(type(obj))


def _mro(obj):
    return _MRO.__get__(type(obj))


def _has(classes, cls):
    """``cls in classes`` by identity: ``in`` compares with ``==``, which a metaclass may define."""
    for c in classes:
        if c is cls:
            return True
    return False


def _base(obj, bases):
    mro = _mro(obj)
    for b in bases:
        if _has(mro, b):
            return b
    return None


def instance_dict(obj):
    """The instance attribute dict of obj (a real dict), or None; runs no code of the program."""
    for cls in _mro(obj):
        d = _TYPE_DICT.__get__(cls).get("__dict__")
        if d is None:
            continue
        if not _has((_GETSET, _MEMBER), type(d)):
            return None  # the program's own __dict__ attribute (a property): not run
        try:
            got = d.__get__(obj, type(obj))
        except Exception:
            return None
        return got if type(got) is dict else None
    return None


def _mangle(cls, name):
    if name.startswith("__") and not name.endswith("__"):
        return "_%s%s" % (_NAME.__get__(cls).lstrip("_"), name)
    return name


def slot_values(obj):
    """[(name, value)] of the filled ``__slots__`` of obj, base classes' first."""
    out = []
    for cls in reversed(_mro(obj)):
        raw = _TYPE_DICT.__get__(cls)
        slots = raw.get("__slots__")
        if type(slots) is str:
            slots = (slots,)
        if not _has((tuple, list, dict), type(slots)):
            continue
        for name in slots:
            if type(name) is not str or name in ("__dict__", "__weakref__"):
                continue
            name = _mangle(cls, name)  # (a private slot by its real name: _Class__name)
            desc = raw.get(name)
            if type(desc) is not _MEMBER:
                continue
            try:
                out.append((name, desc.__get__(obj, type(obj))))
            except AttributeError:  # an unset slot
                pass
    return out


def _attributes(obj):
    d = instance_dict(obj)
    out = list(dict.items(d)) if d else []
    return [(k, v) for k, v in out if type(k) is str] + slot_values(obj)


def _length(obj):
    """Items of a container (0 for anything else), by its base type's own __len__."""
    base = _base(obj, (dict,) + _SEQUENCES + _SETS)
    return base.__len__(obj) if base is not None else 0


def _dict_items(obj):
    od = collections.OrderedDict
    if not _has(_mro(obj), od):
        return dict.items(obj)
    # The C OrderedDict keeps its own order (move_to_end), which only its iterator knows, and it finds each
    # key's node by hashing the key: that runs no code of the program only for keys of built-in types.
    # Other keys: the order they were first inserted in (the dict's own table), with no hash.
    pairs = list(dict.items(obj))
    if not all(_has(_HASHED, type(k)) for k, _v in pairs):
        return pairs
    values = {id(k): v for k, v in pairs}
    return [(k, values[id(k)]) for k in od.__iter__(obj) if id(k) in values]


def _items(obj):
    """Iterator of (name, value) of a container's items, by the base type's own methods."""
    if _has(_mro(obj), dict):
        return _keyed(_dict_items(obj))
    base = _base(obj, _SEQUENCES + _SETS)
    if base is None:
        return iter(())
    return (("[%d]" % i, v) for i, v in enumerate(base.__iter__(obj)))


def _keyed(pairs):
    """A dict's items named by their keys' text (``['a']``); a key whose text an earlier key has (two
    objects alike, ``[Key()]``) is named by its address too: each child has a name of its own."""
    seen = set()
    for k, v in pairs:
        name = "[%s]" % text(k, 200)
        if name in seen:
            name = "[%s @%#x]" % (text(k, 200), id(k))
        seen.add(name)
        yield name, v


def count(obj):
    """How many children obj has: its items, then its attributes."""
    return _length(obj) + len(_attributes(obj))


def expandable(obj):
    return count(obj) > 0


def entries(obj, start, n):
    """[(name, value)] of obj's children from the start-th, n at most."""
    both = itertools.chain(_items(obj), (("." + k, v) for k, v in _attributes(obj)))
    return list(itertools.islice(both, start, start + n))


def child(obj, name):
    """The child of obj called name (as ``entries`` names it)."""
    if name.startswith("."):
        for k, v in _attributes(obj):
            if k == name[1:]:
                return v
        raise ValueError("%s has no attribute %s (now)" % (type_name(obj), name[1:]))
    if name.startswith("[") and name.endswith("]"):
        n = _length(obj)
        if not _has(_mro(obj), dict):
            try:
                i = int(name[1:-1])
            except ValueError:
                i = -1
            if 0 <= i < n:
                base = _base(obj, (list, tuple))
                if base is not None:
                    return base.__getitem__(obj, i)
                for k, v in _items(obj):  # (sets, deques: in iteration order)
                    if k == name:
                        return v
            raise ValueError("%s has no item %s (now): it has %d" % (type_name(obj), name, n))
        for k, v in _items(obj):
            if k == name:
                return v
        raise ValueError("%s has no key %s (now)" % (type_name(obj), name[1:-1]))
    raise ValueError("%s has no child %r" % (type_name(obj), name))


def text(obj, limit=1000, special=None, depth=0):
    """The one-line text of a value, made without running code of the program (see the module's docstring)."""
    tp = type(obj)
    try:
        if _has(_SCALARS, tp):
            return _scalar(obj, tp, limit)
        if special is not None:
            line = special(obj)
            if line is not None:
                return line[:limit]
        line = object_text(obj, depth, lambda v, d: text(v, limit, special, d))
        if line is not None:
            return line[:limit]
        base = _base(obj, _SCALARS)
        if base is not None:  # an int, str... subclass (an IntEnum member): its value by the base's repr
            return ("%s(%s)" % (type_name(obj), _scalar(obj, base, limit)))[:limit]
        base = _base(obj, (dict, list, tuple, set, frozenset, collections.deque))
        if base is not None:
            body = _container(obj, base, limit, special, depth)
            return (body if tp is base and base is not collections.deque else "%s(%s)" % (type_name(obj), body))[:limit]
    except Exception as exc:  # (a value changing under us, a giant int)
        return "<%s: %s: %s>" % (type_name(obj), type(exc).__name__, exc)
    return "<%s at %#x>" % (type_name(obj), id(obj))


def _scalar(obj, base, limit):
    if base in (str, bytes) and base.__len__(obj) > limit:
        return base.__repr__(base.__getitem__(obj, slice(0, limit))) + "…"
    return base.__repr__(obj)[:limit]


def _container(obj, base, limit, special, depth):
    n = base.__len__(obj)
    opener, closer = {dict: ("{", "}"), list: ("[", "]"), tuple: ("(", ")"), collections.deque: ("[", "]"),
                      set: ("{", "}"), frozenset: ("frozenset({", "})")}[base]
    if n == 0:
        return {set: "set()", frozenset: "frozenset()"}.get(base, opener + closer)
    if depth >= DEPTH:
        return "%s… %d item%s%s" % (opener, n, "" if n == 1 else "s", closer)
    if base is dict:
        parts = ["%s: %s" % (text(k, limit, special, depth + 1), text(v, limit, special, depth + 1))
                 for k, v in itertools.islice(_dict_items(obj), ITEMS)]
    else:
        parts = [text(v, limit, special, depth + 1) for v in itertools.islice(base.__iter__(obj), ITEMS)]
    if n > ITEMS:
        parts.append("… %d more" % (n - ITEMS))
    elif base is tuple and n == 1:
        parts[0] += ","
    return opener + ", ".join(parts) + closer


# -- one-line texts of the value types and of the program's objects ----------------------------
#
# In the words the Locals pane reads them from memory (tuidbg/gdbext/cpython_objects.py; tests compare
# the two): range, slice, bytearray, Decimal, Fraction, datetime's types, pathlib's paths, enum members
# (<Color.RED: 1>), named tuples (NT(u=5, v=6)), an instance of a class of the program as its class name and
# first attributes (Point(x=1, y=2)). Only the exact built-in types' own methods run (range.__repr__, a C
# type's getters); modules are taken from sys.modules, never imported.

_FLAGS = type.__dict__["__flags__"]
HEAPTYPE = 1 << 9
# instances of these are shown as their base shows them (a container, a scalar) or as "<Name at 0x...>"
_NOT_OBJECTS = (type, BaseException, int, float, complex, str, bytes, bytearray, list, tuple, dict, set, frozenset)


def _module(name):
    return sys.modules.get(name)


def _is(tp, module, name):
    m = _module(module)
    return m is not None and tp is m.__dict__.get(name)


def object_text(obj, depth, sub):
    """The one line of ``obj`` (``sub(value, depth)`` gives a part's), or None when it is not one of these."""
    tp = type(obj)
    if tp is range:
        return range.__repr__(obj)
    if tp is slice:
        return "slice(%s, %s, %s)" % (sub(obj.start, depth + 1), sub(obj.stop, depth + 1), sub(obj.step, depth + 1))
    if tp is bytearray:
        n = bytearray.__len__(obj)
        shown = repr(bytes(bytearray.__getitem__(obj, slice(0, BYTES))))
        if n > BYTES:
            shown = shown[:-1] + "…" + shown[-1] + " (%d bytes)" % n
        return "bytearray(%s)" % shown
    line = _datetime(obj, tp, depth, sub)
    if line is not None:
        return line
    mro = _MRO.__get__(tp)
    names = [_NAME.__get__(c) for c in mro]
    if _is(tp, "decimal", "Decimal") and not _slots(obj).get("_int"):
        return tp.__repr__(obj)  # (the C type's own)
    if not _FLAGS.__get__(tp) & HEAPTYPE:
        return None
    name = _NAME.__get__(tp)
    if "Enum" in names:
        return _enum_member(obj, name, depth, sub)
    if _has(mro, tuple):
        fields = _class_attr(mro, "_fields")
        if type(fields) is not tuple:
            return None
        values = list(tuple.__iter__(obj))
        return _fields(name, list(zip(fields, values)), depth, sub)
    if "PurePath" in names:
        return "%s(%r)" % (name, _path(_slots(obj)))
    slots = _slots(obj)
    if "Fraction" in names and "_numerator" in slots:
        return "Fraction(%s, %s)" % (sub(slots.get("_numerator"), depth + 1), sub(slots.get("_denominator"), depth + 1))
    if "Decimal" in names and "_int" in slots:
        return "Decimal('%s')" % _py_decimal(slots)
    for c in _NOT_OBJECTS:
        if _has(mro, c):
            return None
    return _fields(name, _attributes(obj), depth, sub)


def _slots(obj):
    return dict(slot_values(obj))


def _class_attr(mro, key):
    for c in mro:
        raw = _TYPE_DICT.__get__(c)
        if key in raw:
            return raw[key]
    return None


def _fields(name, pairs, depth, sub):
    if depth > 1:
        return "%s(…)" % name if pairs else "%s()" % name
    parts = ["%s=%s" % (k, sub(v, depth + 1)) for k, v in pairs[:FIELDS]]
    if len(pairs) > FIELDS:
        parts.append("…")
    return "%s(%s)" % (name, ", ".join(parts))


def _enum_member(obj, name, depth, sub):
    d = instance_dict(obj) or {}
    if "_value_" in d:
        value = sub(d["_value_"], depth + 1)
    elif _has(_MRO.__get__(type(obj)), int):
        value = int.__repr__(obj)
    else:
        return None
    member = d.get("_name_")
    return "<%s: %s>" % ("%s.%s" % (name, member) if type(member) is str else name, value)


def _path(slots):
    """A pathlib path's text from its slots, as the memory reader makes it."""
    s = slots.get("_str")
    if type(s) is str:
        return s
    raw = slots.get("_raw_paths")
    if raw:
        import posixpath

        parts = [p if type(p) is str else "" for p in raw]
        return posixpath.join(*parts) if parts else "."
    drv = slots.get("_drv") if type(slots.get("_drv")) is str else ""
    root = slots.get("_root") if type(slots.get("_root")) is str else ""
    parts = [p if type(p) is str else "" for p in (slots.get("_parts") or ())]
    if drv or root:
        return drv + root + "/".join(parts[1:])
    return "/".join(parts) or "."


def _py_decimal(slots):
    """str() of a _pydecimal Decimal, from its slots."""
    dec = _module("decimal")
    sign, digits, exp = slots.get("_sign", 0), slots.get("_int", "0"), slots.get("_exp", 0)
    if exp == "F":
        return "-Infinity" if sign else "Infinity"
    if exp in ("n", "N"):
        return ("-" if sign else "") + ("sNaN" if exp == "N" else "NaN") + (digits.lstrip("0") if digits else "")
    return str(dec.Decimal((int(sign), tuple(int(c) for c in digits or "0"), int(exp))))


def _datetime(obj, tp, depth, sub):
    if _is(tp, "datetime", "timedelta"):
        parts = ["%s=%d" % (n, v) for n, v in (("days", obj.days), ("seconds", obj.seconds),
                                              ("microseconds", obj.microseconds)) if v]
        return "datetime.timedelta(%s)" % (", ".join(parts) or "0")
    if _is(tp, "datetime", "timezone"):
        return tp.__repr__(obj)  # (its own: a timezone's offset and name only)
    if _is(tp, "datetime", "date"):
        return "datetime.date(%d, %d, %d)" % (obj.year, obj.month, obj.day)
    if _is(tp, "datetime", "datetime"):
        args, kind = [obj.year, obj.month, obj.day, obj.hour, obj.minute], "datetime"
    elif _is(tp, "datetime", "time"):
        args, kind = [obj.hour, obj.minute], "time"
    else:
        return None
    if obj.microsecond:
        args += [obj.second, obj.microsecond]
    elif obj.second:
        args.append(obj.second)
    line = ", ".join(str(x) for x in args)
    if obj.tzinfo is not None:
        line += ", tzinfo=" + sub(obj.tzinfo, depth + 1)
    if obj.fold:
        line += ", fold=1"
    return "datetime.%s(%s)" % (kind, line)
