"""Many ranks at once on real processes: a torchrun job (gloo, CPU, 4 ranks; rank 2 waits elsewhere
while the others wait in a barrier) attached with its children, one job shared by the checks that
need that setup (issue 33): the parallel stacks tree of every rank at the attach's stop, ``pyall`` of a
name (read from memory) and of an attribute and a tensor (by each rank's agent) where rank 3's value
differs, a run group of one rank continued while the three others stay stopped, and breakpoints
limited to a rank. Traffic only to loopback."""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import subprocess
import time

import pytest
from conftest import requires_gdb
from helpers import line_of
from pystack_helpers import PY_PROGRAMS, TORCH_PYTHON, read_json

from tuidbg.engine import crossrank, procstacks, pyagent
from tuidbg.engine.python import parallel
from tuidbg.engine.state import ProcessState

pytestmark = [requires_gdb, pytest.mark.slow, pytest.mark.torch,
              pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="this machine has no .venv-torch (scripts/setup.sh builds it)")]

RANKS = PY_PROGRAMS / "torch_ranks.py"
N = 4


def _free_port() -> int:
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        return sk.getsockname()[1]


def start_job(tmp_path, n: int = N, workers: int = 0) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.Popen(
        [str(TORCH_PYTHON), "-m", "torch.distributed.run", "--nproc-per-node", str(n), "--master-addr", "127.0.0.1",
         "--master-port", str(_free_port()), str(RANKS), str(tmp_path), str(workers)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)


async def _until(pred, timeout: float = 60.0, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def _kernel_state(pid: int) -> str:
    """The process's state letter in /proc/PID/stat (t: stopped by its tracer)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


async def _go(tmp_path, timeout: float = 30.0) -> None:
    """A line on rank 2's FIFO, once rank 2 is blocked opening it for reading: resumed, it re-enters the
    open (ENXIO until it has: the FIFO has no reader yet)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fd = os.open(tmp_path / "go", os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.02)
    try:
        os.write(fd, b"go\n")
    finally:
        os.close(fd)


async def test_a_torchrun_job_of_four_ranks_seen_compared_and_run_in_groups(make_session, tmp_path):
    """tuidbg run --children of the job (each rank loads the agent at start-up), interrupted at its hang."""
    s = await make_session(mode="run", program=str(TORCH_PYTHON), agent=True, python_target=True, children="python",
                           args=["-m", "torch.distributed.run", "--nproc-per-node", str(N), "--master-addr", "127.0.0.1",
                                 "--master-port", str(_free_port()), str(RANKS), str(tmp_path), "0"])
    try:
        await s.launch()
        await _until(lambda: all((tmp_path / f"rank-{r}.json").exists() for r in range(N)), 240, "every rank ready")
        ranks = {r: read_json(tmp_path / f"rank-{r}.json")["pid"] for r in range(N)}
        await _until(lambda: all(any(inf.pid == pid for inf in s.state.inferiors) for pid in ranks.values()), 60,
                     "every rank under the debugger")
        await s.interrupt()
        st = await procstacks.controller(s).wait_read(60)
        iid = {r: next(inf.id for inf in st.inferiors if inf.pid == pid) for r, pid in ranks.items()}

        # -- 1. the parallel stacks: one tree, rank 2's branch first (the odd one), then the three in the barrier
        tree = parallel.tree(st)
        assert tree.processes == N + 1, parallel.shape(tree.roots)  # (the launcher too)
        step = next(n for n in tree.walk() if (n.frame or {}).get("function") == "train_step"
                    and (n.frame or {}).get("line") in (line_of(RANKS, "call_wait"), line_of(RANKS, "barrier")))
        parent = next(n for n in tree.walk() if step in n.children)
        branches = [(c.frame["function"], c.frame["line"], sorted(c.iids)) for c in parent.children]
        assert branches == [("train_step", line_of(RANKS, "call_wait"), [iid[2]]),
                            ("train_step", line_of(RANKS, "barrier"), sorted(iid[r] for r in (0, 1, 3)))], branches
        rows = parallel.rows(tree, st)
        texts = [r.text for r in rows]
        labels = {r.text: r.label for r in rows}
        i_wait = next(i for i, r in enumerate(rows) if r.text.startswith(f"train_step  torch_ranks.py:{line_of(RANKS, 'call_wait')}"))
        i_bar = next(i for i, r in enumerate(rows) if r.text.startswith(f"train_step  torch_ranks.py:{line_of(RANKS, 'barrier')}"))
        assert i_wait < i_bar, texts
        assert labels[rows[i_wait].text] == "rank 2 · 1 proc", labels
        assert labels[rows[i_bar].text].startswith("rank 0,1,3 · 3 procs"), labels
        assert any(r.kind == "no-python" for r in rows), texts  # (gloo's and torch's own threads)
        assert rows[i_wait + 1].text.startswith("wait_for_go"), texts

        # -- 2. pyall: a name from memory, an attribute and a tensor by each rank's agent; rank 3's differs
        where = crossrank.Where("train_step", str(RANKS))
        across = await crossrank.pyall(s, "step", where)
        by_value = {v: (sorted(iids), how) for v, iids, how in across.groups()}
        assert by_value == {"124": (sorted(iid[r] for r in (0, 1, 2)), "memory"), "123": ([iid[3]], "memory")}, across
        lines = across.lines(s.state)
        assert "  step = 124  ×3  (rank 0-2)  · read from memory" in lines, lines
        assert "  step = 123  ×1  (rank 3)  · read from memory" in lines, lines
        assert any(line.startswith("  no frame of train_step: ") for line in lines), lines  # (the launcher)
        ag = pyagent.controller(s)
        await _until(lambda: all(ag.agent_connected_in(pid) for pid in ranks.values()), 60, "every rank's agent")
        before = {inf.id: (inf.generation, inf.python.stack) for inf in s.state.inferiors}
        shown = s.state.selected_inferior
        shape = await crossrank.pyall(s, "t.shape", where)
        assert {v: sorted(i) for v, i, how in shape.groups()} == {
            "Size[3]": sorted(iid[r] for r in (0, 1, 2)), "Size[2]": [iid[3]]}, shape
        assert all(how == "agent" for _v, _i, how in shape.groups())
        tensors = await crossrank.pyall(s, "t", where)  # (memory sees an object: the agent describes it)
        assert {v: sorted(i) for v, i, _how in tensors.groups()} == {
            "Tensor float32 [3] cpu": sorted(iid[r] for r in (0, 1, 2)), "Tensor float32 [2] cpu": [iid[3]]}, tensors
        st = s.state
        assert st.selected_inferior == shown
        # (the processes are shown as they were: their stops and stacks)
        assert {inf.id: (inf.generation, inf.python.stack) for inf in st.inferiors} == before
        assert all(inf.process is ProcessState.STOPPED for inf in st.inferiors)

        # -- 3. a breakpoint limited to rank 2, a run group of rank 2: it alone runs, the others stay stopped
        out = await ag.handle_console(f"pybreak {RANKS}:{line_of(RANKS, 'checkpoint')} rank 2")
        assert "rank 2" in out, out
        ext = crossrank.controller(s)
        said = await ext.handle_console("group 2")
        assert said.startswith("run group: rank 2 (1 process)"), said
        assert s.state.run_group == (iid[2],)
        others = {iid[r]: s.state.find(iid[r]).generation for r in (0, 1, 3)}
        await ag.resume()
        await _until(lambda: s.state.find(iid[2]).process is ProcessState.RUNNING, 30, "rank 2 running")
        assert all(s.state.find(i).process is ProcessState.STOPPED for i in others), s.state.inferiors
        # (and so says the kernel: rank 2 asleep in its open of the FIFO, the three others in a tracing stop)
        await _until(lambda: _kernel_state(ranks[2]) == "S", 30, "rank 2 asleep in its open")
        assert {r: _kernel_state(ranks[r]) for r in (0, 1, 3)} == {0: "t", 1: "t", 3: "t"}
        await _go(tmp_path)
        st = await ag.wait_stop(60)
        assert st.selected_inferior == iid[2] and st.python.stop is not None, st.python
        assert st.python.stop.frame.line == line_of(RANKS, "checkpoint")
        # the three other ranks never ran: the stop of rank 2 found them stopped, as they were (the launcher's
        # agent thread alone ran a moment, to take the new breakpoint table at the continue)
        assert {i: s.state.find(i).generation for i in others} == others
        # rank 2 stepped alone (Python steps over the return, then over the call's line): back in train_step,
        # then at the barrier's line, the three others still as they were
        for line in ("call_checkpoint", "barrier"):
            await ag.step_over()
            st = await ag.wait_stop(60)
            assert st.selected_inferior == iid[2] and st.python.stop is not None, st.python
            assert (st.python.stop.func, st.python.stop.line) == ("train_step", line_of(RANKS, line)), st.python.stop
        assert {i: s.state.find(i).generation for i in others} == others
        assert all(s.state.find(i).process is ProcessState.STOPPED for i in others)

        # -- 4. every process again; a breakpoint limited to rank 1 after the barrier: only rank 1 stops there
        assert (await ext.handle_console("group all")).startswith("every process")
        assert s.state.run_group == ()
        await ag.handle_console("pydelete")
        await ag.handle_console(f"pybreak {RANKS}:{line_of(RANKS, 'after')} rank 1")
        await ag.resume()
        st = await ag.wait_stop(90)
        assert st.selected_inferior == iid[1] and st.python.stop.frame.line == line_of(RANKS, "after"), st.python
        assert not (tmp_path / "passed-1").exists()
        await ag.resume()
        # the others passed that line without stopping (their files), rank 1 too once continued
        await _until(lambda: all((tmp_path / f"passed-{r}").exists() for r in range(N)), 90, "every rank past the line")
    finally:
        await s.close()
