"""Snapshots of the main screen (pytest-textual-snapshot) against a deterministic real session.

The program is built into a fixed folder and run with an empty environment from
that folder, without a shell in between (bash and dash add variables of their own), so paths and
stack addresses are the same on every run, whatever the environment of the tests.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, line_of
from ui_helpers import make_app, until, until_shown, until_stopped

pytestmark = requires_gdb

SNAP_DIR = Path("/tmp/tuidbg-snapshot")


@pytest.fixture(scope="module")
def snap_prog() -> Path:
    SNAP_DIR.mkdir(exist_ok=True)
    src = SNAP_DIR / "snap.c"
    shutil.copy(PROGRAMS / "snap.c", src)
    exe = SNAP_DIR / "snap"
    subprocess.run(["gcc", "-g", "-O0", "-fno-omit-frame-pointer", str(src), "-o", str(exe)], check=True, cwd=SNAP_DIR)
    return exe


def snapshot_app(exe: Path, theme: str):
    src = exe.parent / "snap.c"
    return make_app(
        theme=theme,
        program=str(exe),
        cwd=str(exe.parent),
        ex=["set startup-with-shell off", "unset environment", f"break {src}:{line_of(src, 'dot_return')}", "ignore 1 1"],
    )


async def settle(pilot) -> None:
    app = pilot.app
    await until_stopped(pilot)
    src = app.query_one("#source")
    await until(pilot, lambda: src.highlighted, 30, "highlighting")
    await until(pilot, lambda: len(app.query_one("#locals").root.children) >= 3, 10, "locals")
    await until(pilot, lambda: not app.output_buffered, 10, "the program's and the console's output written")
    await until_shown(pilot)


@pytest.mark.parametrize("theme", ["tuidbg-dark", "tuidbg-light"])
@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_main_screen(snap_compare, snap_prog, theme, size, request):
    ok = snap_compare(snapshot_app(snap_prog, theme), terminal_size=size, run_before=settle)
    if not ok:
        # Say what differs in the log itself (CI keeps no HTML report).
        import pickle

        from pytest_textual_snapshot import node_to_report_path
        from svg_text import svg_diff

        data = pickle.loads(node_to_report_path(request.node).read_bytes())
        diff = svg_diff(data[1], data[2])
        pytest.fail("the screen differs from the snapshot:\n" + (diff or "(same text: colours or styles differ)"), pytrace=False)
