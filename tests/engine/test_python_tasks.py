"""The asyncio tasks' view-model (engine/python/tasks.py and the task parts of engine/python/view.py):
the tasks from the walker's dict, the tree by who awaits whom, the task a stop is in, a task's coroutines
shown in place of the thread's stack. Pure functions over states built by hand."""

from __future__ import annotations

from tuidbg.engine.python import view as V
from tuidbg.engine.python.model import PyFrame, PyStack, PyThread
from tuidbg.engine.python.tasks import PyTasks, TaskView, tasks_from_dict, tree
from tuidbg.engine.state import DebuggerState, ProcessState, StopInfo


def _task(addr, name, frames=(), awaited_by=(), **kw):
    return {"addr": addr, "name": name, "state": "pending", "current": False, "executing": False, "loop": 1,
            "tid": "1", "lwp": 10, "frames": list(frames), "awaiting": None, "awaited_by": list(awaited_by),
            "error": None, **kw}


ROWS = {
    "status": "ok", "python": "3.11.2", "note": None, "available": True, "tasks": [
        _task(1, "main", [["main", "main", "/a.py", 5, 100, 1000]],
              awaiting={"kind": "task", "addr": 3, "name": "w-10", "type": "Task"}),
        _task(3, "w-10", [["work", "work", "/a.py", 9, 101, 1001]], awaited_by=[1]),
        _task(2, "w-2", [["work", "work", "/a.py", 9, 101, 1002]], awaited_by=[1],
              awaiting={"kind": "future", "addr": 9, "type": "_asyncio.Future", "state": "pending"}),
        _task(4, "loop-a", awaited_by=[5]),
        _task(5, "loop-b", awaited_by=[4]),
        _task(6, "runner", [["run", "run", "/a.py", 20, 102, 1003]], executing=True, current=True),
    ]}


def test_tasks_from_the_walkers_dict_and_their_tree():
    tasks = tasks_from_dict(ROWS, 7)
    assert tasks.full and tasks.generation == 7
    assert [t.name for t in tasks.tasks] == ["loop-a", "loop-b", "main", "runner", "w-2", "w-10"]  # natural order
    w2 = tasks.task(2)
    assert w2.awaiting == "_asyncio.Future (pending)" and w2.innermost.name == "work" and w2.innermost.frame_addr == 1002
    assert tasks.task(1).awaiting == "task 'w-10'" and tasks.task(1).awaiting_task == 3
    assert tasks.current == ((6, "runner", 0),)
    rows = [(t.name, depth) for t, depth in tree(tasks)]
    # main over the two it awaits; runner alone; the cycle of loop-a and loop-b cut where it closes
    assert ("main", 0) in rows and rows[rows.index(("main", 0)) + 1:][:2] == [("w-2", 1), ("w-10", 1)]
    assert ("runner", 0) in rows
    assert rows[-2:] == [("loop-a", 0), ("loop-b", 1)]
    cur = tasks_from_dict({"status": "ok", "current": [{"addr": 6, "name": "runner", "frame": 1003}]})
    assert not cur.full and cur.current == ((6, "runner", 1003),)
    assert tasks_from_dict({"status": "error", "reason": "boom"}).reason == "boom"


def _stopped(frames, tasks=None, view=None, tid="1"):
    st = DebuggerState().evolve(
        process=ProcessState.STOPPED, generation=3, current_thread=tid, selected_thread=tid, refreshed=True,
        stop=StopInfo(reason="signal-received", thread_id=tid, signal_name="SIGINT"))
    st = st.with_python(stack=PyStack(status="ok", python="3.11.2", threads=(PyThread(tid=tid, frames=frames),)))
    if tasks is not None:
        st = st.with_python(tasks=tasks)
    if view is not None:
        st = st.with_python(task_view=view)
    return st


LIVE = (PyFrame(index=0, function="run", file="/a.py", line=20, native_level=0, frame_addr=1003),
        PyFrame(index=1, function="_run_once", file="/asyncio/base_events.py", line=1, native_level=0, frame_addr=7))


def test_the_task_a_stop_is_in():
    cur = tasks_from_dict({"status": "ok", "current": [{"addr": 6, "name": "runner", "frame": 1003}]})
    assert V.task_here(_stopped(LIVE, cur)) == "runner"
    other = tasks_from_dict({"status": "ok", "current": [{"addr": 6, "name": "runner", "frame": 555}]})
    assert V.task_here(_stopped(LIVE, other)) is None  # (its coroutine is on no frame of this thread)
    assert V.task_here(_stopped(LIVE)) is None
    assert V.task_here(_stopped(LIVE, tasks_from_dict(ROWS))) == "runner"  # (all tasks read: the executing one)


def test_a_task_shown_in_place_of_the_threads_stack():
    tasks = tasks_from_dict(ROWS)
    w2 = tasks.task(2)
    st = _stopped(LIVE, tasks, TaskView("1", w2))
    pt = V.python_thread(st)
    assert [f.function for f in pt.frames] == ["work"] and pt is V.python_thread(st)  # (the same object)
    assert V.python_thread(st, tasks=False).frames == LIVE
    assert V.task_here(st) == "w-2" and V.task_key(st) == 2
    # entering it selects its innermost coroutine; leaving it, the thread's own selection rules again
    sel = V.next_selection(st, V.PySelection(key=(3, "1"), index=1))
    assert sel.index == 0 and sel.key == (3, "1", 2)
    back = V.next_selection(_stopped(LIVE, tasks), sel)
    assert back.key == (3, "1")
    # chosen in another thread: not shown in this one
    assert V.shown_task(_stopped(LIVE, tasks, TaskView("2", w2))) is None
