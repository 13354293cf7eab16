"""``tuidbg dump`` of several processes: which ones (``--children``), facts about each, and
reading them concurrently.

- ``targets``: the PIDs asked for, each checked (``launch.check_pid``), with ``--children``
  each one's descendants after it (depth first, by PID), tuidbg itself left out. A PID asked for
  that cannot be dumped is an error entry, not the end of the dump; a descendant that ended
  between the listing and its read (a pool's worker that exited, a zombie) is an "exited"
  entry, not an error (``sort_out_exited``).
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

from tuidbg.launch import UsageError, check_pid
from tuidbg.procread.proc import ROLE_VARS, descendants, exiting, parent_of, role_env, start_time

HOST = os.uname().nodename


def facts(pid: int) -> dict:
    """{"ppid", "host", "env"} of a process (ppid None and env {} when /proc does not say)."""
    return {"ppid": parent_of(pid), "host": HOST, "env": role_env(pid, ROLE_VARS)}


def error_entry(pid, message: str) -> dict:
    return {"pid": pid, "host": HOST, "error": message}


def targets(texts: list[str], children: bool) -> tuple[list[int], list[dict], dict[int, int | None], list[dict]]:
    """(the PIDs to dump, in order, each once; an error entry for each that cannot be; those found by
    ``children`` rather than named, with their start times; an "exited" entry for each of those that
    ended before it could be listed)."""
    pids: list[int] = []
    found: dict[int, int | None] = {}
    errors: list[dict] = []
    exited: list[dict] = []
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
            born = start_time(child)
            try:
                pids.append(check_pid(str(child)))
                found[child] = born
            except UsageError as exc:
                if "zombie" in str(exc) or "no process" in str(exc):  # (ended meanwhile: nothing to read)
                    exited.append(exited_entry(child))
                else:
                    errors.append(error_entry(child, str(exc)))
    return pids, errors, found, exited


def exited_entry(pid: int) -> dict:
    return {"pid": pid, "host": HOST}


def sort_out_exited(errors: list[dict], found: dict[int, int | None]) -> tuple[list[dict], list[dict]]:
    """(the errors, the "exited" entries): a descendant whose read failed because it ended (it is gone, a
    zombie, or its PID is another process's now) exited; it is not an error."""
    kept: list[dict] = []
    exited: list[dict] = []
    for e in errors:
        pid = e.get("pid")
        if pid in found and (exiting(pid, 0.2) or start_time(pid) != found[pid]):
            exited.append(exited_entry(pid))
        else:
            kept.append(e)
    return kept, exited


def _int_or(text: str):
    try:
        return int(text, 10)
    except ValueError:
        return text


# ---------------------------------------------------------------------------------------------
# Reading concurrently


def read_all(pids: list[int], read, opts: dict, jobs: int | None = None,
             found: dict[int, int | None] | None = None) -> tuple[list[dict], list[dict]]:
    """(the reports of the processes read, in ``pids``'s order; error entries for the others).
    ``read(pid, **opts)`` (and ``descendant=True`` for the PIDs in ``found``) returns a report or
    raises UsageError; it runs in forked workers
    (``jobs`` of them, default the CPUs this process may use), or here, one process after the
    other, with ``jobs`` 1."""
    import json

    found = found or {}
    if not jobs:
        jobs = len(os.sched_getaffinity(0))
    jobs = min(jobs, len(pids))
    if jobs > 1 and not opts.get("via_gdb"):
        _warm(pids, bool(opts.get("native")))
    if jobs <= 1:
        results = {i: _read_one(pid, read, opts, pid in found) for i, pid in enumerate(pids)}
    else:
        results = _pool(pids, read, opts, jobs, found)
    reports: list[dict] = []
    errors: list[dict] = []
    for i, pid in enumerate(pids):
        data, status = results.get(i, (b"", None))
        try:
            got = json.loads(data) if data else {}
        except ValueError:
            got = {}
        if "report" in got:
            reports.append(got["report"])
        elif "error" in got:
            errors.append(error_entry(pid, got["error"]))
        elif status is not None and os.WIFSIGNALED(status):
            errors.append(error_entry(pid, f"process {pid}: its reader was killed by signal {os.WTERMSIG(status)}"))
        else:
            errors.append(error_entry(pid, f"process {pid}: its reader exited before it was read"))
    return reports, errors


def _read_one(pid: int, read, opts: dict, descendant: bool) -> tuple[bytes, None]:
    import json

    try:
        out = {"report": read(pid, descendant=descendant, **opts) if descendant else read(pid, **opts)}
    except UsageError as exc:
        out = {"error": str(exc)}
    except Exception as exc:  # a bug: one line for this process, the others are still read
        out = {"error": f"process {pid}: internal error while reading it: {exc!r}"}
    return json.dumps(out).encode(), None


_HEAD = 8  # a worker's record: index (4 bytes), then length (4 bytes; 0: "starting on it"), then JSON


def _pool(pids: list[int], read, opts: dict, jobs: int, found: set[int]) -> dict[int, tuple[bytes, int | None]]:
    """{index: (JSON, None) or (b"", the exit status of the worker that died reading it)}.

    ``jobs`` workers share the processes through a pipe of task records (each takes the next
    when done with one); each sends its results on a pipe of its own, and says which process it
    starts on, so that a worker that dies is blamed on that one."""
    import select
    import struct

    import _signal as signal  # (the signal module's enums cost the dump milliseconds)

    from tuidbg.procread.freeze import Signalled

    held = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

    def raise_signalled(signum, _frame):
        raise Signalled(signum)

    results: dict[int, tuple[bytes, int | None]] = {}
    tasks = b"".join(struct.pack("<I", i) for i in range(len(pids)))
    task_r, task_w = os.pipe()
    os.set_blocking(task_w, False)
    workers: dict[int, list] = {}  # result fd -> [worker pid, buffer, index in hand]
    old = {s: signal.signal(s, raise_signalled) for s in held}
    try:
        try:
            for _ in range(jobs):
                r, w = os.pipe()
                worker = os.fork()
                if worker == 0:
                    os.close(r)
                    os.close(task_w)
                    _worker(pids, read, opts, found, task_r, w, old)
                os.close(w)
                workers[r] = [worker, b"", None]
            os.close(task_r)
            while workers:
                wlist = [task_w] if tasks else []
                ready, writable, _ = select.select(list(workers), wlist, [])
                if writable:
                    try:
                        n = os.write(task_w, tasks[: 4 * 1024])
                    except BlockingIOError:
                        n = 0
                    except BrokenPipeError:  # every worker died: what is left is not read (and says so)
                        n = len(tasks)
                    tasks = tasks[n:]
                    if not tasks:
                        os.close(task_w)
                        task_w = -1
                for fd in ready:
                    chunk = os.read(fd, 1 << 20)
                    w = workers[fd]
                    if chunk:
                        w[1] += chunk
                        while len(w[1]) >= _HEAD:
                            index, size = struct.unpack("<II", w[1][:_HEAD])
                            if len(w[1]) < _HEAD + size:
                                break
                            if size:
                                results[index] = (w[1][_HEAD:_HEAD + size], None)
                                w[2] = None
                            else:
                                w[2] = index
                            w[1] = w[1][_HEAD + size:]
                        continue
                    os.close(fd)
                    del workers[fd]
                    _, status = os.waitpid(w[0], 0)
                    if w[2] is not None:
                        results[w[2]] = (b"", status)
        finally:
            for s in held:  # (a second signal meanwhile: the first one is being acted on)
                signal.signal(s, signal.SIG_IGN)
            if task_w >= 0:
                os.close(task_w)
            for worker, _buf, _index in workers.values():
                try:
                    os.kill(worker, signal.SIGTERM)
                except OSError:
                    pass
            for fd, (worker, _buf, _index) in workers.items():
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
    return results


def _worker(pids: list[int], read, opts: dict, found: set[int], task_r: int, w: int, handlers: dict) -> None:
    """In a forked worker: read the processes whose index comes on ``task_r`` until it closes, each
    result sent on ``w``; then exit (never returns)."""
    import struct

    import _signal as signal

    code = 0
    try:
        for s, h in handlers.items():
            signal.signal(s, h)
        _die_with_parent()
        while True:
            task = os.read(task_r, 4)  # (records of 4 bytes, written whole: never split)
            if not task:
                break
            index = struct.unpack("<I", task)[0]
            _send(w, struct.pack("<II", index, 0))
            data, _ = _read_one(pids[index], read, opts, pids[index] in found)
            _send(w, struct.pack("<II", index, len(data)) + data)
    except KeyboardInterrupt:
        code = 130
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _send(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _die_with_parent() -> None:
    import ctypes

    PR_SET_PDEATHSIG = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, 15, 0, 0, 0)  # SIGTERM
    except (OSError, AttributeError):
        pass


def _warm(pids: list[int], native: bool = False) -> None:
    """Everything the direct reader loads once (its modules, libc's ptrace, the ELF symbols of each
    executable; with ``native`` the unwinder's and the merge's modules) loaded here, before the
    workers fork: each would load it again."""
    from tuidbg.gdbext.cpython_walk import Interpreter
    from tuidbg.procread import freeze, snapshot
    from tuidbg.procread.target import ProcTarget

    freeze._call()  # libc's ptrace, found once
    assert snapshot.take  # (its module, imported once)
    if native:
        from tuidbg.engine.python import merge
        from tuidbg.procread import native as N

        assert merge.fold and N.Unwinder
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
        except Exception:  # (whatever it is, the reader meets it too and says so)
            pass
        finally:
            target.close()
