"""The machine level on real gdb (tuidbg.engine.native): a C program built -O2 -g (disassembly mixed
with source, registers changed by stepi, memory of an array read through a pointer local, a
breakpoint on an instruction), and a stripped shared library (instructions, no source)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, build_native, line_of, wait_stopped

from tuidbg.engine import machine as M
from tuidbg.engine import native as N
from tuidbg.engine.errors import EngineError
from tuidbg.engine.state import ProcessState

pytestmark = [requires_gdb]

SRC = PROGRAMS / "native.c"


@pytest.fixture(scope="session")
def native_prog(build_dir) -> Path:
    return build_native(build_dir)


async def stopped_in(make_session, prog: Path, function: str):
    s = await make_session(mode="run", program=str(prog))
    await s.break_insert(function=function)
    await s.launch()
    st = await wait_stopped(s)
    assert st.process is ProcessState.STOPPED, st
    return s, st


async def test_mixed_disassembly_around_pc(make_session, native_prog):
    s, st = await stopped_in(make_session, native_prog, "checksum")
    pc = await M.pc(s)
    assert pc == int(st.frames[0].addr, 16)
    w = N.DisasmWindow(s, chunk=128)
    await w.load_around(pc)
    ins = N.instructions(w.rows)
    at_pc = w.rows[w.index_of(pc)]
    assert isinstance(at_pc, N.Instruction) and at_pc.func == "checksum"
    # mixed with source: the lines of checksum's loop, with their text from native.c
    src = [r for r in w.rows if isinstance(r, N.SourceLine)]
    assert {r.line for r in src} >= {line_of(SRC, "checksum_loop"), line_of(SRC, "checksum_add")}
    loop = next(r for r in src if r.line == line_of(SRC, "checksum_loop"))
    assert loop.fullname == str(SRC) and "for (int i = 0; i < n; i++)" in (loop.text or "")
    # -O2: the source lines do not come in order (the loop's line appears more than once)
    assert len([r for r in src if r.line == loop.line]) >= 2
    # addresses increase and each instruction ends where the next one starts
    for a, b in zip(ins, ins[1:]):
        assert a.address + a.size == b.address, (a, b)
    # the window covers bytes above pc (here: checksum's start, exactly) and below it
    assert w.start < pc < w.end
    assert ins[0].symbol == "checksum" or ins[0].address < pc - at_pc.offset
    # bounded: not the program, only about a chunk each way
    assert w.end - w.start < 128 * 3 + 64


async def test_window_grows_both_ways_without_gaps(make_session, native_prog):
    s, st = await stopped_in(make_session, native_prog, "checksum")
    pc = await M.pc(s)
    w = N.DisasmWindow(s, source=False, chunk=64)
    await w.load_around(pc, before=0, after=64)
    first = w.start
    assert first == pc
    added_up = await w.extend_up()
    assert added_up > 0 and w.start < pc
    down_end = w.end
    assert await w.extend_down() > 0 and w.end > down_end
    # up past checksum's start into the code before it (fill, main...) by the decode-and-land rule
    for _ in range(6):
        await w.extend_up()
    ins = N.instructions(w.rows)
    for a, b in zip(ins, ins[1:]):
        assert a.address + a.size == b.address, (a, b)
    assert {i.func for i in ins} >= {"checksum", "fill"}
    # gdb's own decode of the same range from its first address agrees instruction by instruction
    same = N.instructions(await N.disassemble(s, w.start, w.end, source=False))
    assert [(i.address, i.text) for i in same if i.address < w.end] == [(i.address, i.text) for i in ins]


async def test_stepi_changes_registers_and_pc(make_session, native_prog):
    s, st = await stopped_in(make_session, native_prog, "checksum")
    tracker = M.RegisterTracker(s)
    regs = {r.name: r for r in await tracker.read()}
    assert {"rax", "rip", "rsp", "rdi", "eflags"} <= set(regs)
    assert "eax" not in regs and "ymm0h" not in regs  # sub-registers are not rows
    assert not any(r.changed for r in regs.values())  # the first read has nothing to compare with
    assert regs["eflags"].decoded.startswith("[") and regs["eflags"].value.startswith("0x")
    pc0 = int(regs["rip"].value, 16)
    await N.stepi(s)
    st = await wait_stopped(s)
    regs2 = {r.name: r for r in await tracker.read()}
    pc1 = int(regs2["rip"].value, 16)
    assert pc1 != pc0 and regs2["rip"].changed
    assert not regs2["rsp"].changed and regs2["rsp"].value == regs["rsp"].value
    assert int(st.frames[0].addr, 16) == pc1
    # nexti over checksum's instructions stays in checksum
    await N.nexti(s)
    st = await wait_stopped(s)
    assert st.frames[0].func == "checksum"
    # vector registers on demand, in gdb's natural form
    vec = await tracker.read(("vector",))
    assert any(r.name == "xmm0" and "{" in r.value for r in vec)
    # editing a register
    assert await M.write_register(s, "rax", "0x1234") == "4660"
    regs3 = {r.name: r for r in await tracker.read()}
    assert regs3["rax"].value == "0x1234" and regs3["rax"].changed
    with pytest.raises(EngineError, match="not a register"):
        await M.write_register(s, "rax; kill", "1")


async def test_memory_of_array_through_pointer_local(make_session, native_prog):
    s, st = await stopped_in(make_session, native_prog, "checksum")
    # checksum(p, n): p points at table, which fill() wrote as seed + i*7 (seed 3)
    addr = await M.address_of(s, "p")
    assert addr == await M.address_of(s, "&table[0]") == await M.address_of(s, "table")
    chunks = await M.read_memory(s, addr, 64)
    assert len(chunks) == 1 and chunks[0].readable
    assert chunks[0].data == bytes((3 + i * 7) & 0xFF for i in range(64))
    # unreadable: page 0 is a chunk without data and a message, not an exception
    bad = await M.read_memory(s, 0, 32)
    assert len(bad) == 1 and not bad[0].readable and "memory" in bad[0].error.lower()
    # a range that runs into an unmapped page: the readable part is still there
    stack_top = await M.address_of(s, "$sp")
    res = await M.read_memory(s, stack_top, 1 << 24)
    assert res[0].readable and not res[-1].readable
    # writing a byte
    await M.write_memory(s, addr + 1, b"\x99")
    assert (await M.read_memory(s, addr, 2))[0].data == bytes([3, 0x99])
    with pytest.raises(EngineError, match="not an address|cannot take"):
        await M.address_of(s, "no_such_symbol_here")


async def test_breakpoint_on_instruction_and_run_to(make_session, native_prog):
    s, st = await stopped_in(make_session, native_prog, "fill")
    pc = await M.pc(s)
    w = N.DisasmWindow(s, source=False)
    await w.load_around(pc, before=0)
    ins = N.instructions(w.rows)
    # an instruction of fill's loop a few instructions on: break *ADDR and continue hit it
    target = ins[4]
    bp = await s.break_insert(address=target.address)
    assert int(bp.addr, 16) == target.address
    await s.cont()
    st = await wait_stopped(s)
    assert st.stop.reason == "breakpoint-hit" and int(st.frames[0].addr, 16) == target.address
    # run to an instruction of checksum
    ck = int((await s.evaluate("(long)&checksum")), 0)
    await N.run_to_address(s, ck)
    st = await wait_stopped(s)
    assert int(st.frames[0].addr, 16) == ck and st.frames[0].func == "checksum"
    # a call's target is followable: main calls fill and checksum
    main_rows = N.instructions(await N.disassemble(s, int(await s.evaluate("(long)&main"), 0),
                                                   int(await s.evaluate("(long)&main"), 0) + 200, source=False))
    calls = [i for i in main_rows if i.is_call]
    assert any(i.target == ck and i.target_symbol == "checksum" for i in calls), calls


async def test_stripped_library_has_instructions_only(make_session, native_prog):
    s, st = await stopped_in(make_session, native_prog, "stripped_mix")
    f = st.frames[0]
    assert not f.has_source and f.library and f.library.endswith("libstripped_mix.so")
    pc = await M.pc(s)
    w = N.DisasmWindow(s)
    await w.load_around(pc)
    assert not any(isinstance(r, N.SourceLine) for r in w.rows)
    at = w.rows[w.index_of(pc)]
    assert at.func == "stripped_mix" and at.offset == 0 and at.symbol == "stripped_mix"
    later = [i for i in N.instructions(w.rows) if i.address > pc and i.func == "stripped_mix"]
    assert later and later[0].symbol == f"stripped_mix+{later[0].offset}"
    await N.stepi(s)
    st = await wait_stopped(s)
    assert int(st.frames[0].addr, 16) == later[0].address


async def test_not_stopped_is_a_clear_error(make_session, native_prog):
    s = await make_session(mode="run", program=str(native_prog))
    with pytest.raises(EngineError, match="not running"):
        await N.stepi(s)



@pytest.mark.slow
@pytest.mark.torch
async def test_libtorch_randn_instructions(make_session):
    """Stopped in at::native::randn (libtorch_cpu.so: symbols, no debug info): the frame has no
    source, and the window around pc shows its instructions with demangled symbol+offset."""
    from pystack_helpers import PY_PROGRAMS, TORCH_PYTHON

    if not TORCH_PYTHON.exists():
        pytest.skip("this machine has no .venv-torch (scripts/setup.sh builds it)")
    s = await make_session(mode="run", program=str(TORCH_PYTHON), args=[str(PY_PROGRAMS / "torch_randn.py")])
    await s.break_insert(function="at::native::randn")
    await s.launch()
    st = await wait_stopped(s, 280)
    assert st.stop.reason == "breakpoint-hit", st.stop
    f = st.frames[0]
    if f.func.endswith("@plt"):  # the first hit is the PLT stub: one instruction (its jmp) into randn
        await N.stepi(s)
        st = await wait_stopped(s, 60)
        f = st.frames[0]
    assert f.func.startswith("at::native::randn") and not f.has_source and "libtorch_cpu" in (f.library or "")
    pc = await M.pc(s)
    w = N.DisasmWindow(s)
    await w.load_around(pc)
    at = w.rows[w.index_of(pc)]
    assert at.func.startswith("at::native::randn(")  # demangled
    later = [i for i in N.instructions(w.rows) if i.address > pc][:20]
    assert any(i.symbol.startswith("at::native::randn(") and i.symbol.endswith(f"+{i.offset}") for i in later)
    assert not any(isinstance(r, N.SourceLine) for r in w.rows)
    calls = [i for i in later if i.is_call]
    await N.stepi(s)
    st = await wait_stopped(s, 60)
    assert int(st.frames[0].addr, 16) == later[0].address or (calls and later[0].is_call)
