"""Torch values in the Locals pane at a Python breakpoint (issue 13): a tensor's one line from its
metadata, expanded through tuidbg's agent, on the real program under .venv-torch's interpreter."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, line_of
from pystack_helpers import TORCH_PYTHON
from test_ui_agent import locals_of, until_py_stop
from ui_helpers import make_app, until

from tuidbg.engine.state import ProcessState
from tuidbg.ui.panes.source import SourceView
from tuidbg.ui.panes.variables import LocalsPane, WatchPane

pytestmark = [
    requires_gdb, pytest.mark.slow,
    pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="this machine has no .venv-torch (scripts/setup.sh builds it)"),
]

PROG = PROGRAMS / "py" / "torch_values.py"


def _kids(node) -> list[tuple[str, str | None]]:
    return [(c.data.name, c.data.value) for c in node.children if c.data is not None]


async def test_locals_pane_shows_and_expands_a_tensor_and_a_module():
    stop_line = line_of(PROG, "stop")
    app = make_app(program=str(TORCH_PYTHON), args=[str(PROG)], agent=True, python_target=True,
                   ex=[f"break {PROG}:{stop_line}"])
    async with app.run_test(size=(160, 48)) as pilot:
        await until_py_stop(pilot, "breakpoint", stop_line)
        await until(pilot, lambda: locals_of(app).get("s") == "Tensor float32 [2, 3] cpu", 30, "the tensor's line")
        vals = locals_of(app)
        assert vals["y"] == "Tensor float32 [3] cpu grad_fn=MulBackward0"
        assert vals["net"] == "Loud params=10 cpu float32 train"
        assert (vals["m"], vals["size"], vals["dt"]) == ("Tensor float32 [2, 3] meta", "Size[4, 8]", "torch.float32")
        tree = app.query_one(LocalsPane)
        rows = {n.data.name: n for n in tree.root.children if n.data is not None}
        assert rows["s"].allow_expand and rows["net"].allow_expand and not rows["size"].allow_expand
        tree.focus()
        tree.move_cursor(rows["s"])
        await pilot.press("space")
        await until(pilot, lambda: len(rows["s"].children) >= 10, 30, "the tensor's children")
        assert _kids(rows["s"]) == [
            ("stride", "(8, 1)"), ("contiguous", "False"), ("storage_offset", "10"), ("layout", "strided"),
            ("requires_grad", "False"), ("grad_fn", "None"), ("is_leaf", "True"), ("numel", "6 (24 bytes)"),
            ("_version", "0"), ("values", "[10, 11, 12, 18, 19, 20] min=10 max=20 mean=15")]
        # A module's child module expands in turn (a path of child names through the agent).
        rows["net"].expand()
        await until(pilot, lambda: len(rows["net"].children) == 3, 30, "the module's children")
        fc = rows["net"].children[1]
        assert (fc.data.name, fc.data.value, fc.allow_expand) == ("fc", "Linear params=10 cpu float32 train", True)
        fc.expand()
        await until(pilot, lambda: len(fc.children) == 3, 30, "the submodule's children")
        assert _kids(fc) == [("training", "True"), ("weight", "Parameter float32 [2, 4] cpu requires_grad"),
                             ("bias", "Parameter float32 [2] cpu requires_grad")]
        # Y (read device values) asks the agent for a preview on the device: a meta tensor has no data
        # to read, and says so.
        tree.focus()
        tree.move_cursor(rows["m"])
        await pilot.press("Y")
        await until(pilot, lambda: len(rows["m"].children) >= 10, 30, "the meta tensor's children")
        assert _kids(rows["m"])[-1] == ("values", "not read (meta tensor; data stays on the device)")
        # A watch on a torch value shows the same line and expands the same way.
        watch = app.query_one(WatchPane)
        watch.add_expression("net.fc")

        def watch_row():
            rows = [n for n in watch.root.children if n.data is not None and n.data.name == "net.fc"]
            return rows[0] if rows and rows[0].data.value else None

        await until(pilot, lambda: watch_row() is not None, 30, "the watch's value")
        row = watch_row()
        assert (row.data.value, row.allow_expand) == ("Linear params=10 cpu float32 train", True)
        row.expand()
        await until(pilot, lambda: len(row.children) == 3, 30, "the watch's children")
        assert _kids(row)[1] == ("weight", "Parameter float32 [2, 4] cpu requires_grad")
        app.query_one(SourceView).focus()
        await pilot.press("c")
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 30, "the program to exit")
        await app.session.close()
