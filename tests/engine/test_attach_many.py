"""``tuidbg attach PID PID...`` and ``attach --children``: several running processes in one session
(one gdb, an inferior each), each process's Python stack read from its memory, and every one let go
unharmed at the end: running, untraced. Real processes: two sleeping Python programs on Debian's
stripped python3.11, and a torchrun job (gloo, CPU) attached through its launcher."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, line_of
from pystack_helpers import (PY_PROGRAMS, TORCH_PYTHON, kill_tree, read_json, running_untraced, shows_its_python, tracer_pid,
                             wait_for_files)

from tuidbg.cli import attach_pids
from tuidbg.engine import pyagent
from tuidbg.engine.errors import EngineError
from tuidbg.engine.state import ProcessState

pytestmark = [requires_gdb, pytest.mark.slow,
              pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="needs Debian's python3.11")]

SLEEPERS = PY_PROGRAMS / "sleepers.py"
BARRIER = PY_PROGRAMS / "torch_barrier.py"


async def _python_functions(s, iid: str) -> list[str]:
    """The Python functions of every thread of process ``iid``, once it is selected and refreshed (its stacks
    read through gdb: the refresh's stages are over)."""
    await s.select_process(iid)
    await s.wait_refreshed()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        st = s.state
        if st.selected_inferior == iid and st.refreshed and st.python.stack is not None:
            return [f.function for t in st.python.stack.threads for f in t.frames]
        await __import__("asyncio").sleep(0.05)
    raise AssertionError(f"no Python stack for {iid}: {s.state.python}")


async def test_two_processes_in_one_session_then_both_let_go(make_session, tmp_path):
    procs = []
    s = None
    try:
        for i in range(2):
            ready = tmp_path / f"ready{i}.json"
            procs.append(subprocess.Popen([str(DEBIAN_PY311), str(SLEEPERS), str(i + 1), str(ready)],
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL))
        wait_for_files([tmp_path / "ready0.json", tmp_path / "ready1.json"], procs)
        pids = attach_pids([str(p.pid) for p in procs], children=False)
        s = await make_session(mode="attach", pid=pids[0], more_pids=pids[1:], agent=True, python_target=True)
        await s.launch()
        st = s.state
        assert [inf.pid for inf in st.inferiors] == pids and st.selected_inferior == "i1"
        assert all(inf.process is ProcessState.STOPPED for inf in st.inferiors)
        for pid in pids:
            assert tracer_pid(pid) != 0
        # each process's own Python stack: one sleeper thread in the first, two in the second
        first = await _python_functions(s, "i1")
        second = await _python_functions(s, "i2")
        assert first.count("sleeper_a") == 1 and "sleeper_b" not in first, first
        assert second.count("sleeper_a") == 1 and second.count("sleeper_b") == 1, second
        assert s.state.pid == pids[1]
        # the agent went into each process (tests/engine/test_attach_family.py stops in both)
        assert s.state.python.agent is not None and s.state.python.agent.status in ("connected", "waiting")
        assert s.state.python.agent.pid == pids[1]
        assert (await _python_functions(s, "i1")) == first  # back to the first: its own stack again
        assert s.state.python.agent.status in ("connected", "waiting")
        await s.cont()
        await s.close()  # quit: detach every process
        for pid in pids:
            running_untraced(pid)
    finally:
        if s is not None:
            await s.close()  # (before the kill: a killed tracee is reaped by its tracer first)
        for p in procs:
            p.kill()
            p.wait()


async def test_the_first_process_is_shown_while_gdb_attaches_to_the_others(make_session, tmp_path):
    """attach PID PID... as the TUI starts it (cli.start_session: first_process_shown): the first process
    is stopped, read and shown before gdb has attached to the others; while it attaches to them (and loads
    the agent into them) the first stays the shown one, whatever gdb selects, and run control is refused
    with one line; then every process is there, the first still shown, and every one is let go."""
    from tuidbg.engine.errors import EngineError

    procs, s = [], None
    n = 6
    try:
        for i in range(n):
            procs.append(subprocess.Popen([str(DEBIAN_PY311), str(SLEEPERS), "1", str(tmp_path / f"ready{i}.json")],
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL))
        wait_for_files([tmp_path / f"ready{i}.json" for i in range(n)], procs)
        pids = attach_pids([str(p.pid) for p in procs], children=False)
        s = await make_session(mode="attach", pid=pids[0], more_pids=pids[1:], agent=True, python_target=True,
                               start=False)
        await s.start()
        await s.first_process_shown()
        st = s.state
        assert st.inferiors[0].pid == pids[0] and st.selected_inferior == st.inferiors[0].id
        assert st.is_stopped and st.refreshed and st.pid == pids[0]
        assert s.attaching and len([inf for inf in st.inferiors if inf.pid]) < n, st.inferiors  # (the others later)
        shown: list[str | None] = []
        s.on_state(lambda new: shown.append(new.selected_inferior))
        with pytest.raises(EngineError, match="still attaching to the other processes"):
            await s.cont()
        await s.launch()
        assert not s.attaching
        st = s.state
        assert [inf.pid for inf in st.inferiors] == pids and st.selected_inferior == st.inferiors[0].id
        assert all(inf.process is ProcessState.STOPPED for inf in st.inferiors)
        assert shown and set(shown) == {st.inferiors[0].id}, shown  # (never another one meanwhile)
        await s.close()
        for pid in pids:
            running_untraced(pid)
    finally:
        if s is not None:
            await s.close()
        for p in procs:
            p.kill()
            p.wait()


def _free_port() -> int:
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        return sk.getsockname()[1]


@pytest.mark.torch
@pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="this machine has no .venv-torch (scripts/setup.sh builds it)")
@pytest.mark.parametrize("n", [2, 3])
async def test_attach_a_torchrun_launcher_with_its_ranks(make_session, tmp_path, n):
    """attach --children of a hung torchrun job: at the attach's stop every rank's Python is read at once,
    without selecting any (the odd rank is in skip_barrier, the others in the barrier); selecting a rank
    shows its own stack; a breakpoint stops in the odd rank as it is let go, then in every rank past the
    barrier, each stop with that rank's Python frames and locals; every process is let go at the end, and
    the job ends as it would have."""
    from tuidbg.engine import procstacks
    from tuidbg.engine.python import view

    odd = n - 1
    env = dict(os.environ, OMP_NUM_THREADS="1")
    s = None
    launcher = subprocess.Popen(
        [str(TORCH_PYTHON), "-m", "torch.distributed.run", "--nproc-per-node", str(n), "--master-addr", "127.0.0.1",
         "--master-port", str(_free_port()), str(BARRIER), str(tmp_path), str(odd)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        wait_for_files([tmp_path / f"rank-{r}.json" for r in range(n)], [launcher], timeout=240)
        ranks = {r: read_json(tmp_path / f"rank-{r}.json")["pid"] for r in range(n)}
        pids = attach_pids([str(launcher.pid)], children=True)
        assert pids[0] == launcher.pid and set(ranks.values()) <= set(pids), (pids, ranks)
        s = await make_session(mode="attach", pid=pids[0], more_pids=pids[1:], agent=True, python_target=True,
                               children="python", start=False)
        await s.start()
        await s.launch()
        st = await procstacks.controller(s).wait_read(60)
        assert st.selected_inferior == st.inferiors[0].id
        by_pid = {inf.pid: inf for inf in st.inferiors}
        for r, pid in ranks.items():
            inf = by_pid[pid]
            assert dict(inf.role_env) == {"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": str(n)}, inf.role_env
            assert inf.ppid == launcher.pid
            # where each rank is, read at the stop: the odd one is in skip_barrier, the others in the barrier
            where = view.process_line(inf)
            assert where is not None and where.lwp == pid, (r, inf.python.stack)
            funcs = [f.function for t in inf.python.stack.threads for f in t.frames]
            if r == odd:
                assert (where.frame.name, where.frame.line) == ("skip_barrier", line_of(BARRIER, "skip_barrier"))
            else:
                assert "barrier" in funcs and "skip_barrier" not in funcs, funcs
        # selecting the odd rank shows its own stack (through gdb, its main thread's frames placed)
        odd_funcs = await _python_functions(s, by_pid[ranks[odd]].id)
        assert "skip_barrier" in odd_funcs, odd_funcs
        st = s.state
        assert view.process_line(st.inferior).frame.name == "skip_barrier"
        main = view.live_thread(st, next(t.id for t in st.threads if t.lwp == ranks[odd]))
        assert main is not None and main.frames[0].native_level is not None, main
        # R: an attached job is not the session's to start again
        with pytest.raises(EngineError, match="cannot restart"):
            await s.run()
        # a breakpoint in the odd rank, hit as it is let go (something written to the FIFO it waits on): the
        # stop shows its own Python frames and locals, and where every other process is
        ctl = pyagent.controller(s)
        await ctl.add_breakpoint(str(BARRIER), line_of(BARRIER, "released"))
        await ctl.add_breakpoint(str(BARRIER), line_of(BARRIER, "after_barrier"))
        await ctl.resume()
        writer = asyncio.get_running_loop().run_in_executor(None, (tmp_path / "release").write_text, "go")
        st = await ctl.wait_stop(120)
        await writer
        assert st.is_stopped and st.python.stop is not None and st.pid == ranks[odd], (st.pid, st.stop, st.python.stop)
        await shows_its_python(s, st, st.python.stop, {"ready_dir", "said"})
        assert await ctl.evaluate("said") == "'go'"
        # then every rank passes the barrier: a stop in each in turn, each with its own Python
        passed = {}
        for _ in range(n):
            await ctl.resume()
            st = await ctl.wait_stop(120)
            stop = st.python.stop
            assert st.is_stopped and stop is not None and stop.line == line_of(BARRIER, "after_barrier"), (st.stop, stop)
            await shows_its_python(s, st, stop, {"rank", "ready_dir", "odd"})
            passed[int(await ctl.evaluate("rank"))] = st.pid
        assert passed == ranks, (passed, ranks)
        await s.close()  # quit: every process let go, and the job ends by itself
        assert launcher.wait(120) == 0
    finally:
        if s is not None:
            await s.close()
        kill_tree(launcher)


def test_attach_pids_checks_each_and_keeps_each_once():
    from tuidbg.launch import UsageError

    p = subprocess.Popen(["sleep", "30"])
    try:
        assert attach_pids([str(p.pid), str(p.pid)], children=False) == [p.pid]
        with pytest.raises(UsageError, match="4000000"):
            attach_pids([str(p.pid), "4000000"], children=False)
        with pytest.raises(UsageError):
            attach_pids(["12x"], children=False)
    finally:
        p.kill()
        p.wait()
