"""The console and the Output pane never go stale, at 80x24 and 160x48, asserted on the screen:

- a console line longer than the pane wraps (a long ``print`` is read whole, its end included);
- gdb's error for a console command is shown once;
- the console follows its end after a pane was maximized and restored: a new command's answer shows;
- ``z`` maximizes the source area too (a container Textual would not maximize by itself);
- the Output pane scrolls from the program's input line: PgUp/PgDn, ctrl+Home/ctrl+End, Home/End while
  the line is empty (they move the cursor once it has text), Up/Down a line; the console's input line
  has the same page keys.
"""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, compile_c, line_of
from svg_text import screen_text
from ui_helpers import log_text, make_app, until, until_stopped

from tuidbg.ui.panes.io import CommandInput, ProgramInput
from tuidbg.ui.panes.textlog import TextLog

pytestmark = requires_gdb

SRC = PROGRAMS / "chatty.c"
SIZES = [(80, 24), (160, 48)]
END = "789|end of the long line"  # (the long line's end: not in the source shown beside)


@pytest.fixture(scope="module")
def chatty(tmp_path_factory):
    return compile_c(SRC, tmp_path_factory.mktemp("chatty") / "chatty")


def shown(app) -> str:
    return "\n".join(screen_text(app))


async def command(pilot, text: str, answer: str) -> None:
    """Type a console command (the console's input line has the focus) and wait for its answer."""
    await pilot.press(*("space" if ch == " " else ch for ch in text), "enter")
    await until(pilot, lambda: answer in log_text(pilot.app, "console-log"), 15, f"the answer to {text!r}")
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_console_and_the_output_never_go_stale(chatty, size):
    app = make_app(program=str(chatty), ex=[f"break chatty.c:{line_of(SRC, 'done')}"])
    async with app.run_test(size=size) as pilot:
        await until_stopped(pilot)
        await pilot.press("8")
        assert isinstance(app.focused, CommandInput)

        # gdb prints the 300 characters cut at 200 ("print elements"): the line is wider than the
        # screen, and its end is on the screen, on a row of its own
        await command(pilot, "print text", 'qr"...')
        rows = screen_text(app)
        first = next(i for i, r in enumerate(rows) if '$1 = 0x' in r and '"abcdefghijklmnopqrstuvwxyz' in r)
        assert any(r.rstrip().endswith('pqr"...') for r in rows[first + 1:first + 4]), "\n".join(rows)

        await command(pilot, "frob", 'Undefined command: "frob"')
        assert log_text(app, "console-log").count('Undefined command: "frob"') == 1
        assert shown(app).count('Undefined command: "frob"') == 1

        # more lines than the console shows, then the console maximized and restored
        await command(pilot, "i r", "rip ")
        await pilot.click("#console-log")
        await pilot.press("z")
        await until(pilot, lambda: app.screen.maximized is not None, 5, "the console maximized")
        assert "Locals" not in shown(app)
        await pilot.press("z")
        await until(pilot, lambda: app.screen.maximized is None, 5, "the console restored")
        await pilot.press("8")
        await command(pilot, "print 777", "= 777")
        assert "= 777" in shown(app)

        # z in the source area maximizes all of it, and restores it
        await pilot.press("escape", "1", "z")
        await until(pilot, lambda: app.screen.maximized is not None and app.screen.maximized.id == "source-pane", 5,
                    "the source area maximized")
        assert "Console" not in shown(app) and "chatty.c" in shown(app)
        await pilot.press("z")
        await until(pilot, lambda: app.screen.maximized is None, 5, "the source area restored")

        # The Output pane, from the program's input line
        await until(pilot, lambda: END in log_text(app, "output-log"), 15, "the program's output")
        await pilot.press("9")
        inp = app.focused
        assert isinstance(inp, ProgramInput)
        out = app.query_one("#output-log", TextLog)
        await pilot.pause()
        # the 410-character line wraps: its end is shown
        assert END in shown(app)

        await pilot.press("pageup")
        await pilot.pause()
        assert END not in shown(app) and "output line 2" in shown(app)
        await pilot.press("pagedown")
        await pilot.pause()
        assert END in shown(app)

        await pilot.press("ctrl+home")  # (the first line: tuidbg's note that the program started)
        await pilot.pause()
        assert "── starting" in shown(app) and any(r.strip() == "output line 1" for r in screen_text(app))
        await pilot.press("down")
        await pilot.pause()
        assert "── starting" not in shown(app) and any(r.strip() == "output line 1" for r in screen_text(app))
        await pilot.press("up")
        await pilot.pause()
        assert "── starting" in shown(app)

        await pilot.press("end")  # (the input line is empty: End scrolls)
        await pilot.pause()
        assert END in shown(app)
        await pilot.press("ctrl+home")
        await pilot.pause()
        top = out.scroll_offset.y
        await pilot.press(*"abc", "home")
        assert inp.cursor_position == 0 and out.scroll_offset.y == top  # (with text, Home moves the cursor)
        await pilot.press("ctrl+end")
        await pilot.pause()
        assert END in shown(app)

        # the console's input line has the page keys too
        await pilot.press("escape", "8")
        assert isinstance(app.focused, CommandInput)
        log = app.query_one("#console-log", TextLog)
        await command(pilot, "i r", "rip ")  # (answered by the time the next command is)
        await command(pilot, "p 2011", "= 2011")
        await pilot.press("pageup")
        await pilot.pause()
        assert "= 2011" not in shown(app) and log.scroll_offset.y < log.max_scroll_y
        await pilot.press("ctrl+end")
        await pilot.pause()
        assert "= 2011" in shown(app)
