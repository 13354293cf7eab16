"""The process picker of ``tuidbg attach`` without a PID."""

from __future__ import annotations

import subprocess
import sys

from tuidbg.picker import ProcessInfo, list_processes
from tuidbg.ui.picker import PickerApp


def test_list_processes_python_first_with_command_lines():
    py = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    sh = subprocess.Popen(["sleep", "60"])
    try:
        procs = list_processes()
        pids = [p.pid for p in procs]
        assert py.pid in pids and sh.pid in pids
        mine = next(p for p in procs if p.pid == py.pid)
        assert mine.is_python and "time.sleep(60)" in mine.cmdline
        assert not next(p for p in procs if p.pid == sh.pid).is_python
        kinds = [p.is_python for p in procs]
        assert kinds == sorted(kinds, reverse=True)
    finally:
        for p in (py, sh):
            p.kill()
            p.wait()


FAKE = [
    ProcessInfo(101, "python3.11", "ml", "python3 train.py --epochs 3", True, 12, True),
    ProcessInfo(202, "python3.12", "ml", "python3 -m pytest tests/test_ops.py", True, 2, False),
    ProcessInfo(303, "bash", "ml", "bash", False, 1, False),
]


async def test_picker_filters_and_picks():
    app = PickerApp(FAKE)
    async with app.run_test(size=(100, 20)) as pilot:
        table = app.query_one("#procs")
        assert table.row_count == 3
        await pilot.press(*"pytest")
        assert table.row_count == 1
        await pilot.press("enter")
    assert app.return_value == 202


async def test_picker_cancel():
    app = PickerApp(FAKE)
    async with app.run_test(size=(100, 20)) as pilot:
        await pilot.press("down", "down", "escape")
    assert app.return_value is None


async def test_picker_keyboard_selection():
    app = PickerApp(FAKE)
    async with app.run_test(size=(100, 20)) as pilot:
        await pilot.press("down")  # into the list
        await pilot.press("down", "enter")
    assert app.return_value == 202


def test_list_output_keeps_one_row_per_process():
    # A `python -c` with a newline in its program (as CI's own scripts start) stays on its row.
    from tuidbg.picker import format_process_list

    odd = ProcessInfo(404, "python3", "ci", "python3 -c 'import time\ntime.sleep(9)\x1b[2J'", True, 1, False)
    rows = format_process_list(FAKE + [odd]).splitlines()
    assert len(rows) == 1 + len(FAKE) + 1
    assert rows[-1].split()[0] == "404"
    assert "import time\\x0atime.sleep(9)\\x1b[2J" in rows[-1]
