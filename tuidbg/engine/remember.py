"""Breakpoints, watches and the layout, remembered per project and program between runs.

Where: ``$XDG_STATE_HOME/tuidbg/`` (default ``~/.local/state/tuidbg/``), one JSON file per
(project, program): the project is the directory tuidbg was started in, the program what runs
(an executable's path; a Python script's path or ``-m MODULE``; arguments are not part of it, so the
same test run with another ``-k`` finds the same breakpoints). Not ``.tuidbg/`` in the working
directory: this is one person's state, not the project's (``.tuidbg.toml`` is the shared part), it
must not show up in ``git status`` or in a commit, and the working directory may be read-only (a
checkout bind-mounted into a container). The file's name is the project's folder name and a hash of
(project, program); the file holds both in clear (``"project"``, ``"program"``).

What: every user breakpoint (gdb's, with its condition, ignore count and enabled state; the Python
agent's, the same), the watch expressions and the layout the UI hands over (``set_ui``). A
breakpoint on a source line also keeps that line's text. On the next ``tuidbg run``/``attach`` of the
same program (``RememberExtension.on_configure``, before the program starts), each is put back:

- the line still has that text: at the same line;
- the text is found nearby (``SEARCH`` lines either way, nearest first): there, noted "moved 41→44";
- not found: at the same line, noted "line 41 changed";
- the file is gone (or gdb refuses the breakpoint): not placed, but kept and listed as such
  ("file gone") until the user deletes the row (``forget``), never silently dropped.

``--fresh`` starts without them (and what is set in that run replaces them). Writes are atomic
(a temporary file in the same folder, then ``os.replace``); a file that cannot be read or is not
what tuidbg wrote gives one line (``warning``) and the session starts clean: it is read only if it is a
regular file of at most ``files.STATE_CAP`` bytes (``tuidbg.engine.files``), and every value in it is
checked against the small schema of ``bad_state`` before any is used. The folder is made 0700 and
each file 0600: they name your files and the conditions you typed.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import tempfile
from typing import Any

from tuidbg.engine import files, pyagent
from tuidbg.engine.errors import EngineError
from tuidbg.engine.extensions import Extension

VERSION = 1
SEARCH = 40  # lines either way to look for a breakpoint's line text


def state_home() -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "tuidbg")


def program_identity(config) -> str | None:
    """What makes two runs "the same program" (None: nothing to remember, e.g. a core file)."""
    if config.mode == "run" and config.program:
        if config.python_target:
            return "python " + _python_script(list(config.args), config.cwd)
        return os.path.realpath(config.program)
    if config.mode == "attach" and config.pid:
        try:
            with open(f"/proc/{int(config.pid)}/cmdline", "rb") as f:
                argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
            exe = os.path.realpath(f"/proc/{int(config.pid)}/exe")
            cwd = os.readlink(f"/proc/{int(config.pid)}/cwd")
        except OSError:
            return None
        if config.python_target:
            return "python " + _python_script(argv[1:], cwd)
        return exe
    return None


def _python_script(args: list[str], cwd: str | None) -> str:
    """``-m MODULE``, ``-c``, or the script's absolute path, from a Python command line's arguments."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-m" and i + 1 < len(args):
            return f"-m {args[i + 1]}"
        if a.startswith("-m") and len(a) > 2:
            return f"-m {a[2:]}"
        if a == "-c" or a.startswith("-c"):
            return "-c"
        if a in ("-X", "-W", "--check-hash-based-pycs"):
            i += 2
            continue
        if a.startswith("-") and a != "-":
            i += 1
            continue
        return os.path.realpath(os.path.join(cwd or os.getcwd(), a))
    return "(interactive)"


def state_file(project: str, program: str) -> str:
    digest = hashlib.sha256(f"{project}\0{program}".encode()).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(project.rstrip("/")) or "root")
    return os.path.join(state_home(), f"{name}-{digest}.json")


def load(path: str) -> tuple[dict[str, Any] | None, str | None]:
    """(the saved data, None), (None, None) when there is none, or (None, one line saying what is wrong:
    the file is then ignored, and the session starts without it)."""
    try:
        raw = files.read_bytes(path, files.STATE_CAP)
    except files.Unreadable as exc:
        if exc.errno == errno.ENOENT:
            return None, None
        return None, f"the remembered breakpoints were ignored ({exc}); starting without them"
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError:
        why = "nested too deeply"
    except (ValueError, UnicodeDecodeError) as exc:
        why = f"not JSON: {exc}"
    else:
        why = bad_state(data)
    if why is not None:
        return None, f"the remembered breakpoints in {path} were ignored ({why}); starting without them"
    return data, None


# What a state file holds, key by key: (the types a value may have, what the message calls it).
_TOP = {"version": ((int,), "a whole number"), "project": ((str, type(None)), "text"),
        "program": ((str, type(None)), "text"), "breakpoints": ((list,), "a list"), "watches": ((list,), "a list"),
        "layout": ((dict,), "an object")}
_BREAKPOINT = {"kind": ((str,), "text"), "file": ((str, type(None)), "text"), "line": ((int, type(None)), "a whole number"),
               "text": ((str, type(None)), "text"), "condition": ((str, type(None)), "text"),
               "ignore": ((int, type(None)), "a whole number"), "enabled": ((bool,), "true or false"),
               "location": ((str, type(None)), "text")}
_LAYOUT = {"merged": ((bool,), "true or false"), "tabs": ((dict,), "an object")}
MAX_DEPTH = 16  # what tuidbg writes is 4 deep; an unknown key's value deeper than this is refused


def _wrong(obj: dict, schema: dict) -> str | None:
    for key, (types, what) in schema.items():
        if key in obj:
            v = obj[key]
            if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
                return f"{key!r} is {type(v).__name__}, not {what}"
    return None


def _too_deep(data: Any, limit: int) -> bool:
    todo = [(data, 1)]
    while todo:
        v, depth = todo.pop()
        if depth > limit:
            return True
        if isinstance(v, dict):
            todo.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list):
            todo.extend((x, depth + 1) for x in v)
    return False


def bad_state(data: Any) -> str | None:
    """What makes ``data`` (a parsed state file) not one tuidbg wrote, in a few words; None if nothing.
    Every value tuidbg reads from it is checked here, so the rest reads it without looking again."""
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return "not a tuidbg state file of this version"
    if _too_deep(data, MAX_DEPTH):
        return f"nested more than {MAX_DEPTH} levels deep"
    why = _wrong(data, _TOP)
    if why:
        return why
    for i, b in enumerate(data.get("breakpoints", []), 1):
        if not isinstance(b, dict):
            return f"breakpoint {i} is not an object"
        why = _wrong(b, _BREAKPOINT)
        if why is None and b.get("kind") not in ("python", "native"):
            why = f"its kind is {b.get('kind')!r}, not python or native"
        if why is None and b.get("file") is not None and (not isinstance(b.get("line"), int) or b["line"] < 1):
            why = "it names a file without a line number"
        if why is None and b.get("file") is None and not b.get("location"):
            why = "it has neither a file nor a location"
        if why is None and (b.get("ignore") or 0) < 0:
            why = "its ignore count is negative"
        if why:
            return f"breakpoint {i}: {why}"
    for i, w in enumerate(data.get("watches", []), 1):
        if not isinstance(w, str):
            return f"watch {i} is {type(w).__name__}, not text"
    layout = data.get("layout", {})
    why = _wrong(layout, _LAYOUT)
    if why:
        return f"layout: {why}"
    for k, v in layout.get("tabs", {}).items():
        if not isinstance(v, str):
            return f"layout: the tab of {k!r} is {type(v).__name__}, not text"
    return None


def _private_folder(folder: str) -> None:
    """``folder`` and the folders above it that do not exist yet, made 0700 (the XDG base directory
    rule: one person's state); the folder itself made 0700 if an older tuidbg made it wider."""
    missing = []
    f = folder
    while f and not os.path.isdir(f):
        missing.append(f)
        parent = os.path.dirname(f)
        if parent == f:
            break
        f = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass
    st = os.stat(folder)
    if st.st_uid == os.geteuid() and st.st_mode & 0o077:
        os.chmod(folder, 0o700)


def save(path: str, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` atomically: a reader sees the old file or the new one, never half.
    The folder is 0700, the file 0600 (``tempfile.mkstemp``'s)."""
    folder = os.path.dirname(path)
    _private_folder(folder)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# path -> ((mtime_ns, size), lines or None, why not): saving runs at every change of the breakpoints
_read: dict[str, tuple[tuple[int, int], list[str] | None, str | None]] = {}


def _cached(path: str) -> tuple[tuple[int, int] | None, tuple[list[str] | None, str | None] | None]:
    try:
        st = os.stat(path)
    except OSError as exc:
        return None, (None, f"{path}: {exc.strerror or exc}")
    key = (st.st_mtime_ns, st.st_size)
    hit = _read.get(path)
    return key, ((hit[1], hit[2]) if hit is not None and hit[0] == key else None)


def _keep(path: str, key: tuple[int, int], text: str | None, why: str | None) -> tuple[list[str] | None, str | None]:
    lines = text.splitlines() if text is not None else None
    if len(_read) > 256:
        _read.clear()
    _read[path] = (key, lines, why)
    return lines, why


def _lines(path: str) -> tuple[list[str] | None, str | None]:
    """The lines of a source file (None, and why, when it cannot be read: ``tuidbg.engine.files``)."""
    key, hit = _cached(path)
    if hit is not None or key is None:
        return hit  # type: ignore[return-value]
    try:
        return _keep(path, key, files.read_text(path, files.SOURCE_CAP, files.UI_TIMEOUT), None)
    except files.Unreadable as exc:
        return _keep(path, key, None, str(exc))


async def _lines_async(path: str) -> tuple[list[str] | None, str | None]:
    key, hit = _cached(path)
    if hit is not None or key is None:
        return hit  # type: ignore[return-value]
    try:
        return _keep(path, key, await files.read_text_async(path, files.SOURCE_CAP), None)
    except files.Unreadable as exc:
        return _keep(path, key, None, str(exc))


def line_text(path: str, line: int) -> str | None:
    lines, _why = _lines(path)
    if lines is None or not 1 <= line <= len(lines):
        return None
    return lines[line - 1].strip()


def relocate(lines: list[str], line: int, text: str | None) -> int | None:
    """Where a breakpoint set on ``line`` (whose text was ``text``) is now: the line with that text
    nearest to ``line`` within ``SEARCH`` lines, or None when no line there has it."""
    if not text:
        return line if 1 <= line <= len(lines) else None
    for d in range(SEARCH + 1):
        for cand in ((line,) if d == 0 else (line - d, line + d)):
            if 1 <= cand <= len(lines) and lines[cand - 1].strip() == text:
                return cand
    return None


def controller(session) -> RememberExtension | None:
    """The session's RememberExtension, if it has one."""
    for ext in getattr(session, "extensions", ()):
        if isinstance(ext, RememberExtension):
            return ext
    return None


class RememberExtension(Extension):
    """Puts the remembered breakpoints back when a session is configured; saves them as they change."""

    def __init__(self, config) -> None:
        self.config = config
        self.path: str | None = config.remember
        self.session = None
        self.watches: list[str] = []
        self.layout: dict[str, Any] = {}
        self.gone: list[dict[str, Any]] = []  # remembered, not placed: each with its "why"
        self.notes: dict[str, str] = {}  # "n:NUMBER" / "p:ID" -> "moved 41→44"
        self.warning: str | None = None  # one line for the user: the state file is unreadable, or unwritable
        self._ready = False
        self._written: str | None = None
        self._tables: tuple = ((), ())  # the breakpoint tables of the last snapshot (_state_changed)
        self._ui: dict[str, Any] = {}
        self._restored = 0
        if self.path and not config.fresh_state:
            data, self.warning = load(self.path)
            self._saved = data or {}
        else:
            self._saved = {}
        self.watches = [str(w) for w in self._saved.get("watches", []) if isinstance(w, str)]
        layout = self._saved.get("layout", {})
        self.layout = dict(layout) if isinstance(layout, dict) else {}

    # -- the session's hooks -------------------------------------------------------------------

    async def on_configure(self, session) -> None:
        self.session = session
        for bp in self._saved.get("breakpoints", []):
            try:
                await self._restore(session, bp)
            except (EngineError, OSError, TypeError, ValueError) as exc:
                self.gone.append({**bp, "why": f"not placed: {exc}"})
        self._ready = True
        self.config.fresh_state = False  # (--fresh is for this run's start: a restarted gdb gets them back)
        session.on_state(self._state_changed)
        self._on_state(session.state)

    # -- what the UI reads and hands over ---------------------------------------------------------

    def set_ui(self, watches: list[str], layout: dict[str, Any]) -> None:
        """The UI's watches and layout: saved with the breakpoints (when they changed)."""
        self.watches = list(watches)
        self.layout = dict(layout)
        if self._ready and self.session is not None:
            self._on_state(self.session.state)

    def forget(self, index: int) -> None:
        """Delete a remembered breakpoint that could not be placed (its row in the Breakpoints pane)."""
        if 0 <= index < len(self.gone):
            del self.gone[index]
            if self._ready and self.session is not None:
                self._on_state(self.session.state)

    # -- restoring -------------------------------------------------------------------------------

    async def _restore(self, session, bp: dict[str, Any]) -> None:
        kind = bp.get("kind")
        cond = bp.get("condition") or None
        ignore = int(bp.get("ignore") or 0)
        enabled = bool(bp.get("enabled", True))
        file, line = bp.get("file"), bp.get("line")
        if file is not None:
            file, line = str(file), int(line)
            lines, why = await _lines_async(file)
            if lines is None:
                gone = not os.path.lexists(file)
                self.gone.append({**bp, "why": "file gone" if gone else f"not placed: {why}"})
                return
            found = relocate(lines, line, bp.get("text"))
            note = None
            if found is None:
                found, note = line, f"line {line} changed"
            elif found != line:
                note = f"moved {line}→{found}"
        if kind == "python":
            ag = pyagent.controller(session)
            if ag is None or file is None:
                self.gone.append({**bp, "why": "no Python agent in this session"})
                return
            if ag.breakpoints_at(file, found) or self._in_ex(file, found):
                return
            new = await ag.add_breakpoint(file, found, condition=cond, ignore_count=ignore, enabled=enabled,
                                          task=bp.get("task") or None)
            key = f"p:{new.id}"
        elif kind == "native":
            if file is not None:
                if any((file, found) in b.source_lines() for b in session.state.breakpoints if not b.internal):
                    return
                new = await session.break_insert(file=file, line=found, condition=cond, ignore_count=ignore,
                                                 enabled=enabled)
            else:
                loc = str(bp.get("location") or "")
                if not loc:
                    raise ValueError("a breakpoint with neither a file nor a location")
                if any(b.original_location == loc for b in session.state.breakpoints if not b.internal):
                    return
                new = await session.break_insert(loc, condition=cond, ignore_count=ignore, enabled=enabled)
            key = f"n:{new.number}"
        else:
            raise ValueError(f"unknown breakpoint kind {kind!r}")
        self._restored += 1
        if file is not None and note:
            self.notes[key] = note

    def _in_ex(self, file: str, line: int) -> bool:
        """A Python breakpoint the command line's (or a profile's) -ex sets there already."""
        for command in self.config.ex:
            m = re.match(r"\s*(?:py)?(?:break|b|tbreak)\s+(\S+):(\d+)\b", command)
            if m and int(m.group(2)) == line:
                where = m.group(1)
                base = self.config.cwd or os.getcwd()
                if os.path.realpath(os.path.join(base, where)) == os.path.realpath(file):
                    return True
        return False

    # -- saving --------------------------------------------------------------------------------

    def snapshot(self, state) -> dict[str, Any]:
        bps: list[dict[str, Any]] = []
        for b in state.breakpoints:
            if b.internal or b.cxx_added or b.disp != "keep" or "breakpoint" not in (b.type or ""):
                continue
            common = {"kind": "native", "condition": b.condition, "ignore": b.ignore, "enabled": b.enabled}
            loc = (b.original_location or "").strip()
            func = re.fullmatch(r"(?:-function\s+)?([A-Za-z_][\w:~<>]*)", loc)
            src = re.fullmatch(r"-source\s+(\S+)\s+-line\s+(\d+)", loc) or re.fullmatch(r"(/[^:]+):(\d+)", loc)
            lines = b.source_lines()
            if func:
                bps.append({**common, "location": func.group(1)})  # a function: wherever gdb finds it next time
            elif lines or src:
                f, n = lines[0] if lines else (src.group(1), int(src.group(2)))
                bps.append({**common, "file": f, "line": n, "text": line_text(f, n)})
            elif loc:
                bps.append({**common, "location": loc})
        for p in state.python_breakpoints:
            if p.temporary:
                continue
            n = p.effective_line
            bps.append({"kind": "python", "file": p.file, "line": n, "text": line_text(p.file, n),
                        "condition": p.condition, "ignore": p.ignore_count, "enabled": p.enabled,
                        **({"task": p.task} if p.task else {})})
        bps += [{k: v for k, v in g.items() if k != "why"} for g in self.gone]
        return {"version": VERSION, "project": os.getcwd(), "program": program_identity(self.config),
                "breakpoints": bps, "watches": self.watches, "layout": self.layout}

    def _state_changed(self, state) -> None:
        # (every state of the session: a step's two, a stop's refresh... Only breakpoints are saved from
        # a state, and an unchanged table is the same object: the snapshot is not worked out again.)
        if (state.breakpoints, state.python_breakpoints) != self._tables:
            self._on_state(state)

    def _on_state(self, state) -> None:
        s = self.session
        if not self._ready or not self.path or s is None or s.closing or state.gdb_exit:
            return
        self._tables = (state.breakpoints, state.python_breakpoints)
        data = self.snapshot(state)
        text = json.dumps(data, sort_keys=True)
        if text == self._written:
            return
        try:
            save(self.path, data)
        except OSError as exc:
            self.warning = f"cannot save the breakpoints to {self.path} ({exc.strerror or exc})"
        self._written = text
