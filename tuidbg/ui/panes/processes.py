"""The Processes pane: every process under the debugger (``tuidbg run --children``), as a tree.

Each row: the process's place in the tree (the launcher, its ranks, their workers), its pid, its
role, its state and its Python line at the last stop (every process's: those that stopped because
another did are read at the stop, ``tuidbg.engine.procstacks``). The role comes from what the process was
started with (``RANK``/``LOCAL_RANK``/``WORLD_SIZE``, as torchrun and srun set them), or from how it
came to be: a fork of its parent running the same program is "worker N of PID" (a DataLoader's or
a multiprocessing pool's worker), a child that exec'd is named by its program. Enter (or moving
the cursor) selects a process, and every other pane follows it.
"""

from __future__ import annotations

import os

from textual.message import Message
from textual.widgets import DataTable

from tuidbg.engine.children import mp_process
from tuidbg.engine.python.model import PyFrameInfo
from tuidbg.engine.python.view import process_line
from tuidbg.engine.state import DebuggerState, Inferior, ProcessState
from tuidbg.ui.panes.tables import ChoosesRows, T
from tuidbg.ui.text import shorten_path


def _kind(inf: Inferior, parent: Inferior | None) -> str | None:
    """What numbers a process among its siblings: "worker" (a fork running its parent's program), a
    multiprocessing helper's name, or None."""
    if parent is not None and inf.cmdline and inf.cmdline == parent.cmdline:
        return "worker"
    return mp_process(inf.cmdline)


def role_of(inf: Inferior, parent: Inferior | None, index: int) -> str:
    """What the process is in its job: "rank 1/3" (from the environment it was started with), "worker
    N of PID" (a fork running its parent's program), "spawn worker N of PID" or "resource tracker of PID"
    (multiprocessing's own processes started anew), else its program."""
    env = dict(inf.role_env)
    kind = _kind(inf, parent)
    of = f" of {parent.pid or parent.os_pid}" if parent is not None else ""
    if "RANK" in env:
        text = f"rank {env['RANK']}" + (f"/{env['WORLD_SIZE']}" if "WORLD_SIZE" in env else "")
        if "LOCAL_RANK" in env and env["LOCAL_RANK"] != env["RANK"]:
            text += f" (local {env['LOCAL_RANK']})"
        if parent is not None and parent.role_env == inf.role_env and kind is not None:
            return f"{kind} {index} of rank {env['RANK']}" if kind.endswith("worker") else f"{kind} of rank {env['RANK']}"
        return text
    if kind is not None:
        return f"{kind} {index}{of}" if kind.endswith("worker") else f"{kind}{of}"
    args = [a for a in inf.cmdline[1:] if not a.startswith("-")] if inf.cmdline else []
    if "-c" in inf.cmdline[:-1]:
        return "python -c " + inf.cmdline[inf.cmdline.index("-c") + 1][:30]
    if args:
        return os.path.basename(args[0]) if "/" in args[0] else args[0][:40]
    return os.path.basename(inf.executable or "") or "process"


def state_of(inf: Inferior) -> tuple[str, str]:
    """(text, style) of a process's state."""
    if inf.process is ProcessState.STOPPED:
        if inf.python.stop is not None:
            return f"stopped: {inf.python.stop.describe()}", "bold green"
        if inf.stop is not None and inf.stop.reason:
            return f"stopped: {inf.stop.describe()}", "green"
        if inf.stop is not None:  # (no reason: the attach, or gdb's interrupt)
            return "stopped", "green"
        return "stopped (with the others)", "green"
    if inf.process is ProcessState.RUNNING:
        return "running", "yellow"
    if inf.process is ProcessState.DETACHED:
        return inf.left or "detached", "dim"
    if inf.process is ProcessState.EXITED:
        return inf.exit_description or "exited", "dim"
    return inf.process.value, "dim"


def python_line(inf: Inferior) -> str:
    """Where the process is in Python at this stop: the agent's stop, or its stacks read at the stop
    (``python.view.process_line``); empty while it runs, or before they are read."""
    where = process_line(inf)
    if where is None:
        return ""
    f = where.frame
    name = f.func if isinstance(f, PyFrameInfo) else f.name
    return f"{name} {shorten_path(f.file, 24)}:{f.line}"


def tree_rows(state: DebuggerState) -> list[tuple[Inferior, int, str]]:
    """(process, depth, role) in tree order: each process after its parent, siblings in the order they
    came; a process whose parent is not under the debugger is a root."""
    infs = [inf for inf in state.inferiors if inf.pid is not None or inf.process is not ProcessState.NOT_STARTED]
    by_pid = {inf.pid or inf.os_pid: inf for inf in infs if inf.pid or inf.os_pid}
    kids: dict[str | None, list[Inferior]] = {}
    for inf in infs:
        parent = by_pid.get(inf.ppid) if inf.ppid else None
        kids.setdefault(parent.id if parent is not None else None, []).append(inf)
    out: list[tuple[Inferior, int, str]] = []

    def walk(pid_key: str | None, depth: int, parent: Inferior | None) -> None:
        counts: dict[str | None, int] = {}  # siblings of each kind so far
        for inf in kids.get(pid_key, []):
            kind = _kind(inf, parent)
            counts[kind] = counts.get(kind, 0) + 1
            out.append((inf, depth, role_of(inf, parent, counts[kind])))
            walk(inf.id, depth + 1, inf)

    walk(None, 0, None)
    return out


class ProcessesPane(ChoosesRows, DataTable):
    """The processes under the debugger; the cursor's is the selected one."""

    DEFAULT_CSS = """
    ProcessesPane { height: 1fr; background: $surface; }
    """

    class ProcessChosen(Message):
        def __init__(self, inferior_id: str, activated: bool) -> None:
            super().__init__()
            self.inferior_id = inferior_id
            self.activated = activated

    Chosen = ProcessChosen

    def __init__(self, **kw) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kw)
        self._key: tuple | None = None
        self.selected_id: str | None = None

    def on_mount(self) -> None:
        self.add_columns(" ", "Pid", "Role", "State", "Python")

    def update_state(self, state: DebuggerState) -> None:
        rows = tree_rows(state)
        key = (state.selected_inferior,
               tuple((inf.id, inf.pid, inf.process, inf.generation, inf.left, inf.cmdline, inf.role_env,
                      python_line(inf)) for inf, _, _ in rows))
        if key == self._key:
            return
        self._key = key
        self.selected_id = state.selected_inferior
        self.clear()
        cursor = 0
        for i, (inf, depth, role) in enumerate(rows):
            sel = inf.id == state.selected_inferior
            if sel:
                cursor = i
            text, style = state_of(inf)
            self.add_row(
                T("▶" if sel else " ", "bold"),
                T(("  " * depth) + str(inf.pid or inf.os_pid or "-")),
                T(role),
                T(text, style),
                T(python_line(inf), "bold"),
                key=inf.id,
            )
        if rows:
            self.move_cursor(row=cursor, animate=False)
