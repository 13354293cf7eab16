"""Every process's Python stacks at an all-stop stop: the processes that stopped because another did.

gdb runs a session of several processes all-stop (``tuidbg.engine.children``): a stop in one stops
them all. The process that stopped is read as a single process is (gdb's refresh, then
``tuidbg.engine.pystack``'s walk through gdb, with each Python frame placed among the native ones).
Every other process that stopped with it is read here, at once and without gdb: the same walker as
``tuidbg dump``'s (``tuidbg.procread.snapshot`` over ``/proc/PID/mem``, Python frames only), in a
few worker threads, while gdb answers the refresh of the one shown. Nothing is stopped or resumed for
it (gdb holds those processes stopped) and no process's agent is asked, so a process whose agent is
busy, absent or hung is read all the same, and N processes cost a few milliseconds each, not N turns
of gdb.

The public API, for the Processes pane and any view across processes (parallel stacks):

- the state: each stopped process's ``Inferior.python.stack`` is its ``PyStack`` of this stop
  (``generation`` the process's), ``backend`` "proc" when read here; ``python.stack_read`` says the
  read is over (``stack`` None then: no Python in that process). A thread of such a stack has its
  ``lwp`` always and its gdb ``tid`` once gdb has told the process's threads (they are filled in as
  soon as it has: when the process is selected). ``python.view.stacks_read(state)`` says whether
  every stopped process's stack of this stop is in; ``python.view.process_line(inf)`` is where a
  process is in Python (its thread and frame), as the Processes pane shows it.
- ``controller(session).wait_read(timeout)``: until ``stacks_read`` (tests, a view that must have
  them all).

Selecting such a process (``select_process``) shows it as a single process: the refresh through gdb
places the selected thread's frames among its native frames (``pystack``: only that thread is read
again), the other threads keep what was read here.

Where the memory cannot be read this way (``/proc/PID/mem`` refused: a process that made itself
undumpable), the stack says why (status "error"), and the process is read through gdb when it is
selected. A remote session's processes are another machine's: nothing is read here for them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from tuidbg.engine.errors import EngineError, Timeout
from tuidbg.engine.extensions import Extension
from tuidbg.engine.pystack import PROC_BACKEND, STAGE_MAX_FRAMES
from tuidbg.engine.python.model import PyStack, stack_from_dict, with_thread_ids
from tuidbg.engine.python.view import stacks_read
from tuidbg.engine.state import DebuggerState, Inferior, ProcessState

if TYPE_CHECKING:
    from tuidbg.engine.session import DebugSession

log = logging.getLogger("tuidbg.engine")

WORKERS = 4  # threads reading processes at once (each read waits on /proc as much as it runs Python)
BACKEND = PROC_BACKEND


def read_process(pid: int, max_frames: int = STAGE_MAX_FRAMES) -> dict:
    """The walker's result dict (``-tuidbg-pystack --json``'s) of a process that is stopped already, read
    from its memory (no ptrace: gdb holds it). Runs in a worker thread."""
    from tuidbg.gdbext.cpython_results import result_dict
    from tuidbg.procread import snapshot as S

    try:
        snap = S.take(pid, stop=False, max_frames=max_frames)
    except S.NoPython as exc:
        return {"v": 1, "status": "no-python", "reason": str(exc)}
    except (S.NotAllowed, S.ProcessGone, S.WalkError, OSError) as exc:
        return {"v": 1, "status": "error", "reason": str(exc)}
    res = result_dict(snap.interp, snap.recs)
    res["status"] = "ok"
    for t in res["threads"]:
        t["tid"] = None  # (procread's own numbering: gdb's ids are filled in from the process's threads)
    return res


def controller(session) -> ProcessStacks | None:
    """The ProcessStacks extension of a session, if it has one."""
    for ext in getattr(session, "extensions", ()):
        if isinstance(ext, ProcessStacks):
            return ext
    return None


class ProcessStacks(Extension):
    """Session extension: reads the Python stacks of the processes that stopped with another (see the
    module's docstring)."""

    def __init__(self, config, max_frames: int = STAGE_MAX_FRAMES) -> None:
        self.config = config
        self.max_frames = max_frames
        self.session: DebugSession | None = None
        self._asked: set[tuple[str, int]] = set()  # (inferior, generation) read or being read
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._bg: set[asyncio.Task] = set()
        self.reads = 0  # processes read directly (tests and benchmarks look)

    async def on_configure(self, session) -> None:
        self.session = session
        session.on_state(self._on_state)

    def closed(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    # -- what to read --------------------------------------------------------------------------

    def _on_state(self, st: DebuggerState) -> None:
        if len(st.inferiors) < 2 or self.config.remote:
            return
        todo = []
        for inf in st.inferiors:
            if inf.process is not ProcessState.STOPPED:
                continue
            stack = inf.python.stack
            if stack is not None and stack.backend == BACKEND and any(t.tid is None for t in stack.threads):
                named = with_thread_ids(stack, inf.threads)
                if named is not stack:  # gdb has told its threads (it was selected): their ids
                    self._later(lambda iid=inf.id, gen=inf.generation, old=stack, new=named:
                                self._apply(iid, gen, new, old))
            if (inf.id == st.selected_inferior or not inf.pid or stack is not None or inf.python.stack_read
                    or (inf.id, inf.generation) in self._asked):
                continue
            todo.append(inf)
        # (not during an agent request's short stops, nor the stop of a child's exit that the session goes
        # on from unseen: the processes run again at once)
        if not todo or st.python.transient:
            return
        # (what was asked at stops that are over is forgotten)
        self._asked = {(i.id, i.generation) for i in st.inferiors} & self._asked | {(i.id, i.generation) for i in todo}
        self._spawn(self._read_all([(inf.id, inf.generation, inf.pid) for inf in todo]))

    def _later(self, fn) -> None:
        try:
            asyncio.get_running_loop().call_soon(fn)
        except RuntimeError:  # (no loop: a reducer test)
            pass

    def _spawn(self, coro) -> None:
        try:
            task = asyncio.ensure_future(coro)
        except RuntimeError:
            coro.close()
            return
        self._bg.add(task)
        task.add_done_callback(self._bg.discard)

    # -- reading -------------------------------------------------------------------------------

    async def _read_all(self, procs: list[tuple[str, int, int]]) -> None:
        loop = asyncio.get_running_loop()
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(WORKERS, thread_name_prefix="tuidbg-procstacks")
        pool = self._pool

        async def one(iid: str, gen: int, pid: int) -> None:
            try:
                res = await loop.run_in_executor(pool, read_process, pid, self.max_frames)
            except RuntimeError:  # (the pool shut down: the session ended)
                return
            self.reads += 1
            self._apply_result(iid, gen, res)

        await asyncio.gather(*(one(*p) for p in procs))

    def _apply_result(self, iid: str, gen: int, res: dict) -> None:
        ps = stack_from_dict(res, BACKEND, gen)
        s = self.session
        inf = s.state.find(iid) if s is not None else None
        if ps is not None and inf is not None:
            ps = with_thread_ids(ps, inf.threads)
        self._apply(iid, gen, ps, None)

    def _apply(self, iid: str, gen: int, ps: PyStack | None, old: PyStack | None) -> None:
        """Process ``iid``'s stack, if it is still at that stop and its stack is still ``old``."""
        s = self.session
        if s is None:
            return
        inf = s.state.find(iid)
        if not self._wanted(inf, gen, old):
            return
        ps = replace(ps, generation=gen) if ps is not None else None
        s.set_state(s.state.with_inferior(iid, python=replace(inf.python, stack=ps, stack_read=True)))

    @staticmethod
    def _wanted(inf: Inferior | None, gen: int, old: PyStack | None = None) -> bool:
        return (inf is not None and inf.generation == gen and inf.process is ProcessState.STOPPED
                and inf.python.stack is old)

    # -- waiting ------------------------------------------------------------------------------

    async def wait_read(self, timeout: float = 30.0) -> DebuggerState:
        """Until every stopped process's Python stack of this stop is in (``python.view.stacks_read``)."""
        s = self.session
        if s is None:
            raise EngineError("not part of a started session")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not stacks_read(s.state):
            if loop.time() > deadline:
                raise Timeout("the Python stacks of every process", timeout)
            await asyncio.sleep(0.005)
        return s.state
