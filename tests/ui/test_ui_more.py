"""More Pilot tests of the TUI against real gdb, on programs the tests compile themselves.

Covered here:

- the C++ frames pane folds template arguments (``Wrapper<…>::run``) and the
  expand key shows the whole name;
- a deep stack is shown a page at a time, and the "load more" row (Enter or the
  expand key) loads the next page;
- a long value is cut in the locals pane and ``v`` shows it whole;
- a stop in libc without source says so in the source pane, with the function
  and the address;
- ``NO_COLOR`` turns the app's colours off;
- a ``-x`` command file whose path holds a space and a quote is sourced.
"""

from __future__ import annotations

import re

from conftest import requires_gdb
from helpers import PROGRAMS, compile_c, line_of
from rich.color import ColorType
from textual.color import Color
from ui_helpers import log_text, make_app, until, until_stopped

from tuidbg.engine.commands.stack import FRAME_PAGE
from tuidbg.ui.panes.frames import CppFramesPane, LoadMore, NativeRow
from tuidbg.ui.panes.lists import RowList
from tuidbg.ui.panes.source import SourceView
from tuidbg.ui.panes.textlog import TextLog
from tuidbg.ui.panes.variables import VALUE_LIMIT, LocalsPane
from tuidbg.ui.screens.modals import ValueScreen
from tuidbg.ui.text import fold_templates

pytestmark = requires_gdb

SIZE = (160, 48)


def build(build_dir, name: str):
    """Compile tests/programs/``name`` (C, or C++ for .cpp) into the session's build folder."""
    src = PROGRAMS / name
    return src, compile_c(src, build_dir / src.stem, cxx=src.suffix == ".cpp")


def cpp_row_texts(app) -> list[str]:
    """The text of every row of the C++ frames pane, as shown."""
    rl = app.query_one("#cpp-list", RowList)
    return [rl.get_option_at_index(i).prompt.plain for i in range(rl.option_count)]


def native_levels(app) -> list[int]:
    return [r.frame.level for r in app.query_one(CppFramesPane).rows if isinstance(r, NativeRow)]


async def down_to(pilot, reached, what: str, limit: int = 20) -> None:
    """Press Down in the focused pane until ``reached()`` (at most ``limit`` times)."""
    for _ in range(limit):
        if reached():
            return
        await pilot.press("down")
    assert reached(), f"Down never reached {what}"


async def type_text(pilot, text: str) -> None:
    await pilot.press(*("space" if ch == " " else ch for ch in text))


async def test_cpp_frame_names_fold_template_arguments_and_expand(build_dir):
    src, exe = build(build_dir, "templates.cpp")
    app = make_app(program=str(exe), ex=["break target"])
    async with app.run_test(size=SIZE) as pilot:
        await until_stopped(pilot)
        assert app.state.frames[0].func == "target"
        assert app.state.frames[0].line == line_of(src, "target")
        caller = app.state.frames[1]
        full = caller.func
        assert full.startswith("Wrapper<std::vector<int") and "Foo<3>" in full and full.endswith("::run"), full
        folded = fold_templates(full)
        assert folded == "Wrapper<…>::run"

        cpp = app.query_one(CppFramesPane)
        row = next(i for i, r in enumerate(cpp.rows) if isinstance(r, NativeRow) and r.frame.level == 1)
        assert folded in cpp_row_texts(app)[row]
        assert "std::vector" not in cpp_row_texts(app)[row]

        await pilot.press("3")
        rl = app.query_one("#cpp-list", RowList)
        await until(pilot, lambda: app.focused is rl, 5, "the C++ frames pane focused")
        await down_to(pilot, lambda: rl.highlighted == row, "the Wrapper frame")
        await pilot.press("right")
        await until(pilot, lambda: full in cpp_row_texts(app)[row], 5, "the whole name")
        # the key toggles: pressed again, the name folds again
        await pilot.press("x")
        await until(pilot, lambda: full not in cpp_row_texts(app)[row], 5, "the name folded again")
        assert folded in cpp_row_texts(app)[row]


async def test_deep_stack_loads_more_frames_from_the_load_more_row(deep_prog):
    app = make_app(program=str(deep_prog), args=["200"], ex=["break stop_here"])
    async with app.run_test(size=SIZE) as pilot:
        await until_stopped(pilot)
        cpp = app.query_one(CppFramesPane)
        rl = app.query_one("#cpp-list", RowList)
        assert native_levels(app) == list(range(FRAME_PAGE))
        assert isinstance(cpp.rows[-1], LoadMore) and "load 64 more frames" in cpp_row_texts(app)[-1]

        await pilot.press("3")
        await until(pilot, lambda: app.focused is rl, 5, "the C++ frames pane focused")

        async def load_more(key: str, expect: int) -> None:
            await pilot.press("end")
            assert isinstance(rl.payload(rl.highlighted), LoadMore)
            await pilot.press(key)
            await until(pilot, lambda: len(native_levels(app)) == expect, 15, f"{expect} frames")

        await load_more("enter", 2 * FRAME_PAGE)
        assert native_levels(app) == list(range(2 * FRAME_PAGE))
        await pilot.pause()
        assert rl.highlighted == FRAME_PAGE  # on the first new frame, where "load more" was
        assert app.state.frames[-1].func == "recurse"
        assert isinstance(cpp.rows[-1], LoadMore)

        await load_more("x", 3 * FRAME_PAGE)
        await load_more("enter", 203)  # stop_here, recurse(0..200) and main
        assert not app.state.more_frames
        assert not any(isinstance(r, LoadMore) for r in cpp.rows)
        assert app.state.frames[-1].func == "main" and app.state.frames[0].func == "stop_here"
        assert "main" in cpp_row_texts(app)[-1]


async def test_long_value_is_cut_and_v_shows_it_whole(build_dir):
    src, exe = build(build_dir, "longvalue.c")
    # gdb itself cuts the string at 200 characters ("print elements"); the pane cuts the row further;
    # v reads the value again without gdb's limit and shows all 5000 characters.
    app = make_app(program=str(exe), ex=["break consume"])
    async with app.run_test(size=SIZE) as pilot:
        await until_stopped(pilot)
        assert app.state.frames[0].line == line_of(src, "consume")
        tree = app.query_one(LocalsPane)

        def text_node():
            return next((n for n in tree.root.children if n.data is not None and n.data.name == "text"), None)

        await until(pilot, lambda: text_node() is not None, 10, "the local 'text'")
        node = text_node()
        value = node.data.value
        whole = "".join(chr(ord("a") + i % 26) for i in range(4997)) + "END"
        assert ('"' + whole[:200] + '"...') in value and "END" not in value  # gdb's own cut

        label = node.label.plain
        assert len(label) < len(value)
        assert f"…  [{len(value)} chars: v shows all]" in label
        shown = label.split(" = ", 1)[1].split("  [", 1)[0]
        assert len(shown) == VALUE_LIMIT and value.startswith(shown[:-1])

        await pilot.press("5")
        await until(pilot, lambda: app.focused is tree, 5, "the locals pane focused")
        await down_to(pilot, lambda: tree.cursor_node is node, "the local 'text'")
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, ValueScreen), 10, "the value screen")
        screen = app.screen
        assert f'"{whole}"' in screen.value
        await pilot.pause()
        assert "".join(screen.query_one("#value-log", TextLog).lines()) == screen.value
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ValueScreen), 5, "the value screen closed")
        # gdb's setting is the user's again
        r = await app.session.cmd("-gdb-show print elements")
        assert r.get("value") == "200"


async def test_stop_in_libc_says_source_is_not_available(build_dir):
    _, exe = build(build_dir, "rawwrite.c")
    app = make_app(program=str(exe), ex=["break write"])
    async with app.run_test(size=SIZE) as pilot:
        await until_stopped(pilot)
        frame = app.state.frames[0]
        assert "write" in frame.func
        assert re.fullmatch(r"0x[0-9a-f]+", frame.addr)

        if frame.line is None:
            # no line information at all: the source area shows the instructions (issue 15); the
            # source view behind it still says why
            from tuidbg.ui.panes.disasm import DisasmView

            view = app.query_one(DisasmView)
            await until(pilot, lambda: view.display and view.pc_instruction is not None, 10, "disassembly")
            assert app.query_one("#source-title").render().plain.startswith("Disassembly — ")
            app.query_one(SourceView).display = True  # (to look at its message below)
        else:
            assert app.query_one("#source-title").render().plain == "Source — not available"
        src = app.query_one(SourceView)
        assert src.path is None and not src.lines
        assert src.message[0].startswith(f"Source not available for {frame.func}")
        assert src.message[1] == f"Address {frame.addr}."
        if frame.line is not None:  # libc's debug info is installed: it names a file that is not here
            assert f"{frame.fullname}:{frame.line}, which is not on this machine" in src.message[2]
        else:
            assert "no line information" in src.message[2]
        shown = [src.render_line(y).text for y in range(3)]
        assert frame.func in shown[0] and "Source not available" in shown[0]
        assert frame.addr in shown[1]
        # the C++ frames pane still shows where the program is
        assert frame.func in cpp_row_texts(app)[0]

def is_grey(color) -> bool:
    if color is None or color.type is ColorType.DEFAULT:
        return True
    r, g, b = color.get_truecolor()
    return r == g == b


async def test_no_color_turns_colours_off(monkeypatch, build_dir):
    monkeypatch.setenv("NO_COLOR", "1")
    src, exe = build(build_dir, "templates.cpp")
    app = make_app(program=str(exe), ex=["break target"])
    async with app.run_test(size=SIZE) as pilot:
        await until_stopped(pilot)
        assert app.no_color
        filters = app.get_line_filters()
        # what reaches the terminal: the line at the program counter (a coloured
        # background in every theme) passes through the app's filters without colour
        view = app.query_one(SourceView)
        assert view.pc_line == line_of(src, "target")
        y = view.pc_line - 1 - view.scroll_offset.y
        segments = list(view.render_line(y))
        assert any(not is_grey(s.style.bgcolor) for s in segments if s.style)  # coloured before the filters
        for f in filters:
            segments = f.apply(segments, Color(0, 0, 0))
        assert all(is_grey(s.style.color) and is_grey(s.style.bgcolor) for s in segments if s.style)


async def test_x_command_file_with_a_space_and_a_quote_in_its_path(tmp_path, build_dir):
    _, exe = build(build_dir, "templates.cpp")
    folder = tmp_path / "d ir"
    folder.mkdir()
    script = folder / "it's.gdb"
    script.write_text("set $xv = 5\nbreak main\n")
    app = make_app(program=str(exe), x_files=[str(script)])
    async with app.run_test(size=SIZE) as pilot:
        await until_stopped(pilot)
        assert app.state.frames[0].func == "main"
        assert app.state.stop.reason == "breakpoint-hit"
        await pilot.press("8")
        await until(pilot, lambda: app.focused is not None and app.focused.id == "console-input", 5, "the console")
        await type_text(pilot, "print $xv")
        await pilot.press("enter")
        answer = re.compile(r"^\$\d+ = (.*)$", re.M)
        await until(pilot, lambda: answer.search(log_text(app, "console-log")) is not None, 10, "the answer")
        assert answer.search(log_text(app, "console-log")).group(1) == "5", log_text(app, "console-log")


async def test_current_line_at_the_end_of_a_wide_file_is_not_under_the_scroll_bar(tmp_path, threads_prog):
    # A short file with a line wider than the pane: showing its last line must leave it above the
    # horizontal scroll bar that the wide line brings (80x24: the source pane is ten rows high).
    path = tmp_path / "wide.py"
    path.write_text("".join(f"x{i} = {i}\n" for i in range(1, 15)) + "y = '" + "w" * 200 + "'\n")
    app = make_app(program=str(threads_prog))
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(SourceView)
        for line in (15, 1, 15):
            assert app.show_file(str(path))
            view.set_pc(line)
            await pilot.pause()
            await pilot.pause()
            top = view.scroll_offset.y
            rows = view.scrollable_content_region.height
            assert view.show_horizontal_scrollbar
            assert top <= line - 1 < top + rows, (line, top, rows)
