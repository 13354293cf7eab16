"""Which process is which in a job of many (ranks, their workers), and sets of them named the way users
name them: ``rank 0-2,4-7``. Pure functions over the state; the Parallel Stacks view, ``pyall``, the
run groups and rank-limited breakpoints all name processes through here.

- :func:`rank_of`: a process's rank (the ``RANK`` it was started with, as torchrun, srun and mpirun set
  it), None for a process that is not a rank itself: the launcher, a DataLoader or Pool worker (a fork
  of its parent, running its parent's program with its parent's ``RANK``), another program.
- :func:`role_kind`: "rank", "worker", "launcher" (the parent of ranks) or "process".
- :func:`parse_ranks` / :func:`format_ranks`: ``0,2-5`` both ways.
- :func:`select`: the processes a user's words name: ``all``, ``ranks``, ``workers``, ``launcher``, a
  rank list ``0,2-5`` (or ``rank 0,2-5``), ``pid 4101,4102``; :func:`describe`: the reverse, the
  shortest words for a set of processes ("rank 0-2,4-7", "rank 3 + 2 workers", "3 processes").
"""

from __future__ import annotations

from typing import Iterable, Sequence

from tuidbg.engine.errors import EngineError
from tuidbg.engine.state import DebuggerState, Inferior, ProcessState

ROLE_WORDS = ("all", "ranks", "workers", "launcher")


def _pid(inf: Inferior) -> int | None:
    return inf.pid or inf.os_pid


def _parent(inf: Inferior, state: DebuggerState) -> Inferior | None:
    if not inf.ppid:
        return None
    return next((p for p in state.inferiors if _pid(p) == inf.ppid and p is not inf), None)


def is_worker(inf: Inferior, state: DebuggerState) -> bool:
    """A fork of its parent that runs its parent's program (a DataLoader's or a multiprocessing Pool's
    worker), as the Processes pane calls "worker N of ...". """
    parent = _parent(inf, state)
    return parent is not None and bool(inf.cmdline) and inf.cmdline == parent.cmdline and inf.role_env == parent.role_env


def rank_of(inf: Inferior, state: DebuggerState) -> int | None:
    """The process's rank (its ``RANK``), None when it is not a rank itself (see the module's docstring)."""
    env = dict(inf.role_env)
    rank = env.get("RANK")
    if rank is None or is_worker(inf, state):
        return None
    try:
        return int(rank)
    except ValueError:
        return None


def role_kind(inf: Inferior, state: DebuggerState) -> str:
    if rank_of(inf, state) is not None:
        return "rank"
    if is_worker(inf, state):
        return "worker"
    pid = _pid(inf)
    if pid and any(q.ppid == pid and rank_of(q, state) is not None for q in state.inferiors):
        return "launcher"
    return "process"


def parse_ranks(text: str) -> tuple[int, ...]:
    """``0,2-5`` -> (0, 2, 3, 4, 5); EngineError (one line) for anything else."""
    out: list[int] = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise EngineError(f"{text.strip()!r} is not a list of ranks (e.g. 0,2-5)")
        a, b = int(lo), int(hi) if sep else int(lo)
        if b < a or b - a > 100_000:
            raise EngineError(f"{part!r} is not a range of ranks")
        out.extend(range(a, b + 1))
    if not out:
        raise EngineError("which ranks? (e.g. 0,2-5)")
    return tuple(sorted(set(out)))


def format_ranks(ranks: Iterable[int]) -> str:
    """(0, 1, 2, 4, 5, 6, 7) -> "0-2,4-7"."""
    rs = sorted(set(ranks))
    parts: list[str] = []
    i = 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        parts.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}" if j > i + 1 else f"{rs[i]},{rs[j]}")
        i = j + 1
    return ",".join(parts)


def _live(state: DebuggerState) -> list[Inferior]:
    return [inf for inf in state.inferiors if inf.process in (ProcessState.RUNNING, ProcessState.STOPPED)]


def select(state: DebuggerState, words: str) -> tuple[str, ...]:
    """The live processes (inferior ids, in the state's order) that ``words`` name (see the module's
    docstring); EngineError (one line) when they name none or are not understood."""
    text = words.strip()
    live = _live(state)
    kind, _, rest = text.partition(" ")
    rest = rest.strip()
    if text == "all":
        chosen = live
    elif text in ("ranks", "workers", "launcher"):
        chosen = [inf for inf in live if role_kind(inf, state) == text.rstrip("s")]
    elif kind in ("pid", "pids"):
        pids = set()
        for w in rest.replace(",", " ").split():
            if not w.isdigit():
                raise EngineError(f"{w!r} is not a process ID")
            pids.add(int(w))
        if not pids:
            raise EngineError("which processes? (pid 4101,4102)")
        missing = pids - {_pid(inf) for inf in live}
        if missing:
            raise EngineError(f"no live process {', '.join(map(str, sorted(missing)))} under the debugger")
        chosen = [inf for inf in live if _pid(inf) in pids]
    else:
        if kind in ("rank", "ranks"):
            text = rest
        if not text or not (text[0].isdigit()):
            raise EngineError(f"{words.strip()!r}: name processes by ranks (0,2-5, rank 3), all, ranks, workers, "
                              "launcher, or pid PID,...")
        wanted = set(parse_ranks(text))
        by_rank = {rank_of(inf, state): inf for inf in live}
        missing = sorted(wanted - set(by_rank))
        if missing:
            raise EngineError(f"no live rank {format_ranks(missing)} under the debugger")
        chosen = [inf for inf in live if rank_of(inf, state) in wanted]
    if not chosen:
        raise EngineError(f"{words.strip()!r} names no live process under the debugger")
    return tuple(inf.id for inf in chosen)


def describe(state: DebuggerState, iids: Sequence[str]) -> str:
    """The shortest words for a set of processes: "rank 0-2,4-7", "rank 3 + 2 workers", "pid 4101 4102",
    "3 processes"."""
    infs = [inf for inf in state.inferiors if inf.id in set(iids)]
    if not infs:
        return "no process"
    ranks = [r for r in (rank_of(inf, state) for inf in infs) if r is not None]
    others = [inf for inf in infs if rank_of(inf, state) is None]
    parts = []
    if ranks:
        parts.append(f"rank {format_ranks(ranks)}")
    if others:
        workers = [inf for inf in others if is_worker(inf, state)]
        rest = [inf for inf in others if not is_worker(inf, state)]
        if rest:
            if parts:
                parts.append(f"{len(rest)} other{'s' if len(rest) != 1 else ''}")
            elif len(rest) <= 3:
                parts.append("pid " + " ".join(str(_pid(inf) or inf.id) for inf in rest))
            else:
                parts.append(f"{len(rest)} processes")
        if workers:
            n = len(workers)
            parents = {inf.ppid for inf in workers}
            of = ""
            if len(parents) == 1 and not (parts and not ranks and rest and _pid(_parent(workers[0], state) or workers[0])
                                          in {_pid(inf) for inf in rest}):
                parent = _parent(workers[0], state)
                prank = rank_of(parent, state) if parent is not None else None
                of = f" of rank {prank}" if prank is not None else f" of {workers[0].ppid}"
            parts.append((f"{n} workers" if n > 1 else f"worker {_pid(workers[0])}") + of)
    return " + ".join(parts)


def short_names(state: DebuggerState, iids: Sequence[str]) -> str:
    """A list of processes for a row at 80 columns: "rank 0-2,4-7 · 7 procs", "pid 4101 · 1 proc"."""
    n = len(set(iids))
    return f"{describe(state, iids)} · {n} proc{'s' if n != 1 else ''}"


def live_of(state: DebuggerState, iids: Iterable[str]) -> tuple[str, ...]:
    """Those of ``iids`` that still live, in the state's order."""
    want = set(iids)
    return tuple(inf.id for inf in _live(state) if inf.id in want)


def rank_of_pid(pid: int) -> int | None:
    """A process's rank read from ``/proc`` now (its ``RANK``; None for a worker that forked from its rank,
    as :func:`rank_of` says): what a rank-limited breakpoint is matched by as a process's agent connects,
    before the state may have read what the process is."""
    from tuidbg.procread.proc import cmdline_of, parent_of, role_env

    env = role_env(pid)
    if "RANK" not in env:
        return None
    ppid = parent_of(pid)
    if ppid and role_env(ppid).get("RANK") == env["RANK"] and cmdline_of(ppid) == cmdline_of(pid):
        return None
    try:
        return int(env["RANK"])
    except ValueError:
        return None


def applies_to(ranks: tuple[int, ...], pids: tuple[int, ...], pid: int | None) -> bool:
    """Whether a breakpoint limited to ``ranks`` and ``pids`` (both empty: not limited) is for process ``pid``."""
    if not ranks and not pids:
        return True
    if pid is None:
        return False
    return pid in pids or (bool(ranks) and rank_of_pid(pid) in ranks)
