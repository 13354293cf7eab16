"""``tuidbg dump PID... [--children]`` and ``--merge``: several processes and process trees read at
once, identical stacks grouped with the odd one out first, dumps of several nodes merged; every
process left running and untraced."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest
from conftest import requires_gdb
from helpers import REPO, DEBIAN_PY311, line_of, run_tuidbg, tuidbg_cmd, wait_released
from pystack_helpers import PY_PROGRAMS, TORCH_PYTHON, kill_tree, read_json, running_untraced, tracer_pid, wait_for_files
from helpers import check_error

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="needs Debian's /usr/bin/python3.11")]

TREE = PY_PROGRAMS / "tree.py"
SLEEPERS = PY_PROGRAMS / "sleepers.py"
DEEP = PY_PROGRAMS / "deep_sleep.py"
BARRIER = PY_PROGRAMS / "torch_barrier.py"
HOST = os.uname().nodename


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _start(args, ready, cleanup, **kw):
    proc = subprocess.Popen([str(DEBIAN_PY311), *map(str, args)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, **kw)
    cleanup.append(proc)
    wait_for_files([ready], [proc])
    return proc


def _dump_json(*args, timeout=120) -> dict:
    res = run_tuidbg("dump", "--json", *map(str, args), timeout=timeout)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _main_python(proc: dict) -> list[tuple[str, int]]:
    main = next(t for t in proc["threads"] if t["main"])
    return [(f["function"], f["line"]) for f in main["frames"] if f["kind"] == "python"]


def _heads(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("== ")]


# ---------------------------------------------------------------------------------------------
# Process trees


def test_children_of_every_start_method(tmp_path, cleanup):
    ready = tmp_path / "tree.json"
    parent = _start([TREE, ready], ready, cleanup)
    try:
        _children_of_every_start_method(parent, read_json(ready))
    finally:
        kill_tree(parent)


def _children_of_every_start_method(parent, tree):
    kids = tree["children"]

    alone = _dump_json(parent.pid)
    assert [p["pid"] for p in alone["processes"]] == [parent.pid]

    doc = _dump_json("--children", parent.pid)
    procs = {p["pid"]: p for p in doc["processes"]}
    assert doc["processes"][0]["pid"] == parent.pid and "errors" not in doc
    # every child of every start method, the forkserver's child under the forkserver, and the
    # helpers multiprocessing starts (the forkserver, the resource tracker)
    assert set(kids.values()) < set(procs)
    descendants = {parent.pid}
    for p in doc["processes"][1:]:
        assert p["ppid"] in descendants, (p["pid"], p["ppid"])  # a tree, each parent before its children
        descendants.add(p["pid"])
    assert procs[kids["fork"]]["ppid"] == parent.pid and procs[kids["spawn"]]["ppid"] == parent.pid
    assert procs[kids["forkserver"]]["ppid"] not in (parent.pid, None)
    sleep_line = line_of(TREE, "child_sleep")
    for method, pid in kids.items():
        assert _main_python(procs[pid])[0] == ("child_sleep", sleep_line), (method, _main_python(procs[pid]))
        assert procs[pid]["reader"] == "memory" and procs[pid]["host"] == HOST
    assert _main_python(procs[parent.pid])[0] == ("main", line_of(TREE, "parent_sleep"))
    # not Python: listed, not read through gdb (as it would be if its PID were named)
    other = procs[tree["other"]]
    assert other["reader"] == "memory" and "fallback" not in other and other["ppid"] == parent.pid
    assert other["note"].startswith("no CPython runtime in this process (found by --children: not read through gdb")
    assert [t["tid"] for t in other["threads"]] == [tree["other"]] and other["threads"][0]["frames"] == []
    for pid in procs:
        running_untraced(pid)
    # read one after the other in one process (--jobs 1), or by two workers: the same report
    for jobs in ("1", "2"):
        again = _dump_json("--children", "--jobs", jobs, parent.pid)
        assert [(p["pid"], p["threads"]) for p in again["processes"]] == [(p["pid"], p["threads"]) for p in doc["processes"]]

    res = run_tuidbg("dump", "--children", str(parent.pid))
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert res.stdout.startswith(f"{len(procs)} processes, ")
    for pid in procs:
        assert f"\n  {pid}: " in res.stdout
    # each child sleeps in child_sleep, under another start-up path: a group each, with its frame
    for pid in kids.values():
        head = next(h for h in _heads(res.stdout) if h.startswith(f"== 1 process: {pid},"))
        block = res.stdout.split(head + "\n", 1)[1]
        assert block.startswith(f"    child_sleep ({TREE}:{sleep_line})\n"), block[:200]


def test_bad_pid_among_several(tmp_path, cleanup):
    a = _start([SLEEPERS, 2, tmp_path / "a.json"], tmp_path / "a.json", cleanup)
    b = _start([SLEEPERS, 2, tmp_path / "b.json"], tmp_path / "b.json", cleanup)
    res = run_tuidbg("dump", str(a.pid), "4000000", str(b.pid), "xyz")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.splitlines() == ["tuidbg: no process with ID 4000000",
                                       "tuidbg: 'xyz' is not a process ID (a positive number)"]
    # the others are dumped, grouped: both run the same program, asleep in the same lines
    assert res.stdout.startswith("2 processes, 6 threads, on ")
    heads = _heads(res.stdout)
    assert f"== 2 processes: {a.pid} {b.pid}" in heads
    assert "  4000000: not read: no process with ID 4000000" in res.stdout

    res = run_tuidbg("dump", str(a.pid), "4000000")
    assert res.returncode == 2 and res.stderr == "tuidbg: no process with ID 4000000\n"
    assert res.stdout.startswith(f"1 process, 3 threads, on {HOST}:\n  {a.pid}: {DEBIAN_PY311} {SLEEPERS} 2 ")

    res = run_tuidbg("dump", "--json", "4000000", str(a.pid))
    assert res.returncode == 2 and res.stderr == "tuidbg: no process with ID 4000000\n"
    doc = json.loads(res.stdout)
    assert [p["pid"] for p in doc["processes"]] == [a.pid]
    assert doc["errors"] == [{"pid": 4000000, "host": HOST, "error": "no process with ID 4000000"}]

    res = run_tuidbg("dump", "4000000", "4000001")  # nothing to read: a line for each, nothing on stdout
    assert (res.returncode, res.stdout) == (2, "")
    assert res.stderr == "tuidbg: no process with ID 4000000\ntuidbg: no process with ID 4000001\n"
    # the JSON of such a node still says so (for --merge)
    res = run_tuidbg("dump", "--json", "4000000", "4000001")
    assert res.returncode == 2 and res.stderr.count("\n") == 2
    assert json.loads(res.stdout)["processes"] == [] and len(json.loads(res.stdout)["errors"]) == 2
    running_untraced(a.pid)
    running_untraced(b.pid)


@requires_gdb
def test_native_stacks_of_several_at_once(tmp_path, cleanup):
    """--native: each process unwound by the direct reader in the workers at once (and through its own
    gdb with --via-gdb); stacks grouped by function, file and line (their addresses differ from process
    to process)."""
    a = _start([SLEEPERS, 2, tmp_path / "a.json"], tmp_path / "a.json", cleanup)
    b = _start([SLEEPERS, 2, tmp_path / "b.json"], tmp_path / "b.json", cleanup)
    doc = _dump_json("--native", a.pid, b.pid, timeout=300)
    assert [(p["pid"], p["reader"]) for p in doc["processes"]] == [(a.pid, "memory"), (b.pid, "memory")]
    via_gdb = _dump_json("--native", "--via-gdb", a.pid, b.pid, timeout=300)
    assert [(p["pid"], p["reader"]) for p in via_gdb["processes"]] == [(a.pid, "gdb"), (b.pid, "gdb")]
    for mine, gdbs in zip(doc["processes"], via_gdb["processes"]):  # (gdb has inline frames besides)
        for t, g in zip(mine["threads"], gdbs["threads"]):
            addrs = [f["addr"] for f in t["frames"] if f["kind"] == "native"]
            assert addrs and set(addrs) <= {f["addr"] for f in g["frames"] if f["kind"] == "native"}, (t, g)
            def py(frames):  # (their native levels differ by gdb's inline frames)
                return [{k: v for k, v in f.items() if k != "native_level"} for f in frames if f["kind"] == "python"]

            assert py(t["frames"]) == py(g["frames"])
    for p in doc["processes"]:
        main = next(t for t in p["threads"] if t["main"])["frames"]
        assert main[0]["kind"] == "native" and main[0]["addr"]
        assert [f["function"] for f in main if f["kind"] == "python"] == ["main", "<module>"]
    res = run_tuidbg("dump", "--native", str(a.pid), str(b.pid), timeout=300)
    assert res.returncode == 0, res.stderr
    heads = _heads(res.stdout)
    assert len(heads) == 3 and all(h.startswith(f"== 2 processes: {a.pid} {b.pid}") for h in heads), heads
    assert " [py] sleeper_a (" in res.stdout and "_PyEval_EvalFrameDefault" not in res.stdout
    assert not re.search(r"^\s+#\d+\s+0x", res.stdout, re.M), "an address shown for a group of two processes"
    alone = run_tuidbg("dump", "--native", str(a.pid), timeout=300)  # (one process: its addresses)
    assert alone.returncode == 0 and re.search(r"^\s+#\d+\s+0x[0-9a-f]+ in ", alone.stdout, re.M), alone.stdout
    for p in (a, b):
        running_untraced(p.pid)


def test_signal_to_a_dump_of_several_lets_every_process_go(tmp_path, cleanup):
    """SIGTERM to tuidbg while its workers hold processes 50,000 frames deep: all let go."""
    procs = [_start([DEEP, 50000, tmp_path / f"d{i}.json"], tmp_path / f"d{i}.json", cleanup) for i in range(3)]
    for _attempt in range(5):
        dumper = subprocess.Popen(tuidbg_cmd("dump", *(str(p.pid) for p in procs)), env=_env(), text=True,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        held = False
        deadline = time.monotonic() + 60
        while dumper.poll() is None and time.monotonic() < deadline:
            tracers = {tracer_pid(p.pid) for p in procs} - {0}
            if tracers:
                held = True
                assert dumper.pid not in tracers  # (held by its workers)
                dumper.send_signal(signal.SIGTERM)
                break
            time.sleep(0.0005)
        _out, err = dumper.communicate(timeout=60)
        if held:
            break
    else:
        pytest.fail("the dump never held a process long enough to be signalled")
    assert dumper.returncode == -signal.SIGTERM and "Traceback" not in err, (dumper.returncode, err)
    wait_released(*(p.pid for p in procs))  # (the dump's workers let go as they end, after the dump)
    for p in procs:
        assert p.poll() is None
        running_untraced(p.pid)


def test_a_worker_killed_mid_read_costs_only_its_process(tmp_path, cleanup):
    """SIGKILL to the worker holding a process: that process is let go (by the kernel) and named
    on stderr; the other worker reads the rest."""
    procs = [_start([DEEP, 50000, tmp_path / f"d{i}.json"], tmp_path / f"d{i}.json", cleanup) for i in range(3)]
    for _attempt in range(5):
        dumper = subprocess.Popen(tuidbg_cmd("dump", "--jobs", "2", *(str(p.pid) for p in procs)), env=_env(),
                                  text=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        victim = None
        deadline = time.monotonic() + 60
        while dumper.poll() is None and time.monotonic() < deadline and victim is None:
            for p in procs:
                worker = tracer_pid(p.pid)
                if worker:
                    os.kill(worker, signal.SIGKILL)
                    victim = p.pid
                    break
            time.sleep(0.0005)
        out, err = dumper.communicate(timeout=120)
        if victim is not None:
            break
    else:
        pytest.fail("the dump never held a process long enough for its worker to be killed")
    assert dumper.returncode == 2 and "Traceback" not in err, (dumper.returncode, err)
    assert err == f"tuidbg: process {victim}: its reader was killed by signal 9\n", err
    assert out.startswith("2 processes, 4 threads, on "), out[:200]  # (deep_sleep.py: 2 threads each)
    assert f"  {victim}: not read: process {victim}: its reader was killed by signal 9" in out
    wait_released(*(p.pid for p in procs))
    for p in procs:
        running_untraced(p.pid)


# ---------------------------------------------------------------------------------------------
# torchrun: one rank skips the barrier


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.torch
@pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="this machine has no .venv-torch (scripts/setup.sh builds it)")
def test_torchrun_odd_rank_first(tmp_path):
    odd = 1
    env = dict(os.environ, OMP_NUM_THREADS="1")
    launcher = subprocess.Popen(
        [str(TORCH_PYTHON), "-m", "torch.distributed.run", "--nproc-per-node", "3", "--master-addr", "127.0.0.1",
         "--master-port", str(_free_port()), str(BARRIER), str(tmp_path), str(odd)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:
        wait_for_files([tmp_path / f"rank-{r}.json" for r in range(3)], [launcher], timeout=240)
        ranks = {r: read_json(tmp_path / f"rank-{r}.json")["pid"] for r in range(3)}

        doc = _dump_json("--children", launcher.pid)
        procs = {p["pid"]: p for p in doc["processes"]}
        assert set(procs) == {launcher.pid, *ranks.values()}
        assert procs[launcher.pid]["env"] == {}
        for r, pid in ranks.items():
            assert procs[pid]["env"] == {"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "3"}
            assert procs[pid]["ppid"] == launcher.pid
        assert _main_python(procs[ranks[odd]])[:2] == [("skip_barrier", line_of(BARRIER, "skip_barrier")),
                                                       ("step", line_of(BARRIER, "call_skip"))]
        for r in (0, 2):
            frames = _main_python(procs[ranks[r]])
            assert frames[0][0] == "barrier" and ("step", line_of(BARRIER, "barrier")) in frames, frames

        others = f"{ranks[0]} (rank 0) {ranks[2]} (rank 2)"
        for args in (["--children", launcher.pid], list(ranks.values())):
            res = run_tuidbg("dump", *map(str, args), timeout=120)
            assert res.returncode == 0, res.stderr
            heads = _heads(res.stdout)
            # the odd rank first, alone; the two others together
            assert heads[0] == f"== 1 process: {ranks[odd]} (rank {odd}), main thread", heads
            assert f"== 2 processes: {others}" in heads, heads
            block = res.stdout.split(heads[0] + "\n", 1)[1]
            assert block.startswith(f"    skip_barrier ({BARRIER}:{line_of(BARRIER, 'skip_barrier')})\n")
            assert f"rank {odd}/3 local {odd}" in res.stdout
        for pid in procs:
            running_untraced(pid)
    finally:
        kill_tree(launcher)


# ---------------------------------------------------------------------------------------------
# Several nodes: --merge


needs_unshare = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                                   reason="needs root and unshare for a second node (network and UTS namespace)")

NODE2 = """
hostname node2
"$PY" "$PROG" 2 "$READY" </dev/null >/dev/null 2>&1 & p=$!
i=0; while [ ! -e "$READY" ]; do sleep 0.05; i=$((i+1)); [ $i -gt 1200 ] && exit 9; done; sleep 0.3
"$@" dump --json $p > "$OUT"; rc=$?
kill $p; exit $rc
"""


@needs_unshare
def test_merge_dumps_of_two_nodes(tmp_path, cleanup):
    here = _start([SLEEPERS, 2, tmp_path / "here.json"], tmp_path / "here.json", cleanup)
    mine = tmp_path / "node1.json"
    res = run_tuidbg("dump", "--json", str(here.pid))
    assert res.returncode == 0, res.stderr
    mine.write_text(res.stdout)
    # "node2": its own network (loopback only) and host name, a program and a dump made there
    theirs = tmp_path / "node2.json"
    env = dict(_env(), PY=str(DEBIAN_PY311), PROG=str(SLEEPERS), READY=str(tmp_path / "there.json"), OUT=str(theirs))
    res = subprocess.run(["unshare", "-n", "-u", "sh", "-c", NODE2, "sh", *tuidbg_cmd()], env=env, capture_output=True,
                         text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    there = read_json(theirs)["processes"][0]
    assert there["host"] == "node2" and there["pid"] != here.pid

    doc = _dump_json("--merge", mine, theirs)
    assert [(p["host"], p["pid"]) for p in doc["processes"]] == [(HOST, here.pid), ("node2", there["pid"])]
    assert doc["processes"][1] == there

    res = run_tuidbg("dump", "--merge", str(mine), str(theirs))
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert res.stdout.startswith("2 processes, 6 threads, on 2 hosts:\n")
    assert f"{HOST}:{here.pid}: {DEBIAN_PY311} {SLEEPERS} 2 " in res.stdout
    # the same program on both nodes: each stack once, with both processes
    heads = _heads(res.stdout)
    assert len(heads) == 3 and all(h.startswith(f"== 2 processes: {HOST}:{here.pid} node2:{there['pid']}")
                                   for h in heads), heads
    assert f"    sleeper_b ({SLEEPERS}:{line_of(SLEEPERS, 'wait_b')})" in res.stdout
    running_untraced(here.pid)


def test_merge_bad_files(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"format": "tuidbg-dump", "version": 1, "processes": []}))
    check_error(run_tuidbg("dump", "--merge", str(good), str(tmp_path / "missing.json")),
                f"{tmp_path / 'missing.json'}: cannot read it (No such file or directory)")
    bad = tmp_path / "bad.json"
    for text, why in [("{not json", "not JSON"),
                      ("\xff\xfe", "not JSON"),
                      ('{"processes": []}', "not a tuidbg dump (made with tuidbg dump --json)"),
                      ('{"format": "tuidbg-dump", "version": 7, "processes": []}', "a tuidbg dump of version 7; this tuidbg reads versions 1, 2"),
                      ('{"format": "tuidbg-dump", "version": 1, "processes": [{"pid": 1, "threads": [{}]}]}',
                       "process 1 of the dump, thread 1 has no 'frames'")]:
        bad.write_bytes(text.encode("latin-1"))
        check_error(run_tuidbg("dump", "--merge", str(good), str(bad)), f"{bad}: {why}")
    os.chmod(bad, 0)
    if os.geteuid() != 0:  # (root reads it anyway)
        check_error(run_tuidbg("dump", "--merge", str(bad)), f"{bad}: cannot read it (Permission denied)")
    check_error(run_tuidbg("dump", "--merge", str(good), "123"), "123: cannot read it")
    check_error(run_tuidbg("dump", "--merge"), "--merge: expected at least one argument")
    check_error(run_tuidbg("dump", str(os.getpid()), "--merge", str(good)), "--merge reads dumps from files: no PIDs")


def test_exited_processes_are_listed_kept_by_merge_and_no_error(tmp_path):
    """A descendant that ended between the listing and its read (``dump --children``) is listed as exited:
    in the text (one line), kept by ``--merge``, never an error (exit 0)."""
    from tuidbg import dumpreport as R

    proc = {"pid": 11, "host": "n1", "threads": [{"id": "1", "tid": 11, "frames": []}]}
    one = tmp_path / "one.json"
    two = tmp_path / "two.json"
    one.write_text(json.dumps(R.document([proc], [], [{"pid": 4102, "host": "n1"}])))
    two.write_text(json.dumps(R.document([dict(proc, pid=12, host="n2")], [], [{"pid": 4103, "host": "n2"}])))
    merged = R.merge([str(one), str(two)])
    assert merged["exited"] == [{"pid": 4102, "host": "n1"}, {"pid": 4103, "host": "n2"}] and "errors" not in merged
    assert "exited before they were read: n1:4102 n2:4103" in R.format_text(merged)
    r = run_tuidbg("dump", "--merge", str(one), str(two))
    assert r.returncode == 0 and "exited before they were read: n1:4102 n2:4103" in r.stdout, (r.returncode, r.stderr)
