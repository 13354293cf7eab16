"""A stopped program's asyncio tasks, read from memory (gdb's ``-tuidbg-pytasks``, the console
command on old gdb, or MI memory reads: ``tuidbg.gdbext.cpython_tasks`` in every case).

- ``TasksExtension``: after each stop of a program that has loaded asyncio's C module
  (``_asyncio``), the tasks its event loops run now (cheap: the status line's "in task 'NAME'"),
  in the stopped process's ``state.python.tasks``.
- :func:`load`: every task of this stop (the Tasks pane asks), in the same place.
- :func:`show_task`: the Python frames pane shows a task's coroutines (``state.python.task_view``)
  until the next stop, another thread, or :func:`show_task` with None.
- :func:`frame_locals`: the locals of a coroutine's frame (on no thread's stack while it waits).
- :func:`collect`: the raw result dict (``tuidbg dump`` through gdb).
"""

from __future__ import annotations

import logging
import zlib
from typing import TYPE_CHECKING

from tuidbg.engine import pystack as P
from tuidbg.engine.errors import EngineError, MIError, Timeout
from tuidbg.engine.extensions import Extension
from tuidbg.engine.python.model import PyLocal
from tuidbg.engine.python.tasks import PyTask, PyTasks, TaskView, tasks_from_dict
from tuidbg.engine.state import DebuggerState, ProcessState

if TYPE_CHECKING:
    from tuidbg.engine.session import DebugSession

log = logging.getLogger("tuidbg.engine")


def has_asyncio(state: DebuggerState) -> bool:
    """Whether the process has loaded asyncio's C module (a program without it has no tasks)."""
    return any(lib.basename.startswith("_asyncio") for lib in state.libraries)


async def collect(session: "DebugSession", *, current: bool = False, locals_of: tuple[int, int] | None = None,
                  timeout: float = 120.0, backend: str = "auto") -> dict:
    """``-tuidbg-pytasks``'s result dict (``cpython_tasks.tasks_dict``; ``current``: only the tasks
    running now; ``locals_of``: (frame, code) of a coroutine frame whose locals to read; ``backend``
    as ``pystack.collect``'s)."""
    backend = P._choose_backend(session, backend)
    if backend == "memory":
        from tuidbg.engine import pystack_mi

        return await pystack_mi.tasks(session, current=current, locals_of=locals_of)
    args = "--jsonz"
    if current:
        args += " --current"
    if locals_of is not None:
        args += f" --locals {locals_of[0]:#x} --code {locals_of[1]:#x}"
    return await P._run_command(session, backend, "tuidbg-pytasks", args, timeout)


async def load(session: "DebugSession") -> PyTasks:
    """Every task of the stopped process, kept in its state for this stop."""
    st = session.state
    gen = st.generation
    if st.process is not ProcessState.STOPPED:
        raise EngineError("the program is running: its tasks are read when it stops")
    try:
        tasks = tasks_from_dict(await collect(session), gen)
    except (MIError, Timeout, ValueError, zlib.error) as exc:
        tasks = PyTasks(status="error", reason=str(exc), generation=gen)
    cur = session.state
    if cur.generation == gen and cur.process is ProcessState.STOPPED:
        session.set_state(cur.with_python(tasks=tasks))
    return tasks


def show_task(session: "DebugSession", task: PyTask | None) -> None:
    """Show ``task``'s coroutines in place of the selected thread's Python stack (None: the thread's again)."""
    st = session.state
    view = TaskView(st.selected_thread, task) if task is not None else None
    if st.python.task_view != view:
        session.set_state(st.with_python(task_view=view))


async def frame_locals(session: "DebugSession", frame: int, code: int) -> tuple[PyLocal, ...]:
    return P.locals_from_result(await collect(session, locals_of=(frame, code), timeout=60.0))


class _Stage:
    def __init__(self, ext: "TasksExtension") -> None:
        self.ext = ext

    async def __call__(self, session: "DebugSession", generation: int) -> None:
        await self.ext.refresh(session, generation)


class TasksExtension(Extension):
    """After each stop of a program with asyncio: the tasks running now (one short command)."""

    def __init__(self) -> None:
        self.reads = 0  # how many reads ran (tests look)

    async def on_configure(self, session: "DebugSession") -> None:
        session.refresh_stages.append(_Stage(self))

    async def refresh(self, session: "DebugSession", generation: int) -> None:
        st = session.state
        if st.generation != generation or st.process is not ProcessState.STOPPED or not has_asyncio(st):
            return
        if st.python.stack is None or not st.python.stack.ok:
            return  # (no Python read at this stop)
        self.reads += 1
        try:
            tasks = tasks_from_dict(await collect(session, current=True), generation)
        except (MIError, Timeout, ValueError, zlib.error) as exc:
            log.info("asyncio tasks: %s", exc)
            return
        cur = session.state
        if cur.generation == generation and cur.process is ProcessState.STOPPED and cur.python.tasks is None:
            session.set_state(cur.with_python(tasks=tasks))
