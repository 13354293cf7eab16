"""Parallel stacks: every thread of every process merged into one prefix tree, from the outermost
frame in (the Parallel Stacks tab; pure, tested without Textual).

The stacks are those the state has at an all-stop stop: each stopped process's Python stack of this
stop (``Inferior.python.stack``: the stopped process's read through gdb, every other's from its memory
at once, ``tuidbg.engine.procstacks``), the Python frames as the Python frames pane names them (the
agent's own frames and thread left out). The threads are grouped into distinct stacks exactly as
``tuidbg dump`` groups them (``tuidbg.dumpreport.group``: the same frame key, function, file and
line), and the tree is made of those groups: a node is one frame shared by the threads whose stacks
pass through it, and its children are ordered by the dump's own rule (``dumpreport.Group.sort_key``:
fewest processes first, so that the odd branch leads). ``tree_from_dump`` builds the same tree from
a ``tuidbg dump --json`` report (the benchmark's peer, and a test that both give one tree).

:func:`rows` flattens the tree for the screen: branches where the processes part are open, a long
trunk (a run of frames every thread below shares, with nothing branching off) folded into one row
that opens with Enter; then the threads that run no Python, and the processes not shown (running,
not read yet, unreadable).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from tuidbg import dumpreport as R
from tuidbg.agent.protocol import AGENT_THREAD_NAME
from tuidbg.engine.python.model import PyStack, is_agent_file
from tuidbg.engine.ranks import describe, rank_of
from tuidbg.engine.state import DebuggerState, ProcessState

FOLD_AT = 4  # a trunk of this many frames or more is folded (its first and last frames stay shown)


class Node(R.Group):
    """One frame of the tree and the (process, thread) members whose stacks pass through it; a
    ``dumpreport.Group`` so that siblings sort by the dump's own rule."""

    def __init__(self, key: tuple, frame: dict | None, depth: int) -> None:
        super().__init__(key, [frame] if frame is not None else [])
        self.frame = frame
        self.depth = depth  # frames from the outermost (0)
        self.children: list[Node] = []
        self.ends = 0  # members whose innermost frame this is
        self.truncated = False  # some member's stack had more frames than were read

    @property
    def iids(self) -> tuple[str, ...]:
        """The processes in it (inferior ids; a dump's processes by PID), in the order they came."""
        return tuple(str(p.get("iid") or p["pid"]) for p in self.processes)

    def path(self) -> tuple:
        return self.key


@dataclass
class ParallelTree:
    roots: list[Node] = field(default_factory=list)
    processes: int = 0  # processes whose stacks are in the tree
    threads: int = 0  # threads with Python frames in the tree
    no_python: list[tuple[dict, int]] = field(default_factory=list)  # (process, threads that run no Python)
    not_shown: list[tuple[str, str]] = field(default_factory=list)  # (process id, why its stacks are not in)

    def walk(self) -> Iterable[Node]:
        todo = list(reversed(self.roots))
        while todo:
            n = todo.pop()
            yield n
            todo.extend(reversed(n.children))


# ---------------------------------------------------------------------------------------------
# The processes, as the dump's report has them


def _frame(f) -> dict:
    return {"kind": "python", "function": f.function, "qualname": f.qualname, "file": f.file, "line": f.line}


def _process(state: DebuggerState, inf, stack: PyStack) -> tuple[dict, int]:
    """(the dump's process dict of ``inf``, how many of its threads run no Python)."""
    agent = inf.python.agent
    own = agent.control_native_id if agent is not None else None
    threads = []
    for t in stack.threads:
        if own and t.lwp == own or t.name == AGENT_THREAD_NAME:
            continue
        frames = [_frame(f) for f in t.frames if not is_agent_file(f.file)]
        if not frames:
            continue
        threads.append({"id": t.tid or str(t.lwp), "tid": t.lwp, "gdb_tid": t.tid, "name": t.name,
                        "main": bool(t.lwp and t.lwp == (inf.pid or inf.os_pid)), "frames": frames,
                        "truncated": t.truncated})
    total = len(inf.threads) - (1 if own and any(t.lwp == own for t in inf.threads) else 0)
    rank = rank_of(inf, state)
    proc = {"pid": inf.pid or inf.os_pid, "iid": inf.id, "env": dict(inf.role_env), "threads": threads,
            "label": f"rank {rank}" if rank is not None else f"pid {inf.pid or inf.os_pid}"}
    return proc, max(0, total - len(threads))


def processes_of(state: DebuggerState) -> tuple[list[dict], list[tuple[dict, int]], list[tuple[str, str]]]:
    """(the stopped processes whose stacks of this stop are in, as the dump's report has them; how many
    threads of each run no Python; the processes left out and why)."""
    procs: list[dict] = []
    no_py: list[tuple[dict, int]] = []
    left: list[tuple[str, str]] = []
    for inf in state.inferiors:
        if inf.process is ProcessState.RUNNING:
            left.append((inf.id, "running"))
            continue
        if inf.process is not ProcessState.STOPPED:
            continue
        stack = inf.python.stack
        if stack is None:
            if inf.python.stack_read:
                no_py.append(({"pid": inf.pid or inf.os_pid, "iid": inf.id, "env": dict(inf.role_env), "threads": []},
                              len(inf.threads)))
            else:
                left.append((inf.id, "not read yet"))
            continue
        if not stack.ok:
            left.append((inf.id, f"unreadable: {stack.reason}"))
            continue
        proc, n = _process(state, inf, stack)
        procs.append(proc)
        if n:
            no_py.append((proc, n))
    return procs, no_py, left


# ---------------------------------------------------------------------------------------------
# The tree


def build(procs: list[dict]) -> list[Node]:
    """The prefix tree of every thread's stack of ``procs`` (the dump's process dicts), from the
    outermost frame in; siblings in the dump's order."""
    root = Node((), None, -1)
    index: dict[tuple, Node] = {(): root}
    for g in R.group(procs):
        if not g.key:
            continue  # (threads without frames: counted apart)
        key = g.key
        truncated = key[-1] == ("truncated",)
        if truncated:
            key = key[:-1]
        outer_first = list(zip(reversed(key), reversed(g.frames)))
        node = root
        path: tuple = ()
        for depth, (fk, frame) in enumerate(outer_first):
            path = path + (fk,)
            child = index.get(path)
            if child is None:
                child = index[path] = Node(path, frame, depth)
                node.children.append(child)
            child.members.extend(g.members)
            node = child
        node.ends += len(g.members)
        node.truncated = node.truncated or truncated
    for n in index.values():
        if len(n.children) > 1:
            for c in n.children:
                c.diverges = True
        n.children.sort(key=R.Group.sort_key)
    return root.children


def tree(state: DebuggerState) -> ParallelTree:
    procs, no_py, left = processes_of(state)
    return ParallelTree(roots=build(procs), processes=len(procs), threads=sum(len(p["threads"]) for p in procs),
                        no_python=no_py, not_shown=left)


def tree_from_dump(doc: dict) -> ParallelTree:
    """The same tree from a ``tuidbg dump --json`` report (its Python frames)."""
    procs = []
    no_py: list[tuple[dict, int]] = []
    for p in doc.get("processes", []):
        threads = [dict(t, frames=[f for f in t.get("frames", []) if f.get("kind") == "python"])
                   for t in p.get("threads", [])]
        with_py = [t for t in threads if t["frames"]]
        q = dict(p, threads=with_py)
        procs.append(q)
        if len(threads) > len(with_py):
            no_py.append((q, len(threads) - len(with_py)))
    return ParallelTree(roots=build(procs), processes=len(procs), threads=sum(len(p["threads"]) for p in procs),
                        no_python=no_py)


def shape(nodes: Iterable[Node]) -> list:
    """The tree as nested lists of (function, file, line, processes (pids), threads, children): what two
    trees are compared by."""
    return [((n.frame or {}).get("qualname") or (n.frame or {}).get("function"), (n.frame or {}).get("file"),
             (n.frame or {}).get("line"), tuple(sorted(p["pid"] for p in n.processes)), len(n.members),
             shape(n.children)) for n in nodes]


# ---------------------------------------------------------------------------------------------
# Rows for the screen


@dataclass(frozen=True)
class Row:
    """One row of the Parallel Stacks tab. ``kind``: "node" (a frame), "fold" (a folded trunk: ``hidden``
    frames between the rows above and below it), "no-python", "left" (processes not in the tree).
    ``iids``: the processes Enter selects; ``threads``: (process id, gdb thread id or None, LWP) of the
    node's members; ``key``: the node's path (what a fold opens by)."""

    kind: str
    prefix: str
    text: str
    label: str
    iids: tuple[str, ...] = ()
    key: tuple = ()
    hidden: int = 0
    threads: tuple[tuple[str, str | None, int | None], ...] = ()
    detail: str = ""


def frame_text(f: dict | None) -> str:
    if not f:
        return "?"
    name = f.get("qualname") or f.get("function") or "?"
    where = (f.get("file") or "?").rsplit("/", 1)[-1]
    return f"{name}  {where}:{f.get('line')}" if f.get("line") is not None else f"{name}  {where}"


def _label(state: DebuggerState | None, n: Node) -> str:
    nprocs = len(n.processes)
    nthreads = len(n.members)
    who = describe(state, n.iids) if state is not None else " ".join(str(p["pid"]) for p in n.processes[:4]) + (
        " …" if nprocs > 4 else "")
    label = f"{who} · {nprocs} proc{'s' if nprocs != 1 else ''}"
    if nthreads > nprocs:
        label += f" · {nthreads} threads"
    return label


def _node_row(state: DebuggerState | None, n: Node, prefix: str) -> Row:
    f = n.frame or {}
    detail = f"{f.get('qualname') or f.get('function')} at {f.get('file')}:{f.get('line')}"
    if n.ends and n.children:
        detail += f" (innermost for {n.ends} thread{'s' if n.ends != 1 else ''})"
    if n.truncated:
        detail += " (more frames than were read)"
    threads = tuple((str(p.get("iid") or p["pid"]), t.get("gdb_tid"), t.get("tid")) for p, t in n.members)
    return Row("node", prefix, frame_text(n.frame), _label(state, n), n.iids, n.key, threads=threads, detail=detail)


def rows(t: ParallelTree, state: DebuggerState | None = None, opened: frozenset = frozenset(),
         closed: frozenset = frozenset()) -> list[Row]:
    """The tree's rows (see the module's docstring). ``opened``: the folds the user opened (by the key
    of the trunk's first frame); ``closed``: the branch nodes the user closed (by key)."""
    out: list[Row] = []

    def chain(n: Node) -> list[Node]:
        """``n`` and the frames below it that every member shares with no branch off (a trunk)."""
        run = [n]
        while len(run[-1].children) == 1 and not run[-1].ends and len(run[-1].children[0].members) == len(n.members):
            run.append(run[-1].children[0])
        return run

    def emit(nodes: list[Node], indent: str) -> None:
        for i, n in enumerate(nodes):
            last = i == len(nodes) - 1
            branch = len(nodes) > 1
            head = indent + (("└ " if last else "├ ") if branch else "")
            cont = indent + (("  " if last else "│ ") if branch else "")
            run = chain(n)
            if len(run) >= FOLD_AT and n.key not in opened:
                out.append(_node_row(state, run[0], head))
                inner = run[1:-1]
                names = f"{frame_text(inner[0].frame).split('  ')[0]} → {frame_text(inner[-1].frame).split('  ')[0]}"
                out.append(Row("fold", cont, f"… {len(inner)} frames ({names})", "", n.iids, n.key, hidden=len(inner),
                               detail="Enter opens the folded frames"))
                out.append(_node_row(state, run[-1], cont))
            else:
                out.append(_node_row(state, run[0], head))
                for m in run[1:]:
                    out.append(_node_row(state, m, cont))
            bottom = run[-1]
            if bottom.children and not any(m.key in closed for m in run):
                emit(bottom.children, cont)

    emit(t.roots, "")
    if t.no_python:
        nthreads = sum(n for _p, n in t.no_python)
        iids = tuple(str(p.get("iid") or p["pid"]) for p, _n in t.no_python)
        who = describe(state, iids) if state is not None else f"{len(iids)} processes"
        out.append(Row("no-python", "", f"{nthreads} thread{'s' if nthreads != 1 else ''} run no Python",
                       f"{who} · {len(iids)} proc{'s' if len(iids) != 1 else ''}", iids,
                       detail="threads without a Python frame (native threads: the C++ frames pane shows theirs)"))
    if t.not_shown and state is not None:
        by_why: dict[str, list[str]] = {}
        for iid, why in t.not_shown:
            by_why.setdefault(why, []).append(iid)
        for why, iids in by_why.items():
            out.append(Row("left", "", f"({why})", f"{describe(state, iids)} · {len(iids)} proc{'s' if len(iids) != 1 else ''}",
                           tuple(iids), detail=f"not in the tree: {why}"))
    return out


def summary(t: ParallelTree) -> str:
    nodes = sum(1 for _ in t.walk())
    leaves = sum(1 for n in t.walk() if n.ends)
    return (f"{t.processes} process{'es' if t.processes != 1 else ''}, {t.threads} Python thread"
            f"{'s' if t.threads != 1 else ''}, {leaves} distinct stack{'s' if leaves != 1 else ''} ({nodes} frames)")


def first_thread(row: Row, iid: str) -> tuple[str | None, int | None] | None:
    """(gdb thread id, LWP) of the row's first member thread in process ``iid``."""
    for p, tid, lwp in row.threads:
        if p == iid:
            return tid, lwp
    return None


def keys_of(rows_: Iterable[Row]) -> Any:
    return tuple((r.kind, r.prefix, r.text, r.label) for r in rows_)
