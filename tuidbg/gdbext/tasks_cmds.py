"""gdb commands for asyncio tasks, read from memory (``cpython_tasks``).

MI (gdb >= 13, gdb.MICommand), and the console's ``tuidbg-pytasks`` with the same options:

    -tuidbg-pytasks [--current] [--json|--jsonz]
    -tuidbg-pytasks --locals FRAME --code CODE [--max-items K] [--max-str K] [--json|--jsonz]

Without options: every task (``cpython_tasks.tasks_dict``); ``--current``: only the tasks the event
loops run now, each with its coroutine's frame address (cheap: read at every stop); ``--locals``: the
locals of a coroutine's frame (address FRAME, code object CODE, as the tasks listed them; a
suspended coroutine's frame is on no thread's stack). The console without ``--json`` prints the
tasks as text, who awaits whom and each one's coroutines.

Failures come back as status "error" with a reason (never a traceback); a process without asyncio
has status "ok" and no tasks, with a note.
"""

from .cpython_mem import ReadError, WalkError
from .cpython_tasks import TaskReader, tasks_dict
from .cpython_walk import NoPython, PyFrameRec, PyThreadRec, ValueFormatter, Walker, locals_rows
from .gdb_target import KeepSelection
from .pystack_cmds import (JSON_MARK, JSONZ_MARK, UsageError, _connect_events, _encoded, _guard, _interpreter, _parse,
                           _stop_cache)

import gdb

_SPEC = {"current": "flag", "locals": "str", "code": "str", "max-items": "int", "max-str": "int",
         "json": "flag", "jsonz": "flag"}


def _int(text, what):
    try:
        return int(text, 0)
    except (TypeError, ValueError):
        raise UsageError("--%s needs an address, not %r" % (what, text))


def pytasks(argv):
    opts = _parse(argv, _SPEC)
    _connect_events()
    try:
        with KeepSelection():
            ip = _interpreter("auto")
            w = Walker(ip, _stop_cache())  # (the process's own, as the frames')
            if "locals" in opts:
                if "code" not in opts:
                    raise UsageError("--locals FRAME needs --code CODE (both as -tuidbg-pytasks listed them)")
                rec = PyThreadRec(0, 0, 0, None)
                rec.frames.append(PyFrameRec("?", None, "?", None, False, _int(opts["code"], "code"),
                                             _int(opts["locals"], "locals")))
                fmt = ValueFormatter(w, max_items=opts.get("max-items") or 10, max_str=opts.get("max-str") or 200)
                return {"v": 1, "status": "ok", "locals": locals_rows(fmt, rec, 0)}
            recs = w.thread_states()
            w.map_threads(recs, ip.target.threads())
            reader = TaskReader(w, recs)
            if "current" in opts:
                return {"v": 1, "status": "ok", "current": [
                    {"addr": a, "name": n, "frame": f} for a, n, f in reader.current()]}
            for r in recs:
                w.walk_frames(r, anchors=False)
            return tasks_dict(ip, reader.read())
    except NoPython as exc:
        return {"v": 1, "status": "no-python", "reason": str(exc)}
    except WalkError as exc:
        return {"v": 1, "status": "error", "reason": str(exc)}
    except (ReadError, ValueError) as exc:
        return {"v": 1, "status": "error", "reason": "cannot read the program's tasks: %s" % exc}


def _text(res):
    if res.get("status") != "ok":
        return "tuidbg: %s\n" % res.get("reason", res.get("status"))
    if "locals" in res:
        rows = res["locals"]
        return "".join("%s = %s  (%s, %s)\n" % (r["name"], r["value"] if r["value"] is not None else
                                                 "<unreadable: %s>" % r["error"], r["type"], r["kind"])
                       for r in rows) or "(no locals)\n"
    if "current" in res:
        return "".join("task %r (%#x) runs now\n" % (c["name"], c["addr"]) for c in res["current"]) \
            or "no task runs now\n"
    tasks = res.get("tasks") or []
    if not tasks:
        return "%s\n" % (res.get("note") or "no asyncio tasks")
    names = {t["addr"]: t["name"] for t in tasks}
    out = ["%d asyncio task%s (Python %s, from %s)\n" % (len(tasks), "" if len(tasks) == 1 else "s",
                                                         res.get("python"), res.get("registry"))]
    for t in tasks:
        bits = [t["state"]]
        if t.get("executing"):
            bits.append("running in thread %s" % t.get("tid"))
        elif t.get("current"):
            bits.append("current")
        out.append("Task %r (%#x) [%s]:\n" % (t["name"], t["addr"], ", ".join(bits)))
        for fn, qn, fi, line, _code, addr in t["frames"]:
            out.append("    %s (%s:%s)  [frame %#x]\n" % (qn or fn, fi, line if line >= 0 else "?", addr))
        aw = t.get("awaiting")
        if aw:
            what = "task %r" % aw.get("name") if aw.get("kind") == "task" else aw.get("type")
            out.append("    awaiting %s%s\n" % (what, " (%s)" % aw["state"] if aw.get("state") else ""))
        if t.get("awaited_by"):
            out.append("    awaited by %s\n" % ", ".join(repr(names.get(a, "%#x" % a)) for a in t["awaited_by"]))
        if t.get("error"):
            out.append("    (%s)\n" % t["error"])
    return "".join(out)


class _Console(gdb.Command):
    """tuidbg-pytasks [--current] [--json]: the asyncio tasks, read from memory (no code runs).

tuidbg-pytasks --locals FRAME --code CODE: the locals of a coroutine's frame, as listed."""

    def __init__(self):
        super(_Console, self).__init__("tuidbg-pytasks", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        argv = gdb.string_to_argv(arg)
        res = _guard(pytasks, argv)
        if "--json" in argv or "--jsonz" in argv:
            key, text = _encoded(res, argv)
            gdb.write((JSONZ_MARK if key == "jsonz" else JSON_MARK) + text + "\n")
        else:
            gdb.write(_text(res))


_registered = []


def register():
    if _registered:
        return
    _registered.append(_Console())
    if hasattr(gdb, "MICommand"):

        class _MI(gdb.MICommand):
            def __init__(self):
                super(_MI, self).__init__("-tuidbg-pytasks")

            def invoke(self, argv):
                res = _guard(pytasks, list(argv))
                key, text = _encoded(res, list(argv) if "--jsonz" in argv else list(argv) + ["--json"])
                return {key: text}

        _registered.append(_MI())
