"""``tuidbg dump PID... [--children] [--native] [--json]``, ``tuidbg dump --merge FILE...``.

Every thread's (merged) stack of one or more running processes, then let go. Several
processes (and with ``--children`` their process trees) are read concurrently
(``tuidbg.dumpmany``); the output groups identical stacks and the JSON has the schema in
``tuidbg.dumpreport``, which also merges the dumps of several nodes (``--merge``).
``tuidbg view FILE...`` (registered here too) shows such dumps in ``tuidbg.ui.dumpview``.

Two readers of one process, one walker (``tuidbg.gdbext.cpython_walk``):

- Python frames only (the default): read straight from the process (``tuidbg.procread``):
  every thread stopped for a moment with ptrace (seize + interrupt, no signal the program
  sees), the stacks read from ``/proc/PID/mem`` with the symbols of the ELF files it has
  mapped, every thread let go. No gdb, a few milliseconds. ``--nonblocking`` stops nothing.
- ``--native``: the same, and each thread's native stack unwound from its registers with the
  CFI of the mapped ELF files (``tuidbg.procread.native``), merged with the Python frames as
  the gdb reader merges them (``tuidbg.engine.python.merge``). Native frames are named from
  symbol tables: no file and line, no inline frames, no demangling (gdb has them where there
  is debug info), otherwise the same stacks.
- ``--via-gdb``, and whatever the direct reader cannot make sense of (no runtime found where
  gdb may find one in debug info, a thread's stack cut short, a native stack it cannot unwind
  to its end, another architecture than x86-64 with ``--native``): gdb attaches (a DebugSession in attach mode, no extensions:
  nothing is injected into the process), the same walker runs inside it, gdb detaches.
  The fallback is per process (one consistent stop, one reader), and the JSON says which
  reader ran (``reader``) and why gdb did (``fallback``).

- ``--remote HOST:PORT``: processes of another node, through the ``gdbserver --multi`` there
  (``tuidbg.engine.remote``): the gdb reader, with gdb connected to it (``target
  extended-remote``) before it attaches; what the report says of the process besides its
  stacks (command line, parent, role, host) is read from the node's ``/proc`` over the same
  connection. Nothing of this machine's ``/proc`` is read for those PIDs and nothing here
  ptraces them. The processes are read one after the other (gdbserver serves one gdb at a time).

Either way the process keeps running and is no longer traced. With ``--native`` each
thread's native frames are printed too, Python frames in place of the eval-loop frames that
run them and glue folded.

The direct path imports neither asyncio nor the engine (it is timed end to end against
py-spy in bench/dump_fast.py); the gdb path imports them when it runs.
"""

from __future__ import annotations

import os
import sys

from tuidbg import dumpframes as F
from tuidbg.launch import UsageError

FRAMES_PER_THREAD = 100000
BIG_JSON_TASKS = 2000


def add_dump_parser(sub, complete_pids=None):
    """Register ``dump`` on the CLI's subparsers (an argparse parser, returned)."""
    p = sub.add_parser(
        "dump",
        help="print the Python (and native) stacks of every thread of running processes, then detach",
        description="Print the stack of every thread of one or more running processes, identical stacks grouped "
        "(the odd one out first); they keep running. Python frames are read straight from memory (works on "
        "Pythons without debug info) with every thread stopped for a moment by ptrace, no gdb; several processes "
        "are read at once; --native unwinds the native stacks the same way (x86-64). When that reader cannot make sense of a process, that process goes "
        "through gdb instead (attach, read, detach: slower, same output), the whole process at once. The JSON's "
        "reader and fallback say which and why. --merge groups the --json dumps of several nodes into one report.",
    )
    pids = p.add_argument("pid", metavar="PID", nargs="*", help="process IDs")
    if complete_pids is not None:
        pids.complete = complete_pids  # type: ignore[attr-defined]
    p.add_argument("--children", action="store_true",
                   help="also every descendant of each PID (a launcher's ranks, a pool's workers)")
    p.add_argument("--native", action="store_true",
                   help="also print native frames, Python frames in place of the eval-loop frames that run them")
    p.add_argument("--json", action="store_true", help="print JSON instead of text (schema: README, tuidbg.dumpreport)")
    p.add_argument("--merge", metavar="FILE", nargs="+",
                   help="read the --json dumps in FILE... (of several nodes) and print them as one report")
    p.add_argument("--nonblocking", action="store_true",
                   help="do not stop the threads while reading: the process never pauses, but a stack that changes "
                   "meanwhile may come out torn (part old, part new); never falls back to gdb")
    p.add_argument("--via-gdb", action="store_true",
                   help="read through gdb even for Python frames only (the slower reader, for comparison)")
    p.add_argument("--gdb", metavar="PATH", help="the gdb to use when reading through gdb")
    p.add_argument("--remote", metavar="HOST:PORT",
                   help="the PIDs are processes of another node, read through the gdbserver --multi HOST:PORT "
                   "running there (gdb's remote protocol; start it there with: gdbserver --multi HOST:PORT)")
    p.add_argument("--jobs", metavar="N", type=int,
                   help="read at most N processes at once (default: the number of CPUs this process may use)")
    p.set_defaults(func=cmd_dump)
    return p


def add_view_parser(sub, complete_files=None):
    """Register ``view`` on the CLI's subparsers (``complete_files``: shtab's file completion)."""
    p = sub.add_parser(
        "view",
        help="open the report of tuidbg dump --json (of one node, or of several) in the terminal, read-only",
        description="Open dumps written by tuidbg dump --json (several files: merged, as --merge does) in the "
        "terminal: the distinct stacks, fewest processes first; the frames and source of the one under the "
        "cursor; the processes that share it. Read-only: nothing is attached to.",
    )
    files = p.add_argument("files", metavar="FILE", nargs="+", help="dumps written by tuidbg dump --json")
    if complete_files is not None:
        files.complete = complete_files  # type: ignore[attr-defined]
    p.set_defaults(func=cmd_view)
    return p


def cmd_view(args) -> int:
    from tuidbg import dumpreport as R
    from tuidbg.launch import UsageError

    try:
        doc = R.merge(args.files)
    except R.BadReport as exc:
        raise UsageError(str(exc)) from None
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        raise UsageError("view needs a terminal (tuidbg dump --merge FILE... prints the same report as text)")
    from tuidbg.ui.dumpview import view

    return view(doc, args.files)


class _Args:
    def __init__(self) -> None:
        self.pid: list[str] = []
        self.native = self.json = self.nonblocking = self.via_gdb = self.children = False
        self.gdb: str | None = None
        self.merge: list[str] | None = None
        self.jobs: int | None = None
        self.remote: str | None = None


_FLAGS = {"--native": "native", "--json": "json", "--nonblocking": "nonblocking", "--via-gdb": "via_gdb",
          "--children": "children"}


def parse_plain(argv: list[str]) -> _Args | None:
    """``dump``'s arguments in their plain forms (PIDs and the options above, in any order)
    without argparse, whose import and parser cost the dump milliseconds; None for anything
    else (--help, --merge, a mistake, an abbreviation), which the CLI's argparse parser then handles."""
    args = _Args()
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in _FLAGS:
            setattr(args, _FLAGS[a], True)
        elif a == "--gdb" and i + 1 < len(argv):
            args.gdb = argv[i + 1]
            i += 1
        elif a.startswith("--gdb="):
            args.gdb = a[len("--gdb="):]
        elif a.startswith("-"):
            return None
        else:
            args.pid.append(a)
        i += 1
    return args if args.pid else None


def cmd_dump(args) -> int:
    """Exit 0 when every process asked for was read; 2 (one line on stderr for each) when one was not."""
    from tuidbg import dumpreport as R
    from tuidbg.launch import UsageError, find_gdb

    native = bool(args.native)
    if args.merge:
        if args.pid:
            raise UsageError("--merge reads dumps from files: no PIDs with it")
        try:
            doc = R.merge(args.merge)
        except R.BadReport as exc:
            raise UsageError(str(exc)) from None
        native = any(f.get("kind") == "native" for p in doc["processes"] for t in p["threads"] for f in t["frames"])
        return _write(doc, bool(args.json), native, [])
    if not args.pid:
        raise UsageError("the following arguments are required: PID")
    if args.nonblocking and (native or args.via_gdb):
        raise UsageError("--nonblocking reads Python frames without gdb: not with --native or --via-gdb")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: at least 1")
    gdb = find_gdb(args.gdb, False) if args.gdb else None
    if args.remote:
        return _dump_remote(args, gdb)
    from tuidbg import dumpmany

    pids, errors, found, exited = dumpmany.targets(args.pid, bool(args.children))
    opts = {"native": native, "via_gdb": bool(args.via_gdb), "nonblocking": bool(args.nonblocking), "gdb": gdb}
    if len(pids) == 1 and not errors:
        # one process: read here, and its failure is the command's one line
        procs = [read_process(pids[0], **opts)]
    else:
        procs, more = dumpmany.read_all(pids, read_process, opts, args.jobs, found)
        more, gone = dumpmany.sort_out_exited(more, found)  # (a descendant that ended meanwhile: no error)
        errors += more
        exited += gone
    return _finish(procs, errors, bool(args.json), native, exited)


def _dump_remote(args, gdb: str | None) -> int:
    """``dump --remote HOST:PORT PID...``: each process read through the gdbserver --multi there, in turn."""
    from tuidbg.engine import remote
    from tuidbg.launch import UsageError, find_gdb

    try:
        host = remote.host_of(args.remote)
    except remote.BadAddress as exc:
        raise UsageError(str(exc)) from None
    for flag, name in ((args.children, "--children"), (args.nonblocking, "--nonblocking")):
        if flag:
            raise UsageError(f"{name} reads this machine's processes: not with --remote")
    pids: list[int] = []
    errors: list[dict] = []
    for text in args.pid:
        pid = int(text) if text.isdigit() and int(text) > 0 else None
        if pid is None:
            errors.append({"pid": text, "host": host, "error": f"{text!r} is not a process ID"})
        elif pid not in pids:
            pids.append(pid)
    gdb = gdb or find_gdb(None, False)
    procs: list[dict] = []
    for pid in pids:
        try:
            procs.append(read_remote(pid, args.remote, native=bool(args.native), gdb=gdb))
        except RemoteUnreachable:  # (the same for every PID: said once)
            raise
        except UsageError as exc:
            errors.append({"pid": pid, "host": host, "error": str(exc)})
    return _finish(procs, errors, bool(args.json), bool(args.native))


def _finish(procs: list[dict], errors: list[dict], as_json: bool, native: bool, exited: list[dict] | None = None) -> int:
    """Print the dump (or, when nothing was read, the one error line or each error); the exit code: 2 when
    a process asked for could not be read (a descendant that exited before its read is no error)."""
    from tuidbg import dumpreport as R
    from tuidbg.launch import UsageError

    lines = [f"tuidbg: {e['error']}" for e in errors]
    if not procs and (len(lines) == 1 or not as_json):
        if len(lines) == 1:
            raise UsageError(errors[0]["error"])
        for line in lines:
            print(line, file=sys.stderr)
        return 2
    # (with --json and several PIDs, a dump that read none still says so, for --merge)
    return _write(R.document(procs, errors, exited), as_json, native, lines)


def _write(doc: dict, as_json: bool, native: bool, lines: list[str]) -> int:
    if as_json:
        import json

        # (indented while it is small enough to read; a large one, thousands of asyncio tasks, compact:
        # json's indenting encoder is pure Python, 4x slower than the C one)
        big = sum(len(p.get("tasks") or ()) for p in doc["processes"]) > BIG_JSON_TASKS
        text = json.dumps(doc, indent=None if big else 1) + "\n"
    else:
        from tuidbg import dumptasks

        text = dumptasks.format_text(doc, native=native)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `tuidbg dump PID | head`: not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    for line in lines:
        print(line, file=sys.stderr)
    return 2 if lines else 0


def read_process(pid: int, *, native: bool = False, via_gdb: bool = False, nonblocking: bool = False,
                 gdb: str | None = None, descendant: bool = False) -> dict:
    """One process's report (the schema's process); UsageError (one line) when it cannot be read.
    ``descendant``: found by --children, not named: where the direct reader finds no CPython
    runtime (a shell between a launcher and its Python), gdb is not asked to look further."""
    from tuidbg.launch import UsageError, find_gdb

    report = None
    fallback = None
    if not via_gdb:
        report, fallback = _direct(pid, nonblocking=nonblocking, descendant=descendant, native=native)
    if report is None:
        import asyncio

        if gdb is None:
            try:
                gdb = find_gdb(None, False)
            except UsageError as exc:
                if fallback:
                    raise UsageError(f"reading process {pid} needs gdb ({fallback}): {exc}") from None
                raise
        report = asyncio.run(dump(pid, gdb=gdb, native=native))
        report["reader"] = "gdb"
        if fallback:
            report["fallback"] = fallback
    return report


# ---------------------------------------------------------------------------------------------
# The direct reader


def _direct(pid: int, nonblocking: bool, descendant: bool = False,
            native: bool = False) -> tuple[dict | None, str | None]:
    """(report, None), or (None, why gdb must read it instead). Raises UsageError for what gdb
    cannot do better either (ptrace refused, the process exited)."""
    from tuidbg.launch import UsageError
    from tuidbg.procread import snapshot as S

    try:
        snap = S.take(pid, stop=not nonblocking, native=native, tasks=True)
    except S.NativeUnsupported as exc:
        return None, str(exc)
    except S.NotAllowed as exc:
        from tuidbg.engine.errors import attach_failure

        raise UsageError(attach_failure(pid, f"{exc}: Operation not permitted")) from None
    except S.ProcessGone as exc:
        raise UsageError(str(exc)) from None
    except S.Signalled as exc:
        import signal

        if exc.signum == signal.SIGINT:
            raise KeyboardInterrupt from None  # the CLI's "tuidbg: interrupted", exit 130
        # the threads have been let go: die of the signal as if tuidbg had not caught it
        signal.signal(exc.signum, signal.SIG_DFL)
        os.kill(os.getpid(), exc.signum)
        raise SystemExit(128 + exc.signum) from None
    except S.NoPython as exc:
        if nonblocking:
            return _direct_report(pid, None, note="no CPython runtime in this process"), None
        if descendant:
            note = "no CPython runtime in this process (found by --children: not read through gdb; name its PID for that)"
            return _direct_report(pid, None, note=note), None
        return None, f"no CPython runtime found without gdb ({exc})"
    except S.WalkError as exc:
        if nonblocking:
            return _direct_report(pid, None, error=str(exc)), None
        return None, str(exc)
    if snap.interp is None:  # (--native: a process without Python, its native stacks read)
        return _native_report(pid, snap, note="no CPython runtime in this process"), None
    bad = [r for r in snap.recs if r.error]
    if bad and not nonblocking:
        return None, f"thread state {bad[0].tstate:#x}: {bad[0].error}"
    if not nonblocking and any(r.gdb is None and r.frames for r in snap.recs):
        return None, "a thread state runs on no thread this reader can name"
    if native:
        return _native_report(pid, snap), None
    return _direct_report(pid, snap), None


def _direct_report(pid: int, snap, note: str | None = None, error: str | None = None) -> dict:
    report = _report_head(pid)
    report["reader"] = "memory" if snap is None or snap.stopped else "memory-nonblocking"
    if note:
        report["note"] = note
    if error:
        report["error"] = error
    if snap is None or snap.interp is None:
        from tuidbg.procread.proc import ProcessGone, list_threads

        try:
            tids = list_threads(pid) if snap is None else snap.tids
        except ProcessGone:
            tids = []
        by_lwp = {}
    else:
        tids = snap.tids
        report["python"] = snap.interp.version_text
        report["offsets"] = snap.interp.offsets_source
        by_lwp = {r.gdb.lwp: r for r in snap.recs if r.gdb is not None}
    for i, tid in enumerate(tids):
        rec = by_lwp.get(tid)
        entry: dict = {
            "id": str(i + 1),
            "tid": tid,
            "name": _comm(pid, tid),
            "main": tid == pid,
            "frames": [F.rec_frame_dict(f) for f in rec.frames] if rec is not None else [],
        }
        if rec is not None:
            entry["truncated"] = rec.truncated
            if rec.error:
                entry["python_error"] = rec.error
        report["threads"].append(entry)
    if snap is not None and snap.interp is not None:
        from tuidbg import dumptasks

        dumptasks.add(report, snap.tasks, snap.tasks_error)
        orphans = [r for r in snap.recs if r.gdb is None and r.frames]
        if orphans:
            report["orphan_thread_states"] = [
                {"thread_id": r.thread_id, "frames": [F.rec_frame_dict(f) for f in r.frames]} for r in orphans
            ]
    return report


def _native_report(pid: int, snap, note: str | None = None) -> dict:
    """The direct reader's report with --native: every thread's merged stack, as the gdb reader's."""
    from tuidbg.engine.python.model import stack_from_dict
    from tuidbg.engine.records import Frame
    from tuidbg.gdbext.cpython_walk import result_dict
    from tuidbg.gdbext.cxxnames import demangle

    report = _direct_report(pid, snap, note=note)
    ps = None
    if snap.interp is not None:
        res = result_dict(snap.interp, snap.recs)
        res["status"] = "ok"
        ps = stack_from_dict(res, "memory")
    for entry in report["threads"]:
        stack = snap.stacks.get(entry["tid"])
        frames = [Frame(level=f.level, addr="0x%016x" % f.pc, func=demangle(f.name or "??"), library=f.library)
                  for f in (stack.frames if stack is not None else ())]
        F.merge_into(entry, frames, ps.thread(entry["id"]) if ps is not None and ps.ok else None, ps)
    return report


def _comm(pid: int, tid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/task/{tid}/comm", "rb") as f:
            return f.read().rstrip(b"\n").decode("utf-8", "replace")
    except OSError:
        return None


def _report_head(pid: int) -> dict:
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        exe = ""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        cmdline = []
    from tuidbg.dumpmany import facts

    return {"pid": pid, **facts(pid), "executable": exe, "cmdline": cmdline, "python": None, "threads": []}


# ---------------------------------------------------------------------------------------------
# The gdb reader


class RemoteUnreachable(UsageError):
    """No gdbserver --multi at the address: no PID there can be read (one line)."""


def read_remote(pid: int, address: str, *, native: bool = False, gdb: str = "gdb") -> dict:
    """The report of process ``pid`` of another node (``--remote``); UsageError (one line), or
    RemoteUnreachable when the gdbserver at ``address`` cannot be talked to."""
    import asyncio

    report = asyncio.run(dump(pid, gdb=gdb, native=native, remote=address))
    report["reader"] = "gdb"
    return report


async def dump(pid: int, *, gdb: str = "gdb", native: bool = False, remote: str | None = None) -> dict:
    """Attach, read every thread's stack, detach. Raises launch.UsageError with gdb's reason.
    ``remote``: HOST:PORT of a gdbserver --multi on the node where ``pid`` runs."""
    import asyncio

    from tuidbg.engine.errors import EngineError, StartupError
    from tuidbg.engine.remote import Unreachable
    from tuidbg.engine.session import DebugSession, SessionConfig
    from tuidbg.launch import UsageError

    # no extensions: no agent, no per-stop work beyond what we ask (read-only)
    session = DebugSession(SessionConfig(mode="attach", pid=pid, gdb=gdb, nx=True, remote=remote))
    # The refresh after the attach stop would read the selected frame's locals (slow with a libc
    # that has debug info) and frames that a dump reads itself: with no thread selected it only
    # lists the threads.
    session.stop_hooks.append(lambda st: st.evolve(selected_thread=None))
    try:
        try:
            await session.start()
            await session.launch()
            state = await _wait_stopped(session, 60)
        except Unreachable as exc:
            raise RemoteUnreachable(str(exc)) from None
        except (StartupError, EngineError) as exc:
            raise UsageError(str(exc)) from None
        head = await _remote_head(session, pid, remote) if remote else _report_head(pid)
        return await _report(session, state, pid, native, head)
    finally:
        try:
            await asyncio.wait_for(session.close(how="detach"), 30)
        except Exception:
            pass


async def _wait_stopped(session, timeout: float):
    """The state once the attach stop arrived (``*stopped`` follows ``-target-attach``'s ^done) and was refreshed."""
    import asyncio

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


async def _remote_head(session, pid: int, address: str) -> dict:
    """``_report_head`` of a process of another node, from its /proc there (through gdb)."""
    from tuidbg.engine import remote
    from tuidbg.procread.proc import roles_in

    got = await remote.facts(session, pid)
    return {"pid": pid, "ppid": got.get("ppid"), "host": got.get("hostname") or remote.host_of(address),
            "env": roles_in(got.get("environ", b"")), "remote": address,
            "executable": got.get("executable", ""), "cmdline": got.get("cmdline", []), "python": None, "threads": []}


async def _report(session, state, pid: int, native: bool, head: dict) -> dict:
    from tuidbg.engine import pystack as P
    from tuidbg.engine.python.model import PyStack
    from tuidbg.engine.errors import EngineError

    import asyncio

    report = head
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
        entry: dict = {
            "id": t.id,
            "tid": t.lwp,
            "name": t.name,
            "main": t.lwp == pid,
            "frames": [F.pyframe_dict(f) for f in py.frames] if py is not None else [],
        }
        if py is not None:
            entry["truncated"] = py.truncated
            if py.error:
                entry["python_error"] = py.error
        if native:
            F.merge_into(entry, native_frames[t.id], py, ps)
        report["threads"].append(entry)
    if ps is not None and ps.ok:
        await _tasks(session, state, report)
        # thread states without a gdb thread (a core without them, a thread that is exiting)
        orphans = [t for t in ps.threads if t.tid is None and t.frames]
        if orphans:
            report["orphan_thread_states"] = [
                {"thread_id": t.thread_id, "frames": [F.pyframe_dict(f) for f in t.frames]} for t in orphans
            ]
    return report


async def _tasks(session, state, report: dict) -> None:
    """The asyncio tasks, read in gdb as the direct reader reads them (``tuidbg.dumptasks``)."""
    from tuidbg import dumptasks
    from tuidbg.engine import pytasks
    from tuidbg.engine.errors import EngineError

    if not pytasks.has_asyncio(state):
        return
    try:
        res = await pytasks.collect(session)
    except EngineError as exc:
        res = {"status": "error", "reason": str(exc)}
    if res.get("status") == "ok":
        dumptasks.add(report, res, None)
    else:
        dumptasks.add(report, None, f"the asyncio tasks could not be read: {res.get('reason')}")


def _int(s: str) -> int:
    try:
        return int(s)
    except (TypeError, ValueError):
        return 1 << 30
