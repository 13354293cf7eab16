"""A program's asyncio tasks at a stop, as frozen values (read from memory: ``tuidbg.engine.pytasks``).

- ``PyTask``: one task: its name, state, the coroutines it is suspended in (``frames``, innermost
  first, as a thread's Python frames), what it awaits and which tasks await it.
- ``PyTasks``: the tasks of a stop; ``full`` False when only the tasks the event loops run now were
  read (``current``: what the status line needs at every stop, cheaply).
- ``TaskView``: a task whose coroutines the Python frames pane shows instead of a thread's stack.
- ``tree``: the tasks by who awaits whom (the Tasks pane's rows).

No I/O; below ``tuidbg.engine.state`` (the state holds these).
"""

from __future__ import annotations

from dataclasses import dataclass

from tuidbg.engine.python.model import PyFrame


@dataclass(frozen=True)
class PyTask:
    addr: int
    name: str
    state: str  # "pending", "done" or "cancelled"
    frames: tuple[PyFrame, ...] = ()
    current: bool = False  # the task its event loop runs now
    executing: bool = False  # its coroutine runs on a thread at this stop (its frames are that thread's)
    tid: str | None = None  # gdb's thread: the one it runs on, or whose event loop it belongs to
    awaiting: str = ""  # what the innermost coroutine awaits, in words ("Future (pending)", "task 'x'")
    awaiting_task: int = 0  # the task it awaits, if it awaits one
    awaited_by: tuple[int, ...] = ()
    error: str | None = None

    @property
    def innermost(self) -> PyFrame | None:
        return self.frames[0] if self.frames else None


@dataclass(frozen=True)
class PyTasks:
    status: str = "ok"  # "ok" or "error"
    reason: str = ""
    full: bool = False
    tasks: tuple[PyTask, ...] = ()
    current: tuple[tuple[int, str, int], ...] = ()  # (task, name, its coroutine's frame address)
    note: str | None = None  # why there are none (no asyncio, an empty registry)
    generation: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def task(self, addr: int) -> PyTask | None:
        return next((t for t in self.tasks if t.addr == addr), None)


@dataclass(frozen=True)
class TaskView:
    """The task whose coroutines the Python frames pane shows, chosen in thread ``tid`` at a stop."""

    tid: str | None
    task: PyTask


def _frames(rows) -> tuple[PyFrame, ...]:
    return tuple(PyFrame(index=i, function=fn or "?", qualname=qn, file=fi or "?", line=line if line >= 0 else None,
                         code_addr=code, frame_addr=addr)
                 for i, (fn, qn, fi, line, code, addr) in enumerate(rows))


def _awaiting(aw: dict | None) -> str:
    if not aw:
        return ""
    if aw.get("kind") == "task":
        return f"task '{aw.get('name')}'"
    return str(aw.get("type") or "?") + (f" ({aw['state']})" if aw.get("state") else "")


def tasks_from_dict(res: dict, generation: int = 0) -> PyTasks:
    """A PyTasks from ``-tuidbg-pytasks``'s result (every task, or ``--current``'s)."""
    if res.get("status") == "no-python":
        return PyTasks(note=str(res.get("reason") or "no Python"), generation=generation)
    if res.get("status") != "ok":
        return PyTasks(status="error", reason=str(res.get("reason") or "unknown error"), generation=generation)
    if "current" in res:
        cur = tuple((int(c["addr"]), str(c["name"]), int(c.get("frame") or 0)) for c in res["current"])
        return PyTasks(current=cur, generation=generation)
    tasks = []
    for t in res.get("tasks") or []:
        aw = t.get("awaiting")
        tasks.append(PyTask(
            addr=int(t["addr"]), name=str(t.get("name") or "?"), state=str(t.get("state") or "?"),
            frames=_frames(t.get("frames") or ()), current=bool(t.get("current")), executing=bool(t.get("executing")),
            tid=str(t["tid"]) if t.get("tid") is not None else None, awaiting=_awaiting(aw),
            awaiting_task=int(aw.get("addr") or 0) if aw and aw.get("kind") == "task" else 0,
            awaited_by=tuple(int(a) for a in t.get("awaited_by") or ()), error=t.get("error"),
        ))
    tasks.sort(key=lambda t: natural(t.name))
    cur = tuple((t.addr, t.name, 0) for t in tasks if t.current)
    return PyTasks(full=True, tasks=tuple(tasks), current=cur, note=res.get("note"), generation=generation)


def natural(name: str) -> tuple:
    """A sort key that puts 'idle-2' before 'idle-10'."""
    import re

    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", name) if p)


def tree(tasks: PyTasks) -> list[tuple[PyTask, int]]:
    """(task, depth) rows: every task not awaited by another at depth 0, the tasks each awaits
    under it (a task awaited by several is shown under each; a cycle is cut where it closes)."""
    by_addr = {t.addr: t for t in tasks.tasks}
    kids: dict[int, list[PyTask]] = {}
    for t in tasks.tasks:
        for a in t.awaited_by:
            if a in by_addr:
                kids.setdefault(a, []).append(t)
    out: list[tuple[PyTask, int]] = []
    shown: set[int] = set()

    def walk(t: PyTask, depth: int, path: frozenset[int]) -> None:
        out.append((t, depth))
        shown.add(t.addr)
        for k in kids.get(t.addr, ()):
            if k.addr not in path:
                walk(k, depth + 1, path | {k.addr})

    for t in tasks.tasks:
        if not any(a in by_addr for a in t.awaited_by):
            walk(t, 0, frozenset([t.addr]))
    for t in tasks.tasks:  # (in a cycle of awaits: no root leads there)
        if t.addr not in shown:
            walk(t, 0, frozenset([t.addr]))
    return out
