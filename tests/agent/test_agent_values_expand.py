"""Python containers and objects expand through the agent's children request: lists, tuples, dicts (and
their subclasses), sets, deques, objects' __dict__ and __slots__, with no code of the program run (the
program counts its overridden methods' and properties' calls and prints the counts when it runs again),
a bounded page of children at a time, and one line of error for a value gone since the stop."""

from __future__ import annotations

import json

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, debian_py311_param, line_of, pyenv_python
from test_agent import _exit, _start, _stop

from tuidbg.engine.errors import EngineError

pytestmark = [requires_gdb, pytest.mark.slow]

PROG = PROGRAMS / "py" / "values_expand.py"


def _pyenv(minor: str):
    py = pyenv_python(minor)
    return pytest.param(py, id=f"pyenv-{minor}", marks=pytest.mark.skipif(py is None, reason=f"pyenv has no CPython {minor}"))


def _counts(out: bytearray) -> list[dict]:
    return [json.loads(ln[6:]) for ln in bytes(out).decode().splitlines() if ln.startswith("CALLS ")]


@pytest.mark.parametrize("python", [debian_py311_param(), _pyenv("3.12"), _pyenv("3.9"), _pyenv("3.13")])
async def test_containers_and_objects_expand_without_user_code(make_session, python):
    s, ctl, out = await _start(make_session, python, PROG)
    await ctl.add_breakpoint(str(PROG), line_of(PROG, "stop"))
    await ctl.add_breakpoint(str(PROG), line_of(PROG, "after"))
    await s.launch()
    await _stop(ctl)

    async def kids(expr, *path):
        return [(n, t, v, e) for n, t, v, e in await ctl.python_children(expr, path)]

    # Names, types, one-line values, and which children expand in turn.
    assert await kids("nested") == [
        ("[0]", "int", "1", False), ("[1]", "str", "'two'", False), ("[2]", "list", "[3, 4]", True),
        ("[3]", "dict", "{'k': (5, 6)}", True), ("[4]", "NoneType", "None", False)]
    assert await kids("nested", "[3]", "['k']") == [("[0]", "int", "5", False), ("[1]", "int", "6", False)]
    d = await kids("d")
    assert d[:3] == [("['a']", "int", "1", False), ("['b']", "list", "[10, 20]", True), ("[3]", "str", "'three'", False)]
    assert d[3] == ("['pt']", "Point", "Point(x=1, y=2, tags=['p', 'q'])", True)  # (read as the Locals pane reads it)
    # an object's attributes (its __dict__), not its methods
    assert await kids("d", "['pt']") == [(".x", "int", "1", False), (".y", "int", "2", False),
                                        (".tags", "list", "['p', 'q']", True)]
    assert await kids("d", "['pt']", ".tags") == [("[0]", "str", "'p'", False), ("[1]", "str", "'q'", False)]
    # __slots__ (a private one by its real name; an unset one left out)
    sl = await kids("sl")
    assert [(n, t) for n, t, _v, _e in sl] == [(".a", "Point"), ("._Slotted__hidden", "str")]
    assert sl[1][2] == "'h'"
    assert [n for n, *_ in await kids("sl", ".a")] == [".x", ".y", ".tags"]
    # A dict subclass: its items through dict's own methods (its __getitem__, items, __iter__ raise), then
    # its instance attributes; an object whose attribute reads run code: its __dict__ only.
    loud = await kids("loud")
    assert [(n, t) for n, t, _v, _e in loud] == [("['a']", "int"), ("['b']", "Point"), (".note", "str")]
    assert [n for n, *_ in await kids("loud", "['b']")] == [".x", ".y", ".tags"]
    assert await kids("sneaky") == [(".real", "int", "7", False)]
    assert await ctl.evaluate_many(["sneaky", "loud", "empty", "s"]) == [
        ("Sneaky!", "Sneaky", None, True), ("Loud!", "Loud", None, True), ("[]", "list", None, False),
        ("{'only'}", "set", None, True)]
    # (the watch above ran the two __repr__: the program counts them and nothing else)
    assert await kids("od") == [("['a']", "int", "2", False), ("['z']", "int", "1", False)]  # its own order
    assert await kids("dd") == [("['q']", "list", "[1]", True)]
    # a metaclass's == and __mro__ read, a key's __hash__ (an OrderedDict's own items() hashes every key)
    assert await kids("odd") == [(".v", "int", "1", False)]
    kod = await kids("kod")
    assert [(t, v) for _n, t, v, _e in kod] == [("Odd", "Odd(v=1)"), ("int", "2")]
    assert kod[0][0] == "[Key()]" and kod[1][0] == "['s']"
    assert [n for n, *_ in await kids("kod", kod[0][0])] == [".v"]
    assert await kids("s") == [("[0]", "str", "'only'", False)]
    assert await kids("dq") == [("[0]", "int", "1", False), ("[1]", "int", "2", False), ("[2]", "int", "3", False)]
    assert await kids("empty") == []
    # Bounded: a page of 100 children, then a row that says how many more; the next page by "@100".
    big = await kids("big")
    assert len(big) == 101 and big[99] == ("[99]", "int", "99", False) and big[100] == ("@100", "", "150 more", False)
    page2 = await kids("big", "@100")
    assert page2[0] == ("[100]", "int", "100", False) and page2[-1] == ("@200", "", "50 more", False)
    last = await kids("big", "@200")
    assert len(last) == 50 and last[-1] == ("[249]", "int", "249", False)

    await ctl.resume()
    await _stop(ctl)
    # Gone since: the key, the local. One line each, no traceback.
    with pytest.raises(EngineError) as gone:
        await kids("d", "['b']")
    assert str(gone.value) == "ValueError: dict has no key 'b' (now)"
    with pytest.raises(EngineError) as gone:
        await kids("pt")
    assert str(gone.value) == "NameError: name 'pt' is not defined"
    with pytest.raises(EngineError) as gone:
        await kids("nested", "[7]")
    assert str(gone.value) == "ValueError: list has no item [7] (now): it has 5"
    await ctl.resume()
    assert await _exit(s, ctl) == 0
    # Only the two __repr__ that the watch ran (evaluate_many) ran while stopped.
    assert _counts(out) == [{"repr": 2}, {}]
