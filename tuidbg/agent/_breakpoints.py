"""The agent's breakpoint table: definitions from the front end, look-ups for the backends, hits.

The backends ask two things many times a second: which breakpoint lines a code
object holds (cached per code object) and, on such a line, whether to stop
(conditions, ignore counts, temporary breakpoints). The table answers both; the
agent turns a hit into a stop.
"""

import threading

from ._asyncio_steps import current_task_name
from ._lines import canon, code_lines, resolve_line
from ._registry import is_agent_code


class Bp(object):
    __slots__ = ("id", "file", "req_line", "line", "cond", "code", "ignore", "ignore_left", "enabled",
                 "temporary", "hits", "verified", "message", "rev", "task")

    def status(self):
        return {"id": self.id, "line": self.line, "verified": self.verified, "hits": self.hits,
                "message": self.message, "ignore_left": self.ignore_left}


class Breakpoints(object):
    """``by_id``: {id: Bp}; ``index``: {canonical file: {line: [enabled Bp]}}."""

    def __init__(self, cwd, on_verified):
        self.cwd = cwd
        self.on_verified = on_verified  # called with [Bp.status()] of breakpoints verified late
        self.by_id = {}
        self.index = {}
        self._code_cache = {}
        # Hit counts, ignore counts and a temporary breakpoint's deletion: several threads may hit the
        # same breakpoint at the same moment (free-threaded builds), each count and deletion once.
        self._hit_lock = threading.Lock()

    def set(self, defs):
        """Replace the table with the front end's definitions."""
        old = self.by_id
        new = {}
        for d in defs:
            bp = Bp()
            bp.id = int(d["id"])
            bp.file = canon(d["file"], self.cwd) or d["file"]
            bp.req_line = int(d["line"])
            bp.cond = d.get("cond") or None
            bp.task = d.get("task") or None  # only in the asyncio task of this name
            bp.code = None
            if bp.cond:
                try:
                    bp.code = compile(bp.cond, "<condition>", "eval")
                except SyntaxError as exc:
                    bp.code = exc
            bp.ignore = int(d.get("ignore", 0) or 0)
            bp.enabled = bool(d.get("enabled", True))
            bp.temporary = bool(d.get("temporary", False))
            bp.rev = d.get("rev", 0)
            line, msg = resolve_line(bp.file, bp.req_line)
            bp.verified = line is not None
            bp.line = line if line is not None else bp.req_line
            bp.message = msg
            prev = old.get(bp.id)
            if prev is not None and prev.file == bp.file and prev.req_line == bp.req_line:
                # The same breakpoint, changed (enabled, a condition): it keeps its hit count, as in
                # gdb; the hits left to ignore start again only when the ignore count was set.
                bp.hits = prev.hits
                bp.ignore_left = prev.ignore_left if prev.rev == bp.rev or prev.ignore == bp.ignore else bp.ignore
            else:
                bp.hits = 0
                bp.ignore_left = bp.ignore
            new[bp.id] = bp
        self.install(new)

    def install(self, bps):
        index = {}
        for bp in bps.values():
            if bp.enabled:
                index.setdefault(bp.file, {}).setdefault(bp.line, []).append(bp)
        self.by_id = bps
        self.index = index
        self._code_cache = {}
        # Hit counts, ignore counts and a temporary breakpoint's deletion: several threads may hit the
        # same breakpoint at the same moment (free-threaded builds), each count and deletion once.
        self._hit_lock = threading.Lock()

    def statuses(self):
        return [b.status() for b in self.by_id.values()]

    def lines_for_code(self, code):
        """The breakpoint lines inside ``code`` (a frozenset, empty if none). Cached per code object."""
        hit = self._code_cache.get(id(code))
        if hit is not None and hit[0] is code:
            return hit[1]
        lines = frozenset()
        if self.index and not is_agent_code(code):
            path = canon(code.co_filename, self.cwd)
            per_file = self.index.get(path) if path else None
            if per_file:
                mine = code_lines(code)
                lines = frozenset(n for n in per_file if n in mine)
                self._verify_late(per_file, mine)
        if len(self._code_cache) > 100000:
            self._code_cache = {}
        # Hit counts, ignore counts and a temporary breakpoint's deletion: several threads may hit the
        # same breakpoint at the same moment (free-threaded builds), each count and deletion once.
        self._hit_lock = threading.Lock()
        self._code_cache[id(code)] = (code, lines)
        return lines

    def _verify_late(self, per_file, code_lines_):
        """Breakpoints on files that could not be read when they were set: verify against live code."""
        changed = []
        for line, bps in per_file.items():
            for bp in bps:
                if not bp.verified and line in code_lines_:
                    bp.verified = True
                    bp.message = None
                    changed.append(bp.status())
        if changed:
            self.on_verified(changed)

    def hit(self, frame, line):
        """A line holding breakpoints runs in ``frame``: the stop's extra fields if one of them says
        stop (a temporary one is deleted then: ``deleted_bp``), else None."""
        path = canon(frame.f_code.co_filename, self.cwd)
        bps = self.index.get(path, {}).get(line)
        if not bps:
            return None
        for bp in list(bps):
            if not bp.enabled:
                continue
            if bp.task is not None and current_task_name() != bp.task:
                continue
            message = None
            if bp.code is not None:
                if isinstance(bp.code, SyntaxError):
                    message = "condition %r is not valid Python: %s" % (bp.cond, bp.code)
                else:
                    try:
                        if not eval(bp.code, frame.f_globals, frame.f_locals):
                            continue
                    except Exception as exc:
                        message = "error in condition %r: %s: %s" % (bp.cond, type(exc).__name__, exc)
            with self._hit_lock:
                if bp.temporary and bp.id not in self.by_id:
                    continue  # another thread hit it first and deleted it
                bp.hits += 1
                if message is None and bp.ignore_left > 0:
                    bp.ignore_left -= 1
                    continue
                extra = {"bp": bp.id, "hits": bp.hits}
                if bp.temporary:
                    new = dict(self.by_id)
                    new.pop(bp.id, None)
                    self.install(new)
                    extra["deleted_bp"] = bp.id
            if message:
                extra["message"] = message
            return extra
        return None
