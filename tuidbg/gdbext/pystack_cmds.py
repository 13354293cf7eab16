"""gdb commands for Python stacks and locals.

MI (gdb >= 13, gdb.MICommand):

    -tuidbg-pystack [--tid N] [--max K] [--native all|none|N[,M...]] [--native-depth D]
                    [--runtime-from auto|symbol|section] [--json|--jsonz]
    -tuidbg-pylocals --tid N --index I [--max-items K] [--max-str K] [--json|--jsonz]

(``--thread`` and ``--frame`` are MI's own options, which gdb takes away from
every MI command, hence ``--tid`` and ``--index``.)

Console (any gdb with Python, e.g. cuda-gdb 11.8): ``tuidbg-pystack`` and
``tuidbg-pylocals`` with the same options (``--thread``/``--frame`` work there
too); with ``--json`` they print one line ``@@tuidbg-json <json>`` (``--jsonz``:
``@@tuidbg-jsonz <base64 of zlib-compressed json>``), without it a readable listing.

``status`` is "ok", "no-python" (no CPython runtime in the process) or "error"
(with ``reason``). Frames are innermost first; ``native-level`` is the level of
the gdb frame (an eval-loop call) that runs the Python frame, absent when not
known. ``--index I`` of -tuidbg-pylocals counts Python frames of that
thread, 0 = innermost, as -tuidbg-pystack listed them in the same stop.

Errors never show a Python traceback: bad arguments are gdb errors with one
line, failures of the walk come back as status "error" with a reason.
"""

import base64
import json
import time

try:
    import zlib
except ImportError:  # a gdb built against a Python without zlib
    zlib = None

import gdb

from .cpython_gil import gil_result
from .cpython_walk import DEFAULT_MAX_FRAMES, Interpreter, NoPython, ReadError, StopCache, WalkError, Walker, locals_result, result_dict, walk
from .gdb_target import GdbTarget, KeepSelection

JSON_MARK = "@@tuidbg-json "
JSONZ_MARK = "@@tuidbg-jsonz "

# Per process (gdb's inferior: its number and PID), since one gdb may hold several (a program's
# children, the ranks of a job): the located runtime, kept until an object file comes or goes, and
# what one stop's walk read (code objects, strings, line tables), until the program runs on. A
# runtime found in one process is never used to read another: a forked child has it at the same
# addresses, a spawned one elsewhere, and either has threads of its own.
_state = {"interp": {}, "cache": {}, "connected": False}


def _invalidate_stop(*_args):
    _state["cache"].clear()


def _invalidate_all(*_args):
    _state["interp"].clear()
    _state["cache"].clear()


def _process_key():
    """The selected inferior as (number, PID): a number gdb reuses for the next process run in it."""
    try:
        inf = gdb.selected_inferior()
        return (inf.num, inf.pid)
    except (gdb.error, RuntimeError, AttributeError):
        return (0, 0)


def _stop_cache():
    key = _process_key()
    cache = _state["cache"].get(key)
    if cache is None:
        cache = _state["cache"][key] = StopCache()
    return cache


def _connect_events():
    if _state["connected"]:
        return
    ev = getattr(gdb, "events", None)
    if ev is None:
        return
    for name in ("cont", "stop", "memory_changed", "inferior_call", "register_changed"):
        reg = getattr(ev, name, None)
        if reg is not None:
            try:
                reg.connect(_invalidate_stop)
            except Exception:
                pass
    for name in ("new_objfile", "clear_objfiles", "exited", "new_inferior", "inferior_deleted"):
        reg = getattr(ev, name, None)
        if reg is not None:
            try:
                reg.connect(_invalidate_all)
            except Exception:
                pass
    _state["connected"] = True


def _interpreter(runtime_from):
    """The located runtime and its offsets; kept until an object file comes or goes."""
    if runtime_from != "auto":
        return Interpreter(GdbTarget(), runtime_from)
    key = _process_key()
    ip = _state["interp"].get(key)
    if ip is None:
        ip = Interpreter(GdbTarget())
        _state["interp"][key] = ip
    return ip


class UsageError(Exception):
    pass


def _parse(argv, spec):
    """--name value / --flag options; spec maps name -> 'flag' | 'int' | 'str'."""
    out = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if not a.startswith("--") or a[2:] not in spec:
            raise UsageError("unknown argument %r (options: %s)" % (a, ", ".join("--" + k for k in sorted(spec))))
        name = a[2:]
        kind = spec[name]
        if kind == "flag":
            out[name] = True
            i += 1
            continue
        if i + 1 >= len(argv):
            raise UsageError("--%s needs a value" % name)
        val = argv[i + 1]
        if kind == "int":
            try:
                val = int(val, 10)
            except ValueError:
                raise UsageError("--%s needs a number, not %r" % (name, val))
            if val < 0:
                raise UsageError("--%s must not be negative" % name)
        out[name] = val
        i += 2
    return out


_STACK_SPEC = {"tid": "str", "thread": "str", "max": "int", "native": "str", "native-depth": "int",
               "runtime-from": "str", "json": "flag", "jsonz": "flag"}
_LOCALS_SPEC = {"tid": "str", "thread": "str", "index": "int", "frame": "int", "max-items": "int", "max-str": "int",
                "json": "flag", "jsonz": "flag"}


def pystack(argv):
    """The walk as a JSON-able dict (see cpython_walk.result_dict), or a status dict."""
    opts = _parse(argv, _STACK_SPEC)
    if "thread" in opts:
        opts.setdefault("tid", opts["thread"])
    native = opts.get("native", "all")
    if native not in ("all", "none"):
        native = set(x.strip() for x in native.split(",") if x.strip())
    runtime_from = opts.get("runtime-from", "auto")
    if runtime_from not in ("auto", "symbol", "section"):
        raise UsageError("--runtime-from must be auto, symbol or section")
    _connect_events()
    t0 = time.perf_counter()
    try:
        with KeepSelection():
            ip = _interpreter(runtime_from)
            w, recs = walk(
                ip.target,
                ip,
                _stop_cache(),
                thread=opts.get("tid"),
                max_frames=opts.get("max") or DEFAULT_MAX_FRAMES,
                native=native,
                native_depth=opts.get("native-depth") or 100000,
            )
    except (NoPython, WalkError, ReadError) as exc:
        return _failed(exc)
    t1 = time.perf_counter()
    res = result_dict(ip, recs)
    res["status"] = "ok"
    res["stats"] = {"walk_ms": round((t1 - t0) * 1000, 3), "reads": w.mem.reads}
    return res


def _failed(exc, reading="the program's memory"):
    """The answer of a command the walker failed: no Python in the program, a walk that went wrong, or
    memory (``reading``) that could not be read."""
    if isinstance(exc, NoPython):
        return {"v": 1, "status": "no-python", "reason": str(exc)}
    if isinstance(exc, WalkError):
        return {"v": 1, "status": "error", "reason": str(exc)}
    return {"v": 1, "status": "error", "reason": "cannot read %s: %s" % (reading, exc)}


def pylocals(argv):
    opts = _parse(argv, _LOCALS_SPEC)
    if "thread" in opts:
        opts.setdefault("tid", opts["thread"])
    if "frame" in opts:
        opts.setdefault("index", opts["frame"])
    if "tid" not in opts or "index" not in opts:
        raise UsageError("needs --tid N (gdb's thread id) and --index I (the Python frame, 0 = innermost)")
    _connect_events()
    try:
        with KeepSelection():
            return _pylocals(opts)
    except (NoPython, WalkError, ReadError, ValueError) as exc:
        return _failed(exc, "the frame's locals")


def _pylocals(opts):
    ip = _interpreter("auto")
    return locals_result(ip, _stop_cache(), opts["tid"], opts["index"],
                           max_items=opts.get("max-items") or 10, max_str=opts.get("max-str") or 200)


def pygil(argv):
    """Which thread holds the GIL (cpython_gil.gil_result), or a status dict."""
    _parse(argv, {"json": "flag"})
    _connect_events()
    try:
        with KeepSelection():
            ip = _interpreter("auto")
            return gil_result(Walker(ip, _stop_cache()), ip.target)
    except (NoPython, WalkError, ReadError) as exc:
        return _failed(exc)


def _guard(fn, argv):
    try:
        return fn(argv)
    except UsageError as exc:
        raise gdb.GdbError(str(exc))
    except gdb.GdbError:
        raise
    except Exception as exc:  # never a traceback in gdb's console
        return {"v": 1, "status": "error", "reason": "tuidbg walker failed: %s: %s" % (type(exc).__name__, exc)}


def _json(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=True)


def _encoded(obj, argv):
    """(key, text): compact JSON, or with --jsonz zlib-compressed and base64-encoded JSON (large
    stacks: far less text for the front end's MI parser)."""
    text = _json(obj)
    if "--jsonz" in argv and zlib is not None:
        return "jsonz", base64.b64encode(zlib.compress(text.encode("ascii"), 6)).decode("ascii")
    return "json", text


# -- MI shapes ------------------------------------------------------------------------------------


def _mi_value(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    return v


def _mi_stack(res):
    if res.get("status") != "ok":
        return {"status": res["status"], "reason": res.get("reason", "")}
    strings = res["strings"]
    threads = []
    for t in res["threads"]:
        frames = []
        for fn, qn, fi, line, entry, level, code, addr in t["frames"]:
            fr = {"func": strings[fn], "file": strings[fi], "entry": "1" if entry else "0",
                  "code": "%#x" % code, "addr": "%#x" % addr}
            if qn >= 0:
                fr["qualname"] = strings[qn]
            if line >= 0:
                fr["line"] = str(line)
            if level >= 0:
                fr["native-level"] = str(level)
            frames.append(fr)
        th = {"tstate": "%#x" % t["tstate"], "interp": str(t["interp"]), "thread-id": "%#x" % (t["thread_id"] or 0),
              "merge": t["merge"], "truncated": str(t["truncated"]), "frames": frames}
        for k, mk in (("tid", "id"), ("lwp", "lwp"), ("name", "name"), ("merge_note", "merge-note"), ("error", "error")):
            if t.get(k) not in (None, ""):
                th[mk] = _mi_value(t[k])
        threads.append(th)
    return {"status": "ok", "python": res["python"], "offsets": res["offsets"], "runtime": "%#x" % res["runtime"],
            "runtime-from": res["runtime_from"], "objfile": res["objfile"] or "", "threads": threads}


def _mi_locals(res):
    if res.get("status") != "ok":
        return {"status": res["status"], "reason": res.get("reason", "")}
    rows = []
    for r in res["locals"]:
        row = {"name": r["name"], "kind": r["kind"], "type": r["type"]}
        if r["value"] is not None:
            row["value"] = r["value"]
        if r["error"]:
            row["error"] = r["error"]
        if r["addr"] is not None:
            row["addr"] = "%#x" % r["addr"]
        rows.append(row)
    return {"status": "ok", "locals": rows}


# -- readable console output ------------------------------------------------------------------------


def _text_stack(res):
    if res.get("status") != "ok":
        return "tuidbg: %s\n" % res.get("reason", res.get("status"))
    strings = res["strings"]
    out = ["Python %s (offsets from %s)\n" % (res["python"], res["offsets"].replace("_", " "))]
    for t in res["threads"]:
        label = "Thread %s" % t["tid"] if t.get("tid") else "Thread state %#x (no gdb thread)" % t["tstate"]
        extra = []
        if t.get("lwp"):
            extra.append("LWP %s" % t["lwp"])
        if t.get("name"):
            extra.append('"%s"' % t["name"])
        out.append("%s%s:\n" % (label, (" (" + ", ".join(extra) + ")") if extra else ""))
        if not t["frames"]:
            out.append("    (no Python frames)\n")
        for i, (fn, qn, fi, line, entry, level, _code, _addr) in enumerate(t["frames"]):
            name = strings[qn] if qn >= 0 else strings[fn]
            where = "%s:%s" % (strings[fi], line if line >= 0 else "?")
            nat = "  [native #%d]" % level if level >= 0 else ""
            out.append("  #%-3d %s (%s)%s\n" % (i, name, where, nat))
        if t.get("truncated"):
            out.append("    ... more frames (use --max)\n")
        if t.get("error"):
            out.append("    (%s)\n" % t["error"])
    return "".join(out)


def _text_locals(res):
    if res.get("status") != "ok":
        return "tuidbg: %s\n" % res.get("reason", res.get("status"))
    out = []
    for r in res["locals"]:
        val = r["value"] if r["value"] is not None else "<unreadable: %s>" % r["error"]
        out.append("%s = %s  (%s, %s)\n" % (r["name"], val, r["type"], r["kind"]))
    return "".join(out) or "(no locals)\n"


# -- registration -------------------------------------------------------------------------------------


class _ConsoleCommand(gdb.Command):
    def __init__(self, name, fn, to_text):
        super(_ConsoleCommand, self).__init__(name, gdb.COMMAND_STACK)
        self._fn = fn
        self._to_text = to_text

    def invoke(self, arg, from_tty):
        argv = gdb.string_to_argv(arg)
        res = _guard(self._fn, argv)
        if "--json" in argv or "--jsonz" in argv:
            key, text = _encoded(res, argv)
            gdb.write((JSONZ_MARK if key == "jsonz" else JSON_MARK) + text + "\n")
        else:
            gdb.write(self._to_text(res))


class _PyStackConsole(_ConsoleCommand):
    """tuidbg-pystack [--thread N] [--max K] [--native all|none|N,...] [--json]: Python stacks of all threads.

Reads the interpreter's memory: works without debug info, runs no code in the program."""

    def __init__(self):
        super(_PyStackConsole, self).__init__("tuidbg-pystack", pystack, _text_stack)


class _PyLocalsConsole(_ConsoleCommand):
    """tuidbg-pylocals --thread N --frame INDEX [--json]: locals of a Python frame, read from memory.

INDEX counts the thread's Python frames, 0 = innermost (as tuidbg-pystack lists them)."""

    def __init__(self):
        super(_PyLocalsConsole, self).__init__("tuidbg-pylocals", pylocals, _text_locals)


_registered = []


def register():
    if _registered:
        return
    _registered.append(_PyStackConsole())
    _registered.append(_PyLocalsConsole())
    if hasattr(gdb, "MICommand"):

        class _MIStack(gdb.MICommand):
            def __init__(self):
                super(_MIStack, self).__init__("-tuidbg-pystack")

            def invoke(self, argv):
                res = _guard(pystack, list(argv))
                if "--json" in argv or "--jsonz" in argv:
                    key, text = _encoded(res, argv)
                    return {key: text}
                return _mi_stack(res)

        class _MILocals(gdb.MICommand):
            def __init__(self):
                super(_MILocals, self).__init__("-tuidbg-pylocals")

            def invoke(self, argv):
                res = _guard(pylocals, list(argv))
                if "--json" in argv or "--jsonz" in argv:
                    key, text = _encoded(res, argv)
                    return {key: text}
                return _mi_locals(res)

        class _MIGil(gdb.MICommand):
            def __init__(self):
                super(_MIGil, self).__init__("-tuidbg-gil")

            def invoke(self, argv):
                return {"json": _json(_guard(pygil, list(argv)))}

        _registered.append(_MIStack())
        _registered.append(_MILocals())
        _registered.append(_MIGil())
