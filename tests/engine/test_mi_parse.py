"""The MI line parser: no line may raise; each becomes a record or plain text."""

from __future__ import annotations

import random

import pytest
from helpers import DATA

from tuidbg.engine import mi
from tuidbg.engine.mi import parse_line

OBSERVED = sorted((DATA / "cuda-gdb-11.8-observed").glob("*.mi.txt")) + sorted(
    (DATA / "cuda-gdb-synthetic").glob("*.mi.txt")
)


def test_observed_transcripts_exist():
    assert len(OBSERVED) >= 7


@pytest.mark.parametrize("path", OBSERVED, ids=lambda p: p.name)
def test_every_observed_cuda_gdb_line_parses(path):
    kinds = set()
    for line in path.read_text().splitlines():
        rec = parse_line(line)
        if rec is None:
            continue
        assert isinstance(rec, mi.MIRecord)
        kinds.add(rec.kind)
        if line.lstrip("0123456789").startswith(("^", "*", "=")) and rec.kind == mi.TEXT:
            pytest.fail(f"MI line became text ({rec.error}): {line[:200]}")
    assert kinds  # something was parsed


def test_bare_string_result_from_cuda_gdb_118():
    rec = parse_line('^done,"Focus is not set on any active CUDA kernel.\\n"')
    assert rec.kind == mi.RESULT and rec.cls == "done"
    assert rec.payload == {"text": "Focus is not set on any active CUDA kernel.\n"}
    rec = parse_line('22^done,"CUDA focus unchanged.\\n"')
    assert rec.token == 22 and rec.payload["text"] == "CUDA focus unchanged.\n"


def test_exec_and_notify_records_stay_apart():
    stopped = parse_line('*stopped,reason="breakpoint-hit",bkptno="1",thread-id="1"')
    created = parse_line('=thread-created,id="2",group-id="i1"')
    assert (stopped.kind, stopped.cls) == (mi.EXEC, "stopped")
    assert (created.kind, created.cls) == (mi.NOTIFY, "thread-created")
    assert stopped.payload["reason"] == "breakpoint-hit"


def test_status_record():
    rec = parse_line('+download,section=".text",section-size="100"')
    assert rec.kind == mi.STATUS and rec.cls == "download"
    assert rec.payload["section"] == ".text"


def test_tokens_streams_prompt_and_text():
    assert parse_line('12^running').token == 12
    assert parse_line('12*running,thread-id="all"').kind == mi.EXEC
    assert parse_line("(gdb) ").kind == mi.PROMPT
    assert parse_line("") is None
    con = parse_line('~"Breakpoint 1, main () at a.c:3\\n"')
    assert con.kind == mi.CONSOLE and con.text == "Breakpoint 1, main () at a.c:3\n"
    assert parse_line('&"warning: x\\n"').kind == mi.LOG
    bfd = parse_line("BFD: /lib64/ld-linux-x86-64.so.2: unknown type [0x13] section `.relr.dyn'")
    assert bfd.kind == mi.TEXT and "BFD" in bfd.text


def test_octal_escapes_decode_as_utf8():
    rec = parse_line('^done,value="\\"caf\\303\\251\\""')
    assert rec.payload["value"] == '"café"'


def test_duplicate_keys_become_lists():
    rec = parse_line('^done,thread-ids={thread-id="1",thread-id="2"},current-thread-id="1"')
    assert rec.payload["thread-ids"]["thread-id"] == ["1", "2"]
    assert mi.as_list("x") == ["x"] and mi.as_list(None) == []


@pytest.mark.parametrize(
    "line",
    [
        '12^done,bkpt={number="1"',
        '*stopped,reason="breakpoint-hit",frame={addr="0x1",func="main"',
        '^done,value="unterminated',
        "^done,",
        "^done,]",
        '~"no end quote',
        "^",
        "=",
        "123",
        '^done,"half',
        "*stopped,reason=\"x\"}}}",
    ],
)
def test_truncated_and_malformed_lines_become_text(line):
    rec = parse_line(line)
    assert rec is not None and rec.kind == mi.TEXT
    assert rec.text == line


def test_random_bytes_never_raise():
    rng = random.Random(1234)
    alphabet = '^*=+~@&"{}[],\\=abc0123456789 \x00\x1b\xff\u00e9'
    for _ in range(3000):
        n = rng.randint(0, 80)
        prefix = rng.choice(["", "^done,", "*stopped,", "=x,", '~"', "5^error,", "^done,a="])
        line = prefix + "".join(rng.choice(alphabet) for _ in range(n))
        rec = parse_line(line)
        assert rec is None or isinstance(rec, mi.MIRecord)
    for _ in range(500):
        raw = bytes(rng.randrange(256) for _ in range(rng.randint(1, 200)))
        rec = parse_line(raw.decode("utf-8", "replace"))
        assert rec is None or isinstance(rec, mi.MIRecord)


def test_five_megabyte_line():
    elems = ",".join(f'frame={{level="{i}",addr="0x{i:016x}",func="f{i}",file="a.c",line="{i}"}}' for i in range(60000))
    line = f"7^done,stack=[{elems}]"
    assert len(line) > 5_000_000
    rec = parse_line(line)
    assert rec.kind == mi.RESULT and rec.token == 7
    frames = rec.payload["stack"]
    assert len(frames) == 60000 and frames[-1]["func"] == "f59999"
    # The same line cut anywhere is text, never an exception.
    cut = parse_line(line[: len(line) // 2])
    assert cut.kind == mi.TEXT
    assert len(cut.raw) < 10000  # a text record does not keep a second multi-MB copy


def test_quote_round_trips_through_gdb_syntax():
    s = 'a "quoted" \\ path\nwith\ttab'
    q = mi.quote(s)
    rec = parse_line(f"^done,value={q}")
    assert rec.payload["value"] == s


def test_numbers():
    assert mi.to_int("12") == 12 and mi.to_int("0x10") == 16 and mi.to_int("x") is None
    assert mi.exit_code("012") == 10 and mi.exit_code("03") == 3 and mi.exit_code("0") == 0
