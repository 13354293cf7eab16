"""What the Processes pane calls each process (``ui.panes.processes``): pure functions over states built
by hand, as ``engine.children`` fills them in from /proc."""

from __future__ import annotations

from tuidbg.engine.state import DebuggerState, Inferior, ProcessState
from tuidbg.ui.panes.processes import state_of, tree_rows

PY = "/usr/bin/python3.11"
SPAWN = ("-B", "-c", "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=7, pipe_handle=13)",
         "--multiprocessing-fork")
TRACKER = ("-B", "-c", "from multiprocessing.resource_tracker import main;main(6)")
FORKSERVER = ("-B", "-c", "from multiprocessing.forkserver import main; main(6, 8, ['__main__'], **{})")


def _inf(iid, pid, ppid, *argv, env=()):
    return Inferior(id=iid, pid=pid, ppid=ppid, process=ProcessState.STOPPED, cmdline=(PY, *argv), role_env=env)


def _roles(*infs):
    return [(inf.pid, depth, role) for inf, depth, role in tree_rows(DebuggerState(inferiors=infs))]


def test_multiprocessing_processes_are_named_by_what_they_are():
    prog = _inf("i1", 100, 1, "pool.py", "spawn")
    assert _roles(prog, _inf("i2", 101, 100, *TRACKER), _inf("i3", 102, 100, *SPAWN), _inf("i4", 103, 100, *SPAWN)) == [
        (100, 0, "pool.py"), (101, 1, "resource tracker of 100"), (102, 1, "spawn worker 1 of 100"),
        (103, 1, "spawn worker 2 of 100")]
    # a forkserver, and the workers it forks (its own command line)
    server = _inf("i2", 101, 100, *FORKSERVER)
    assert _roles(prog, server, _inf("i3", 102, 101, *FORKSERVER), _inf("i4", 103, 101, *FORKSERVER)) == [
        (100, 0, "pool.py"), (101, 1, "forkserver of 100"), (102, 2, "worker 1 of 101"), (103, 2, "worker 2 of 101")]


def test_forks_ranks_modules_and_code():
    launcher = _inf("i1", 100, 1, "-m", "torch.distributed.run", "--nproc-per-node", "2", "train.py")
    rank = _inf("i2", 101, 100, "-u", "train.py", env=(("RANK", "1"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "1")))
    worker = _inf("i3", 102, 101, "-u", "train.py", env=rank.role_env)
    assert _roles(launcher, rank, worker) == [
        (100, 0, "torch.distributed.run"), (101, 1, "rank 1/2"), (102, 2, "worker 1 of rank 1")]
    assert _roles(_inf("i1", 100, 1, "-c", "import time; time.sleep(100)"))[0][2] == "python -c import time; time.sleep(100)"


def test_a_stop_without_a_reason_reads_stopped():
    from tuidbg.engine.state import StopInfo

    inf = Inferior(id="i1", pid=5, process=ProcessState.STOPPED, stop=StopInfo(reason=""))
    assert state_of(inf)[0] == "stopped"
    assert state_of(Inferior(id="i2", pid=6, process=ProcessState.STOPPED))[0] == "stopped (with the others)"
