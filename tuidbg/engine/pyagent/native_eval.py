"""Python requests at a native stop (SIGTRAP, ctrl+c, a native breakpoint, attach): ``pyprint``, the
watches and ``pylocals`` in the selected thread's Python frames, where no agent stop is there to answer.

How: the requests go into the agent's mailbox, then gdb calls the agent's evaluate function (an
inferior call, ``agent/_native_eval.py``) in the selected thread, on top of the C frames it stopped in,
as a C library calls a Python callback; the replies are read from the mailbox once it has returned.

When it may (each checked before the call, or the request is refused with the reason):

- *The GIL.* The thread holds it (it called into C/C++ from Python without releasing it), or nobody
  holds it (the thread released it around its C call: the call takes it, as any callback does). Another
  thread holds it: the message names that thread and offers ``pyuntilgil``, which runs the program until
  that thread's next Python line, an agent stop where everything can be evaluated. Read from memory
  (``-tuidbg-gil``, gdbext/cpython_gil.py); a free-threaded build has no GIL and evaluates in any
  thread with Python frames.
- *A safe point.* Not while the thread is inside the allocator, a lock or the collector (its own
  call would wait for the lock it holds), nor in the eval loop itself (between two bytecodes' halves):
  the native frames above its innermost Python frame tell.

Bounded: every thread of the process runs during the call (gdb's scheduler-locking off, other
processes held): with only the caller running, the first GIL switch would hand the GIL to a thread gdb
holds frozen, and a lock another thread holds would never be released. The agent's stop lock keeps the
others' Python stops away meanwhile, and the agent ends an expression that runs past its time with an
exception of its own (gdb's unwinding would leave the interpreter's frame stack pointing into the
unwound C stack). An exception in the expression is its reply's error.
"""

from __future__ import annotations

import json
import logging
import re
import struct
from typing import Any

from tuidbg.agent import protocol as P
from tuidbg.engine import mi
from tuidbg.engine.errors import EngineError, MIError
from tuidbg.engine.python.model import user_frames
from tuidbg.engine.pyagent.base import AgentBase

log = logging.getLogger("tuidbg.engine")

EVAL_TIMEOUT_MS = 5000  # the agent stops an expression still running after this
CALL_MARGIN = 10.0  # seconds beyond that for the call itself (the GIL, a loaded machine)

# Native frames above the Python frame where a call into Python would wait for itself or find the
# interpreter half-way through something: the allocator (glibc's and Python's), locks, the collector,
# the GIL's own hand-over.
UNSAFE_FRAMES = re.compile(
    r"^(?:__libc_|_int_|__GI___libc_|__GI__int_)?(?:malloc|free|calloc|realloc|memalign|posix_memalign)\b"
    r"|^(?:malloc_consolidate|tcache_|arena_get|sysmalloc|unlink_chunk)"
    r"|^(?:__lll_lock_wait|__lll_lock_wait_private|(?:__)?pthread_mutex_lock|___pthread_mutex_lock|"
    r"pthread_rwlock_\w*lock|__pthread_rwlock_\w*lock|futex_wait|__futex_abstimed_wait)"
    r"|^(?:_?PyObject_(?:Malloc|Calloc|Realloc|Free)|_PyObject_GC_\w+|pymalloc_\w+|_PyMem_\w+|PyMem_\w+)"
    r"|^(?:gc_collect\w*|_PyGC_\w+|collect_with_callback|collect_generations)$"  # (above 3.9-3.11's static collect)
    r"|^(?:take_gil|drop_gil|PyEval_RestoreThread|PyEval_SaveThread|PyEval_AcquireThread|_PyEval_\w*Lock\w*)$"
    r"|^(?:PyThread_acquire_lock\w*|_PyMutex_\w+|PyMutex_\w+|_PySemaphore_\w+|_PyParkingLot_\w+)$"
)
UNPLACED_DEPTH = 32  # C frames checked when the Python frames' place on the C stack is not known
EVAL_LOOP = re.compile(r"^_?PyEval_EvalFrameDefault$")


class NativeEvaluation(AgentBase):
    """Part of ``PyAgent`` (see the module's docstring)."""

    def can_evaluate_natively(self, state=None) -> bool:
        """A native stop where the selected thread has Python frames and the agent runs in the program."""
        st = state if state is not None else self._session().state
        if not (self.info.connected and self.info.eval_addr and st.is_stopped) or self.at_agent_stop(st) is not None:
            return False
        ps = st.python.stack
        pt = ps.thread(st.selected_thread) if ps is not None and ps.ok and st.selected_thread else None
        return pt is not None and bool(user_frames(pt.frames))

    async def gil_holder(self) -> dict[str, Any]:
        """The GIL's state as gdbext reads it (``locked``, ``holder_thread``, ``holder_name``,
        ``free_threaded``); ``status`` other than "ok" when it cannot tell."""
        s = self._session()
        try:
            r = await s.cmd("-tuidbg-gil")
        except MIError as exc:
            return {"status": "error", "reason": exc.message}
        try:
            data = json.loads(str(r.get("json") or "{}"))
        except ValueError:
            return {"status": "error", "reason": "unreadable answer"}
        return data if isinstance(data, dict) else {"status": "error", "reason": "unreadable answer"}

    async def _request_native(self, ops: list[dict], timeout: float) -> list[dict]:
        s = self._session()
        st = s.state
        tid = st.selected_thread or st.current_thread
        if not self.info.connected or not self.info.eval_addr:
            raise EngineError("this needs tuidbg's Python agent running in the program (it is not)")
        ps = st.python.stack
        pt = ps.thread(tid) if ps is not None and ps.ok and tid else None
        frames = user_frames(pt.frames) if pt is not None else ()
        if not frames:
            raise EngineError(f"thread {tid} runs no Python code here: select a thread with Python frames")
        await self._check_safe_point(tid, frames)
        data = json.dumps({"ops": ops}).encode()
        if len(data) > P.IN_SIZE:
            raise EngineError("request too large for the agent's mailbox")
        # The inferior calls' *running (gdb says no *stopped at their end) is marked transient: what the
        # user sees is this stop throughout, and it is that stop again once the calls are over.
        before = s.state
        self._transient_native += 1
        s.set_state(before.with_python(transient=True))
        try:
            holds = await self._check_gil(tid)
            base = int(self.info.mailbox or 0)
            await s.cmd(f"-data-write-memory-bytes {base + P.IN_OFFSET:#x} {data.hex()}")
            await s.cmd(f"-data-write-memory-bytes {base + P.OFF_IN_LEN:#x} {struct.pack('<I', len(data)).hex()}")
            r = await self._call_eval(tid, holds, timeout)
        except MIError as exc:
            raise EngineError(f"evaluating in thread {tid} failed: {exc.message}") from exc
        finally:
            self._transient_native -= 1
            self._back_at_the_stop(before)
        await self._reselect(st)
        code = mi.to_int(r.get("value"))
        if code == 2:
            raise EngineError("another thread is stopping at a Python breakpoint: continue to see it, then evaluate")
        if code != 1:
            raise EngineError("the Python agent is off in this program")
        out = await self._read_out()
        replies = out.get("replies")
        return replies if isinstance(replies, list) else []

    async def _call_eval(self, tid: str, holds: bool, timeout: float):
        """gdb's call of the agent's evaluate function in thread ``tid``, every thread of its process running."""
        s = self._session()
        ms = max(1, int(min(timeout, EVAL_TIMEOUT_MS / 1000) * 1000))
        old = await self._scheduler_locking()
        # The user's breakpoints are off during the call: the expression may run the very code one is in
        # (a torch operator evaluated at a breakpoint in it), and gdb would stop inside its own call. (Another
        # thread passing one of them in those milliseconds does not stop either.)
        user = [b.number for b in s.state.breakpoints if b.enabled and not b.internal and b.number]
        if user:
            await s.cmd("-break-disable " + " ".join(user))
        await s.cmd("-gdb-set unwindonsignal on", check=False)
        try:
            # (a thread that holds the GIL may have a Python error set by the C code it stopped in: kept
            # aside; one that does not hold it has no thread state to ask)
            keep = self._python_error_kept(tid, old) if holds else _nothing()  # type: ignore[attr-defined]
            async with keep:
                await s.cmd("-gdb-set scheduler-locking off")
                async with self._only_this_process():
                    return await s.cmd(
                        f"-data-evaluate-expression --thread {tid} --frame 0 "
                        + mi.quote(f"((int(*)(int))({self.info.eval_addr:#x}))({ms})"),
                        timeout=ms / 1000 + CALL_MARGIN,
                    )
        finally:
            await s.cmd("-gdb-set unwindonsignal off", check=False)
            await s.cmd(f"-gdb-set scheduler-locking {old}", check=False)
            if user:
                await s.cmd("-break-enable " + " ".join(user), check=False)

    def _back_at_the_stop(self, before) -> None:
        """The state of the stop again after the call (gdb reported its threads running, then nothing), unless
        the program stopped elsewhere meanwhile (a breakpoint in another thread: that stop is shown)."""
        s = self._session()
        cur = s.state
        if cur.last_generation == before.last_generation and cur.find(before.selected_inferior) is not None:
            s.set_state(before)
        elif cur.python.transient:
            s.set_state(cur.with_python(transient=False))

    async def _check_safe_point(self, tid: str, frames) -> None:
        s = self._session()
        inner = next((f.native_level for f in frames if f.native_level is not None), None)
        if inner is None:
            # (where its Python frames sit on the C stack is not known yet: the innermost C frames tell)
            native = list((await s.fetch_frames(tid, 0, UNPLACED_DEPTH))[0])
            inner = next((f.level for f in native if EVAL_LOOP.match(f.func or "")), len(native))
            native = native[:inner]
        else:
            st = s.state
            native = [f for f in st.frames if f.level < inner] if st.frames_thread == tid else []
            if len(native) < inner:
                native = list((await s.fetch_frames(tid, 0, inner))[0])
        if inner == 0:
            raise EngineError(f"thread {tid} is stopped inside the interpreter's eval loop, between two halves of a "
                              "bytecode: step (s) to its next Python line to evaluate there")
        for f in native:
            if UNSAFE_FRAMES.search(f.func or "") or (f.level == 0 and EVAL_LOOP.match(f.func or "")):
                raise EngineError(f"thread {tid} is stopped inside {f.func} (frame {f.level}): Python cannot run "
                                  "there safely; step out (finish) of it first, or step (s) to the next Python line")

    async def _check_gil(self, tid: str) -> bool:
        """True if ``tid`` holds the GIL, False if nobody does; raises with the holder's name if another thread
        holds it."""
        gil = await self.gil_holder()
        if gil.get("status") == "ok":
            if gil.get("free_threaded"):
                return await self._attached(tid)
            if not gil.get("locked"):
                return False
            holder = gil.get("holder_thread")
            if holder == tid:
                return True
            if gil.get("holder_lwp") and gil.get("holder_lwp") == self.info.control_native_id:
                raise EngineError(f"thread {tid} does not hold the GIL: tuidbg's agent thread has it for a moment "
                                  "(it applies what the front end sent): continue or step, then evaluate")
            raise EngineError(_held_elsewhere(tid, holder, gil.get("holder_name")))
        log.info("the GIL's state is not readable (%s); asking the thread", gil.get("reason"))
        if await self._attached(tid):
            return True
        raise EngineError(f"thread {tid} does not hold the GIL (and which thread does is not readable here: "
                          f"{gil.get('reason')}); pyuntilgil THREAD runs until that thread's next Python line")

    async def _attached(self, tid: str) -> bool:
        """PyGILState_Check in the thread: its thread state is the current one (it holds the GIL; attached,
        free-threaded). A plain read of the thread's state, no lock taken."""
        s = self._session()
        old = await self._scheduler_locking()
        await s.cmd("-gdb-set scheduler-locking on", check=False)
        try:
            r = await s.cmd(f"-data-evaluate-expression --thread {tid} --frame 0 "
                            + mi.quote("((int(*)(void))PyGILState_Check)()"), check=False)
        finally:
            await s.cmd(f"-gdb-set scheduler-locking {old}", check=False)
        return r.cls == "done" and mi.to_int(r.get("value")) == 1


def _held_elsewhere(tid: str, holder: str | None, name: str | None) -> str:
    if holder is None:
        return (f"thread {tid} does not hold the GIL, and its holder is no thread gdb knows: "
                "continue until a Python breakpoint to evaluate")
    who = f"thread {holder}" + (f" “{name}”" if name else "")
    return (f"thread {tid} does not hold the GIL: {who} holds it. Python runs only where the GIL is: "
            f"select {who} to evaluate there, or pyuntilgil to run until the agent gets it "
            f"(stops at the next Python line of thread {holder})")


class _nothing:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None
