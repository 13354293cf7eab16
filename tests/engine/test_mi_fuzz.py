"""Property-based fuzz of the MI parser (issue 9): real lines from tests/data, mutated.

The contract of ``mi.parse_line``, for any string: it never raises; it returns None (blank
line) or an MIRecord of a known kind; the record's ``raw`` and ``error`` are bounded; a TEXT
record carries the line. On lines gdb could send (no NUL, no newline, no whitespace beyond
space, tab and CR, nesting within bounds) it gives the record the parser before issue 9 gave
(tests/mi_reference.py). Records built from a grammar come back as the values they were built
from. The time is bounded by each test's timeout, not asserted.

CI runs a fixed, derandomized set of examples in a few seconds. For a longer random search:
``TUIDBG_FUZZ=long .venv/bin/python -m pytest -p no:cacheprovider tests/engine/test_mi_fuzz.py``.
"""

from __future__ import annotations

import faulthandler
import os
import re

import pytest
from helpers import DATA
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mi_reference import old_parse_line

from tuidbg.engine import mi
from tuidbg.engine.mi import parse_line

_LONG = os.environ.get("TUIDBG_FUZZ") == "long"
_FUZZ = settings(
    derandomize=not _LONG,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def fuzz(examples: int) -> settings:
    return settings(_FUZZ, max_examples=examples * (50 if _LONG else 1))


@pytest.fixture(autouse=True)
def hard_timeout(request, capsys):
    """Ends the run if a test outlives its timeout by 30 s, even inside one C call that
    holds the GIL (pytest-timeout's signal could not stop that): faulthandler's C watchdog."""
    marker = request.node.get_closest_marker("timeout")
    with capsys.disabled():
        err = os.fdopen(os.dup(2), "w")
    faulthandler.dump_traceback_later((marker.args[0] if marker else 300) + 30, exit=True, file=err)
    yield
    faulthandler.cancel_dump_traceback_later()
    err.close()


REAL = sorted({line for p in sorted(DATA.rglob("*.mi.txt")) for line in p.read_text().splitlines() if line.strip()})
MI_REAL = [line for line in REAL if re.match(r"\d*[\^*=+~@&]", line)]
KINDS = {mi.RESULT, mi.EXEC, mi.NOTIFY, mi.STATUS, mi.CONSOLE, mi.TARGET, mi.LOG, mi.PROMPT, mi.TEXT}
PREFIX_KIND = {"^": mi.RESULT, "*": mi.EXEC, "=": mi.NOTIFY, "+": mi.STATUS, "~": mi.CONSOLE, "@": mi.TARGET, "&": mi.LOG}
SPECIAL = ['"', "\\", "\\\\", '\\"', "{", "}", "[", "]", ",", "=", " ", "\t", "\r", "\\n", "\\0", "\\377", "\\303", "\\303\\251",
           "\\777", "\\e", "\\q", "\x00", "\n", "\x0b", "\xa0", "\u2028", "é", "😀", "a=", "x-y.z=", '""', "{}", "[]", "7"]


def check_contract(line: str):
    """The contract for any input; returns the record."""
    rec = parse_line(line)
    stripped = line.rstrip("\r\n")
    if rec is None:
        assert stripped.strip() == ""
        return None
    assert isinstance(rec, mi.MIRecord) and rec.kind in KINDS
    assert len(rec.raw) <= mi._RAW_KEEP + 1 and len(rec.error) < 300
    if rec.kind == mi.TEXT:
        assert rec.text in (stripped, line)
    elif rec.kind in mi.STREAM_KINDS:
        assert isinstance(rec.payload, str)
    elif rec.kind != mi.PROMPT:
        assert isinstance(rec.payload, dict) and rec.cls
    return rec


_GDB_SPACE = set(" \t\r")


def gdb_could_send(line: str) -> bool:
    """Lines where the old parser is the oracle: what gdb can put on one line of MI."""
    return (
        len(line) < 20_000
        and "\x00" not in line
        and "\n" not in line
        and not any(c.isspace() and c not in _GDB_SPACE for c in line)  # pygdbmi knew " \t\r\n" only
        and line.count("{") + line.count("[") < 150  # pygdbmi recursed: 3 frames a level
        and not re.match(r"\d{21}", line)  # a token of 21+ digits is text now
    )


def check_same_as_before(line: str) -> None:
    new = check_contract(line)
    if not gdb_could_send(line):
        return
    old = old_parse_line(line)
    if old is None:
        assert new is None
        return
    assert (new.kind, new.cls, new.token) == (old.kind, old.cls, old.token), (line, old.error, new.error)
    if new.kind == mi.TEXT:
        assert new.text.rstrip("\r\n") == old.text.rstrip("\r\n")
    else:
        assert new.payload == old.payload
        if len(line) <= mi._RAW_KEEP:
            assert new.raw == old.raw


# -- mutations of real lines ------------------------------------------------------------------


_STRUCT = '{}[],="\\'
_SWAP = {"{": "[", "[": "{", "}": "]", "]": "}", ",": "=", "=": ",", '"': "\\", "\\": '"'}
_NAME_EQ = re.compile(r"[A-Za-z_][\w.-]*=")


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[,{}\[\]=]')


def structure(line: str) -> list[int]:
    """Where the brackets, commas and '=' of a record's results are, outside its strings, and
    its quotes (not the comma after the class: that edit only makes text)."""
    spots = []
    for m in _TOKENS.finditer(line, line.find(",") + 1):
        spots += [m.start(), m.end() - 1] if m.group().startswith('"') else [m.start()]
    return spots


_OPS = ["flip", "cut", "dup", "insert", "text", "delete", "struct", "struct", "name", "comma"]


def mutate(draw, line: str, edits=st.integers(0, 4), ops=_OPS) -> str:
    """A few edits: random ones (a character, a cut, a copied fragment, inserted text) and
    edits of the MI structure (a bracket, comma, quote or backslash deleted, swapped or doubled;
    a name dropped or added), which make lines one parser could take and the other refuse."""
    rnd = draw(st.randoms(use_true_random=True))  # positions: uniform (hypothesis's draws favour 0)
    for _ in range(draw(edits)):
        op = draw(st.sampled_from(ops))
        i = rnd.randint(0, len(line))
        if op == "flip" and line:
            i = min(i, len(line) - 1)
            c = draw(st.one_of(st.characters(), st.sampled_from(_STRUCT + " ")))
            line = line[:i] + c + line[i + 1 :]
        elif op == "cut":
            line = line[:i]
        elif op == "dup":
            j = rnd.randint(i, min(len(line), i + 200))
            k = rnd.randint(0, len(line))
            line = line[:k] + line[i:j] * draw(st.integers(1, 3)) + line[k:]
        elif op == "insert":
            line = line[:i] + draw(st.sampled_from(SPECIAL)) + line[i:]
        elif op == "text":
            line = line[:i] + draw(st.text(max_size=20)) + line[i:]
        elif op == "delete":
            j = rnd.randint(i, min(len(line), i + 50))
            line = line[:i] + line[j:]
        elif op == "struct":
            spots = structure(line) if draw(st.integers(0, 3)) else [k for k, c in enumerate(line) if c in _STRUCT]
            if spots:
                k = rnd.choice(spots)
                how = draw(st.sampled_from(["delete", "swap", "other", "double"]))
                new = {"delete": "", "swap": _SWAP[line[k]], "double": line[k] * 2}.get(how) or draw(st.sampled_from(_STRUCT))
                line = line[:k] + new + line[k + 1 :]
        elif op == "comma":  # a separator missing, or one after an opening bracket
            commas = [k for k in structure(line) if line[k] == ","]
            if commas and rnd.random() < 0.7:
                k = rnd.choice(commas)
                line = line[:k] + line[k + 1 :]
            else:
                opens = [k + 1 for k in structure(line) if line[k] in "{["]
                if opens:
                    k = rnd.choice(opens)
                    line = line[:k] + "," + line[k:]
        else:
            names = list(_NAME_EQ.finditer(line))
            if names and draw(st.booleans()):
                m = rnd.choice(names)
                line = line[: m.start()] + line[m.end() :]
            else:
                spots = [k + 1 for k, c in enumerate(line) if c in "[{,"]
                if spots:
                    k = rnd.choice(spots)
                    line = line[:k] + draw(_NAME) + "=" + line[k:]
    return line


@st.composite
def mutated(draw, source=REAL):
    return mutate(draw, draw(st.sampled_from(source)))


GRAMMAR_EDGES = [
    '^done,a="1",b="2"', '^done,a="1"b="2"', '^done,a={,b="2"}', '^done,a=[,"1"]', '^done,a=["1""2"]',
    '^done,a=[{}{}]', '^done,a={}b={}', '^done,a=[a="1","2"]', '^done,a=["1",a="2"]', '^done,a=[a="1",b={}]',
    '^done,a={b="1"]', '^done,a=[b="1"}', '^done,a={b=["1"}]', '^done,a={b="1"},a="2"', '^done,a="1",a="2",a="3"',
    '^done,a=["1"],a="2"', '^done,a="1",a=["2"]', '^done,a=[],a=[]', '^done,a={},a={}', '^done,a={b="1",b={}}',
    '^done,a="1",', '^done,a=', '^done,=""', '^done,a="1"}', '^done,a="1"]', '^done,{}', '^done,[]', '^done,"x",a="1"',
    '^done, a = "1" , b = [ "2" , { c = "3" } ]', '^done,a="1"  ', '^done,a="\\303\\251"', '^done,a="\\303"',
    '^done,a="\\q"', '^done,a="\\777"', '^done,a="x\\"', '~"\\303\\251\\303"', '~"a\\', '~"a\\"', '~"a"b"', "^done,a-b.c_d=\"1\"",
]


@pytest.mark.parametrize("line", GRAMMAR_EDGES)
def test_grammar_edges_as_before(line):
    """Each rule of the grammar, both ways (the fuzz finds these by chance; here they are fixed)."""
    assert gdb_could_send(line)
    check_same_as_before(line)


def test_real_lines_keep_their_kind():
    for line in MI_REAL:
        rec = check_contract(line)
        prefix = line.lstrip("0123456789")[0]
        if rec.kind != mi.TEXT:
            assert rec.kind == PREFIX_KIND[prefix]
        else:  # a real line that is not MI: the old parser said so too
            assert old_parse_line(line).kind == mi.TEXT
    assert sum(parse_line(line).kind != mi.TEXT for line in MI_REAL) > 400


@pytest.mark.timeout(120)
@fuzz(300)
@given(mutated())
def test_mutated_real_lines(line):
    check_same_as_before(line)


@pytest.mark.timeout(120)
@fuzz(100)
@given(mutated(MI_REAL), st.sampled_from(["", "\r", "\r\n", "\n", " ", "\t\r"]))
def test_mutated_lines_with_line_ends(line, end):
    check_contract(line + end)
    check_same_as_before(line.rstrip("\r\n") + end.rstrip("\n"))


@pytest.mark.timeout(120)
@fuzz(100)
@given(st.binary(max_size=300), st.sampled_from(["", "^done,", "*stopped,", "=x,", '~"', "5^error,", '^done,"', "^done,a="]))
def test_random_bytes(data, prefix):
    check_same_as_before(prefix + data.decode("utf-8", "replace"))
    check_contract(prefix + data.decode("latin-1"))


# -- records built from the grammar come back whole -----------------------------------------

_ESC = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\033": "\\e", "\a": "\\a", "\b": "\\b", "\f": "\\f"}


def gdb_escape(text: str, octal_non_ascii: bool) -> str:
    """``text`` as gdb's printchar writes it: C escapes, \\NNN for other control bytes and,
    without a UTF-8 host charset, for every byte of a non-ASCII character."""
    out = []
    for c in text:
        if c in _ESC:
            out.append(_ESC[c])
        elif ord(c) < 0x20 or ord(c) == 0x7F or (octal_non_ascii and ord(c) > 0x7F):
            out.append("".join(f"\\{b:03o}" for b in c.encode("utf-8", "surrogatepass")))
        else:
            out.append(c)
    return "".join(out)


_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=30) | st.text("ab\"\\\n\t\033é€😀 {}[],=", max_size=30)


def merged(items) -> dict:
    """A tuple's dict as pygdbmi made it: a repeated name (gdb bug 22217) collects its values in
    a list, appended to the first value when that is itself a list."""
    out: dict = {}
    for k, v in items:
        if k not in out:
            out[k] = v
        elif isinstance(out[k], list):
            out[k].append(v)
        else:
            out[k] = [out[k], v]
    return out


_NAME = st.sampled_from(["a", "b", "frame", "x-y.z"]) | st.from_regex(r"[A-Za-z_][A-Za-z0-9_.-]{0,8}", fullmatch=True)


@st.composite
def mi_value(draw, depth=0, containers=False, max_depth=4):
    """(MI text, the value pygdbmi's grammar gives it)."""
    kinds = ["str", "str", "tuple", "values", "results"] if depth < max_depth else ["str"]
    kind = draw(st.sampled_from(kinds[2:] if containers else kinds))
    if kind == "str":
        text = draw(_TEXT)
        return '"' + gdb_escape(text, draw(st.booleans())) + '"', text
    n = draw(st.integers(2 if containers else 0, 3))
    if kind == "tuple":
        items = [(draw(_NAME), draw(mi_value(depth + 1, max_depth=max_depth))) for _ in range(n)]
        return "{" + ",".join(f"{k}={v[0]}" for k, v in items) + "}", merged((k, v[1]) for k, v in items)
    items = [draw(mi_value(depth + 1, max_depth=max_depth)) for _ in range(n)]
    if kind == "values":
        return "[" + ",".join(v[0] for v in items) + "]", [v[1] for v in items]
    names = [draw(_NAME) for _ in items]  # a list of results: pygdbmi keeps the values only
    return "[" + ",".join(f"{k}={v[0]}" for k, v in zip(names, items)) + "]", [v[1] for v in items]


RECORD_HEADS = st.sampled_from(["^done", "^error", "*stopped", "=breakpoint-modified", "+download", "17^done", "3*running"])
RESULTS = st.lists(st.tuples(_NAME, mi_value()), min_size=1, max_size=4)


@pytest.mark.timeout(120)
@fuzz(120)
@given(RECORD_HEADS, RESULTS)
def test_built_records_come_back(head, results):
    line = head + "".join(f",{name}={value[0]}" for name, value in results)
    rec = check_contract(line)
    prefix = head.lstrip("0123456789")[0]
    assert rec.kind == PREFIX_KIND[prefix] and rec.cls == head.lstrip("0123456789")[1:]
    assert rec.payload == merged((name, value[1]) for name, value in results)
    check_same_as_before(line)


@pytest.mark.timeout(120)
@fuzz(400)
@given(RECORD_HEADS, st.lists(st.tuples(_NAME, mi_value(containers=True, max_depth=3)), min_size=2, max_size=4), st.data())
def test_mutated_built_records(head, results, data):
    line = head + "".join(f",{name}={value[0]}" for name, value in results)
    check_same_as_before(mutate(data.draw, line, st.integers(1, 2), ["struct", "struct", "struct", "name", "comma", "insert", "flip"]))


def bytes_escaped(data: bytes) -> str:
    """Bytes as gdb writes them in a c-string: printable ASCII as is, the rest as \\NNN."""
    return "".join(
        "\\\\" if b == 0x5C else '\\"' if b == 0x22 else chr(b) if 0x20 <= b < 0x7F else f"\\{b:03o}" for b in data
    )


# prefix, closing text, where the string's value is in the record
BYTE_HOLDERS = {
    "~": ("", lambda rec: rec.text),
    "&": ("", lambda rec: rec.text),
    "^done,": ("", lambda rec: rec.payload["text"]),
    "^done,value=": ("", lambda rec: rec.payload["value"]),
    "*stopped,frame={a=": ("}", lambda rec: rec.payload["frame"]["a"]),
    "=x,a=[": ("]", lambda rec: rec.payload["a"][0]),
}


@pytest.mark.timeout(120)
@fuzz(150)
@given(st.sampled_from(sorted(BYTE_HOLDERS)), st.binary(max_size=40))
def test_bytes_that_are_not_utf8(prefix, data):
    """Any bytes as gdb escapes them: UTF-8 comes back as text; a run of escapes that is not
    UTF-8 never raises and stays as gdb wrote it (the old parser's choice)."""
    tail, value = BYTE_HOLDERS[prefix]
    line = f'{prefix}"{bytes_escaped(data)}"{tail}'
    rec = check_contract(line)
    assert rec.kind != mi.TEXT
    check_same_as_before(line)
    try:
        assert value(rec) == data.decode("utf-8")
    except UnicodeDecodeError:
        assert "\\" in value(rec)


@pytest.mark.timeout(120)
@fuzz(200)
@given(st.sampled_from(["~", "@", "&", "9~", "^done,"]), _TEXT, st.booleans())
def test_built_streams_come_back(prefix, text, octal):
    """Stream records and cuda-gdb's bare-string results."""
    line = prefix + '"' + gdb_escape(text, octal) + '"'
    rec = check_contract(line)
    assert (rec.payload["text"] if prefix == "^done," else rec.text) == text
    check_same_as_before(line)


# -- deep and long ------------------------------------------------------------------------------


@pytest.mark.timeout(120)
@fuzz(30)
@given(
    st.integers(1, 10_000),
    st.sampled_from(["a={", "a=[", "[", "{a=", "a=[b={"]),
    st.booleans(),
    st.sampled_from(["^done,", "*stopped,", "=x,"]),
)
@example(10_000, "a={", True, "^done,")
@example(10_000, "a=[", False, "*stopped,")
@example(10_000, "a=[b={", True, "=x,")
@example(mi._MAX_DEPTH, "a={", True, "^done,")
@example(mi._MAX_DEPTH + 1, "a=[", True, "^done,")
def test_deep_nesting(depth, opener, closed, head):
    """Never a RecursionError; beyond the bound, text with an error; never a record too deep to print."""
    closers = "".join("}" if c == "{" else "]" for c in reversed(opener * depth) if c in "{[")
    line = head + opener * depth + ('x="1"' if opener.endswith("{") else '"1"') + (closers if closed else "")
    rec = check_contract(line)
    levels = depth * sum(c in "{[" for c in opener)
    if levels > mi._MAX_DEPTH or not closed:
        assert rec.kind == mi.TEXT and rec.error
    if rec.kind != mi.TEXT:
        repr(rec)  # a consumer can print it (nesting within Python's recursion limit)


@pytest.mark.timeout(120)
@fuzz(20)
@given(mutated(MI_REAL), st.integers(1_000, 20_000), st.integers(0, 10**9))
@example('^done,stack=[frame={level="0",addr="0x1",func="f\\"g",file="a.c",line="1"}]', 20_000, 13)
@example('~"Reading symbols from ./hello...\\n"', 100_000, 2)
@example('*stopped,reason="breakpoint-hit",frame={args=[{name="a",value="1"}]}', 50_000, 1_000_003)
def test_long_lines(line, copies, where):
    """A fragment of a real line repeated up to ~2 MB, then maybe cut: the contract holds."""
    i = where % (len(line) + 1)
    j = min(len(line), i + 1 + where % 97)
    long = line[:i] + line[i:j] * copies + line[j:]
    if where % 3 == 0:
        long = long[: where % (len(long) + 1)]
    check_contract(long)
