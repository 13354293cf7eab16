"""Launch profiles: ``.tuidbg.toml`` next to the code, ``tuidbg run --profile NAME``.

The file is looked for in the working directory, then in each folder above it (the first one found
is the project's). Each ``[profiles.NAME]`` table says how to start one program::

    [profiles.train]
    module = "train"                      # or script = "train.py", or program = "./a.out"
    args = ["--epochs", "1"]
    env = { CUDA_LAUNCH_BLOCKING = "1", TORCH_SHOW_CPP_STACKTRACES = "1" }
    cwd = "."                             # default: the folder of .tuidbg.toml
    python = ".venv/bin/python"
    gdb = "cuda-gdb"                      # or cuda = true
    ex = ["set print pretty on"]          # gdb commands before the program starts
    breakpoints = ["train.py:42", "my_kernel if n == 3"]
    agent = true                          # false: --no-agent
    break_on_exception = false
    break_on_failure = false
    stop_at_entry = true                  # stop at main (a script's first line) even with breakpoints set;
                                          # false: never (by default: only when no breakpoint is set)

Relative paths (cwd, script, program with a ``/``, python with a ``/``, a breakpoint's file) are
relative to the folder of ``.tuidbg.toml``. A breakpoint is what gdb's ``break`` takes (``FILE:LINE``,
a function, ``... if COND``); on a ``.py`` file it is a Python breakpoint. The command line wins over the profile: an option given there replaces the
profile's, ``-ex`` commands come after the profile's, and a program given there replaces the
profile's program and arguments. Only keys that work are accepted: any other (``children``
included: tuidbg follows one process) is an error naming the file, the line and the key, as is a
value of the wrong type or a TOML syntax error.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from tuidbg.launch import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10
    import tomli as tomllib

FILE_NAME = ".tuidbg.toml"

_STR, _LIST, _BOOL, _TABLE = "a string", "a list of strings", "true or false", "a table of NAME = \"value\""
KEYS = {
    "program": _STR, "script": _STR, "module": _STR, "args": _LIST, "env": _TABLE, "cwd": _STR,
    "python": _STR, "gdb": _STR, "cuda": _BOOL, "ex": _LIST, "breakpoints": _LIST, "agent": _BOOL,
    "break_on_exception": _BOOL, "break_on_failure": _BOOL, "stop_at_entry": _BOOL,
}
NOT_YET = {"children": "not supported yet (tuidbg debugs the process it starts, not its children)"}


class Profile:
    """One checked ``[profiles.NAME]`` table, with the file it came from."""

    def __init__(self, name: str, path: str, data: dict[str, Any], text: str = "") -> None:
        self.name = name
        self.path = path
        self.text = text
        self.folder = os.path.dirname(path)
        self.data = data

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def local_path(self, value: str) -> str:
        """A path of the profile, relative to the folder of its file."""
        return value if os.path.isabs(value) else os.path.normpath(os.path.join(self.folder, value))

    def summary(self) -> str:
        target = (f"-m {self.data['module']}" if "module" in self.data else
                  self.data.get("script") or self.data.get("program") or "(the program on the command line)")
        return " ".join([target] + list(self.data.get("args", [])))


def find_file(start: str | None = None) -> str | None:
    d = os.path.abspath(start or os.getcwd())
    while True:
        p = os.path.join(d, FILE_NAME)
        if os.path.isfile(p):
            return p
        up = os.path.dirname(d)
        if up == d:
            return None
        d = up


def _key_line(text: str, name: str, key: str | None) -> int:
    """The line of ``key`` in the table of profile ``name`` (or of the table's header)."""
    lines = text.splitlines()
    header = re.compile(r"\s*\[\s*profiles\s*\.\s*(?:\"%s\"|'%s'|%s)\s*\]" % ((re.escape(name),) * 3))
    start = next((i for i, ln in enumerate(lines) if header.match(ln)), None)
    if start is None:
        dotted = re.compile(r"\s*profiles\s*\.\s*[\"']?%s[\"']?\s*[.=]" % re.escape(name))
        return next((i + 1 for i, ln in enumerate(lines) if dotted.match(ln)), 1)
    if key is None:
        return start + 1
    kline = re.compile(r"\s*[\"']?%s[\"']?\s*[=.]" % re.escape(key))
    for i in range(start + 1, len(lines)):
        if re.match(r"\s*\[", lines[i]):
            break
        if kline.match(lines[i]):
            return i + 1
    return start + 1


def _check(name: str, table: Any, path: str, text: str) -> dict[str, Any]:
    def bad(key: str | None, what: str) -> UsageError:
        where = f"key {key!r}: " if key else ""
        return UsageError(f"{path}:{_key_line(text, name, key)}: profile {name!r}: {where}{what}")

    if not isinstance(table, dict):
        raise bad(None, "must be a table ([profiles.NAME])")
    for key, value in table.items():
        if key in NOT_YET:
            raise bad(key, NOT_YET[key])
        kind = KEYS.get(key)
        if kind is None:
            raise bad(key, f"unknown key (known: {', '.join(KEYS)})")
        ok = {
            _STR: lambda v: isinstance(v, str) and v != "",
            _LIST: lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
            _BOOL: lambda v: isinstance(v, bool),
            _TABLE: lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
        }[kind](value)
        if not ok:
            raise bad(key, f"must be {kind}")
    targets = [k for k in ("program", "script", "module") if k in table]
    if len(targets) > 1:
        raise bad(targets[1], f"a profile runs one of program, script or module, not {' and '.join(targets)}")
    if "gdb" in table and table.get("cuda"):
        raise bad("cuda", "give gdb or cuda = true, not both")
    return table


def load_all(path: str) -> dict[str, Profile]:
    """Every profile of ``path``, checked; a bad one is a UsageError naming the file, line and key."""
    from tuidbg.engine import files

    try:
        text = files.read_text(path, files.CONFIG_CAP)
    except files.Unreadable as exc:
        raise UsageError(f"{path}: cannot read it ({exc.why})") from None
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise UsageError(f"{path}: not valid TOML (nested too deeply)") from None
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"\(at line (\d+), column \d+\)", msg)
        line = int(m.group(1)) if m else max(1, len(text.splitlines()))  # "(at end of document)"
        raise UsageError(f"{path}:{line}: not valid TOML ({msg})") from exc
    extra = [k for k in data if k != "profiles"]
    if extra:
        line = next((i + 1 for i, ln in enumerate(text.splitlines())
                     if re.match(r"\s*\[?\s*[\"']?%s\b" % re.escape(extra[0]), ln)), 1)
        raise UsageError(f"{path}:{line}: unknown key {extra[0]!r} (the file holds [profiles.NAME] tables)")
    profiles = data.get("profiles", {})
    if not isinstance(profiles, dict):
        raise UsageError(f"{path}:{_key_line(text, '', None)}: 'profiles' must be tables: [profiles.NAME]")
    return {name: Profile(name, path, _check(name, table, path, text), text) for name, table in profiles.items()}


def load(name: str, start: str | None = None) -> Profile:
    path = find_file(start)
    if path is None:
        raise UsageError(f"--profile {name}: no {FILE_NAME} in {os.path.abspath(start or os.getcwd())} or a folder above it")
    profiles = load_all(path)
    if name not in profiles:
        known = ", ".join(sorted(profiles)) or "none"
        raise UsageError(f"--profile {name}: {path} has no profile {name!r} (its profiles: {known})")
    return profiles[name]


def _local_location(prof: Profile, spec: str) -> str:
    """``FILE:LINE [if COND]`` with FILE relative to the profile's folder (when it is there) made absolute;
    other locations (a function, a file gdb finds by its name) as written."""
    m = re.match(r"(\S+?):(\d+)(\s.*)?$", spec)
    if m and not os.path.isabs(m.group(1)) and os.path.exists(prof.local_path(m.group(1))):
        return f"{prof.local_path(m.group(1))}:{m.group(2)}{m.group(3) or ''}"
    return spec


def apply(prof: Profile, args) -> dict[str, str]:
    """Fill the ``run`` arguments (argparse's namespace) from a profile; returns its environment.

    What the command line gave stays: options, a program; ``-ex`` commands come after the profile's."""
    if args.cwd is None:
        args.cwd = prof.local_path(prof.get("cwd", "."))
        if not os.path.isdir(args.cwd):
            raise UsageError(f"{prof.path}:{_key_line(prof.text, prof.name, 'cwd')}: profile {prof.name!r}: "
                             f"key 'cwd': {args.cwd}: no such directory")
    for key in ("python", "gdb"):
        value = prof.get(key)
        if getattr(args, key) is None and value is not None:
            setattr(args, key, prof.local_path(value) if "/" in value else value)
    if prof.get("cuda") and args.gdb is None:
        args.cuda = True
    ex = list(prof.get("ex", []))
    ex += [f"break {_local_location(prof, b)}" for b in prof.get("breakpoints", [])]
    args.ex = ex + list(args.ex)
    if prof.get("agent") is False:
        args.no_agent = True
    args.break_on_exception = args.break_on_exception or bool(prof.get("break_on_exception"))
    args.break_on_failure = args.break_on_failure or bool(prof.get("break_on_failure"))
    if getattr(args, "stop_at_entry", None) is None and "stop_at_entry" in prof.data:
        args.stop_at_entry = prof.get("stop_at_entry")
    if not args.target and args.module is None:
        pargs = list(prof.get("args", []))
        if "module" in prof.data:
            args.module, args.target = prof.get("module"), pargs
        elif "script" in prof.data:
            args.target = [prof.local_path(prof.get("script"))] + pargs
        elif "program" in prof.data:
            prog = prof.get("program")
            args.target = [prof.local_path(prog) if "/" in prog else prog] + pargs
        else:
            raise UsageError(f"--profile {prof.name}: {prof.path}: the profile names no program, script or module, "
                             "and the command line gives none")
    return dict(prof.get("env", {}))
