"""``tuidbg dump PID [--native] [--json]``: print every thread's (merged) stack, then detach.

Attaches with gdb (a DebugSession in attach mode, no extensions: nothing is
injected into the process), reads the Python stacks from memory (no debug info
needed), prints them, and detaches: the process keeps running and is no longer
traced. With ``--native`` each thread's native frames are printed too, Python
frames in place of the eval-loop frames that run them and glue folded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

FRAMES_PER_THREAD = 100000


def add_dump_parser(sub) -> argparse.ArgumentParser:
    """Register ``dump`` on the CLI's subparsers."""
    p = sub.add_parser(
        "dump",
        help="print the Python (and native) stacks of every thread of a running process, then detach",
        description="Attach to a running process, print the stack of every thread (Python frames read from "
        "memory: works on Pythons without debug info), detach. The process keeps running.",
    )
    p.add_argument("pid", metavar="PID", help="process ID")
    p.add_argument("--native", action="store_true",
                   help="also print native frames, Python frames in place of the eval-loop frames that run them")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--gdb", metavar="PATH", help="the gdb to use")
    p.set_defaults(func=cmd_dump)
    return p


def cmd_dump(args) -> int:
    from tuidbg.launch import check_pid, find_gdb

    pid = check_pid(args.pid)
    gdb = find_gdb(args.gdb, False)
    report = asyncio.run(dump(pid, gdb=gdb, native=bool(args.native)))
    text = json.dumps(report, indent=1) + "\n" if args.json else format_text(report, native=bool(args.native))
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `tuidbg dump PID | head`: not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0


async def dump(pid: int, *, gdb: str = "gdb", native: bool = False) -> dict[str, Any]:
    """Attach, read every thread's stack, detach. Raises launch.UsageError with gdb's reason."""
    from tuidbg.engine.errors import EngineError, StartupError
    from tuidbg.engine.session import DebugSession, SessionConfig
    from tuidbg.launch import UsageError

    # no extensions: no agent, no per-stop work beyond what we ask (read-only)
    session = DebugSession(SessionConfig(mode="attach", pid=pid, gdb=gdb, nx=True))
    # The refresh after the attach stop would read the selected frame's locals (slow with a libc
    # that has debug info) and frames that a dump reads itself: with no thread selected it only
    # lists the threads.
    session.stop_hooks.append(lambda st: st.evolve(selected_thread=None))
    try:
        try:
            await session.start()
            await session.launch()
            state = await _wait_stopped(session, 60)
        except (StartupError, EngineError) as exc:
            raise UsageError(str(exc)) from None
        return await _report(session, state, pid, native)
    finally:
        try:
            await asyncio.wait_for(session.close(how="detach"), 30)
        except Exception:
            pass


async def _wait_stopped(session, timeout: float):
    """The state once the attach stop arrived (``*stopped`` follows ``-target-attach``'s ^done) and was refreshed."""
    from tuidbg.engine.errors import EngineError
    from tuidbg.engine.state import ProcessState

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while session.state.process is not ProcessState.STOPPED:
        if session.state.process in (ProcessState.EXITED, ProcessState.GDB_EXITED, ProcessState.DETACHED):
            raise EngineError(f"process {session.config.pid} {session.process_description()}")
        if loop.time() > deadline:
            raise EngineError(f"process {session.config.pid} did not stop after attaching")
        await asyncio.sleep(0.005)
    return await session.wait_refreshed(timeout)


async def _report(session, state, pid: int, native: bool) -> dict[str, Any]:
    from tuidbg.engine import pystack as P
    from tuidbg.engine.python import merge as M
    from tuidbg.engine.python.model import PyStack
    from tuidbg.engine.errors import EngineError

    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        exe = ""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        cmdline = []
    report: dict[str, Any] = {"pid": pid, "executable": exe, "cmdline": cmdline, "python": None, "threads": []}
    try:
        ps = await P.collect(session, native="all" if native else "none")
    except EngineError as exc:
        ps = PyStack(status="error", reason=str(exc))
    if ps is None:
        report["note"] = "no CPython runtime in this process"
    elif not ps.ok:
        report["error"] = ps.reason
    else:
        report["python"] = ps.python
        report["offsets"] = ps.offsets
    threads = sorted(state.threads, key=lambda t: _int(t.id))
    native_frames: dict[str, tuple] = {}
    if native:
        # all requests at once: gdb answers them in order, without a round trip between them
        got = await asyncio.gather(*(session.fetch_frames(t.id, 0, FRAMES_PER_THREAD) for t in threads))
        native_frames = {t.id: frames for t, (frames, _more) in zip(threads, got)}
    for t in threads:
        py = ps.thread(t.id) if ps is not None and ps.ok else None
        entry: dict[str, Any] = {
            "id": t.id,
            "lwp": t.lwp,
            "name": t.name,
            "main": t.lwp == pid,
            "python_frames": [_pyframe_dict(f) for f in py.frames] if py is not None else [],
        }
        if py is not None:
            entry["truncated"] = py.truncated
            if py.error:
                entry["python_error"] = py.error
        if native:
            rows = M.fold(M.merge(native_frames[t.id], py, ps))
            entry["stack"] = [_row_dict(r) for r in rows]
            if py is not None and not py.merged and py.frames:
                entry["merge_note"] = py.merge_note
        report["threads"].append(entry)
    if ps is not None and ps.ok:
        # thread states without a gdb thread (a core without them, a thread that is exiting)
        orphans = [t for t in ps.threads if t.tid is None and t.frames]
        if orphans:
            report["orphan_thread_states"] = [
                {"thread_id": t.thread_id, "frames": [_pyframe_dict(f) for f in t.frames]} for t in orphans
            ]
    return report


def _int(s: str) -> int:
    try:
        return int(s)
    except (TypeError, ValueError):
        return 1 << 30


def _pyframe_dict(f) -> dict[str, Any]:
    return {"function": f.function, "qualname": f.qualname, "file": f.file, "line": f.line,
            "native_level": f.native_level, "entry": f.is_entry}


def _native_dict(f) -> dict[str, Any]:
    return {"level": f.level, "addr": f.addr, "func": f.func, "file": f.fullname or f.file, "line": f.line,
            "library": f.library}


def _row_dict(r) -> dict[str, Any]:
    if r.kind == "python":
        return {"kind": "python", "level": r.python.native_level, **_pyframe_dict(r.python)}
    if r.kind == "native":
        d = {"kind": "native", **_native_dict(r.native)}
        if r.internal:
            d["internal"] = True
        return d
    if r.kind == "fold":
        return {"kind": "fold", "rule": r.rule, "label": r.label, "rows": [_row_dict(c) for c in r.children]}
    return {"kind": r.kind, "label": r.label}


# ---------------------------------------------------------------------------------------------
# Text


def _clean(s: Any) -> str:
    """Program-controlled text (names, paths) with control characters made visible."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(s))


def _pyline(f: dict) -> str:
    name = f["qualname"] or f["function"]
    where = f"{f['file']}:{f['line']}" if f["line"] is not None else f["file"]
    return f"{_clean(name)} ({_clean(where)})"


def _native_line(d: dict) -> str:
    where = ""
    if d.get("file") and d.get("line") is not None:
        where = f" at {d['file']}:{d['line']}"
    elif d.get("library"):
        where = f" from {d['library']}"
    return f"#{d['level']:<3} {d['addr']} in {_clean(d['func'] or '??')}{_clean(where)}"


def format_text(report: dict, native: bool = False) -> str:
    out = []
    head = f"Process {report['pid']}"
    if report.get("cmdline"):
        head += ": " + _clean(" ".join(report["cmdline"]))
    if report.get("python"):
        head += f"  (Python {report['python']})"
    out.append(head)
    if report.get("note"):
        out.append(f"  {report['note']}")
    if report.get("error"):
        out.append(f"  Python stacks could not be read: {_clean(report['error'])}")
    for t in report["threads"]:
        out.append("")
        label = f"Thread {t['id']} (LWP {t['lwp']})" if t.get("lwp") else f"Thread {t['id']}"
        if t.get("name"):
            label += f' "{_clean(t["name"])}"'
        if t.get("main"):
            label += " [main thread]"
        if not native:
            if not t["python_frames"]:
                out.append(label + ": no Python frames")
                continue
            out.append(label + ":")
            for f in t["python_frames"]:
                out.append("    " + _pyline(f))
            if t.get("truncated"):
                out.append("    … more frames")
            if t.get("python_error"):
                out.append(f"    ({_clean(t['python_error'])})")
            continue
        out.append(label + ":")
        if t.get("merge_note"):
            out.append(f"    (Python frames not merged: {_clean(t['merge_note'])})")
        for r in t.get("stack", []):
            _text_row(out, r)
    out.append("")
    return "\n".join(out)


def _text_row(out: list[str], r: dict) -> None:
    if r["kind"] == "python":
        lvl = r.get("native_level")
        marker = f"#{lvl:<3}" if lvl is not None else "    "
        out.append(f"  {marker} [py] {_pyline(r)}")
    elif r["kind"] == "native":
        out.append("  " + _native_line(r))
    elif r["kind"] == "fold":
        levels = [c.get("level") for c in r["rows"] if c.get("level") is not None]
        lo, hi = (min(levels), max(levels)) if levels else (None, None)
        span = "" if lo is None else (f"#{lo:<3} " if lo == hi else f"#{lo}-{hi} ")
        out.append(f"  {span}… {r['label']}")
    else:
        out.append(f"  -- {_clean(r.get('label', ''))} --")
