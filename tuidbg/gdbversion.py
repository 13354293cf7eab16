"""What ``tuidbg --version`` says of the gdb and cuda-gdb it would run: their paths and versions.

Each debugger is asked with ``--version`` (both at once: cuda-gdb alone takes 50-120 ms to start
here), and its answer is kept per binary in ``$XDG_CACHE_HOME/tuidbg/gdb-versions.json`` (0600, in
a 0700 folder), keyed by the file's real path and identity (device, inode, size, modification and
change times): the same file answers the same, and a new or changed one is asked again. Only ELF
files are kept (a script's answer may depend on what it runs). The cache is read only if it is a
regular file of this user, at most ``MAX_CACHE`` bytes; anything wrong with it means asking again.

So ``tuidbg --version`` costs Python's start and a few ``stat`` calls (bench/cold_start.py):
tests/cli/test_import_hygiene.py holds its imports; tests/cli/test_gdbversion.py that the cached
answer is the asked one.

(Nothing costly is imported at the top: argparse, shutil, subprocess and json only where needed.)
"""

from __future__ import annotations

import os

from tuidbg.launch import _which as which

MAX_CACHE = 64 * 1024
CACHE_NAME = "gdb-versions.json"


def cache_file() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tuidbg", CACHE_NAME)


def _identity(path: str) -> str | None:
    """The cache key of an ELF file, or None (not there, not ELF: not cached)."""
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
        with open(real, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return None
    except OSError:
        return None
    return f"{real}|{st.st_dev}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}"


def _read_cache(path: str) -> dict[str, list[str]]:
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_size > MAX_CACHE:
            return {}
        data = os.read(fd, MAX_CACHE + 1)
    except OSError:
        return {}
    finally:
        os.close(fd)
    import json

    try:
        doc = json.loads(data)
    except ValueError:
        return {}
    if not isinstance(doc, dict):
        return {}
    return {k: v for k, v in doc.items()
            if isinstance(k, str) and isinstance(v, list) and all(isinstance(x, str) for x in v)}


def _write_cache(path: str, doc: dict[str, list[str]]) -> None:
    import json

    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, json.dumps(doc, indent=0).encode())
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        pass  # (a cache that cannot be written: asked again next time)


def ask(paths: list[str]) -> dict[str, list[str]]:
    """Each debugger's first lines of ``--version`` (stdout, else stderr: a gdb that cannot start says why
    there), all asked at once; a debugger that does not answer gets one line saying why."""
    import subprocess

    procs = {}
    out: dict[str, list[str]] = {}
    for path in paths:
        try:
            procs[path] = subprocess.Popen([path, "--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                           stdin=subprocess.DEVNULL, text=True)
        except OSError as exc:
            out[path] = [f"(did not answer --version: {exc})"]
    for path, proc in procs.items():
        try:
            stdout, stderr = proc.communicate(timeout=20)
            out[path] = ((stdout or stderr).splitlines())[:2]
        except subprocess.SubprocessError as exc:
            proc.kill()
            proc.wait()
            out[path] = [f"(did not answer --version: {exc})"]
    return out


def first_lines(paths: list[str], cache: str | None = None) -> dict[str, list[str]]:
    """``ask(paths)``, the answers of unchanged ELF files from the cache (``cache_file()``; "" for none)."""
    cache = cache_file() if cache is None else cache
    keys = {p: _identity(p) for p in paths} if cache else {}
    doc = _read_cache(cache) if cache and any(keys.values()) else {}
    got = {p: doc[k] for p, k in keys.items() if k and k in doc}
    missing = [p for p in paths if p not in got]
    if missing:
        asked = ask(missing)
        got.update(asked)
        fresh = {keys[p]: asked[p] for p in missing
                 if keys.get(p) and asked[p] and not asked[p][0].startswith("(did not answer")}
        if fresh:
            live = {k: v for k, v in doc.items() if k in set(keys.values())}  # (entries of files gone: dropped)
            _write_cache(cache, {**live, **fresh})
    return got


def describe(lines: list[str]) -> str:
    # gdb: "GNU gdb (Debian 13.1-3) 13.1"; cuda-gdb: "NVIDIA (R) CUDA Debugger" then "11.8 release"
    ver = " ".join(lines[:2]) if lines and lines[0].startswith("NVIDIA") else (lines[0] if lines else "?")
    return ver.strip()


def version_text(version: str, cuda_gdb: str | None, cache: str | None = None) -> str:
    """``tuidbg X.Y.Z``, then the gdb found on PATH and ``cuda_gdb`` (when there is one), with their versions."""
    lines = [f"tuidbg {version}"]
    gdb = which("gdb")
    answers = first_lines([p for p in (gdb, cuda_gdb) if p is not None], cache)
    for name, path in (("gdb", gdb), ("cuda-gdb", cuda_gdb)):
        if path is not None:
            lines.append(f"{name}: {path} ({describe(answers[path])})")
        elif name == "gdb":
            lines.append("gdb: not found on PATH (apt-get install gdb)")
    return "\n".join(lines)
