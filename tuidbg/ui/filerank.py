"""The file picker's list (``ctrl+o``): the program's own files first, each with where it comes from.

gdb names every source file of the program's debug information, a C library's thousands included
(6,168 for glibc with its debug symbols), in no useful order; a Python program's files are not among
them at all. The picker offers, in this order (``ORIGINS``):

1. ``program``: the executable's own sources (its compilation units, as gdb's debug information names
   them, less the system's headers), and the files in the program's folder (the executable's; the
   script's for a Python script);
2. ``cwd``: under the working directory;
3. ``package``: under the script's top package (the folder above its outermost ``__init__.py``);
4. ``site-packages``: installed Python packages (``site-packages``, ``dist-packages``);
5. ``system``: the rest (``/usr/include``, the C library's own sources).

The candidates are gdb's source files, the Python files of the stacks shown, and the source files
found in the first three folders (a bounded walk: no hidden folders, ``__pycache__``,
``node_modules`` or virtual environments; at most ``WALK_LIMIT`` entries, so a working directory of
a million files costs a fraction of a second). Made in a thread, never on the UI's loop: it reads
the file system.
"""

from __future__ import annotations

import os
from typing import Iterable, NamedTuple

ORIGINS = ("program", "cwd", "package", "site-packages", "system")
SOURCE_SUFFIXES = (".py", ".pyx", ".pxd", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".cu", ".cuh",
                   ".inl", ".S", ".s", ".f90", ".rs", ".go")
SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "dist-packages", "venv", ".venv", "env"}
WALK_LIMIT = 20000  # directory entries looked at, in all, by one walk of the three folders
WALK_DEPTH = 6


class Candidate(NamedTuple):
    path: str  # as gdb names it, or absolute
    shown: str  # relative to the working directory when under it
    origin: str  # one of ORIGINS
    exists: bool
    named: bool = False  # named by the program's debug information or a stack shown (not only found in a folder)


class Places(NamedTuple):
    """Where the program's files are: its folder, the working directory, its script's top package; and
    the executable whose sources are the program's (None for a Python program: the interpreter's are not)."""

    program: str | None
    cwd: str
    package: str | None
    exe: str | None = None

    @classmethod
    def of(cls, program: str | None, cwd: str, script: str | None = None, python: bool = False) -> Places:
        main = script or (None if python else program)  # (-m MODULE: the interpreter's folder is not the program's)
        folder = os.path.dirname(os.path.realpath(main)) if main else None
        exe = os.path.realpath(program) if program and not python else None
        return cls(folder, os.path.realpath(cwd), package_root(script) if script else None, exe)


def package_root(script: str) -> str | None:
    """The folder holding the script's outermost package (None: the script is in no package)."""
    d = os.path.dirname(os.path.realpath(script))
    top = None
    while os.path.isfile(os.path.join(d, "__init__.py")):
        top = d
        up = os.path.dirname(d)
        if up == d:
            break
        d = up
    return os.path.dirname(top) if top else None


def _real(path: str, dirs: dict[str, str]) -> str:
    """``path`` with its folder's links resolved (each folder once: thousands of files share a few hundred)."""
    d, name = os.path.split(path)
    real = dirs.get(d)
    if real is None:
        real = dirs[d] = os.path.realpath(d)
    return os.path.join(real, name)


def _under(path: str, folder: str | None) -> bool:
    return bool(folder) and (path == folder or path.startswith(folder.rstrip("/") + "/"))


SYSTEM = ("/usr/include/", "/usr/lib/gcc/", "/usr/local/include/", "/usr/lib/llvm")  # (headers every program has)


def origin(path: str, places: Places, objfile: str | None = None, real: str | None = None) -> str:
    """Where ``path`` comes from (one of ``ORIGINS``); ``objfile``: the file whose debug information names it;
    ``real``: the path with its links resolved, when known."""
    if real is None:
        real = os.path.realpath(path) if os.path.isabs(path) else path
    if _under(real, places.program):
        return "program"
    if objfile is not None and places.exe and objfile == places.exe and not real.startswith(SYSTEM):
        return "program"
    if _under(real, places.cwd):
        return "cwd"
    if _under(real, places.package):
        return "package"
    if "/site-packages/" in real or "/dist-packages/" in real:
        return "site-packages"
    return "system"


def walk(folders: Iterable[str | None], limit: int = WALK_LIMIT) -> list[str]:
    """Source files under ``folders`` (bounded: see the module's docstring)."""
    out: list[str] = []
    seen_dirs: set[str] = set()
    budget = limit
    for top in folders:
        if not top or top in seen_dirs or not os.path.isdir(top):
            continue
        stack = [(top, 0)]
        while stack and budget > 0:
            d, depth = stack.pop()
            if d in seen_dirs:
                continue
            seen_dirs.add(d)
            try:
                with os.scandir(d) as it:
                    entries = list(it)
            except OSError:
                continue
            budget -= len(entries)
            for e in sorted(entries, key=lambda e: e.name, reverse=True):
                try:
                    if e.is_dir(follow_symlinks=False):
                        if depth < WALK_DEPTH and not e.name.startswith(".") and e.name not in SKIP_DIRS \
                                and not os.path.exists(os.path.join(e.path, "pyvenv.cfg")):
                            stack.append((e.path, depth + 1))
                    elif e.name.endswith(SOURCE_SUFFIXES) and e.is_file():
                        out.append(e.path)
                except OSError:
                    continue
    return out


def candidates(gdb_files: Iterable[tuple[str, str | None]], places: Places, extra: Iterable[str] = ()) -> list[Candidate]:
    """The picker's list: every file once, the program's first (``ORIGINS``' order), then by path.
    ``gdb_files``: (file, the objfile whose debug information names it, or None)."""
    found: dict[str, Candidate] = {}
    dirs: dict[str, str] = {}
    walked = walk((places.program, places.cwd, places.package))
    named = [*gdb_files, *((p, None) for p in extra)]
    for i, (path, objfile) in enumerate([*named, *((p, None) for p in walked)]):
        if not path:
            continue
        key = _real(path, dirs) if os.path.isabs(path) else path
        if key in found:
            continue
        where = origin(path, places, objfile, key)
        shown = os.path.relpath(key, places.cwd) if where in ("program", "cwd") and _under(key, places.cwd) else path
        found[key] = Candidate(path, shown, where, os.path.isfile(path) if os.path.isabs(path) else False, i < len(named))
    rank = {o: i for i, o in enumerate(ORIGINS)}
    return sorted(found.values(), key=lambda c: (rank[c.origin], not c.exists, not c.named, c.shown.count("/"), c.shown))


def matching(cands: list[Candidate], text: str, limit: int = 500) -> list[Candidate]:
    """Those whose path holds ``text`` (any case), a match in the file's own name first, in list order."""
    low = text.lower()
    if not low:
        return cands[:limit]
    hits = [c for c in cands if low in c.shown.lower() or low in c.path.lower()]
    if "/" not in low:
        hits.sort(key=lambda c: low not in os.path.basename(c.shown).lower())  # (stable: the ranks stay)
    return hits[:limit]
