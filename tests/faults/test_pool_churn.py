"""A multiprocessing Pool that replaces a worker every few milliseconds (tests/programs/py/pool_churn.py),
under ``tuidbg attach --children`` and ``tuidbg dump --children``: a process of the tree that exits while it
is attached or read is left out and said so; the rest is attached, or read, and nothing is an error.

The attach goes the command line's way (``cli.attach_config``, ``cli.start_session``: what ``tuidbg attach
--children PID`` runs before its screen); the dump is the real command, in a process of its own."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, PROGRAMS

from faults.procs import descendants, kill_group, proc, tree_states, wait_until
from tuidbg import cli
from tuidbg.engine.state import ProcessState

pytestmark = [requires_gdb, pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="needs Debian's python3.11")]

POOL = PROGRAMS / "py" / "pool_churn.py"


class Pool:
    def __init__(self, d) -> None:
        d.mkdir()
        self.dir = d
        self.proc = subprocess.Popen([str(DEBIAN_PY311), str(POOL), str(d)], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        wait_until(lambda: (d / "ready").exists() or self.proc.poll() is not None, 60, "the pool to start")
        assert self.proc.poll() is None, self.proc.returncode

    def beat(self) -> int:
        try:
            return int((self.dir / "beat").read_text())
        except (OSError, ValueError):
            return -1

    def assert_runs_on(self) -> None:
        """The pool's parent is there, untraced, not stopped, and its rounds of tasks go on."""
        wait_until(lambda: (p := proc(self.proc.pid)) is not None and not p.tracer and p.state not in "TtZX", 10,
                   lambda: f"the pool's parent to run, untraced; its tree: {tree_states(self.proc.pid)}")
        before = self.beat()

        def stuck() -> str:
            return f"the pool to go on (round {before}, now {self.beat()}); its tree: {tree_states(self.proc.pid)}"

        wait_until(lambda: self.beat() > before + 1, 30, stuck)

    def close(self) -> None:
        kill_group(self.proc)


@pytest.fixture
def pool(tmp_path):
    p = Pool(tmp_path / "pool")
    yield p
    p.close()


async def _attach(pid: int, before_start=None):
    args = cli.build_parser().parse_args(["attach", "--nx", "--fresh", "--children", str(pid)])
    cfg = cli.attach_config(args)
    if before_start is not None:
        before_start(cfg)
    s = await cli.start_session(cfg)  # (returns once the first process is shown...)
    await s.launch()  # (... and the others are attached with it)
    return cfg, s


async def test_attach_children_of_a_churning_pool(pool, monkeypatch, tmp_path):
    """Sessions one after the other: each attaches (none gives up on the tree), follows the workers the pool
    starts, and lets everything go on quit; the pool never misses a beat for good."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for _ in range(4):
        cfg, s = await _attach(pool.proc.pid)
        try:
            assert s.state.inferiors[0].pid == pool.proc.pid
            await s.cont()
            await asyncio.sleep(0.5)  # (the pool replaces workers meanwhile: gdb follows its forks)
        finally:
            await s.close()
        pool.assert_runs_on()
        # none of its processes is left traced, or stopped (a worker forked as gdb let go, its first SIGSTOP
        # delivered after: it held the task queue's lock, and the pool waited for good)
        left = {q: (p.state, p.tracer) for q in descendants(pool.proc.pid)
                if (p := proc(q)) is not None and (p.tracer or p.state in "Tt")}
        assert not left, left


async def test_a_process_that_exits_while_the_tree_is_attached_is_left_out(pool, monkeypatch, tmp_path):
    """A process of the tree ends between the listing and its attach (the pool's side child, told to here, so
    that it surely does): it is left out, and said so; the others are attached."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    side = int((pool.dir / "side").read_text())

    def end_side(cfg) -> None:
        assert side in cfg.more_pids, (side, cfg.more_pids)
        (pool.dir / "side-exit").write_text("")
        wait_until(lambda: proc(side) is None or proc(side).state in ("Z", "X"), 10, "the side child to end")

    cfg, s = await _attach(pool.proc.pid, end_side)
    try:
        note = f"process {side} exited before it could be attached; the others are"
        assert note in s.startup_messages, s.startup_messages
        assert side not in [inf.pid for inf in s.state.inferiors]
        assert s.state.inferiors[0].pid == pool.proc.pid
        assert s.state.inferiors[0].process is not ProcessState.GDB_EXITED
    finally:
        await s.close()
    pool.assert_runs_on()


def test_dump_children_of_a_churning_pool_is_no_error(pool):
    """``tuidbg dump --children`` exits 0 however the workers come and go; one that ended before its read is
    listed as exited, never as an error."""
    exited = 0
    for _ in range(10):
        r = subprocess.run([sys.executable, "-m", "tuidbg", "dump", "--children", "--json", str(pool.proc.pid)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (r.returncode, r.stderr)
        doc = json.loads(r.stdout)
        assert "errors" not in doc, doc.get("errors")
        assert doc["processes"][0]["pid"] == pool.proc.pid
        exited += len(doc.get("exited", []))
    assert exited, "no worker ended between the listing and its read in 10 dumps (the case this test is about)"
    r = subprocess.run([sys.executable, "-m", "tuidbg", "dump", "--children", str(pool.proc.pid), "4000000"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "tuidbg: no process with ID 4000000" in r.stderr, (r.returncode, r.stderr)
    pool.assert_runs_on()
