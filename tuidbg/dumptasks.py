"""The asyncio tasks in ``tuidbg dump``'s report: the schema's ``tasks`` (from the walker's
``cpython_tasks.tasks_dict``, the same for the direct reader and gdb's), identical task stacks
grouped across processes (as ``dumpreport`` groups threads), and the text's "Tasks" section: each
distinct task stack once with the tasks that share it, then who awaits whom.

A task in the JSON (``tasks`` of a process; absent when the program has not imported asyncio)::

    {"id": "0x7f..", "name": "stuck-waiter", "state": "pending",   # or "done", "cancelled"
     "current": false,            # the task its event loop is running now
     "running": false,            # its coroutine runs on a thread now (its frames are that thread's)
     "thread": "1", "tid": 4101,  # the thread it runs on, or whose event loop it belongs to (or null)
     "frames": [...],             # innermost first, as a thread's Python frames
     "awaiting": {"kind": "future", "type": "_asyncio.Future", "state": "pending", "id": "0x.."},
                                  # or {"kind": "task", "name": "leaf", "id": ..}, or null
     "awaited_by": ["0x7f.."],    # the tasks that await it (ids)
     "error": "..."}              # (only when it could not be read whole)

``tasks_error`` (a process's) says why its tasks could not be read; ``tasks_note`` what was not read
(tasks of another class than ``_asyncio.Task``: asyncio's pure-Python one, a loop's own).
"""

from __future__ import annotations

from tuidbg import dumpreport as R


def entries(d: dict, threads: list[dict]) -> list[dict]:
    """The schema's tasks from ``cpython_tasks.tasks_dict`` (``threads``: the report's, for their ids)."""
    ids = {t.get("tid"): t.get("id") for t in threads}
    out = []
    frames: dict[tuple, dict] = {}  # (many tasks wait at the same lines: one dict for each, shared)

    def frame(fn, qn, fi, line, _code, _addr) -> dict:
        key = (fn, qn, fi, line)
        f = frames.get(key)
        if f is None:
            f = frames[key] = {"kind": "python", "function": fn or "?", "qualname": qn, "file": fi or "?",
                               "line": line if line >= 0 else None, "entry": False, "native_level": None}
        return f

    for t in d.get("tasks") or []:
        aw = t.get("awaiting")
        awaiting = None
        if aw:
            awaiting = {"kind": aw.get("kind"), "type": aw.get("type"), "id": f"{aw.get('addr', 0):#x}"}
            if aw.get("name") is not None:
                awaiting["name"] = aw["name"]
            if aw.get("state") is not None:
                awaiting["state"] = aw["state"]
        entry = {
            "id": f"{t['addr']:#x}", "name": t.get("name"), "state": t.get("state"), "current": bool(t.get("current")),
            "running": bool(t.get("executing")), "thread": ids.get(t.get("lwp")), "tid": t.get("lwp"),
            "frames": [frame(*row) for row in t.get("frames") or []],
            "awaiting": awaiting, "awaited_by": [f"{a:#x}" for a in t.get("awaited_by") or []],
        }
        if t.get("error"):
            entry["error"] = t["error"]
        out.append(entry)
    out.sort(key=lambda e: natural(e.get("name") or ""))
    return out


def natural(name: str) -> tuple:
    """A sort key that puts 'idle-2' before 'idle-10'."""
    import re

    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(_DIGITS, name) if p)


_DIGITS = r"(\d+)"


def add(report: dict, d: dict | None, error: str | None) -> None:
    """Put a process's tasks (``tasks_dict``, None: no asyncio) in its report."""
    if error:
        report["tasks_error"] = error
    if d is not None and d.get("available", True):
        report["tasks"] = entries(d, report.get("threads", []))
        if d.get("skipped"):
            report["tasks_note"] = d["skipped"]  # (tasks it could not read: of another class)


# ---------------------------------------------------------------------------------------------
# Grouping


def task_key(t: dict) -> tuple:
    aw = t.get("awaiting") or {}
    return tuple(R.frame_key(f) for f in t.get("frames", [])) + (
        ("task", t.get("state"), bool(t.get("running"))), ("awaiting", aw.get("kind"), aw.get("type"), aw.get("state")))


def group(processes: list[dict]) -> list[R.Group]:
    """The distinct task stacks of ``processes``, fewest processes first (as threads are grouped)."""
    groups: dict[tuple, R.Group] = {}
    for p in processes:
        for t in p.get("tasks") or []:
            key = task_key(t)
            g = groups.get(key)
            if g is None:
                g = groups[key] = R.Group(key, t.get("frames", []))
                g.tasks = True  # (a group of asyncio tasks, not of threads: tuidbg view says so)
            g.members.append((p, t))
    return sorted(groups.values(), key=R.Group.sort_key)


# ---------------------------------------------------------------------------------------------
# Text

MAX_NAMES = 8


def format_text(doc: dict, native: bool = False) -> str:
    """The whole report as text (``dumpreport.format_text``), its Tasks section at the end."""
    return R.format_text(doc, native=native, tail=format_tasks(doc, R.many_hosts(doc)))


def _names(tasks: list[dict], cap: int = MAX_NAMES) -> str:
    shown = " ".join(f"'{R.clean(t.get('name'))}'" for t in tasks[:cap])
    return shown + (f" … (+{len(tasks) - cap})" if len(tasks) > cap else "")


def awaiting_text(aw: dict | None) -> str:
    if not aw:
        return ""
    if aw.get("kind") == "task":
        return f"awaiting task '{R.clean(aw.get('name'))}'"
    what = R.clean(aw.get("type") or "?")
    return f"awaiting {what}" + (f" ({aw['state']})" if aw.get("state") else "")


def _state(t: dict, threads: dict) -> str:
    bits = [t.get("state") or "?"]
    if t.get("running"):
        where = threads.get(t.get("thread"))
        bits.append("running" + (f" in {where}" if where else ""))
    elif t.get("current"):
        bits.append("current")
    return ", ".join(bits)


def format_tasks(doc: dict, hosts: bool) -> list[str]:
    """The text's Tasks section (empty when no process has tasks)."""
    procs = doc["processes"]
    with_tasks = [p for p in procs if p.get("tasks") is not None or p.get("tasks_error")]
    if not with_tasks:
        return []
    out: list[str] = [""]
    total = sum(len(p.get("tasks") or []) for p in procs)
    groups = group(procs)
    single = len(procs) == 1
    head = f"Tasks (asyncio): {R.plural(total, 'task')}"
    if total:
        head += f", {R.plural(len(groups), 'distinct task stack')}" + (", fewest processes first" if not single else "")
    out.append(head + ":")
    for p in with_tasks:
        for key in ("tasks_error", "tasks_note"):
            if p.get(key):
                out.append(f"  {R.clean(p['pid'])}: {R.clean(p[key])}")
    for g in groups:
        out.append("")
        tasks = [t for _p, t in g.members]
        t0 = tasks[0]
        p0 = g.members[0][0]
        threads = {t.get("id"): _thread_words(t) for t in p0.get("threads", [])}
        if single:
            label = f"Task '{R.clean(t0.get('name'))}'" if len(tasks) == 1 else f"{len(tasks)} tasks: {_names(tasks)}"
        else:
            label = _group_head(g, hosts)
        out.append(f"{label} [{_state(t0, threads)}]:")
        for f in g.frames:
            out.append("    " + R.pyline(f))
        if not g.frames:
            out.append("    (no coroutine frames: not started, or finished)")
        aw = awaiting_text(t0.get("awaiting"))
        if aw:
            out.append(f"    ({aw})")
        for t in tasks:
            if t.get("error"):
                out.append(f"    ('{R.clean(t.get('name'))}': {R.clean(t['error'])})")
    for p in procs:
        lines = tree(p)
        if lines:
            out.append("")
            out.append("Who awaits whom" + (f" in {R.clean(p['pid'])}" if not single else "") + ":")
            out.extend(lines)
    return out


def _thread_words(t: dict) -> str:
    return f"thread {t.get('id')}" + (" (main)" if t.get("main") else "")


def _group_head(g: R.Group, hosts: bool) -> str:
    counts: dict[int, int] = {}
    for p, _t in g.members:
        counts[id(p)] = counts.get(id(p), 0) + 1
    names = []
    for p in g.processes:
        bits = [R.rank_of(p)] if R.rank_of(p) else []
        if counts[id(p)] > 1:
            bits.append(f"{counts[id(p)]} tasks")
        name = f"{R.clean(p.get('host') or '?')}:{p['pid']}" if hosts else str(p["pid"])
        names.append(name + (f" ({', '.join(bits)})" if bits else ""))
    tasks = [t for _p, t in g.members]
    what = f"{R.plural(len(tasks), 'task')} in {R.plural(len(g.processes), 'process')}"
    return f"== {what}: {' '.join(names)}: {_names(tasks, 4)}"


MAX_TREE_LINES = 400


def tree(p: dict) -> list[str]:
    """Who awaits whom in one process, as a tree (``pstree``'s edges); [] when no task awaits another.
    Siblings with the same stack and no tasks under them share a line."""
    tasks = p.get("tasks") or []
    by_id = {t["id"]: t for t in tasks}
    kids: dict[str, list[dict]] = {}
    for t in tasks:
        for parent in t.get("awaited_by") or []:
            if parent in by_id:
                kids.setdefault(parent, []).append(t)
    if not kids:
        return []
    roots = [t for t in tasks if not any(a in by_id for a in t.get("awaited_by") or [])]
    out: list[str] = []
    shown: set[str] = set()

    def walk(t: dict, prefix: str, last: bool, top: bool) -> None:
        if len(out) >= MAX_TREE_LINES:
            return
        line = f"'{R.clean(t.get('name'))}'"
        if t["id"] in shown:
            out.append(prefix + ("" if top else ("└── " if last else "├── ")) + line + " (above)")
            return
        shown.add(t["id"])
        out.append(prefix + ("" if top else ("└── " if last else "├── ")) + line)
        below = prefix + ("" if top else ("    " if last else "│   "))
        rows: list[list[dict]] = []
        for k in kids.get(t["id"], []):
            if not kids.get(k["id"]) and rows and not kids.get(rows[-1][0]["id"]) \
                    and task_key(rows[-1][0]) == task_key(k):
                rows[-1].append(k)
            else:
                rows.append([k])
        for i, row in enumerate(rows):
            end = i == len(rows) - 1
            if len(row) == 1:
                walk(row[0], below, end, False)
            else:
                shown.update(k["id"] for k in row)
                out.append(below + ("└── " if end else "├── ") + _names(row, 5)
                           + (f" ({len(row)} tasks, one stack)" if len(row) > 5 else ""))

    for r in roots:
        if r["id"] in kids:
            walk(r, "  ", True, True)
    for t in tasks:  # (awaiting each other in a cycle: no root leads there)
        if t["id"] in kids and t["id"] not in shown:
            out.append("  (in a cycle)")
            walk(t, "  ", True, True)
    if len(out) >= MAX_TREE_LINES:
        out.append(f"  … ({len(tasks)} tasks in all)")
    return out
