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
  complex, bool, str, bytes, None), a bounded repr made here of built-in containers, a torch value's line (the
  caller's ``special``), else ``<TypeName at 0x...>`` as the Locals pane shows an object read from memory.

``child`` raises ValueError with a sentence when a name is not (or no longer) a child.
"""

import collections
import itertools

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
        return (("[%s]" % text(k, 200), v) for k, v in _dict_items(obj))
    base = _base(obj, _SEQUENCES + _SETS)
    if base is None:
        return iter(())
    return (("[%d]" % i, v) for i, v in enumerate(base.__iter__(obj)))


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
