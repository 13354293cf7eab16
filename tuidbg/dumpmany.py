"""``tuidbg dump`` of several processes: which ones (``--children``), facts about each, and
reading them concurrently.

- ``targets``: the PIDs asked for, each checked (``launch.check_pid``), with ``--children``
  each one's descendants after it (``psutil``; depth first, by PID), tuidbg itself and
  zombies left out. A PID that cannot be dumped is an error entry, not the end of the dump.
- ``facts``: what the report says of a process besides its stacks: its parent, the host,
  and its role as a distributed job sets it in the environment (``RANK``, ``LOCAL_RANK``,
  ``WORLD_SIZE`` from ``/proc/PID/environ``: the environment it was started with, which is
  where ``torchrun``, ``srun`` and ``mpirun`` put them).
- ``read_all``: one forked worker per process, at most ``jobs`` at a time (default: the
  CPUs this process may run on). Each worker reads its process with the same reader as a
  single dump (so each process is stopped exactly as long as when dumped alone, and let go
  by its own worker, the only thread that may) and sends the report back as JSON on a pipe.
  Processes rather than threads: the tracer of a process is one thread, the reader is
  Python (one GIL), and ``procread.freeze`` holds signals with handlers, which only a main
  thread may set. Before forking, the ELF symbols of each distinct executable are read once
  here, so that the workers inherit them (``gdbext.elfsyms`` caches by file).

Letting go: a worker lets its process go on every path (``procread.freeze``). If tuidbg gets
SIGTERM, SIGHUP or SIGQUIT meanwhile, it passes SIGTERM on to its workers (each lets its
process go and exits), waits for them, then dies of its signal; on SIGINT (a terminal's
ctrl+c reaches the workers too) it waits for them likewise. A worker whose parent dies gets
SIGTERM from the kernel (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import os

from tuidbg.dumpreport import ROLE_VARS
from tuidbg.launch import UsageError, check_pid

HOST = os.uname().nodename


def facts(pid: int) -> dict:
    """{"ppid", "host", "env"} of a process (ppid None and env {} when /proc does not say)."""
    ppid = None
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        ppid = int(stat[stat.rfind(b")") + 2:].split()[1])
    except (OSError, ValueError, IndexError):
        pass
    env = {}
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for item in f.read().split(b"\0"):
                k, eq, v = item.partition(b"=")
                if eq and k.decode("ascii", "replace") in ROLE_VARS:
                    env[k.decode()] = v.decode("utf-8", "replace")
    except OSError:
        pass
    return {"ppid": ppid, "host": HOST, "env": {k: env[k] for k in ROLE_VARS if k in env}}


def error_entry(pid, message: str) -> dict:
    return {"pid": pid, "host": HOST, "error": message}


def targets(texts: list[str], children: bool) -> tuple[list[int], list[dict]]:
    """(the PIDs to dump, in order, each once; an error entry for each that cannot be)."""
    pids: list[int] = []
    errors: list[dict] = []
    seen: set[int] = set()
    for text in texts:
        try:
            pid = check_pid(text)
        except UsageError as exc:
            errors.append(error_entry(_int_or(text), str(exc)))
            continue
        if pid in seen:
            continue
        seen.add(pid)
        pids.append(pid)
        if not children:
            continue
        for child in descendants(pid):
            if child in seen:
                continue
            seen.add(child)
            try:
                pids.append(check_pid(str(child)))
            except UsageError as exc:
                if "zombie" not in str(exc) and "no process" not in str(exc):  # (ended meanwhile: nothing to read)
                    errors.append(error_entry(child, str(exc)))
    return pids, errors


def _int_or(text: str):
    try:
        return int(text, 10)
    except ValueError:
        return text


def descendants(pid: int) -> list[int]:
    """Every descendant of ``pid``, depth first (each child's subtree after it), children by PID;
    tuidbg itself (``tuidbg dump --children $$``) left out."""
    import psutil

    try:
        procs = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []
    kids: dict[int, list[int]] = {}
    for p in procs:
        try:
            kids.setdefault(p.ppid(), []).append(p.pid)
        except psutil.Error:
            pass
    out: list[int] = []
    me = os.getpid()

    def walk(parent: int) -> None:
        for c in sorted(kids.get(parent, ())):
            if c == me:
                continue
            out.append(c)
            walk(c)

    walk(pid)
    return out


# ---------------------------------------------------------------------------------------------
# Reading concurrently


def read_all(pids: list[int], read, opts: dict, jobs: int | None = None) -> tuple[list[dict], list[dict]]:
    """(the reports of the processes read, in ``pids``'s order; error entries for the others).
    ``read(pid, **opts)`` returns a report or raises UsageError; it runs in a forked worker."""
    import json
    import select

    import _signal as signal  # (the signal module's enums cost the dump milliseconds)

    from tuidbg.procread.freeze import Signalled

    if not jobs:
        jobs = len(os.sched_getaffinity(0))
    if not (opts.get("native") or opts.get("via_gdb")):
        _warm(pids)
    results: dict[int, tuple] = {}
    pending = list(pids)
    running: dict[int, tuple[int, int, list[bytes]]] = {}  # pipe fd -> (worker, pid, data)
    held = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

    def raise_signalled(signum, _frame):
        raise Signalled(signum)

    old = {s: signal.signal(s, raise_signalled) for s in held}
    try:
        try:
            while pending or running:
                while pending and len(running) < jobs:
                    pid = pending.pop(0)
                    r, w = os.pipe()
                    worker = os.fork()
                    if worker == 0:
                        os.close(r)
                        _worker(pid, read, opts, w, old)
                    os.close(w)
                    running[r] = (worker, pid, [])
                ready, _, _ = select.select(list(running), [], [])
                for fd in ready:
                    chunk = os.read(fd, 1 << 20)
                    if chunk:
                        running[fd][2].append(chunk)
                        continue
                    os.close(fd)
                    worker, pid, data = running.pop(fd)
                    _, status = os.waitpid(worker, 0)
                    results[pid] = (b"".join(data), status)
        finally:
            for s in held:  # (a second signal meanwhile: the first one is being acted on)
                signal.signal(s, signal.SIG_IGN)
            for worker, _pid, _data in running.values():
                try:
                    os.kill(worker, signal.SIGTERM)
                except OSError:
                    pass
            for fd, (worker, _pid, _data) in running.items():
                os.close(fd)
                try:
                    os.waitpid(worker, 0)
                except ChildProcessError:
                    pass
            for s, h in old.items():
                signal.signal(s, h)
    except Signalled as exc:  # (every worker has let its process go and exited): die of it
        signal.signal(exc.signum, signal.SIG_DFL)
        os.kill(os.getpid(), exc.signum)
        raise SystemExit(128 + exc.signum) from None
    reports: list[dict] = []
    errors: list[dict] = []
    for pid in pids:
        data, status = results[pid]
        try:
            got = json.loads(data) if data else {}
        except ValueError:
            got = {}
        if "report" in got:
            reports.append(got["report"])
        elif "error" in got:
            errors.append(error_entry(pid, got["error"]))
        elif os.WIFSIGNALED(status):
            errors.append(error_entry(pid, f"process {pid}: its reader was killed by signal {os.WTERMSIG(status)}"))
        else:
            errors.append(error_entry(pid, f"process {pid}: its reader exited with status {os.WEXITSTATUS(status)}"))
    return reports, errors


def _worker(pid: int, read, opts: dict, w: int, handlers: dict) -> None:
    """In the forked worker: read ``pid``, send the result, exit (never returns)."""
    import _signal as signal

    code = 0
    try:
        for s, h in handlers.items():
            signal.signal(s, h)
        _die_with_parent()
        import json

        try:
            out = {"report": read(pid, **opts)}
        except UsageError as exc:
            out = {"error": str(exc)}
        except Exception as exc:  # a bug: one line for this process, the others are still read
            out = {"error": f"process {pid}: internal error while reading it: {exc!r}"}
        data = memoryview(json.dumps(out).encode())
        while data:
            data = data[os.write(w, data):]
    except KeyboardInterrupt:
        code = 130
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _die_with_parent() -> None:
    import ctypes

    PR_SET_PDEATHSIG = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, 15, 0, 0, 0)  # SIGTERM
    except (OSError, AttributeError):
        pass


def _warm(pids: list[int]) -> None:
    """Read the ELF symbols the reader needs once per executable, before the workers fork."""
    from tuidbg.gdbext.cpython_walk import Interpreter
    from tuidbg.procread.target import ProcTarget

    done: set[str] = set()
    for pid in pids:
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        if exe in done:
            continue
        done.add(exe)
        try:
            target = ProcTarget(pid)
        except OSError:
            continue
        try:
            Interpreter(target)
        except Exception:  # (whatever it is, the worker meets it too and says so)
            pass
        finally:
            target.close()
