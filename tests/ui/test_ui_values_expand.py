"""Python containers and objects expand in the Locals pane at a Python breakpoint, through tuidbg's agent
(the values themselves read from memory): names, types and values of the children, a page of 100 with a
row that loads the rest, and an expanded node that stays expanded when the program stops again; a Python
watch expands the same way."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, PROGRAMS, line_of
from test_ui_agent import locals_of, until_py_stop
from svg_text import svg_rows
from ui_helpers import make_app, until

from tuidbg.engine.state import ProcessState
from tuidbg.ui.panes.source import SourceView
from tuidbg.ui.panes.variables import LocalsPane, WatchPane

pytestmark = [
    requires_gdb, pytest.mark.slow,
    pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="this machine has no /usr/bin/python3.11"),
]

PROG = PROGRAMS / "py" / "values_expand.py"


def _kids(node) -> list[tuple[str, str | None, str | None]]:
    return [(c.data.name, c.data.type, c.data.value) for c in node.children if c.data is not None]


def _rows(tree) -> dict:
    return {n.data.name: n for n in tree.root.children if n.data is not None}


async def test_locals_pane_expands_a_dict_at_80x24():
    stop_line, after_line = line_of(PROG, "stop"), line_of(PROG, "after")
    app = make_app(program=str(DEBIAN_PY311), args=[str(PROG)], agent=True, python_target=True,
                   ex=[f"break {PROG}:{stop_line}", f"break {PROG}:{after_line}"])
    async with app.run_test(size=(80, 24)) as pilot:
        await until_py_stop(pilot, "breakpoint", stop_line)
        await until(pilot, lambda: "big" in locals_of(app), 30, "the locals")
        tree = app.query_one(LocalsPane)
        rows = _rows(tree)
        # containers and objects expand; scalars and empty containers do not
        assert [n for n in ("nested", "d", "pt", "sl", "loud", "sneaky", "od", "s", "dq", "big") if not rows[n].allow_expand] == []
        assert not rows["empty"].allow_expand
        await pilot.press("5")  # (the Locals pane: at 80 columns one group of panes shows at a time)
        await until(pilot, lambda: tree.has_focus, 10, "the Locals pane")
        tree.move_cursor(rows["d"])
        await pilot.press("space")
        await until(pilot, lambda: len(rows["d"].children) == 4, 30, "the dict's children")
        kids = _kids(rows["d"])
        assert kids[:3] == [("['a']", "int", "1"), ("['b']", "list", "[10, 20]"), ("[3]", "str", "'three'")]
        assert kids[3] == ("['pt']", "Point", "Point(x=1, y=2, tags=['p', 'q'])")
        # a child expands in turn (its path of names through the agent)
        pt = rows["d"].children[3]
        pt.expand()
        await until(pilot, lambda: len(pt.children) == 3, 30, "the object's attributes")
        assert _kids(pt) == [(".x", "int", "1"), (".y", "int", "2"), (".tags", "list", "['p', 'q']")]
        # the screen shows them, at 80x24
        await pilot.pause()
        shown = "\n".join(svg_rows(app.export_screenshot())).replace("\xa0", " ")
        assert "['a'] (int) = 1" in shown and ".x (int) = 1" in shown, shown
        # 100 children, then a row that loads the next page
        rows["big"].expand()
        await until(pilot, lambda: len(rows["big"].children) == 101, 30, "the list's first page")
        more = rows["big"].children[100]
        assert more.data.is_more_row and str(more.label) == "… 150 more (Enter loads 100)"
        tree.move_cursor(more)
        await pilot.press("enter")
        await until(pilot, lambda: len(rows["big"].children) == 201, 30, "the second page")
        assert _kids(rows["big"])[100] == ("[100]", "int", "100")
        assert str(rows["big"].children[200].label) == "… 50 more (Enter loads 50)"
        # an object read from memory may have attributes: it has none
        rows["bare"].expand()
        await until(pilot, lambda: len(rows["bare"].children) == 1, 30, "the object's (no) attributes")
        assert str(rows["bare"].children[0].label) == "no items or attributes"
        # A Python watch expands the same way.
        watch = app.query_one(WatchPane)
        watch.add_expression("d['pt']")

        def watch_row():
            rows = [n for n in watch.root.children if n.data is not None and n.data.name == "d['pt']"]
            return rows[0] if rows and rows[0].data.value else None

        await until(pilot, lambda: watch_row() is not None, 30, "the watch's value")
        row = watch_row()
        assert row.data.value.startswith("<__main__.Point object at 0x") and row.allow_expand
        row.expand()
        await until(pilot, lambda: len(row.children) == 3, 30, "the watch's children")
        assert _kids(row)[1] == (".y", "int", "2")
        # Stopped again: the dict and its object child are still expanded (their paths still exist), the
        # key deleted since is gone.
        app.query_one(SourceView).focus()
        await pilot.press("c")
        await until_py_stop(pilot, "breakpoint", after_line)

        def d_again():
            row = _rows(tree).get("d")
            return row if row is not None and len(row.children) == 3 and len(row.children[2].children) == 3 else None

        await until(pilot, lambda: d_again() is not None, 30, "the dict expanded again")
        row = d_again()
        assert row.is_expanded and [k[0] for k in _kids(row)] == ["['a']", "[3]", "['pt']"]
        assert row.children[2].is_expanded and _kids(row.children[2])[0] == (".x", "int", "1")
        assert "pt" not in _rows(tree)
        await pilot.press("c")
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 30, "the program to exit")
        await app.session.close()
