"""``tuidbg dump``'s asyncio tasks (tuidbg/gdbext/cpython_tasks.py, tuidbg/dumptasks.py): every task
of a real asyncio program on every interpreter, what it awaits and who awaits it, the task running at
the stop, the same through gdb, --children, --merge, 10,000 tasks; and nothing of the program runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import requires_gdb
from helpers import REPO, run_tuidbg
from pystack_helpers import PY_PROGRAMS, env_with, interpreter_params, resolve, running_untraced

pytestmark = [pytest.mark.slow]

DEMO = PY_PROGRAMS / "tasks_demo.py"
BASE = ["agen-consumer", "awaits-task", "gather-0", "gather-1", "gather-2", "leaf-task", "parent-gather",
        "stuck-waiter"]


def start(interp, tmp_path: Path, cleanup, *args: str, timeout: float = 120) -> tuple[subprocess.Popen, dict]:
    """tasks_demo.py running, every task waiting (with --block: 'blocker' blocking the loop)."""
    ready = tmp_path / "ready.json"
    proc = subprocess.Popen([str(interp.exe), str(DEMO), str(ready), *args], env=env_with(interp.env),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    cleanup.append(proc)
    want = Path(str(ready) + ".blocked") if "--block" in args else ready
    deadline = time.monotonic() + timeout
    while not want.exists():
        if proc.poll() is not None:
            raise AssertionError(f"tasks_demo.py exited: {proc.stderr.read().decode()[-2000:]}")
        assert time.monotonic() < deadline, "tasks_demo.py did not get ready"
        time.sleep(0.02)
    info = json.loads(ready.read_text())
    if "--block" in args:
        info["calls"] = int(want.read_text())
    return proc, info


def calls_now(proc, ready: Path) -> int:
    """How many times the program's tasks were asked anything from Python code until now."""
    out = Path(str(ready) + ".calls")
    out.unlink(missing_ok=True)
    os.kill(proc.pid, signal.SIGUSR1)
    deadline = time.monotonic() + 30
    while not out.exists() or not out.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, "the program did not answer SIGUSR1"
        time.sleep(0.02)
    return int(out.read_text())


def dump(*args: str, timeout: float = 300) -> dict:
    res = run_tuidbg("dump", "--json", *args, timeout=timeout)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def by_name(report: dict) -> dict[str, dict]:
    return {t["name"]: t for t in report["tasks"]}


def chain(task: dict) -> list[tuple[str, int]]:
    """A task's coroutines, outermost first: (qualified name, line)."""
    return [(f["qualname"] or f["function"], f["line"]) for f in reversed(task["frames"])]


def check_demo(report: dict, info: dict, minor: int) -> None:
    """The tasks of tasks_demo.py, waiting where the program says."""
    m = info["marks"]
    tasks = by_name(report)
    assert sorted(tasks) == info["names"]
    names = {t["id"]: t["name"] for t in report["tasks"]}
    assert all(t["state"] == "pending" and not t.get("error") for t in tasks.values())
    # stuck_waiter -> wait_for_config -> Event.wait, the Event's future at the end
    sw = tasks["stuck-waiter"]
    assert chain(sw)[:2] == [("stuck_waiter", m["stuck_waiter"]), ("wait_for_config", m["wait_config"])]
    assert chain(sw)[2][0] == ("Event.wait" if minor >= 11 else "wait")
    assert sw["frames"][0]["file"].endswith("asyncio/locks.py")
    assert sw["awaiting"]["kind"] == "future" and sw["awaiting"]["state"] == "pending"
    assert sw["awaited_by"] == []
    # a gather of three tasks
    pg = tasks["parent-gather"]
    assert chain(pg) == [("parent_gather", m["gather"])]
    assert pg["awaiting"]["type"] == "_GatheringFuture"
    for i in range(3):
        g = tasks[f"gather-{i}"]
        assert [names[a] for a in g["awaited_by"]] == ["parent-gather"]
        assert chain(g)[0] == ("sleeper", m["sleeper"]) and chain(g)[1][0] == "sleep"
    # an async generator, asleep inside it
    ag = tasks["agen-consumer"]
    assert chain(ag)[:2] == [("agen_consumer", m["agen_consumer"]), ("ticker", m["ticker"])]
    assert chain(ag)[2][0] == "sleep"
    # a task awaiting another task
    at, leaf = tasks["awaits-task"], tasks["leaf-task"]
    assert chain(at) == [("awaits_task", m["awaits_task"])]
    assert at["awaiting"] == {"kind": "task", "type": "CountingTask", "name": "leaf-task", "id": leaf["id"]}
    assert [names[a] for a in leaf["awaited_by"]] == ["awaits-task"]
    assert chain(leaf)[0] == ("leaf", m["leaf"])
    # a TaskGroup (3.11+)
    if minor >= 11:
        ptg = tasks["parent-tg"]
        assert chain(ptg)[0] == ("parent_tg", m["tg"]) and chain(ptg)[1][0].startswith("TaskGroup.")
        for i in range(2):
            t = tasks[f"tg-{i}"]
            assert [names[a] for a in t["awaited_by"]] == ["parent-tg"]
            assert chain(t)[0] == ("tg_child", m["tg_child"])
    else:
        assert "parent-tg" not in tasks


@pytest.mark.parametrize("name", interpreter_params())
def test_tasks_on_every_interpreter(build_dir, tmp_path, cleanup, name):
    interp = resolve(name, build_dir)
    proc, info = start(interp, tmp_path, cleanup)
    report = dump(str(proc.pid))["processes"][0]
    running_untraced(proc.pid)
    assert report["reader"] == "memory" and "tasks_error" not in report
    check_demo(report, info, interp.minor)
    main = by_name(report)[info["main"]]
    assert chain(main)[0][1] == info["marks"]["main"]
    assert not any(t["current"] or t["running"] for t in report["tasks"])  # (the loop is idle)
    # nothing of the program ran: no task was asked anything from Python
    assert calls_now(proc, tmp_path / "ready.json") == info["calls"]


@pytest.mark.parametrize("name", interpreter_params(["debian-3.11", "pyenv-3.9", "cpython-3.14t"]))
def test_the_running_task_and_the_text(build_dir, tmp_path, cleanup, name):
    interp = resolve(name, build_dir)
    proc, info = start(interp, tmp_path, cleanup, "--block")
    report = dump(str(proc.pid))["processes"][0]
    tasks = by_name(report)
    b = tasks["blocker"]
    assert b["current"] and b["running"] and b["thread"] == "1" and b["tid"] == proc.pid
    # its frames are the main thread's, down to the task's coroutine
    m = info["marks"]
    assert chain(b) == [("blocking_task", m["blocking_task"]), ("blocker", m["blocker"])]
    where = lambda frames: [(f["qualname"], f["file"], f["line"]) for f in frames]  # noqa: E731
    assert where(report["threads"][0]["frames"][:2]) == where(b["frames"])
    main = tasks[info["main"]]
    assert main["awaiting"]["name"] == "blocker" and b["awaited_by"] == [main["id"]]
    assert sum(t["current"] for t in report["tasks"]) == 1

    res = run_tuidbg("dump", str(proc.pid), timeout=120)
    assert res.returncode == 0, res.stderr
    text = res.stdout
    assert f"Tasks (asyncio): {len(info['names']) + 1} tasks" in text
    assert "Task 'blocker' [pending, running in thread 1 (main)]:" in text
    assert f"    blocker ({DEMO}:{m['blocker']})" in text
    assert "Task 'stuck-waiter' [pending]:" in text
    assert f"3 tasks: 'gather-0' 'gather-1' 'gather-2' [pending]:" in text
    assert "    (awaiting task 'leaf-task')" in text
    tree = text[text.index("Who awaits whom:"):].splitlines()
    assert "  'parent-gather'" in tree and "  └── 'gather-0' 'gather-1' 'gather-2'" in tree
    assert f"  '{info['main']}'" in tree and "  └── 'blocker'" in tree
    assert calls_now(proc, tmp_path / "ready.json") == info["calls"]
    running_untraced(proc.pid)


@requires_gdb
@pytest.mark.parametrize("name", interpreter_params(["debian-3.11", "cpython-3.14"]))
def test_the_same_tasks_through_gdb(build_dir, tmp_path, cleanup, name):
    interp = resolve(name, build_dir)
    proc, info = start(interp, tmp_path, cleanup, "--block")
    fast = dump(str(proc.pid))["processes"][0]
    slow = dump("--via-gdb", str(proc.pid))["processes"][0]
    running_untraced(proc.pid)
    assert slow["reader"] == "gdb"
    assert fast["tasks"] == slow["tasks"]
    assert calls_now(proc, tmp_path / "ready.json") == info["calls"]


def test_no_asyncio_no_tasks(build_dir, tmp_path, cleanup):
    interp = resolve("debian-3.11", build_dir)
    ready = tmp_path / "ready.json"
    proc = subprocess.Popen([str(interp.exe), str(PY_PROGRAMS / "sleepers.py"), "2", str(ready)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    cleanup.append(proc)
    while not ready.exists():
        assert proc.poll() is None
        time.sleep(0.02)
    report = dump(str(proc.pid))["processes"][0]
    assert "tasks" not in report and "tasks_error" not in report
    res = run_tuidbg("dump", str(proc.pid))
    assert "Tasks" not in res.stdout


def test_children_and_merge_group_tasks(build_dir, tmp_path, cleanup):
    """Two ranks of a job, each with 200 tasks in the same await: --children reads both, --merge of
    their dumps groups the 400 as one."""
    interp = resolve("debian-3.11", build_dir)
    readies = [tmp_path / f"ready{i}.json" for i in range(2)]
    launcher = subprocess.Popen(
        [str(interp.exe), "-c",
         "import subprocess, sys; ps = [subprocess.Popen([sys.executable, *a.split('|')]) for a in sys.argv[1:]]; "
         "[p.wait() for p in ps]",
         *(f"{DEMO}|{r}|--extra|200" for r in readies)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
    cleanup.append(launcher)
    try:
        deadline = time.monotonic() + 120
        while not all(r.exists() for r in readies):
            assert launcher.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        pids = [json.loads(r.read_text())["pid"] for r in readies]
        doc = dump("--children", str(launcher.pid))
        procs = {p["pid"]: p for p in doc["processes"]}
        assert set(pids) <= set(procs)
        assert "tasks" not in procs[launcher.pid]  # (the launcher has no asyncio)
        for pid in pids:
            assert len(procs[pid]["tasks"]) == 200 + len(BASE) + 3 + 1  # (+ parent-tg, tg-0/1, main)
        files = []
        for i, pid in enumerate(pids):
            f = tmp_path / f"rank{i}.json"
            f.write_text(json.dumps(dump(str(pid))))
            files.append(str(f))
        merged = run_tuidbg("dump", "--merge", *files)
        assert merged.returncode == 0, merged.stderr
        text = merged.stdout
        assert f"== 406 tasks in 2 processes: {pids[0]} (203 tasks) {pids[1]} (203 tasks): 'gather-0' 'gather-1'" in text
        assert "Who awaits whom in" in text
        assert json.loads(run_tuidbg("dump", "--json", "--merge", *files).stdout)["version"] == 2
    finally:
        os.killpg(launcher.pid, signal.SIGKILL)


def test_10000_tasks(build_dir, tmp_path, cleanup):
    interp = resolve("debian-3.11", build_dir)
    proc, info = start(interp, tmp_path, cleanup, "--extra", "10000")
    report = dump(str(proc.pid))["processes"][0]
    assert len(report["tasks"]) == len(info["names"]) == 10000 + 12
    idle = [t for t in report["tasks"] if t["name"].startswith("idle-")]
    assert len(idle) == 10000 and all(chain(t)[0] == ("sleeper", info["marks"]["sleeper"]) for t in idle)
    res = run_tuidbg("dump", str(proc.pid), timeout=300)
    assert "10003 tasks: 'gather-0' 'gather-1' 'gather-2' 'idle-0' 'idle-1' 'idle-2' 'idle-3' 'idle-4' … (+9995)" \
        in res.stdout
    assert calls_now(proc, tmp_path / "ready.json") == info["calls"]
    running_untraced(proc.pid)


def test_old_dumps_still_merge(tmp_path):
    """A dump of version 1 (before tasks) is read by --merge."""
    old = {"format": "tuidbg-dump", "version": 1, "processes": [
        {"pid": 7, "host": "a", "cmdline": ["x"], "threads": [{"id": "1", "tid": 7, "frames": []}]}]}
    f = tmp_path / "old.json"
    f.write_text(json.dumps(old))
    res = run_tuidbg("dump", "--merge", str(f))
    assert res.returncode == 0 and "Tasks" not in res.stdout
    bad = dict(old, version=3)
    f.write_text(json.dumps(bad))
    res = run_tuidbg("dump", "--merge", str(f))
    assert res.returncode == 2 and "reads versions 1, 2" in res.stderr


def test_uvloop(build_dir, tmp_path, cleanup):
    """A loop run by uvloop: its tasks are _asyncio.Task too, read the same way (this interpreter, which
    has uvloop: the test extras)."""
    pytest.importorskip("uvloop", reason="uvloop is not installed (the test extras: pip install -e .[test])")
    from pystack_helpers import Interp

    interp = Interp("pyenv-3.11", Path(sys.executable), {}, "dwarf")
    proc, info = start(interp, tmp_path, cleanup, "--uvloop", "--block")
    report = dump(str(proc.pid))["processes"][0]
    assert "tasks_note" not in report
    check_demo(report, {**info, "names": sorted(info["names"] + ["blocker"])}, sys.version_info[1])
    b = by_name(report)["blocker"]
    assert b["running"] and b["current"] and b["thread"] == "1"
    assert calls_now(proc, tmp_path / "ready.json") == info["calls"]


def test_tasks_of_another_class_are_named(build_dir, tmp_path, cleanup):
    """Tasks that are not _asyncio.Task (asyncio's pure-Python Task) are not read, and the dump says so."""
    interp = resolve("debian-3.11", build_dir)
    proc, info = start(interp, tmp_path, cleanup, "--pytask")
    report = dump(str(proc.pid))["processes"][0]
    n = len(info["names"]) - 1  # (the main task is asyncio.run's own)
    assert report["tasks_note"] == f"{n} tasks not read: not _asyncio.Task (Task: {n})"
    assert [t["name"] for t in report["tasks"]] == [info["main"]]
    res = run_tuidbg("dump", str(proc.pid))
    assert f"  {proc.pid}: {n} tasks not read: not _asyncio.Task (Task: {n})" in res.stdout


@pytest.mark.parametrize("name", interpreter_params(["pyenv-3.12", "pyenv-3.13", "cpython-3.14"]))
def test_an_eager_task(build_dir, tmp_path, cleanup, name):
    """3.12+: a task started eagerly and blocking before it ever waits is in asyncio's eager tasks only."""
    interp = resolve(name, build_dir)
    proc, info = start(interp, tmp_path, cleanup, "--block", "--eager")
    report = dump(str(proc.pid))["processes"][0]
    # (named after its factory returns, which it never does here: 3.12 names it later, so "Task-N")
    b = by_name(report).get("blocker") or next(t for t in report["tasks"] if t["current"])
    assert b["running"] and b["current"] and sum(t["current"] for t in report["tasks"]) == 1
    m = info["marks"]
    assert chain(b) == [("blocking_task", m["blocking_task"]), ("blocker", m["blocker"])]
    # the main task runs too, below it on the same thread: its frames end where the eager task's begin
    main = by_name(report)[info["main"]]
    assert main["running"] and not main["current"]
    assert chain(main)[0] == ("main", m["main_block"]) and "blocker" not in [n for n, _ in chain(main)]
    assert calls_now(proc, tmp_path / "ready.json") == info["calls"]
