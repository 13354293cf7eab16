"""At a Python breakpoint (Debian's stripped python3.11, tuidbg's agent), at 80x24 and 160x48, on the screen:

- the Locals pane shows objects and the value types as their value (``Point(x=1, y=2)``,
  ``range(3, 10, 2)``, ``<Color.RED: 1>``), read from memory; an object still expands to its attributes;
- the console holds what the user did and gdb answered, not tuidbg's mechanics (the agent's stop: ``hit
  Breakpoint 1, 0x... in ?? ()``, a signal to tuidbg's thread); ``:log`` shows them;
- a ``pybreak`` on a line that has a breakpoint adds nothing and says so; the Breakpoints pane has one.
"""

from __future__ import annotations

import re

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, PROGRAMS, line_of
from svg_text import screen_text
from test_ui_agent import locals_of, until_py_stop
from ui_helpers import log_text, make_app, until

from tuidbg.ui.panes.tables import BreakpointsPane
from tuidbg.ui.panes.variables import LocalsPane

pytestmark = [
    requires_gdb, pytest.mark.slow,
    pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="this machine has no /usr/bin/python3.11"),
]

PROG = PROGRAMS / "py" / "value_types.py"
SIZES = [(80, 24), (160, 48)]
MECHANICS = re.compile(r"received signal|in \?\? \(\)|hit Breakpoint|^Breakpoint \d+, 0x", re.M)


def shown(app) -> str:
    return "\n".join(screen_text(app))


async def command(pilot, text: str, answer: str) -> None:
    await pilot.press(*("space" if ch == " " else ch for ch in text), "enter")
    await until(pilot, lambda: answer in log_text(pilot.app, "console-log"), 15, f"the answer to {text!r}")
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_python_locals_console_and_one_breakpoint_a_line(tmp_path, size):
    stop_line = line_of(PROG, "stop")
    app = make_app(program=str(DEBIAN_PY311), args=[str(PROG), str(tmp_path / "reprs.json"), "agent"], agent=True,
                   python_target=True, ex=[f"pybreak {PROG}:{stop_line}"])
    async with app.run_test(size=size) as pilot:
        await until_py_stop(pilot, "breakpoint", stop_line)
        await until(pilot, lambda: "nest" in locals_of(app), 30, "the locals")
        values = locals_of(app)
        assert values["p"] == "Point(x=1, y=2)" and values["r"] == "range(3, 10, 2)"
        assert values["en"] == "<Color.RED: 1>" and values["dt"] == "datetime.datetime(2024, 5, 6, 7, 8, 9)"
        assert values["nt"] == "NT(u=5, v=6)" and values["dc"] == "DC(a=1, b='s')"
        await pilot.press("5")
        tree = app.query_one(LocalsPane)
        await until(pilot, lambda: tree.has_focus, 5, "the Locals pane")
        p = next(n for n in tree.root.children if n.data is not None and n.data.name == "p")
        tree.move_cursor(p)
        await pilot.pause()
        assert "p (Point) = Point(x=1, y=2)" in shown(app)
        await pilot.press("space")
        await until(pilot, lambda: len(p.children) == 2, 30, "the object's attributes")
        assert [str(c.label) for c in p.children] == [".x (int) = 1", ".y (int) = 2"]

        # the console: gdb's words for the user, the agent's stop not among them
        await pilot.press("8")
        console = log_text(app, "console-log")
        assert not MECHANICS.search(console), console
        assert not MECHANICS.search(shown(app))
        await command(pilot, f"pybreak {PROG}:{stop_line}", "nothing added")
        assert any(r.startswith("Python breakpoint 1 is already at") for r in screen_text(app))
        await command(pilot, ":log", "in ?? ()")  # (tuidbg's log keeps what the console leaves out)
        assert MECHANICS.search(log_text(app, "console-log"))
        await pilot.press("escape", "7")
        bps = app.query_one(BreakpointsPane)
        await until(pilot, lambda: bps.has_focus, 5, "the Breakpoints pane")
        assert len(app.state.python_breakpoints) == 1 and bps.row_count == 1
        await pilot.pause()
        rows = screen_text(app)
        assert [r for r in rows if "py1" in r and f"{stop_line}" in r] and not [r for r in rows if "py2" in r]
