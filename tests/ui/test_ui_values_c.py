"""C values in the Locals, Watch and Memory panes as gdb prints them, at 80x24 and 160x48, on the screen:

- a character array shows its text (``"node2\\000…"``), alone and in a struct, and still expands to its
  characters; ``v`` shows it whole;
- a value the program cannot read says so (``cannot read memory at 0x10``), a pointer's target and a
  struct behind a bad pointer too; a watch out of scope says ``not in scope here``;
- ``x`` on an int asks first (the prompt holds its value), and opens nothing by itself;
- the Memory pane fits its rows to its width: every row shown whole, address, bytes and characters.
"""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, compile_c, line_of
from svg_text import screen_text
from ui_helpers import make_app, until, until_stopped

from tuidbg.ui.panes.memory import MemoryView
from tuidbg.ui.panes.variables import LocalsPane, WatchPane
from tuidbg.ui.screens.modals import PromptScreen, ValueScreen

pytestmark = requires_gdb

SRC = PROGRAMS / "values.c"
SIZES = [(80, 24), (160, 48)]


@pytest.fixture(scope="module")
def values_prog(tmp_path_factory):
    return compile_c(SRC, tmp_path_factory.mktemp("values") / "values")


def shown(app) -> str:
    return "\n".join(screen_text(app))


def top_rows(tree) -> dict:
    return {n.data.name: n for n in tree.root.children if n.data is not None}


def labels(node) -> list[str]:
    return [str(c.label) for c in node.children]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_c_values_read_as_gdb_prints_them(values_prog, size):
    app = make_app(program=str(values_prog), ex=[f"break values.c:{line_of(SRC, 'total')}"])
    async with app.run_test(size=size) as pilot:
        await until_stopped(pilot)
        tree = app.query_one(LocalsPane)
        await until(pilot, lambda: {"count", "bad", "far"} <= set(top_rows(tree)), 10, "the locals")
        await pilot.press("5")
        await until(pilot, lambda: tree.has_focus, 5, "the Locals pane")
        rows = top_rows(tree)
        for name in ("bad", "far"):
            tree.move_cursor(rows[name])
            await pilot.press("space")
        await until(pilot, lambda: rows["bad"].children and len(rows["far"].children) == 3, 10, "the pointers' targets")
        assert labels(rows["bad"]) == ["*bad (int) ! cannot read memory at 0x10"]
        assert labels(rows["far"]) == ["name (char [16]) ! cannot read memory at 0x10",
                                       "count (int) ! cannot read memory at 0x20",
                                       "next (struct node *) ! cannot read memory at 0x28"]
        await pilot.pause()
        assert "*bad (int) ! cannot read memory at 0x10" in shown(app)

        # x on an int: a prompt with its value, nothing opened before Enter
        tree.move_cursor(rows["count"])
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, PromptScreen), 5, "the prompt")
        assert "count (int) is not an address" in app.screen.title_text and app.screen.value == "0x4"
        assert "count (int) is not an address" in shown(app)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, PromptScreen), 5, "the prompt closed")
        assert not app.query_one(MemoryView).data

        # watches: out of scope, unreadable, a struct's character array (in main's frame: the caller's)
        watch = app.query_one(WatchPane)
        for expr in ("nosuch", "*b.next", "a.name"):
            watch.add_expression(expr)
        await pilot.press("less_than_sign")  # (frame up, to main: the watches are made there)
        await until(pilot, lambda: app.state.selected_frame == 1 and "name" in top_rows(tree), 10, "main's locals")
        await pilot.press("6")
        await until(pilot, lambda: len(watch.root.children) == 3 and all(
            n.data.value or n.data.error for n in watch.root.children), 10, "the watches")
        w = {n.data.name: n for n in watch.root.children}
        assert str(w["nosuch"].label) == "nosuch ! not in scope here"
        assert str(w["*b.next"].label) == "*b.next (struct node) ! cannot read memory at 0x0"
        assert str(w["a.name"].label).startswith('a.name (char [16]) = "node1\\000') and w["a.name"].allow_expand
        await pilot.pause()
        assert "nosuch ! not in scope here" in shown(app)

        # main's character array: its text, expandable to its characters; v shows it whole
        await pilot.press("5")
        rows = top_rows(tree)
        assert str(rows["name"].label).startswith('name (char [16]) = "node2\\000') and rows["name"].allow_expand
        await pilot.pause()
        assert 'name (char [16]) = "node2\\000' in shown(app)
        tree.move_cursor(rows["name"])
        await pilot.press("space")
        await until(pilot, lambda: len(rows["name"].children) == 16, 10, "the characters")
        assert labels(rows["name"])[:2] == ["0 (char) = 110 'n'", "1 (char) = 111 'o'"]
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, ValueScreen), 10, "the value")
        assert app.screen.value.startswith('"node2\\000') and "[16]" not in app.screen.value
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ValueScreen), 5, "the value closed")
        # a struct's character array among its members
        tree.move_cursor(rows["b"])
        await pilot.press("space")
        await until(pilot, lambda: len(rows["b"].children) == 3, 10, "b's members")
        assert labels(rows["b"])[0].startswith('name (char [16]) = "node2\\000')

        # the Memory pane at the bytes: each row whole on the screen, its characters included
        tree.move_cursor(rows["bytes"])
        await pilot.press("x")
        mem = app.query_one(MemoryView)
        await until(pilot, lambda: bool(mem.data), 10, "the memory")
        await pilot.pause()
        screen = screen_text(app)
        at = 0
        for row in range(4):
            text = mem.row_text(row).rstrip()
            address, *hexes = text.split("  ")[:-1]
            n = len(" ".join(hexes).split())
            chars = "".join(chr(b) if 32 <= b < 127 else "." for b in mem.data[at:at + n])
            assert int(address, 16) == mem.start + at and text.endswith(f"  {chars}"), text
            assert any(r.rstrip().endswith(text) for r in screen), f"{text!r} is not whole on the screen:\n" + "\n".join(screen)
            at += n
        assert mem.row_bytes in (4, 8, 16) and "ABCD" in "".join(chr(b) for b in mem.data[:at] if b is not None)
