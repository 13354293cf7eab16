"""The Disassembly, Registers and Memory panes driven with Pilot against real gdb: native.c built
-O2 -g and its stripped shared library (helpers.build_native)."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, build_native, line_of
from ui_helpers import make_app, press_and_stop, until, until_stopped

from tuidbg.ui.panes.disasm import DisasmView
from tuidbg.ui.panes.memory import MemoryView
from tuidbg.ui.panes.registers import RegistersPane
from tuidbg.ui.panes.source import SourceView
from tuidbg.ui.panes.variables import LocalsPane
from tuidbg.ui.screens.modals import HelpScreen, PromptScreen

pytestmark = requires_gdb

SRC = PROGRAMS / "native.c"


@pytest.fixture(scope="module")
def prog(build_dir):
    return build_native(build_dir)


def view_texts(view: DisasmView) -> list[str]:
    return [view.row_text(i) for i in range(len(view.lines))]


async def test_disassembly_stepi_registers_memory(prog):
    app = make_app(program=str(prog), ex=["break checksum"])
    async with app.run_test(size=(160, 48)) as pilot:
        await until_stopped(pilot)
        view = app.query_one(DisasmView)
        src = app.query_one(SourceView)
        assert src.display and not view.display  # source first where there is source
        await pilot.press("a")
        await until(pilot, lambda: view.display and view.pc is not None and view.lines, 10, "disassembly")
        pc = int(app.state.frames[0].addr, 16)
        assert view.pc == pc and view.pc_instruction.address == pc
        texts = view_texts(view)
        assert "checksum:" in texts  # the symbol header
        loop = line_of(SRC, "checksum_loop")
        assert any(t.startswith(f"native.c:{loop}") and "for (int i = 0" in t for t in texts), texts[:20]
        assert app.query_one("#source-title").render().plain == "Disassembly — checksum"
        assert app.focused is view

        # stepi (I): the view follows the pc, within the window it had
        loads = view.loads
        await press_and_stop(pilot, "I")
        pc2 = int(app.state.frames[0].addr, 16)
        assert pc2 != pc
        await until(pilot, lambda: view.pc == pc2, 10, "pc marker to follow stepi")
        assert view.loads == loads and view.lines[view.cursor][1].address == pc2

        # registers (g): rip and eflags decoded; after a nexti, rip is highlighted as changed
        await pilot.press("g")
        regs = app.query_one(RegistersPane)
        await until(pilot, lambda: "rip" in regs.row_texts_by_name(), 10, "registers")
        assert f"{pc2:#x}" in regs.row_texts_by_name()["rip"]
        assert "[" in regs.row_texts_by_name()["eflags"]
        assert not any(r.changed for r in regs.registers)
        await press_and_stop(pilot, "N")
        await until(pilot, lambda: any(r.name == "rip" and r.changed for r in regs.registers), 10, "rip changed")
        # e on rax: a new value, read back highlighted
        regs.focus()
        regs.highlighted = next(i for i, p in enumerate(regs.payloads) if getattr(p, "name", None) == "rax")
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, PromptScreen), 5, "register prompt")
        await pilot.press("ctrl+u", *"0x1234", "enter")
        await until(pilot, lambda: "0x1234" in regs.row_texts_by_name()["rax"], 10, "rax written")
        # vector registers: a collapsed group, opened with space
        group = regs.payloads.index("vector")
        regs.highlighted = group
        await pilot.press("space")
        await until(pilot, lambda: any(r.name == "xmm0" for r in regs.registers), 10, "vector registers")

        # memory of the array behind the pointer local p (x in Locals)
        await pilot.press("5")
        locals_ = app.query_one(LocalsPane)
        await until(pilot, lambda: any(n.data and n.data.name == "p" for n in locals_.root.children), 10, "locals")
        locals_.move_cursor(next(n for n in locals_.root.children if n.data and n.data.name == "p"))
        await pilot.press("x")
        mem = app.query_one(MemoryView)
        await until(pilot, lambda: bool(mem.data), 10, "memory")
        assert app.query_one("#vars-group").active == "tab-memory"
        assert mem.data[:4] == [3, 10, 17, 24]
        assert mem.row_text(0).split("  ")[1].startswith("03 0a 11 18")

        # write a byte (asks for the value, then for confirmation)
        mem.focus()
        await pilot.press("right", "e")
        await until(pilot, lambda: isinstance(app.screen, PromptScreen), 5, "value prompt")
        await pilot.press("ctrl+u", *"0x99", "enter")
        await until(pilot, lambda: isinstance(app.screen, PromptScreen) and "Write 0x99" in app.screen.title_text, 5, "confirm")
        await pilot.press("y", "enter")
        await until(pilot, lambda: mem.data[1] == 0x99, 10, "byte written")
        assert mem.start + 1 in mem.changed

        # b on an instruction of the disassembly: break *ADDR, then continue hits it
        await pilot.press("1")
        assert app.focused is view
        target_row = next(i for i in range(view.cursor + 1, len(view.lines)) if view.lines[i][0] == "ins"
                          and view.lines[i][1].func == "checksum" and view.lines[i][1].address > pc2 + 8)
        target = view.lines[target_row][1].address
        view.cursor = target_row
        await pilot.press("b")
        await until(pilot, lambda: target in view.breakpoints, 10, "instruction breakpoint")
        assert any(int(b.addr, 16) == target for b in app.state.breakpoints if b.addr.startswith("0x"))
        await press_and_stop(pilot, "c")
        assert int(app.state.frames[0].addr, 16) == target and app.state.stop.reason == "breakpoint-hit"

        # the command palette has them too (every binding is a command there: ui.palette)
        names = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Disassembly / source", "Registers", "Memory", "Step instruction", "Next instruction"} <= names
        # help lists the new keys
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), 5, "help")
        descs = {r[1] for r in app.screen.rows}
        assert {"Step instruction", "Next instruction", "Registers", "Memory", "Disassembly / source"} <= descs
        await pilot.press("escape")


async def test_stripped_library_opens_disassembly_by_itself(prog):
    app = make_app(program=str(prog), ex=["break stripped_mix"])
    async with app.run_test(size=(160, 48)) as pilot:
        await until_stopped(pilot)
        view = app.query_one(DisasmView)
        if app.state.frames[0].func.endswith("@plt"):
            await press_and_stop(pilot, "I")
        await until(pilot, lambda: view.display and view.pc_instruction is not None, 10, "disassembly")
        assert not app.query_one(SourceView).display
        ins = view.pc_instruction
        assert ins.func == "stripped_mix"
        assert app.query_one("#source-title").render().plain == "Disassembly — stripped_mix"
        # a (switch to source) keeps the instructions: there is no source
        await pilot.press("a")
        assert view.display
        # Enter on the call's return path: finish back to main shows main's source again
        await press_and_stop(pilot, "f")
        assert app.state.frames[0].func == "main"
        await until(pilot, lambda: app.query_one(SourceView).display and not view.display, 10, "source again")


async def test_the_focus_stays_in_the_source_area_when_the_disassembly_takes_its_place(prog):
    # A stop without source shows the disassembly in the source pane's place, and a stop with source shows
    # the source again: the focus goes with them (Textual passes a hidden widget's focus to its neighbour,
    # the console's input, where the next step key would be typed).
    app = make_app(program=str(prog), ex=["break main", "break stripped_mix"])
    async with app.run_test(size=(160, 48)) as pilot:
        await until_stopped(pilot)
        src, view = app.query_one(SourceView), app.query_one(DisasmView)
        src.focus()
        await until(pilot, lambda: app.focused is src, 5, "the source pane focused")
        await press_and_stop(pilot, "c")
        if app.state.frames[0].func.endswith("@plt"):
            await press_and_stop(pilot, "I")
        await until(pilot, lambda: view.display and view.pc_instruction is not None, 10, "disassembly")
        await until(pilot, lambda: app.focused is view, 5, "the focus on the disassembly")
        await press_and_stop(pilot, "f")
        assert app.state.frames[0].func == "main"
        await until(pilot, lambda: src.display and not view.display, 10, "source again")
        await until(pilot, lambda: app.focused is src, 5, "the focus back on the source")
        line = app.state.frames[0].line
        await press_and_stop(pilot, "n")  # (a key for the debugger, not text for the console)
        assert app.state.frames[0].line != line
        assert not app.query_one("#console-input").value


async def test_small_terminal_tabs(prog):
    app = make_app(program=str(prog), ex=["break checksum"])
    async with app.run_test(size=(80, 24)) as pilot:
        await until_stopped(pilot)
        await pilot.press("g")
        regs = app.query_one(RegistersPane)
        await until(pilot, lambda: "rip" in regs.row_texts_by_name(), 10, "registers at 80x24")
        assert app.query_one("#main").has_class("-show-vars") and regs.region.height > 0
        await pilot.press("X")
        assert app.query_one("#vars-group").active == "tab-memory"
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, PromptScreen), 5, "address prompt")
        await pilot.press(*"0", "enter")
        mem = app.query_one(MemoryView)
        await until(pilot, lambda: bool(mem.data), 10, "memory at 0")
        assert mem.data[0] is None and "cannot read from 0x0" in mem.row_text(0)
        await pilot.press("a")
        view = app.query_one(DisasmView)
        await until(pilot, lambda: view.display and view.pc_instruction is not None, 10, "disassembly at 80x24")
        assert view.region.height > 5


async def test_follow_a_call_go_back_run_to_it_and_scroll_up(prog):
    app = make_app(program=str(prog), ex=["break main"])
    async with app.run_test(size=(160, 48)) as pilot:
        await until_stopped(pilot)
        view = app.query_one(DisasmView)
        await pilot.press("a")
        await until(pilot, lambda: view.pc_instruction is not None, 10, "disassembly of main")
        # the call to checksum in main: Enter follows it, Backspace comes back
        row = next(i for i, (k, r) in enumerate(view.lines) if k == "ins" and r.is_call and r.target_symbol == "checksum")
        call = view.lines[row][1]
        view.cursor = row
        await pilot.press("enter")
        await until(pilot, lambda: view.cursor_instruction is not None and view.cursor_instruction.address == call.target,
                    10, "the call's target")
        assert view.cursor_instruction.func == "checksum" and view.cursor_instruction.offset == 0
        assert view.lines[view.cursor - 1][0] in ("head", "src")
        # t: run to that instruction
        await press_and_stop(pilot, "t")
        assert int(app.state.frames[0].addr, 16) == call.target and app.state.frames[0].func == "checksum"
        await until(pilot, lambda: view.pc == call.target, 10, "pc at checksum")
        await pilot.press("backspace")
        await until(pilot, lambda: view.cursor_instruction.address == call.address, 10, "back at the call")
        # scrolling up past the loaded rows decodes more above (fill, main's neighbours), gapless
        first = view.window.start
        for _ in range(12):
            await pilot.press("pageup")
        assert view.window.start < first
        ins = [r for k, r in view.lines if k == "ins"]
        assert all(a.address + a.size == b.address for a, b in zip(ins, ins[1:]))
        assert ins == [r for r in view.window.rows if hasattr(r, "opcodes")]
        # . goes back to the pc
        await pilot.press("full_stop")
        await until(pilot, lambda: view.cursor_instruction.address == call.target, 10, "back at the pc")
