"""Values the Locals pane reads from memory as their value (tests/agent/test_python_values.py,
tests/ui/test_ui_python_values.py): the value types, enum members, named tuples, dataclasses, and objects of
classes of the program (with a __dict__, with __slots__, with nothing).

Usage: value_types.py OUT.json [trap|agent]

Before it stops it writes the repr of each value whose repr is its value to OUT.json; then it sends itself
SIGTRAP (trap), or goes on to the line marked stop, where the tests set a Python breakpoint (agent)."""

import collections
import dataclasses
import datetime
import decimal
import enum
import fractions
import json
import os
import pathlib
import signal
import sys

OUT = sys.argv[1]
HOW = sys.argv[2] if len(sys.argv) > 2 else "trap"


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y


class Slotted:
    __slots__ = ("a", "__hidden", "unset")

    def __init__(self):
        self.a = 1
        self.__hidden = "h"


class Empty:
    pass


class Many:
    def __init__(self):
        for i in range(7):
            setattr(self, "f%d" % i, i)


@dataclasses.dataclass
class DC:
    a: int
    b: str


NT = collections.namedtuple("NT", "u v")


class Color(enum.Enum):
    RED = 1


class Level(enum.IntEnum):
    HIGH = 3


CET = datetime.timezone(datetime.timedelta(hours=1), "CET")


def values():
    r = range(3, 10, 2)
    r5 = range(5)
    sl = slice(1, 5, None)
    ba = bytearray(b"xyz\x00")
    c = complex(1.5, -2)
    d = decimal.Decimal("3.14")
    dbig = decimal.Decimal("-1234567890123456789012.5e-3")
    dinf = decimal.Decimal("-Infinity")
    dnan = decimal.Decimal("NaN")
    fr = fractions.Fraction(3, 4)
    dt = datetime.datetime(2024, 5, 6, 7, 8, 9)
    dtu = datetime.datetime(2024, 5, 6, 7, 8, 0, 15, tzinfo=datetime.timezone.utc)
    dtc = datetime.datetime(2024, 5, 6, 7, 8, tzinfo=CET)
    day = datetime.date(2024, 5, 6)
    tm = datetime.time(7, 8)
    tmu = datetime.time(7, 8, 9, 10)
    td = datetime.timedelta(days=1, seconds=5)
    td0 = datetime.timedelta(0)
    en = Color.RED
    lv = Level.HIGH
    pa = pathlib.Path("/tmp/x")
    pb = pathlib.PurePosixPath("a", "b")
    dc = DC(1, "s")
    nt = NT(5, 6)
    p = Point(1, 2)
    sv = Slotted()
    e = Empty()
    many = Many()
    nest = Point(Point(1, [1, 2]), {"k": Point(0, 0)})
    own = {k: repr(v) for k, v in locals().items() if k not in ("p", "sv", "e", "many", "nest")}
    bag = {k: v for k, v in locals().items() if k != "own"}  # (the agent lists them as its children)
    with open(OUT, "w") as f:
        json.dump(own, f)
    if HOW == "trap":
        os.kill(os.getpid(), signal.SIGTRAP)  # MARK:trap
    return bag  # MARK:stop


values()  # MARK:module_call
