"""SASS and device registers as tuidbg.engine.native reads them, from cuda-gdb replies that are
SYNTHESIZED (tests/data/cuda-sass/README.md says from what: no GPU was lent to capture them).
What they pin down is tuidbg's reading of those shapes: 16-byte instructions without raw opcodes,
SASS predicate guards on branches, and cuda-gdb's register names grouped as the pane shows them.
"""

from __future__ import annotations

from helpers import DATA

from tuidbg.engine import mi
from tuidbg.engine import machine as M
from tuidbg.engine import native as N

FIXTURE = DATA / "cuda-sass" / "vecadd_device_12x.mi.txt"


def replies() -> dict[str, mi.MIRecord]:
    out, cmd = {}, None
    for line in FIXTURE.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        if line.startswith("-> "):
            cmd = line[3:]
        else:
            out[cmd] = mi.parse_line(line)
    return out


def test_header_says_synthesized():
    assert FIXTURE.read_text().startswith("# SYNTHESIZED, not captured")


def test_sass_rows():
    rec = replies()["-data-disassemble -s 0x7fffd6c6d100 -e 0x7fffd6c6d180 -- 5"]
    rows = N.parse_disassembly(rec.payload["asm_insns"])
    ins = N.instructions(rows)
    assert len(ins) == 8 and all(i.size == 16 for i in ins)  # from the addresses: no opcodes in SASS replies
    assert [r.line for r in rows if isinstance(r, N.SourceLine)] == [4, 5, 6]
    assert ins[0].symbol == "vecAdd(float const*, float const*, float*, int)+256"
    bra = ins[4]
    assert bra.mnemonic == "bra" and bra.is_jump and bra.target == 0x7FFFD6C6D1F0
    assert not ins[3].is_jump and ins[3].target is None  # ISETP's operands are no target
    assert ins[7].mnemonic == "ldg.e"


def test_device_register_groups():
    names = tuple(replies()["-data-list-register-names"].payload["register-names"])
    group_of = M.grouper(names, device=True)
    groups: dict[str, list[str]] = {}
    for n in names:
        g = group_of(n)
        if g:
            groups.setdefault(g, []).append(n)
    assert groups["general"] == [f"R{i}" for i in range(16)] + ["pc"]
    assert groups["predicate"] == ["CC"] + [f"P{i}" for i in range(7)] + [f"UP{i}" for i in range(7)]
    assert groups["uniform"] == [f"UR{i}" for i in range(6)]
    assert groups["other"] == ["errorpc"]
    assert "uniform" in M.COLLAPSED and "predicate" not in M.COLLAPSED
    # the host's names are grouped by the host's rules
    assert M.grouper(("rax", "rip", "eflags", "eax"), device=False)("eax") is None
