"""``tuidbg view FILE...``: a real dump's report in the TUI (Pilot, 80x24), read-only."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from helpers import DEBIAN_PY311, line_of, run_tuidbg, wait_asleep
from pystack_helpers import PY_PROGRAMS
from helpers import check_error

from tuidbg import dumpreport as R
from tuidbg.ui.dumpview import ViewApp

pytestmark = pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="needs Debian's /usr/bin/python3.11")

SLEEPERS = PY_PROGRAMS / "sleepers.py"


@pytest.fixture
def report(tmp_path, cleanup):
    """A dump of two real processes: sleepers.py with 2 threads and with 4."""
    procs = []
    for n in (2, 4):
        ready = tmp_path / f"ready{n}.json"
        p = subprocess.Popen([str(DEBIAN_PY311), str(SLEEPERS), str(n), str(ready)], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cleanup.append(p)
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert p.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        procs.append(p)
    wait_asleep(*(p.pid for p in procs))
    res = run_tuidbg("dump", "--json", *(str(p.pid) for p in procs))
    assert res.returncode == 0, res.stderr
    path = tmp_path / "dump.json"
    path.write_text(res.stdout)
    return path, procs


async def source_shown(pilot, app, timeout: float = 20.0) -> str:
    """The source box's text once the file under the cursor is read (off the UI's thread)."""
    deadline = time.monotonic() + timeout
    while True:
        await pilot.pause()
        text = app.query_one("#source").render().plain
        if not text.startswith("reading "):
            return text
        assert time.monotonic() < deadline, text
        await pilot.pause(0.02)


def _cells(table, row) -> list[str]:
    return [c.plain for c in table.get_row_at(row)]


async def test_view_groups_frames_source_and_processes(report):
    path, (two, four) = report
    doc = R.load(str(path))
    groups = R.group(doc["processes"])
    app = ViewApp(doc, [str(path)])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        summary = app.query_one("#summary").render().plain
        assert summary.startswith(f"2 processes, 8 threads, {len(groups)} distinct stacks — {path}")
        table = app.query_one("#groups")
        assert table.row_count == len(groups) == 3  # the main threads, sleeper_a's, sleeper_b's
        # sleeper_a: 1 thread in the first process, 2 in the second; sleeper_b likewise
        rows = [_cells(table, i) for i in range(table.row_count)]
        assert all(r[0] == "2" for r in rows) and sorted(r[1] for r in rows) == ["2", "3", "3"]
        assert all(r[2] == f"{two.pid} {four.pid}" for r in rows)

        # the group of sleeper_b's threads: its frames, its source line, its processes
        want = next(i for i, g in enumerate(groups) if any(f["function"] == "sleeper_b" for f in g.frames))
        for _ in range(want):
            await pilot.press("down")
        await pilot.pause()
        assert app.shown_group.key == groups[want].key
        frames = app.query_one("#frames")
        names = [_cells(frames, i)[1] for i in range(frames.row_count)]
        assert names == ["Condition.wait", "Event.wait", "sleeper_b", "Thread.run", "Thread._bootstrap_inner",
                         "Thread._bootstrap"]
        await pilot.press("tab")
        assert app.focused is frames
        await pilot.press("down", "down")
        await pilot.pause()
        wait_b = line_of(SLEEPERS, "wait_b")
        assert app.shown_frame["function"] == "sleeper_b"
        assert _cells(frames, 2)[2] == f"{SLEEPERS}:{wait_b}"
        source = (await source_shown(pilot, app)).splitlines()
        assert f">{wait_b:>5}     ev.wait()  # MARK:wait_b" in source and len(source) == 5, source
        procs = app.query_one("#procs")
        assert [_cells(procs, i)[0] for i in range(procs.row_count)] == [str(two.pid), str(four.pid)]
        assert _cells(procs, 1)[2].count(",") == 1  # two of its threads there
        await pilot.press("q")
    assert app.return_value == 0


async def test_view_says_when_the_source_is_elsewhere(report, tmp_path):
    path, _ = report
    doc = R.load(str(path))
    for p in doc["processes"]:  # as if made on another machine
        for t in p["threads"]:
            for f in t["frames"]:
                f["file"] = "/elsewhere/" + os.path.basename(f["file"])
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    app = ViewApp(R.load(str(other)), [str(other)])
    async with app.run_test(size=(80, 24)) as pilot:
        text = await source_shown(pilot, app)
        assert text.startswith("/elsewhere/") and "No such file or directory (the source is read on this machine)" in text


def test_view_bad_input(tmp_path):
    check_error(run_tuidbg("view", str(tmp_path / "none.json")), "none.json: cannot read it")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    check_error(run_tuidbg("view", str(bad)), f"{bad}: not a tuidbg dump")
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"format": "tuidbg-dump", "version": 1, "processes": []}))
    check_error(run_tuidbg("view", str(good)), "view needs a terminal")  # (the tests' stdin is no terminal)
    check_error(run_tuidbg("view"), "the following arguments are required: FILE")


async def test_view_groups_asyncio_tasks_across_dumps(tmp_path, cleanup):
    """Two processes' dumps, each with 23 tasks asleep in the same await: one group of 46 tasks in 2
    processes, its coroutines, and the tasks' names in the processes pane."""
    demo = PY_PROGRAMS / "tasks_demo.py"
    files = []
    for i in range(2):
        ready = tmp_path / f"ready{i}.json"
        p = subprocess.Popen([str(DEBIAN_PY311), str(demo), str(ready), "--extra", "20"], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cleanup.append(p)
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert p.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        res = run_tuidbg("dump", "--json", str(p.pid))
        assert res.returncode == 0, res.stderr
        f = tmp_path / f"dump{i}.json"
        f.write_text(res.stdout)
        files.append(str(f))
    doc = R.merge(files)
    app = ViewApp(doc, files)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        summary = app.query_one("#summary").render().plain
        n = sum(len(p["tasks"]) for p in doc["processes"])
        assert summary.startswith(f"2 processes, 2 threads, {n} asyncio tasks, ")
        table = app.query_one("#groups")
        rows = [_cells(table, i) for i in range(table.row_count)]
        big = next(i for i, r in enumerate(rows) if r[1] == "46 tasks")
        assert rows[big][0] == "2" and rows[big][3].startswith("sleep (")
        for _ in range(big):
            await pilot.press("down")
        await pilot.pause()
        frames = app.query_one("#frames")
        assert [_cells(frames, i)[1] for i in range(frames.row_count)] == ["sleep", "sleeper"]
        title = app.query_one("#frames-title").render().plain
        assert title.startswith("Frames (innermost first) of 46 asyncio tasks in 2 processes, awaiting"), title
        procs = app.query_one("#procs")
        assert all(_cells(procs, i)[2].startswith("'gather-0', 'gather-1', 'gather-2', 'idle-0' (+19)")
                   for i in range(procs.row_count))
