"""Python containers and objects that expand at a Python stop (tests/agent/test_agent_values_expand.py,
tests/ui/test_ui_values_expand.py). A dict subclass and objects whose __getitem__, items, __iter__, __len__,
__getattr__, __getattribute__, properties and __repr__ count their calls: the counts are printed after
each stop, when the program runs again."""
import collections
import json

calls = collections.Counter()


class Loud(dict):
    def __getitem__(self, key):
        calls["getitem"] += 1
        raise RuntimeError("Loud.__getitem__ ran")

    def items(self):
        calls["items"] += 1
        raise RuntimeError("Loud.items ran")

    def __iter__(self):
        calls["iter"] += 1
        raise RuntimeError("Loud.__iter__ ran")

    def __len__(self):
        calls["len"] += 1
        return 0

    def __repr__(self):
        calls["repr"] += 1
        return "Loud!"


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y
        self.tags = ["p", "q"]

    def norm2(self):
        return self.x * self.x + self.y * self.y


class Slotted:
    __slots__ = ("a", "__hidden", "unset")

    def __init__(self):
        self.a = Point(3, 4)
        self.__hidden = "h"


class Sneaky:
    """Attribute reads run code: __getattr__, __getattribute__, a property, __repr__."""

    def __init__(self):
        self.real = 7

    def __getattr__(self, name):
        calls["getattr"] += 1
        raise AttributeError(name)

    def __getattribute__(self, name):
        calls["getattribute"] += 1
        return object.__getattribute__(self, name)

    @property
    def prop(self):
        calls["property"] += 1
        return 1

    def __repr__(self):
        calls["repr"] += 1
        return "Sneaky!"


class Meta(type):
    """A metaclass whose == and attribute reads run code (``x in (int, str)`` asks it)."""

    def __eq__(cls, other):
        calls["meta_eq"] += 1
        return NotImplemented

    __hash__ = type.__hash__

    def __getattribute__(cls, name):
        if name == "__mro__":
            calls["meta_mro"] += 1
        return type.__getattribute__(cls, name)


class Odd(metaclass=Meta):
    def __init__(self):
        self.v = 1


class Key:
    """A dict key whose hash runs code (an OrderedDict's items() would hash it again)."""

    def __hash__(self):
        calls["hash"] += 1
        return 1

    def __repr__(self):
        calls["repr"] += 1
        return "Key!"


def report():
    print("CALLS", json.dumps(dict(calls)), flush=True)
    calls.clear()


def main():
    nested = [1, "two", [3, 4], {"k": (5, 6)}, None]
    d = {"a": 1, "b": [10, 20], 3: "three", "pt": Point(1, 2)}
    pt = Point(5, 6)
    sl = Slotted()
    loud = Loud(a=1, b=Point(7, 8))
    loud.note = "n"
    sneaky = Sneaky()
    odd = Odd()
    kod = collections.OrderedDict([(Key(), Odd()), ("s", 2)])
    calls.clear()  # (made, __init__ ran __getattribute__): from here on, nothing may count
    od = collections.OrderedDict(z=1, a=2)
    od.move_to_end("z")
    dd = collections.defaultdict(list, q=[1])
    s = {"only"}
    dq = collections.deque([1, 2, 3])
    big = list(range(250))
    empty = []
    bare = object()  # (read from memory, it may have attributes: it expands to nothing)
    report()  # MARK:stop
    del d["b"]
    del pt
    report()  # MARK:after
    assert all(v is not None for v in (nested, sl, loud, sneaky, od, dd, s, dq, big, empty, bare, odd, kod))


main()
