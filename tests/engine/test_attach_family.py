"""``tuidbg attach PID PID...`` with the Python agent in every process, and ``attach --children``
following the children an attached process starts after the attach (a fork, and a Python started
anew by multiprocessing's spawn), the agent in each of them; at the end every process runs on,
untraced, with nothing of tuidbg's left in it (its environment and subprocess's switches as they
were, no trace hook, no agent thread). Real processes on Debian's stripped python3.11."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, PROGRAMS, line_of, wait_for
from pystack_helpers import TORCH_PYTHON, kill_tree, read_json, running_untraced, wait_for_files

from tuidbg.engine import pyagent

pytestmark = [requires_gdb, pytest.mark.slow,
              pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="needs Debian's python3.11")]

FAMILY = PROGRAMS / "py" / "family.py"
EPOCHS = PROGRAMS / "py" / "torch_epochs.py"
LOADER = PROGRAMS / "py" / "torch_loader.py"  # (its dataset: the epochs program imports it)
TIMEOUT = 60


def _start(d) -> subprocess.Popen:
    d.mkdir(exist_ok=True)
    p = subprocess.Popen([str(DEBIAN_PY311), str(FAMILY), str(d)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    wait_for_files([d / f"ready-{p.pid}.json"], [p])
    return p


def _report(d, pid: int) -> dict:
    path = d / f"report-{pid}.json"
    if path.exists():
        path.unlink()
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + 10
    while not path.exists():
        assert time.monotonic() < deadline, f"process {pid} wrote no report"
        time.sleep(0.02)
    return read_json(path)


def _as_before(after: dict, before: dict) -> None:
    for key in ("env", "vfork", "trace", "monitoring", "threads", "excepthook"):
        assert after[key] == before[key], f"{key}: {before[key]} -> {after[key]}"


async def _python_stop(s, ctl):
    """The next Python stop (a stop of another kind is an error here)."""
    st = await ctl.wait_stop(TIMEOUT)
    assert st.is_stopped and st.python.stop is not None, (st.process, st.stop and st.stop.describe(), st.python)
    return st


async def test_every_attached_process_gets_the_agent(make_session, tmp_path):
    procs = [_start(tmp_path / "a"), _start(tmp_path / "b")]
    pids = [p.pid for p in procs]
    before = {p.pid: _report(d, p.pid) for p, d in zip(procs, (tmp_path / "a", tmp_path / "b"))}
    s = None
    try:
        s = await make_session(mode="attach", pid=pids[0], more_pids=pids[1:], agent=True, python_target=True)
        ctl = pyagent.controller(s)
        await s.launch()
        line = line_of(FAMILY, "tick line")
        await ctl.add_breakpoint(str(FAMILY), line)
        await ctl.resume()
        stopped_in = set()
        for _ in range(12):  # both run into the breakpoint, 50 times a second; all-stop shows one at a time
            st = await _python_stop(s, ctl)
            assert (st.python.stop.func, st.python.stop.line) == ("tick", line)
            agent = st.inferior.python.agent
            assert agent.connected and agent.pid == st.pid and agent.how == "attach", agent
            stopped_in.add(st.pid)
            assert (await ctl.evaluate("n")).isdigit()
            if stopped_in == set(pids):
                break
            await ctl.resume()
        assert stopped_in == set(pids), stopped_in
        # each process's agent reports its own stop function, which traps by itself (several processes)
        agents = {inf.pid: inf.python.agent for inf in s.state.inferiors}
        assert all(a is not None and a.stub_traps for a in agents.values()), agents
        await s.close()  # quit at the Python stop: every process let go
        s = None
        for p, d in zip(procs, (tmp_path / "a", tmp_path / "b")):
            running_untraced(p.pid)
            _as_before(_report(d, p.pid), before[p.pid])
    finally:
        if s is not None:
            await s.close()
        for p in procs:
            kill_tree(p)


async def test_attach_children_follows_the_children_it_starts_after_the_attach(make_session, tmp_path):
    d = tmp_path / "f"
    parent = _start(d)
    before = _report(d, parent.pid)
    s = None
    kids: list[int] = []
    try:
        s = await make_session(mode="attach", pid=parent.pid, agent=True, python_target=True, children="python")
        ctl = pyagent.controller(s)
        await s.launch()
        line = line_of(FAMILY, "child line")
        bp = await ctl.add_breakpoint(str(FAMILY), line)
        await ctl.resume()
        for how, first_n in (("fork", 101), ("spawn", 201)):
            # each child's first pass only (the fork's own loop would stop it 50 times a second)
            await ctl.set_condition(bp.id, f"n == {first_n - 1}")
            if how == "spawn":
                await ctl.resume()
            (d / how).write_text("")
            st = await _python_stop(s, ctl)
            stop = st.python.stop
            assert (stop.func, stop.line) == ("child_work", line), stop
            assert st.pid != parent.pid and st.pid not in kids
            kids.append(st.pid)
            assert st.inferior.ppid == parent.pid or how == "spawn", (st.inferior.ppid, parent.pid)
            assert await ctl.evaluate("n") == str(first_n - 1)  # its first pass: the line has not run yet
            agent = st.inferior.python.agent
            assert agent.connected and agent.pid == st.pid, agent
            assert int((d / f"started-{how}").read_text()) == st.pid
        assert [inf.pid for inf in s.state.inferiors][:1] == [parent.pid]
        assert set(kids) <= {inf.pid for inf in s.state.inferiors}
        await s.close()  # quit at the spawned child's Python stop
        s = None
        for pid in [parent.pid, *kids]:
            running_untraced(pid)
        _as_before(_report(d, parent.pid), before)
        (d / "stop").write_text("")
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in kids):  # the children end by themselves, untouched by SIGTRAP
            assert time.monotonic() < deadline, [pid for pid in kids if _alive(pid)]
            time.sleep(0.05)
    finally:
        if s is not None:
            await s.close()
        kill_tree(parent)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_attach_children_is_refused_with_remote():
    import sys

    r = subprocess.run([sys.executable, "-m", "tuidbg", "attach", "--remote", "127.0.0.1:1", "--children", "123"],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and "--children" in r.stderr and "Traceback" not in r.stderr, r.stderr


async def test_attach_to_a_process_in_a_pid_namespace_of_its_own(make_session, tmp_path):
    """Its agent says hello with the number it has in its namespace (1 or 2, not the one tuidbg attached
    to): /proc's NSpid ties the two, and the stop is the process's own."""
    import shutil

    if shutil.which("unshare") is None:
        pytest.skip("no unshare (util-linux) here")
    d = tmp_path / "ns"
    d.mkdir()
    outer = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", str(DEBIAN_PY311), str(FAMILY), str(d)],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True)
    s = None
    try:
        deadline = time.monotonic() + 30
        while not list(d.glob("ready-*.json")):
            assert outer.poll() is None, outer.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "not ready"
            time.sleep(0.05)
        inner = int(read_json(next(d.glob("ready-*.json")))["pid"])
        import psutil

        pid = next(p.pid for p in psutil.Process(outer.pid).children(recursive=True) if "family.py" in " ".join(p.cmdline()))
        assert pid != inner  # (its own number, in its namespace)
        s = await make_session(mode="attach", pid=pid, agent=True, python_target=True)
        ctl = pyagent.controller(s)
        await s.launch()
        line = line_of(FAMILY, "tick line")
        await ctl.add_breakpoint(str(FAMILY), line)
        await ctl.resume()
        st = await _python_stop(s, ctl)
        assert (st.python.stop.func, st.python.stop.line) == ("tick", line) and st.pid == pid
        assert st.python.agent.connected and st.python.agent.how == "attach", st.python.agent
        assert [inf.pid for inf in st.inferiors] == [pid]
        await s.close()
        s = None
        running_untraced(pid)
    finally:
        if s is not None:
            await s.close()
        kill_tree(outer)


@pytest.mark.torch
@pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="this machine has no .venv-torch (scripts/setup.sh builds it)")
async def test_attach_children_stops_in_a_dataloader_worker_of_a_later_epoch(make_session, tmp_path):
    """A training loop attached to between epochs: the DataLoader workers of the next epoch are forked
    after the attach, and a Python breakpoint in __getitem__ stops in one of them."""
    d = tmp_path / "t"
    d.mkdir()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    main = subprocess.Popen([str(TORCH_PYTHON), str(EPOCHS), str(d)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True)
    s = None
    try:
        wait_for_files([d / f"ready-{main.pid}.json"], [main], timeout=120)
        (d / "go").write_text("")  # a first epoch before tuidbg comes
        wait_for_files([d / "epoch-1"], [main], timeout=120)
        s = await make_session(mode="attach", pid=main.pid, agent=True, python_target=True, children="python")
        ctl = pyagent.controller(s)
        await s.launch()
        line = line_of(LOADER, "getitem line")
        bp = await ctl.add_breakpoint(str(LOADER), line, condition="i == 1")
        await ctl.resume()
        (d / "go").write_text("")
        st = await _python_stop(s, ctl)
        assert (st.python.stop.func, st.python.stop.line) == ("Squares.__getitem__", line)
        assert st.pid != main.pid and st.inferior.ppid == main.pid, (st.pid, st.inferior.ppid)
        assert await ctl.evaluate("i") == "1"
        assert st.inferior.python.agent.connected and st.inferior.python.agent.pid == st.pid
        await ctl.delete_breakpoint(bp.id)
        await ctl.resume()
        # (waited for without blocking: the session goes on past the workers' exits meanwhile)
        await wait_for(lambda: (d / "epoch-2").exists(), 120, "the epoch to end")
        assert read_json(d / "epoch-2") == [0, 1, 4, 9]
        await s.close()
        s = None
        running_untraced(main.pid)
        (d / "go").write_text("")  # and on it goes, untraced
        wait_for_files([d / "epoch-3"], [main], timeout=120)
    finally:
        if s is not None:
            await s.close()
        kill_tree(main)
