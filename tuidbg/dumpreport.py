"""What ``tuidbg dump`` prints: the JSON schema, stacks grouped STAT-style, and ``--merge``.

The JSON (``tuidbg dump --json PID...``; ``--merge`` reads and writes the same)::

    {"format": "tuidbg-dump", "version": 2,
     "processes": [                      # in the order asked (with --children: each tree, parent first)
       {"pid": 4101, "ppid": 4100, "host": "node1",        # os.uname().nodename of the reading machine
        "cmdline": ["python3", "train.py"], "executable": "/usr/bin/python3.11",
        "env": {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "3"},   # those set at exec, else {}
        "python": "3.11.2", "offsets": "...",              # null/absent: no Python runtime read
        "reader": "memory" | "memory-nonblocking" | "gdb",
        "fallback": "why gdb read it",                      # only when gdb stood in for the direct reader
        "note": "...", "error": "...",                     # only when something could not be read
        "threads": [
          {"id": "1", "tid": 4101, "name": "python3", "main": true,
           "truncated": false, "python_error": "...",     # (python_error only when there was one)
           "frames": [                                     # innermost first
             {"kind": "python", "function": "wait", "qualname": "Barrier.wait",
              "file": "/x/train.py", "line": 12, "entry": false, "native_level": null},
             {"kind": "native", "function": "__futex_abstimed_wait_common", "file": null,
              "line": null, "addr": "0x7f..", "library": "/lib/x86_64-linux-gnu/libc.so.6",
              "level": 0, "fold": "libc internals (3 frames)",   # (--native only; fold: display group,
              "internal": true}                                  #  internal: interpreter plumbing)
           ],
           "notes": ["Python frames not merged: ..."]}],   # (--native, only when there are any)
        "orphan_thread_states": [{"thread_id": 140.., "frames": [...]}],  # (only if any: Python
                                                     # thread states on no thread the reader could name)
        "tasks": [...],                                 # the asyncio tasks (tuidbg.dumptasks); absent when
        "tasks_error": "..."}],                          # the program has no asyncio; why not, if not read
     "errors": [{"pid": 4000000, "host": "node1", "error": "no process with ID 4000000"}],  # (only if any)
     "exited": [{"pid": 4102, "host": "node1"}]}  # (only if any: found by --children, ended before its read)

Keys may be added within a version; a reader ignores those it does not know. Version 2 added
``tasks`` (and ``tasks_error``): a version 1 dump is the same without them, and ``--merge`` and
``tuidbg view`` read both (a merge is written as version 2); they refuse another format or
version with one line.

Without ``--native`` a thread's frames are its Python frames; with it, its whole native
stack with the Python frames in place of the eval-loop frames that run them.

The text groups the threads of every process by their stack (kind, function, file, line of
every frame; not addresses, which differ between processes): each distinct stack once, with
the processes (and threads) that share it, fewest processes first, so that the odd one out
leads; of two groups shared by as many processes, the one whose outermost frame another group
starts from too (a rank that went another way) comes first. Threads without frames come last.
Processes are named by PID, or HOST:PID when the report spans several hosts.
"""

from __future__ import annotations

FORMAT = "tuidbg-dump"
VERSION = 2
READS = (1, 2)  # versions --merge and view read (1: before the asyncio tasks)


class BadReport(Exception):
    """A file given to ``--merge`` that is not a dump (one line)."""


# ---------------------------------------------------------------------------------------------
# JSON


def document(processes: list[dict], errors: list[dict], exited: list[dict] | None = None) -> dict:
    doc: dict = {"format": FORMAT, "version": VERSION, "processes": processes}
    if errors:
        doc["errors"] = errors
    if exited:
        doc["exited"] = exited
    return doc


def load(path: str) -> dict:
    """A dump written by ``tuidbg dump --json``; BadReport (one line) for anything else. Read only if it
    is a regular file of at most ``files.DUMP_CAP`` bytes (``tuidbg.engine.files``), and checked against
    the schema below before anything uses it."""
    import json

    from tuidbg.engine import files

    try:
        data = files.read_bytes(path, files.DUMP_CAP, timeout=60)
    except files.Unreadable as exc:
        raise BadReport(f"{path}: cannot read it ({exc.why})") from None
    try:
        doc = json.loads(data)
    except RecursionError:
        raise BadReport(f"{path}: not a tuidbg dump (nested too deeply)") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadReport(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise BadReport(f"{path}: not a tuidbg dump (made with tuidbg dump --json)")
    if doc.get("version") not in READS:
        raise BadReport(f"{path}: a tuidbg dump of version {doc.get('version')!r}; this tuidbg reads versions "
                        f"{', '.join(map(str, READS))}")
    why = bad_document(doc)
    if why:
        raise BadReport(f"{path}: {why}")
    return doc


# The schema, key by key: the types each value may have (absent keys are fine; keys not named here
# are kept and not looked at). Everything the report, --merge and tuidbg view read is named here.
_N = type(None)
_TEXT = (str, _N)
_INT = (int, _N)
_FLAG = (bool, _N)
PROCESS = {"pid": (int,), "ppid": _INT, "host": _TEXT, "cmdline": (list, _N), "executable": _TEXT, "env": (dict, _N),
           "python": _TEXT, "reader": _TEXT, "fallback": _TEXT, "note": _TEXT, "error": _TEXT, "threads": (list,),
           "orphan_thread_states": (list, _N), "tasks": (list, _N), "tasks_error": _TEXT, "tasks_note": _TEXT}
THREAD = {"id": (str, int, _N), "tid": _INT, "name": _TEXT, "main": _FLAG, "truncated": _FLAG, "python_error": _TEXT,
          "frames": (list,), "notes": (list, _N)}
ORPHAN = {"thread_id": _INT, "frames": (list,)}
FRAME = {"kind": (str,), "function": _TEXT, "qualname": _TEXT, "file": _TEXT, "line": _INT, "entry": _FLAG,
         "native_level": _INT, "addr": _TEXT, "library": _TEXT, "level": _INT, "fold": _TEXT, "internal": _FLAG}
ERROR = {"pid": (int, str, _N), "host": _TEXT, "error": _TEXT}
EXITED = {"pid": (int, str), "host": _TEXT}
TASK = {"id": (str,), "name": _TEXT, "state": _TEXT, "current": _FLAG, "running": _FLAG, "thread": (str, int, _N),
        "tid": _INT, "frames": (list,), "awaiting": (dict, _N), "awaited_by": (list, _N), "error": _TEXT}
AWAITING = {"kind": _TEXT, "type": _TEXT, "name": _TEXT, "state": _TEXT, "id": _TEXT}
MAX_DEPTH = 64  # what tuidbg writes is 8 deep; a value deeper than this (in a key it does not know) is refused

_WHAT = {str: "text", int: "a whole number", bool: "true or false", list: "a list", dict: "an object"}


def _wrong(obj, schema: dict) -> str | None:
    if not isinstance(obj, dict):
        return "is not an object"
    for key, types in schema.items():
        if key not in obj:
            if _N not in types:
                return f"has no {key!r}"
            continue
        v = obj[key]
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
            return f"has {key!r} of the wrong type ({type(v).__name__}, not {' or '.join(_WHAT.get(t, 'null') for t in types)})"
    return None


def _texts(v, what: str) -> str | None:
    if v is not None and not all(isinstance(x, str) for x in v):
        return f"has {what} that are not all text"
    return None


def _frames(frames: list, where: str) -> str | None:
    for k, f in enumerate(frames, 1):
        why = _wrong(f, FRAME)
        if why is None and f["kind"] not in ("python", "native"):
            why = "is neither python nor native"
        if why:
            return f"{where}, frame {k} {why}"
    return None


def _too_deep(doc, limit: int) -> bool:
    todo = [(doc, 1)]
    while todo:
        v, depth = todo.pop()
        if depth > limit:
            return True
        if isinstance(v, dict):
            todo.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list):
            todo.extend((x, depth + 1) for x in v)
    return False


def bad_document(doc: dict) -> str | None:
    """What makes ``doc`` (a parsed dump of this format and version) unfit to read, in one line; None
    when nothing does."""
    if _too_deep(doc, MAX_DEPTH):
        return f"not a tuidbg dump (nested more than {MAX_DEPTH} levels deep)"
    procs = doc.get("processes")
    if not isinstance(procs, list):
        return "a tuidbg dump without its list of processes"
    for i, p in enumerate(procs, 1):
        where = f"process {i} of the dump"
        why = _wrong(p, PROCESS) or _texts(p.get("cmdline"), "arguments")
        if why is None and p.get("env") is not None and not all(isinstance(v, str) for v in p["env"].values()):
            why = "has environment values that are not all text"
        if why:
            return f"{where} {why}"
        for j, t in enumerate(p["threads"], 1):
            why = _wrong(t, THREAD) or _texts(t.get("notes"), "notes")
            if why:
                return f"{where}, thread {j} {why}"
            why = _frames(t["frames"], f"{where}, thread {j}")
            if why:
                return why
        for j, o in enumerate(p.get("orphan_thread_states") or [], 1):
            why = _wrong(o, ORPHAN)
            if why:
                return f"{where}, orphan thread state {j} {why}"
            why = _frames(o["frames"], f"{where}, orphan thread state {j}")
            if why:
                return why
        for j, t in enumerate(p.get("tasks") or [], 1):
            why = _wrong(t, TASK) or _texts(t.get("awaited_by"), "awaiting tasks")
            if why is None and t.get("awaiting") is not None:
                why = _wrong(t["awaiting"], AWAITING)
            why = why or _frames(t["frames"], "")
            if why is None and any(f["kind"] != "python" for f in t["frames"]):
                why = "has a frame that is not a Python frame"
            if why:
                return f"{where}, task {j} {why.lstrip(', ')}"
    errors = doc.get("errors", [])
    if not isinstance(errors, list):
        return "its errors are not a list of objects"
    for i, e in enumerate(errors, 1):
        why = _wrong(e, ERROR)
        if why:
            return f"error {i} of the dump {why}"
    exited = doc.get("exited", [])
    if not isinstance(exited, list):
        return "its exited processes are not a list of objects"
    for i, e in enumerate(exited, 1):
        why = _wrong(e, EXITED)
        if why:
            return f"exited process {i} of the dump {why}"
    return None


def merge(paths: list[str]) -> dict:
    """The dumps in ``paths`` as one (their processes and errors, in the order given)."""
    procs: list[dict] = []
    errors: list[dict] = []
    exited: list[dict] = []
    for path in paths:
        doc = load(path)
        procs.extend(doc["processes"])
        errors.extend(doc.get("errors", []))
        exited.extend(doc.get("exited", []))
    return document(procs, errors, exited)


# ---------------------------------------------------------------------------------------------
# Grouping


def frame_key(f: dict) -> tuple:
    if f.get("kind") == "python":
        return ("py", f.get("qualname") or f.get("function"), f.get("file"), f.get("line"))
    return ("c", f.get("function"), f.get("file"), f.get("line"), None if f.get("file") else f.get("library"))


class Group:
    """Threads (of one or more processes) whose stacks are the same."""

    def __init__(self, key: tuple, frames: list[dict]) -> None:
        self.key = key
        self.frames = frames  # the first member's (addresses are the first member's)
        self.members: list[tuple[dict, dict]] = []  # (process, thread), or (process, task)
        self.diverges = False
        self.tasks = False  # a group of asyncio tasks (tuidbg.dumptasks.group)

    @property
    def processes(self) -> list[dict]:
        out: list[dict] = []
        seen: set[int] = set()
        for p, _t in self.members:
            if id(p) not in seen:
                seen.add(id(p))
                out.append(p)
        return out

    def sort_key(self) -> tuple:
        return (not self.key, len(self.processes), not self.diverges, len(self.members), self.members[0][1].get("tid") or 0)


def group(processes: list[dict]) -> list[Group]:
    """The distinct stacks of every thread of ``processes``, the odd one out first (see above)."""
    groups: dict[tuple, Group] = {}
    for p in processes:
        for t in p.get("threads", []):
            key = tuple(frame_key(f) for f in t.get("frames", []))
            if t.get("truncated"):
                key += (("truncated",),)
            g = groups.get(key)
            if g is None:
                g = groups[key] = Group(key, t.get("frames", []))
            g.members.append((p, t))
    by_outer: dict[tuple, int] = {}
    for key in groups:
        if key:
            by_outer[key[-1]] = by_outer.get(key[-1], 0) + 1
    for key, g in groups.items():
        g.diverges = bool(key) and by_outer[key[-1]] > 1
    return sorted(groups.values(), key=Group.sort_key)


# ---------------------------------------------------------------------------------------------
# Text


def clean(s: object) -> str:
    """Program-controlled text (names, paths) with control characters made visible."""
    s = str(s)
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in s)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "es" if word.endswith("s") else "s")


def role(p: dict) -> str:
    env = p.get("env") or {}
    if "RANK" not in env:
        return ""
    out = f"rank {clean(env['RANK'])}"
    if "WORLD_SIZE" in env:
        out += f"/{clean(env['WORLD_SIZE'])}"
    if "LOCAL_RANK" in env:
        out += f" local {clean(env['LOCAL_RANK'])}"
    return out


def _name(p: dict, hosts: bool) -> str:
    return f"{clean(p.get('host') or '?')}:{p['pid']}" if hosts else str(p["pid"])


def many_hosts(doc: dict) -> bool:
    """Whether the report spans several hosts (processes are named HOST:PID then)."""
    return len({p.get("host") for p in doc["processes"]} | {e.get("host") for e in doc.get("errors", [])}) > 1


def format_text(doc: dict, native: bool = False, tail: list[str] = ()) -> str:
    """The report as text: its processes, each distinct stack, then ``tail`` (the tasks: tuidbg.dumptasks)."""
    procs = doc["processes"]
    hosts = many_hosts(doc)
    out: list[str] = []
    if len(procs) == 1 and not doc.get("errors"):
        out.append(_process_line(procs[0], hosts, alone=True))
    else:
        nthreads = sum(len(p.get("threads", [])) for p in procs)
        where = f"{len({p.get('host') for p in procs})} hosts" if hosts else (clean(procs[0].get("host") or "?") if procs else "")
        out.append(f"{plural(len(procs), 'process')}, {plural(nthreads, 'thread')}" + (f", on {where}" if where else "") + ":")
        for p in procs:
            out.append("  " + _process_line(p, hosts))
    for p in procs:
        if p.get("note"):
            out.append(f"  {_name(p, hosts)}: {clean(p['note'])}")
        if p.get("error"):
            out.append(f"  {_name(p, hosts)}: Python stacks could not be read: {clean(p['error'])}")
    for e in doc.get("errors", []):
        host = f"{clean(e.get('host') or '?')}:" if hosts else ""
        out.append(f"  {host}{e.get('pid')}: not read: {clean(e.get('error', ''))}")
    gone = doc.get("exited", [])
    if gone:
        names = " ".join((f"{clean(e.get('host') or '?')}:" if hosts else "") + clean(str(e.get("pid"))) for e in gone)
        out.append(f"  exited before {'it was' if len(gone) == 1 else 'they were'} read: {names}")
    groups = group(procs)
    if len(procs) > 1 or any(len(g.members) > 1 for g in groups):
        out.append("")
        out.append(f"{plural(len(groups), 'distinct stack')}, fewest processes first:")
    for g in groups:
        out.append("")
        out.append(_group_head(g, hosts, single=len(procs) == 1))
        if not g.key:
            continue
        one = len(g.processes) == 1
        for f in g.frames:
            if native:
                _native_row(out, f, addr=one)
            else:
                out.append("    " + pyline(f))
        _, t = g.members[0]
        if t.get("truncated"):
            out.append("    … more frames")
        if t.get("python_error"):
            out.append(f"    ({clean(t['python_error'])})")
        for note in t.get("notes", []):
            out.append(f"    ({clean(note)})")
    out.extend(tail)
    out.append("")
    return "\n".join(out)


def _process_line(p: dict, hosts: bool, alone: bool = False) -> str:
    head = f"Process {_name(p, hosts)}" if alone else _name(p, hosts)
    bits = []
    r = role(p)
    if r:
        bits.append(r)
    if p.get("ppid") and not alone:
        bits.append(f"ppid {p['ppid']}")
    if p.get("python"):
        bits.append(f"Python {p['python']}")
    if p.get("reader") == "gdb" and p.get("fallback"):
        bits.append(f"read by gdb: {clean(p['fallback'])}")
    cmd = clean(" ".join(p.get("cmdline") or [])) or "?"
    return f"{head}: {cmd}" + (f"  ({', '.join(bits)})" if bits else "")


def _thread_label(t: dict) -> str:
    label = f"Thread {t.get('id')} (LWP {t.get('tid')})" if t.get("tid") else f"Thread {t.get('id')}"
    if t.get("name"):
        label += f' "{clean(t["name"])}"'
    if t.get("main"):
        label += " [main thread]"
    return label


def _group_head(g: Group, hosts: bool, single: bool) -> str:
    empty = "" if g.key else ": no frames"
    if single:
        if len(g.members) == 1:
            return _thread_label(g.members[0][1]) + (empty or ":")
        return f"{len(g.members)} threads: " + " ".join(str(t.get("tid")) for _p, t in g.members) + (empty or ":")
    procs = g.processes
    counts: dict[int, int] = {}
    for p, _t in g.members:
        counts[id(p)] = counts.get(id(p), 0) + 1
    names = []
    for p in procs:
        bits = [rank_of(p)] if rank_of(p) else []
        if counts[id(p)] > 1:
            bits.append(f"{counts[id(p)]} threads")
        names.append(_name(p, hosts) + (f" ({', '.join(bits)})" if bits else ""))
    what = f"{len(procs)} process{'es' if len(procs) > 1 else ''}"
    if len(g.members) > len(procs):
        what = f"{len(g.members)} threads in {what}"
    tail = ""
    if len(g.members) == 1:
        t = g.members[0][1]
        tail = ", main thread" if t.get("main") else f", thread {t.get('tid')}" + (f' "{clean(t["name"])}"' if t.get("name") else "")
    return f"== {what}: {' '.join(names)}{tail}{empty}"


def rank_of(p: dict) -> str:
    rank = (p.get("env") or {}).get("RANK")
    return f"rank {clean(rank)}" if rank is not None else ""


def pyline(f: dict) -> str:
    name = f.get("qualname") or f.get("function")
    where = f"{f.get('file')}:{f.get('line')}" if f.get("line") is not None else f.get("file")
    return f"{clean(name)} ({clean(where)})"


def _native_row(out: list[str], f: dict, addr: bool) -> None:
    fold = f.get("fold")
    if fold:
        if out and out[-1].endswith(f"… {fold}"):
            return  # (the fold's first frame stands for all of them)
        lvl = f.get("level")
        out.append(f"  {'#%-3s ' % lvl if lvl is not None else ''}… {fold}")
        return
    if f["kind"] == "python":
        lvl = f.get("native_level")
        marker = f"#{lvl:<3}" if lvl is not None else "    "
        out.append(f"  {marker} [py] {pyline(f)}")
        return
    where = ""
    if f.get("file") and f.get("line") is not None:
        where = f" at {f['file']}:{f['line']}"
    elif f.get("library"):
        where = f" from {f['library']}"
    at = f"{f.get('addr')} in " if addr and f.get("addr") else ""
    out.append(f"  #{f.get('level'):<3} {at}{clean(f.get('function') or '??')}{clean(where)}")
