"""asyncio tasks read from memory: every task of every event loop, the coroutines each is suspended
in, what it awaits and which tasks await it. No code runs in the program.

Where the tasks are (``TaskReader.read``):

- 3.9-3.11: ``_asyncio._all_tasks``, a ``weakref.WeakSet`` (its ``data``: a set of weak references);
- 3.12-3.13: ``_asyncio._scheduled_tasks`` (a WeakSet) and ``_asyncio._eager_tasks`` (a set: the
  tasks running eagerly now);
- 3.14: a linked list of ``_asyncio.Task`` objects per thread state (``asyncio_tasks_head``) and one
  in the interpreter for tasks of threads that ended, where ``_AsyncioDebug`` (the ``.AsyncioDebug``
  section of the ``_asyncio`` module) says, with the task's own fields.

The modules are found in ``sys.modules`` (``cpython_taskobjs``): no symbol of ``_asyncio`` is needed,
so a stripped build (Debian's python3.11) reads like one with debug info. The task running at the
stop: ``_asyncio._current_tasks`` ({loop: task}) before 3.14, each thread state's
``asyncio_running_task`` in 3.14.

Each task's coroutine chain follows what ``cr_await`` would give (the interpreter's ``_PyGen_yf``,
from the frame's state and value stack) through coroutines, generators, async generators and their
``asend``/``athrow`` awaitables, down to the ``Future`` (or ``Task``) at the end. A coroutine that
is executing has its frames on a thread's stack: those frames (innermost first, down to the
coroutine's own) are the task's. Who awaits a task: the tasks its done-callbacks wake (a task's
``__wakeup``, directly or through the future of a ``gather``/``shield``/``wait`` whose callback
wakes it, a ``TaskGroup``'s parent task) and, in 3.14, its ``task_awaited_by``.

Standard library only, Python 3.6 syntax.
"""

import struct

from .cpython_coros import GEN_TYPES, Coroutines
from .cpython_mem import ReadError, WalkError, i32_at, u64_at
from .cpython_taskobjs import Objects

MAX_TASKS = 1 << 20
MAX_AWAITER_DEPTH = 6

STATES = {0: "pending", 1: "cancelled", 2: "done"}

# _asyncio's FutureObj / TaskObj fields, GIL builds (offsets from the object's start), measured on the
# builds cpython_layouts names and checked against their DWARF (tests/gdbext/test_objects.py); 3.14
# reads the task's own from _AsyncioDebug and places the rest relative to them (_layout_from_debug).
TASK_TABLES = {
    9: {"fut.loop": 16, "fut.callback0": 24, "fut.callbacks": 40, "fut.state": 80,
        "task.fut_waiter": 144, "task.coro": 152, "task.name": 160, "task.size": 184},
    10: {"fut.loop": 16, "fut.callback0": 24, "fut.callbacks": 40, "fut.state": 88,
         "task.fut_waiter": 152, "task.coro": 160, "task.name": 168, "task.size": 192},
    11: {"fut.loop": 16, "fut.callback0": 24, "fut.callbacks": 40, "fut.state": 88,
         "task.fut_waiter": 128, "task.coro": 136, "task.name": 144, "task.size": 176},
    13: {"fut.loop": 16, "fut.callback0": 24, "fut.callbacks": 40, "fut.state": 96,
         "task.fut_waiter": 112, "task.coro": 120, "task.name": 128, "task.size": 144},
}
TASK_TABLES[12] = TASK_TABLES[11]
TASK_DWARF_FIELDS = {
    "fut.loop": [("TaskObj", "task_loop")],
    "fut.callback0": [("TaskObj", "task_callback0")],
    "fut.callbacks": [("TaskObj", "task_callbacks")],
    "fut.awaited_by": [("TaskObj", "task_awaited_by")],
    "fut.state": [("TaskObj", "task_state")],
    "fut.is_task": [("TaskObj", "task_is_task")],
    "fut.awaited_by_is_set": [("TaskObj", "task_awaited_by_is_set")],
    "task.fut_waiter": [("TaskObj", "task_fut_waiter")],
    "task.coro": [("TaskObj", "task_coro")],
    "task.name": [("TaskObj", "task_name")],
    "task.node": [("TaskObj", "task_node")],
    "task.size": [("sizeof", "TaskObj")],
}

TASK_TYPE = "_asyncio.Task"
FUTURE_TYPE = "_asyncio.Future"


class TaskRec(object):
    __slots__ = ("addr", "name", "state", "loop", "current", "executing", "thread", "frames", "awaiting",
                 "awaited_by", "error", "stack_index", "callbacks")

    def __init__(self, addr):
        self.addr = addr
        self.name = None
        self.state = "pending"
        self.loop = 0
        self.current = False  # the task its loop runs now (the loop's current task)
        self.executing = False  # its coroutine runs on a thread now (its frames are that thread's)
        self.thread = None  # the PyThreadRec of the thread it runs on, or whose loop it belongs to
        self.frames = []  # PyFrameRec, innermost first
        self.awaiting = None  # {"kind": "task"|"future"|"other", "addr", "type", "name", "state"}
        self.awaited_by = []  # addresses of the tasks that await it
        self.error = None
        self.stack_index = None  # when it runs: its coroutine's frame's index in its thread's frames
        self.callbacks = None  # (callback0, callbacks) as read


class TasksResult(object):
    def __init__(self):
        self.tasks = []
        self.note = None  # why there are none, or what could not be read
        self.registry = None  # where they were found
        self.available = True  # False: the program has not loaded asyncio's C module
        self.skipped = None  # what was not read: tasks of another class than _asyncio.Task


def _layout_from_debug(raw, header):
    """The task fields of 3.14's _Py_AsyncioModuleDebugOffsets (13 words), checked; None if not plausible."""
    w = struct.unpack("<13Q", raw[:104])
    size, name, awaited_by, is_task, ab_is_set, coro, node = w[:7]
    ts = {"ts.asyncio_running_loop": w[10], "ts.asyncio_running_task": w[11], "ts.asyncio_tasks_head": w[12],
          "is.asyncio_tasks_head": w[8]}
    if not (header < name < size < 1024 and coro + 8 == name and node < size and ab_is_set == is_task + 1):
        return None
    out = {"fut.loop": header, "fut.callback0": header + 8, "fut.callbacks": header + 24,
           "fut.awaited_by": awaited_by, "fut.state": is_task - 4, "fut.is_task": is_task,
           "fut.awaited_by_is_set": ab_is_set, "task.fut_waiter": coro - 8, "task.coro": coro,
           "task.name": name, "task.node": node, "task.size": size}
    out.update(ts)
    return out


class TaskReader(object):
    """The tasks of a stopped process, read through ``walker`` (its memory, offsets and code cache);
    ``recs``: its threads as walked (their frames place the coroutines that run now)."""

    def __init__(self, walker, recs):
        self.w = walker
        self.mem = walker.mem
        self.off = walker.off
        self.ip = walker.ip
        self.minor = walker.ip.minor
        self.recs = recs
        self.o = Objects(walker)
        self.coros = Coroutines(walker, self.o, recs)
        self.t = None
        self._thread_of_loop = {}
        self._thread_of_task = None  # 3.14: task -> the thread whose list holds it
        self._task_names = {}

    # -- layouts ---------------------------------------------------------------------------------

    def _layout(self):
        if self.t is not None:
            return self.t
        header = self.o.header
        if self.minor >= 14:
            cache = getattr(self.ip, "_asyncio_debug", None)
            if not cache:
                cache = self._read_asyncio_debug(header)
                if cache:  # (not found: asyncio may be imported later)
                    self.ip._asyncio_debug = cache
            self.t = cache
            return cache
        table = dict(TASK_TABLES[self.minor])
        if header != 16:
            for k in table:
                if k != "task.size":
                    table[k] += header - 16
        self.t = table
        return table

    def _read_asyncio_debug(self, header):
        """3.14's task layout, or None when no _asyncio module is loaded."""
        target = self.ip.target
        own = self.ip.objfile.rsplit("/", 1)[-1] if self.ip.objfile else None
        secs = target.sections(".AsyncioDebug", lambda base: base.startswith("_asyncio") or base == own)
        if not secs and not _asyncio_file(target):
            secs = target.sections(".AsyncioDebug")  # (built into the main program or another library)
        if not secs:
            return None
        secs = [s for s in secs if "_asyncio" in (s[2] or "")] or secs
        for start, _end, _path in secs:
            try:
                got = _layout_from_debug(self.mem.read(start, 104), header)
            except ReadError:
                continue
            if got is not None:
                return got
        raise WalkError("Python %s: the _asyncio module's debug offsets (.AsyncioDebug) were not found"
                        % self.ip.version_text)

    # -- where the tasks are ---------------------------------------------------------------------

    def asyncio_module(self):
        """The ``_asyncio`` module, or None (asyncio not imported, or without its C part)."""
        ip = self.ip
        hit = getattr(ip, "_asyncio_module", None)
        if hit:
            return hit
        mod = self.o.module("_asyncio")
        if mod:
            ip._asyncio_module = mod  # (a module stays where it is for the life of the process)
        return mod

    def registry(self):
        """(task addresses, current task addresses, where they were found)."""
        if self.minor >= 14:
            return self._thread_lists()
        mod = self.asyncio_module()
        if not mod:
            return None, None, None
        current = {}
        cur = self.o.module_attr(mod, "_current_tasks")
        if cur:
            for loop, task in self.o.dict_items(cur):
                current[task] = loop
        if self.minor <= 11:
            ws = self.o.module_attr(mod, "_all_tasks")
            tasks = self.o.weakset_members(ws) if ws else []
            return tasks, current, "_asyncio._all_tasks"
        ws = self.o.module_attr(mod, "_scheduled_tasks")
        tasks = self.o.weakset_members(ws) if ws else []
        eager = self.o.module_attr(mod, "_eager_tasks")
        if eager:
            seen = set(tasks)
            tasks += [t for t in self.o.set_members(eager) if t not in seen]
        return tasks, current, "_asyncio._scheduled_tasks, _asyncio._eager_tasks"

    def _thread_lists(self):
        t = self._layout()
        tasks = []
        current = {}
        self._thread_of_task = {}
        heads = [(r.tstate + t["ts.asyncio_tasks_head"], r) for r in self.recs]
        interp = self.mem.ptr(self.ip.runtime + self.off["rt.interp_head"])
        if interp:
            heads.append((interp + t["is.asyncio_tasks_head"], None))
        for head, rec in heads:
            node = self.mem.ptr(head)
            n = 0
            while node and node != head and n < MAX_TASKS:
                task = node - t["task.node"]
                tasks.append(task)
                if rec is not None:
                    self._thread_of_task[task] = rec
                node = self.mem.ptr(node)
                n += 1
            if rec is not None:
                running = self.mem.ptr(rec.tstate + t["ts.asyncio_running_task"])
                loop = self.mem.ptr(rec.tstate + t["ts.asyncio_running_loop"])
                if running:
                    current[running] = loop
                if loop:
                    self._thread_of_loop[loop] = rec
        return tasks, current, "the threads' task lists (_AsyncioDebug)"

    # -- one task --------------------------------------------------------------------------------

    def available(self):
        """Whether the program has asyncio's C part loaded (else it has no tasks to read)."""
        if _asyncio_file(self.ip.target) is False and not self.ip.sym("PyInit__asyncio"):
            return False  # (its module is a file of its own, not loaded: nothing to look up)
        if self.minor >= 14:
            return bool(self._layout())
        return bool(self.asyncio_module())

    def read(self):
        """Every task (a TasksResult)."""
        out = TasksResult()
        if not self.available():
            out.note = "no asyncio tasks: the program has not imported asyncio (no _asyncio module)"
            out.available = False
            return out
        addrs, current, where = self.registry()
        out.registry = where
        seen = set()
        others = {}
        for addr in addrs:
            if addr in seen or len(out.tasks) >= MAX_TASKS:
                continue
            seen.add(addr)
            try:
                lineage = self.o.lineage(self.o.type_of(addr))
            except ReadError:
                continue
            if TASK_TYPE not in lineage:  # (a task of another class: asyncio's pure-Python Task, a loop's own)
                others[lineage[0]] = others.get(lineage[0], 0) + 1
                continue
            rec = TaskRec(addr)
            try:
                self._read_task(rec, current)
            except (ReadError, ValueError, IndexError, struct.error) as exc:
                rec.error = "cannot read this task: %s" % exc
            out.tasks.append(rec)
        _nested(out.tasks)
        self._link(out.tasks)
        if others:
            out.skipped = "%s not read: not _asyncio.Task (%s)" % (
                "1 task" if sum(others.values()) == 1 else "%d tasks" % sum(others.values()),
                ", ".join("%s: %d" % kv for kv in sorted(others.items())))
        if not out.tasks:
            out.note = "no asyncio tasks in this process (%s: empty)" % where
        return out

    def task_name(self, addr, obj=None):
        """A task's name (``obj``: its name object, when read already)."""
        name = self._task_names.get(addr)
        if name is None:
            if obj is None:
                obj = self.mem.ptr(addr + self._layout()["task.name"])
            name, number = self.o.text(obj, 200)
            if number:
                name = "Task-%s" % name  # (3.13+ names a task when asked: it keeps the number)
            name = self._task_names[addr] = name if name is not None else "?"
        return name

    def _read_task(self, rec, current):
        t = self._layout()
        raw = self.mem.read(rec.addr, t["task.size"])
        rec.loop = u64_at(raw, t["fut.loop"])
        rec.state = STATES.get(i32_at(raw, t["fut.state"]), "?")
        rec.name = self.task_name(rec.addr, u64_at(raw, t["task.name"]))
        rec.callbacks = (u64_at(raw, t["fut.callback0"]), u64_at(raw, t["fut.callbacks"]))
        rec.current = rec.addr in current
        rec.thread = self._thread(rec)
        coro = u64_at(raw, t["task.coro"])
        waiter = u64_at(raw, t["task.fut_waiter"])
        rec.frames, leaf, th = self.coros.chain(coro)
        if th is not None:
            rec.executing = True
            rec.thread = th
            rec.stack_index = self.coros.last_index
        target = waiter or leaf
        if target and rec.state == "pending":
            rec.awaiting = self.describe(target)

    def _thread(self, rec):
        lists = self._thread_of_task
        if lists is not None and rec.addr in lists:
            return lists[rec.addr]
        if rec.loop in self._thread_of_loop:
            return self._thread_of_loop[rec.loop]
        th = None
        try:
            ident = self.o.attr(rec.loop, "_thread_id") if rec.loop else None
            pthread = self.o.int_value(ident) if ident else None
        except (ReadError, ValueError):
            pthread = None
        if pthread:
            th = next((r for r in self.recs if r.thread_id == pthread), None)
        self._thread_of_loop[rec.loop] = th
        return th

    def describe(self, obj):
        """What a task awaits: a task, a future (its type and state) or another object."""
        lineage = self.o.lineage(self.o.type_of(obj))
        if TASK_TYPE in lineage:
            return {"kind": "task", "addr": obj, "type": lineage[0], "name": self.task_name(obj)}
        if FUTURE_TYPE in lineage:
            state = STATES.get(self.mem.i32(obj + self._layout()["fut.state"]), "?")
            return {"kind": "future", "addr": obj, "type": lineage[0], "state": state}
        return {"kind": "other", "addr": obj, "type": lineage[0]}

    # -- who awaits whom -------------------------------------------------------------------------

    def _link(self, tasks):
        by_addr = {r.addr: r for r in tasks}
        for r in tasks:
            if r.error or r.state != "pending":
                continue
            found = []
            try:
                self._awaiters(r.addr, found, set(), 0, r.callbacks)
                if self.minor >= 14:
                    self._awaited_by_314(r.addr, found)
            except (ReadError, ValueError):
                pass
            for a in found:
                if a != r.addr and a in by_addr and a not in r.awaited_by:
                    r.awaited_by.append(a)

    def callbacks(self, fut, read=None):
        """The done-callbacks of a future (``_asyncio.Future`` or a subclass); ``read``: its
        (callback0, callbacks) fields, when read already."""
        t = self._layout()
        out = []
        cb0, cbs = read or (self.mem.ptr(fut + t["fut.callback0"]), self.mem.ptr(fut + t["fut.callbacks"]))
        if cb0:
            out.append(cb0)
        if cbs:
            for item in self.o.list_items(cbs):
                if item and self.o.name_of(item) == "tuple":
                    items = self.o.tuple_items(item)
                    if items:
                        out.append(items[0])
                elif item:
                    out.append(item)
        return out

    def _awaiters(self, fut, found, seen, depth, read=None):
        """The tasks that ``fut``'s done-callbacks wake, directly or through other futures."""
        if fut in seen or depth > MAX_AWAITER_DEPTH:
            return
        seen.add(fut)
        o = self.o
        hdr = o.header
        for cb in self.callbacks(fut, read):
            kind = o.name_of(cb)
            if kind == "builtin_function_or_method":
                owner = self.mem.ptr(cb + self.off["cfn.self"])
                if owner and o.is_a(owner, TASK_TYPE):
                    found.append(owner)  # (a task's __wakeup: that task awaits fut)
            elif kind == "TaskWakeupMethWrapper":
                found.append(self.mem.ptr(cb + hdr))
            elif kind == "method":
                owner = self.mem.ptr(cb + self.off["meth.self"])
                if not owner:
                    continue
                lineage = o.lineage(o.type_of(owner))
                if "TaskGroup" in lineage:
                    parent = o.attr(owner, "_parent_task")
                    if parent:
                        found.append(parent)
                elif FUTURE_TYPE in lineage:
                    self._awaiters(owner, found, seen, depth + 1)
            elif kind == "function":
                for cell in o.closure_cells(cb):
                    if cell and cell != fut and FUTURE_TYPE in o.lineage(o.type_of(cell)):
                        if TASK_TYPE in o.lineage(o.type_of(cell)):
                            continue  # (a gather's children: not who waits)
                        self._awaiters(cell, found, seen, depth + 1)

    def _awaited_by_314(self, task, found):
        t = self._layout()
        ab = self.mem.ptr(task + t["fut.awaited_by"])
        if not ab:
            return
        if self.mem.u8(task + t["fut.awaited_by_is_set"]):
            found.extend(self.o.set_members(ab))
        else:
            found.append(ab)

    # -- the task at a stop ----------------------------------------------------------------------

    def current(self):
        """[(task, name, its coroutine's frame address or 0)] of the tasks the loops run now:
        cheap (no other task is read), for the status line at each stop."""
        if not self.available():
            return []
        t = self._layout()
        if self.minor >= 14:
            cur = {}
            for r in self.recs:
                task = self.mem.ptr(r.tstate + t["ts.asyncio_running_task"])
                if task:
                    cur[task] = r
        else:
            curd = self.o.module_attr(self.asyncio_module(), "_current_tasks")
            cur = {task: None for _loop, task in (self.o.dict_items(curd) if curd else [])}
        out = []
        for task in cur:
            coro = self.mem.ptr(task + t["task.coro"])
            got = self.coros.gen_state(coro) if coro and self.o.name_of(coro) in GEN_TYPES else None
            out.append((task, self.task_name(task), got[0] if got else 0))
        return out


def _nested(tasks):
    """A task that runs inside another on one thread (started eagerly, in ``create_task``, by the
    other's coroutine): the outer one's frames end where the inner one's begin."""
    by_thread = {}
    for r in tasks:
        if r.executing and r.stack_index is not None:
            by_thread.setdefault(id(r.thread), []).append(r)
    for rs in by_thread.values():
        rs.sort(key=lambda r: r.stack_index)
        for inner, outer in zip(rs, rs[1:]):
            outer.frames = outer.thread.frames[inner.stack_index + 1:outer.stack_index + 1]


def _asyncio_file(target):
    """Whether the process has mapped the file of the ``_asyncio`` module; None when the target cannot
    list its object files."""
    try:
        paths = target.objfile_paths()
    except Exception:
        return None
    if not paths:
        return None
    return any(p.rsplit("/", 1)[-1].startswith("_asyncio") for p in paths)


# ---------------------------------------------------------------------------------------------
# As JSON


def frame_row(f):
    return [f.function, f.qualname, f.file, f.line if f.line is not None else -1, f.code, f.addr]


def tasks_dict(interp, res):
    """A TasksResult as a JSON-able dict (what ``-tuidbg-pytasks`` prints)."""
    tasks = []
    for r in res.tasks:
        g = r.thread.gdb if r.thread is not None else None
        tasks.append({
            "addr": r.addr, "name": r.name, "state": r.state, "current": r.current, "executing": r.executing,
            "loop": r.loop, "tid": g.num if g is not None else None, "lwp": g.lwp if g is not None else None,
            "frames": [frame_row(f) for f in r.frames], "awaiting": r.awaiting, "awaited_by": list(r.awaited_by),
            "error": r.error,
        })
    return {"v": 1, "status": "ok", "python": interp.version_text, "registry": res.registry, "note": res.note,
            "available": res.available, "skipped": res.skipped, "tasks": tasks}
