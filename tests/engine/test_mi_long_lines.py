"""Long MI lines (issue 9): every record kind at 10 MB parses whole, malformed ones become text.

No timing assertion: each test has a timeout that a linear parser meets with a wide margin
and a quadratic one misses by hours (pygdbmi's unescape took 8.6 s on 20,000 characters). The values are the old parser's (tests/mi_reference.py): every transcript line
of tests/data gives the same record through both.
"""

from __future__ import annotations

import faulthandler
import os

import pytest
from conftest import requires_gdb
from helpers import DATA, PROGRAMS, compile_c, line_of, wait_stopped
from mi_reference import old_parse_line

from tuidbg.engine import mi
from tuidbg.engine.mi import parse_line

MB10 = 10_000_000
TRANSCRIPTS = sorted(DATA.rglob("*.mi.txt"))

# (as gdb writes it, the text it stands for): at the start, the middle and the end of a long string.
HEAD = ('\\303\\251\\"q\\"\\t\\\\', 'é"q"\t\\')
MIDDLE = ("\\n\\e[1mMIDDLE\\e[0m\\n", "\n\033[1mMIDDLE\033[0m\n")
TAIL = ("\\342\\202\\254\\n", "€\n")


@pytest.fixture(autouse=True)
def hard_timeout(request, capsys):
    """Ends the run if a test outlives its timeout by 30 s.

    pytest-timeout's signal is handled in the main thread only, and the client parses a long
    line in a worker thread: one regex call there holds the GIL (as pygdbmi's quadratic
    unescape did) and the handler never runs. faulthandler's watchdog is a C thread that
    needs no GIL: it dumps the stacks and exits.
    """
    marker = request.node.get_closest_marker("timeout")
    with capsys.disabled():  # the real stderr, not pytest's capture (lost at the exit)
        err = os.fdopen(os.dup(2), "w")
    faulthandler.dump_traceback_later((marker.args[0] if marker else 300) + 30, exit=True, file=err)
    yield
    faulthandler.cancel_dump_traceback_later()
    err.close()


def long_string(size: int, filler: str = "0x1f, 0x7, ") -> tuple[str, str]:
    """(c-string body, its text) of about ``size`` characters: escapes at the start, the middle
    and three quarters in, then a quarter without escapes (pygdbmi was quadratic on that tail)."""
    quarter = filler * (size // 4 // len(filler))
    half = quarter * 2
    return (
        HEAD[0] + half + MIDDLE[0] + quarter + TAIL[0] + quarter,
        HEAD[1] + half + MIDDLE[1] + quarter + TAIL[1] + quarter,
    )


def check_long_text(got: str, text: str) -> None:
    assert len(got) == len(text) > 9_900_000
    assert got[:6] == 'é"q"\t\\' and got[-11:] == "0x1f, 0x7, "
    mid = got.index("MIDDLE")
    assert mid * 2 < len(got) < mid * 2 + 100
    assert got[mid - 5 : mid + 11] == "\n\033[1mMIDDLE\033[0m\n"
    assert got[got.index("€") :][:13] == "€\n0x1f, 0x7, "
    assert got == text


def test_transcripts_exist():
    assert len(TRANSCRIPTS) >= 15


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_transcript_line_parses_as_before(path):
    """The new parser gives the old one's record (kind, class, token, payload, raw) for every real line."""
    lines = path.read_text().splitlines()
    for line in lines:
        old, new = old_parse_line(line), parse_line(line)
        if old is None:
            assert new is None, line
            continue
        assert (new.kind, new.cls, new.token, new.payload, new.raw) == (old.kind, old.cls, old.token, old.payload, old.raw), line
    assert any(parse_line(line) is not None and parse_line(line).kind == mi.RESULT for line in lines)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("prefix,kind", [("~", mi.CONSOLE), ("@", mi.TARGET), ("&", mi.LOG), ("42~", mi.CONSOLE)])
def test_ten_megabyte_stream_record(prefix, kind):
    body, text = long_string(MB10)
    rec = parse_line(f'{prefix}"{body}"')
    assert rec.kind == kind and rec.error == ""
    assert rec.token == (42 if prefix[0] == "4" else None)
    check_long_text(rec.text, text)
    assert len(rec.raw) <= mi._RAW_KEEP + 1  # no second 10 MB copy in the record


@pytest.mark.timeout(60)
def test_ten_megabyte_stream_record_without_escapes():
    text = "{" + "0x1f, 0x7, " * (MB10 // 11) + "0x0}"
    rec = parse_line(f'~"{text}"')
    assert rec.kind == mi.CONSOLE and rec.text == text


@pytest.mark.timeout(60)
def test_ten_megabyte_run_of_octal_escapes():
    """Non-ASCII text is a run of \\NNN escapes (UTF-8 bytes) with nothing in between."""
    word = "Привет"
    escaped = "".join(f"\\{b:03o}" for b in word.encode())
    n = MB10 // len(escaped)
    rec = parse_line(f'~"{escaped * n}"')
    assert rec.kind == mi.CONSOLE and rec.text == word * n
    # Invalid UTF-8 never raises: the run stays as gdb wrote it (what pygdbmi did).
    rec = parse_line(f'~"ok {escaped * 1000}\\377 end"')
    assert rec.kind == mi.CONSOLE and rec.text == f"ok {escaped * 1000}\\377 end"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("escaped", [True, False], ids=["escapes", "plain"])
def test_ten_megabyte_string_value(escaped):
    body, text = long_string(MB10) if escaped else ("abcdefghij" * (MB10 // 10),) * 2
    rec = parse_line(f'7^done,value="{body}",after="x"')
    assert rec.kind == mi.RESULT and rec.cls == "done" and rec.token == 7
    if escaped:
        check_long_text(rec.payload["value"], text)
    assert rec.payload["value"] == text and rec.payload["after"] == "x"


@pytest.mark.timeout(60)
def test_ten_megabyte_bare_string_result():
    body, text = long_string(MB10)
    rec = parse_line(f'^done,"{body}"')
    assert rec.kind == mi.RESULT and list(rec.payload) == ["text"]
    check_long_text(rec.payload["text"], text)


def _frame(i: int) -> tuple[str, dict]:
    func = 'operator\\"\\"' if i % 1000 == 999 else f"f{i}"
    mi_text = f'frame={{level="{i}",addr="0x{i:016x}",func="{func}",file="a.c",fullname="/src/a.c",line="{i % 5000}"}}'
    value = {"level": str(i), "addr": f"0x{i:016x}", "func": func.replace("\\", ""), "file": "a.c", "fullname": "/src/a.c", "line": str(i % 5000)}
    return mi_text, value


@pytest.mark.timeout(60)
def test_ten_megabyte_stack_list():
    n = MB10 // 100
    frames = [_frame(i) for i in range(n)]
    line = "12^done,stack=[" + ",".join(f for f, _ in frames) + "]"
    assert len(line) > 9_000_000
    rec = parse_line(line)
    assert rec.kind == mi.RESULT and rec.token == 12
    stack = rec.payload["stack"]
    assert len(stack) == n
    assert stack[0] == frames[0][1] and stack[n // 2] == frames[n // 2][1] and stack[-1] == frames[-1][1]
    assert stack[999]["func"] == 'operator""'
    assert stack == [v for _, v in frames]


@pytest.mark.timeout(60)
def test_ten_megabyte_async_record():
    n = MB10 // 40
    args = ",".join(f'{{name="a{i}",value="0x{i:08x}"}}' for i in range(n))
    line = (
        '*stopped,reason="breakpoint-hit",disp="keep",bkptno="1",frame={addr="0x1149",func="f",args=['
        + args
        + '],file="a.c",line="3"},thread-id="1",stopped-threads="all"'
    )
    rec = parse_line(line)
    assert rec.kind == mi.EXEC and rec.cls == "stopped"
    assert rec.payload["reason"] == "breakpoint-hit" and rec.payload["stopped-threads"] == "all"
    got = rec.payload["frame"]["args"]
    assert len(got) == n and got[n - 1] == {"name": f"a{n - 1}", "value": f"0x{n - 1:08x}"}
    assert got == [{"name": f"a{i}", "value": f"0x{i:08x}"} for i in range(n)]
    assert rec.payload["frame"]["line"] == "3"


@pytest.mark.timeout(60)
def test_ten_megabyte_value_list_and_notify():
    n = MB10 // 10
    rec = parse_line("=x-list,ids=[" + ",".join(f'"{i}"' for i in range(n)) + "]")
    assert rec.kind == mi.NOTIFY and rec.payload["ids"] == [str(i) for i in range(n)]


# Malformed long lines: text with an error, at once, never an exception, a bounded raw copy.
MALFORMED = {
    "cut stack": lambda: "^done,stack=[" + ",".join(_frame(i)[0] for i in range(MB10 // 100))[:-7],
    "unterminated string": lambda: '^done,value="' + "x" * MB10,
    "escaped quotes, no end": lambda: '^done,value="' + '\\"' * (MB10 // 2),
    "spaces then garbage": lambda: '^done,a="1"' + " " * MB10 + "x",
    "spaces around a comma": lambda: '^done,a="1"' + " " * (MB10 // 2) + "," + " " * (MB10 // 2),
    "long name without =": lambda: "^done," + "a" * MB10,
    "name, spaces, no =": lambda: "^done,a" + " " * MB10 + "b",
    "deep tuples": lambda: "^done," + "a={" * (MB10 // 3),
    "deep lists": lambda: "^done,a=" + "[" * MB10,
    "closed deep tuples": lambda: "^done," + "a={" * 10_000 + 'b="1"' + "}" * 10_000,
    "10 MB token": lambda: "1" * MB10 + "^done",
    "stream, quote inside": lambda: '~"' + "x" * MB10 + '"y"',
    "stream, no end quote": lambda: '~"' + "\\n" * (MB10 // 2),
    "bare string, bad escape": lambda: '^done,"' + "x" * MB10 + '\\q"',
    "octal over 255": lambda: '~"' + "\\101" * (MB10 // 4) + '\\777"',
    "class then garbage": lambda: "^done" + "!" * MB10,
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", list(MALFORMED))
def test_ten_megabyte_malformed_line_is_text(name):
    line = MALFORMED[name]()
    rec = parse_line(line)
    assert rec is not None and rec.kind == mi.TEXT
    assert rec.text is line or rec.text == line
    assert len(rec.raw) <= mi._RAW_KEEP + 1 and len(rec.error) < 200


def test_nesting_is_bounded():
    def nested(depth: int) -> str:
        return "^done," + "a={" * depth + 'b="1"' + "}" * depth

    rec = parse_line(nested(mi._MAX_DEPTH))
    assert rec.kind == mi.RESULT
    inner = rec.payload
    for _ in range(mi._MAX_DEPTH):
        inner = inner["a"]
    assert inner == {"b": "1"}
    too_deep = parse_line(nested(mi._MAX_DEPTH + 1))
    assert too_deep.kind == mi.TEXT and "nested deeper" in too_deep.error
    lists = parse_line("^done,a=" + "[" * mi._MAX_DEPTH + "]" * mi._MAX_DEPTH)
    assert lists.kind == mi.RESULT


# -- the real thing: a multi-MB console record from gdb, through the engine -----------------------

BIG = PROGRAMS / "bigarray.c"
N = 512 * 1024


@requires_gdb
@pytest.mark.timeout(120)
async def test_output_of_a_big_array_arrives_whole(make_session, build_dir):
    """`output/x big_array` of 512 KB is one ~3 MB `~` line; the console gets all of it.

    With the old parser this line took hours (quadratic unescape); gdb prints it in about 3 s.
    """
    prog = compile_c(BIG, build_dir / "bigarray")
    s = await make_session(mode="run", program=str(prog))
    seen: list[mi.MIRecord] = []
    s.on_console(seen.append)
    await s.break_insert(file=str(BIG), line=line_of(BIG, "filled"))
    await s.launch()
    st = await wait_stopped(s)
    assert st.frames[0].func == "main"
    await s.cmd("-gdb-set print elements unlimited")
    await s.cmd("-gdb-set print repeats unlimited")
    await s.cmd("-gdb-set max-value-size unlimited")
    res = await s.console("output/x big_array", timeout=100)
    expected = "{" + ", ".join(f"0x{(i * 7 + i // 256) & 0xFF:x}" for i in range(N)) + "}"
    assert len(expected) > 3_000_000
    assert res.console_text() == expected
    # The console listeners (the UI's console pane) got the same text.
    assert expected in "".join(r.text for r in seen if r.kind == mi.CONSOLE)
    assert max(len(r.raw) for r in seen) <= mi._RAW_KEEP + 1
    assert await s.evaluate("(int)big_array[1000]") == str((1000 * 7 + 1000 // 256) & 0xFF)  # still in step
