"""Stops and steps: the session's stop hook and refresh stage for the agent's stops (the stop
function's breakpoint, its mailbox read), and Python stepping from an agent stop or from a
native frame (step into native, back to the interpreter)."""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import replace
from typing import Any, AsyncIterator, Mapping

from tuidbg.agent import protocol as P
from tuidbg.engine import mi
from tuidbg.engine.errors import EngineError, GdbExited, MIError, Timeout
from tuidbg.engine.python.model import AgentStop, user_frames
from tuidbg.engine.state import DebuggerState, ProcessState, mark_internal
from tuidbg.engine.pyagent.base import AgentBase, REQUEST_TIMEOUT, _wait_stop

log = logging.getLogger("tuidbg.engine")


class StopHandling(AgentBase):
    """Part of ``PyAgent`` (see the module's docstring)."""

    # -- the stop hook and the refresh stage ------------------------------------------------------

    def _is_stub_stop(self, st: DebuggerState) -> bool:
        stop = st.stop
        if self.info.stub_traps:  # (a --children session: the stop function traps by itself)
            return (
                stop is not None
                and stop.reason == "signal-received"
                and stop.signal_name == "SIGTRAP"
                and stop.frame is not None
                and mi.to_int(stop.frame.addr) == (self.info.stub_addr or 0) + 1
            )
        return (
            self._stub_bp is not None
            and stop is not None
            and stop.reason == "breakpoint-hit"
            and (stop.bkptno or "").split(".")[0] == self._stub_bp
        )

    def stop_hook(self, st: DebuggerState) -> DebuggerState:
        """The session's stop hook: what the agent makes of a stop's state (a request's own stop transient, its
        stop function's stop pending the read of its mailbox)."""
        self._select_link(st)
        st = st.evolve(python_breakpoints=self.breakpoints).with_python(agent=self.info)
        if st.process is not ProcessState.STOPPED:
            return st
        if self._transient_native:
            # gdb's finish back to the eval loop of a step armed from a native stop.
            return st.with_python(transient=True)
        if self._transient:
            # A stop while a request is in progress is the request's (its answer, the interrupt of its
            # fallback, or the end of its process: then another process is selected): the request decides
            # what the user sees.
            self._transient_gens.add(st.generation)
            if st.selected_inferior == self._request_inferior and self._last_stop is not None:
                return st.with_python(transient=True, stop=self._last_stop, stop_generation=self._last_stop_gen)
            return st.with_python(transient=True)
        if self._is_stub_stop(st):
            return st.with_python(stop_pending=True)
        stop = st.stop
        if (
            self._native_tbreak is not None
            and stop is not None
            and stop.reason == "breakpoint-hit"
            and stop.bkptno == self._native_tbreak
        ):
            self._native_tbreak = None  # gdb deletes a temporary breakpoint when it hits
            return st.with_python(native_step=True)
        return st

    async def stage(self, session, generation: int) -> None:
        """The session's refresh stage after a stop (``generation``): the agent's stop read from its mailbox."""
        st = session.state
        if st.generation != generation or not st.is_stopped or self._quiet:
            return  # (closing: the agent's stop is the detach's to answer, PyAgent.shutdown)
        if not self._transient:  # (the requests' stops before this one are over)
            old = {g for g in self._transient_gens if g <= generation}
            self._transient_gens -= old
            if generation in old:
                return
        if not self._is_stub_stop(st):
            if self._step_token and self.info.connected:
                # A native stop interrupts the Python step: cancel it, unless step_out_to_python() revives it.
                self._interrupted_token = self._step_token
                self._step_token = 0
                await self._write_ctl(0, 0)
            return
        if self._transient or generation in self._transient_gens:
            self._transient_gens.discard(generation)
            return
        if self._native_tbreak is not None:
            # "step into native" set a temporary breakpoint the call never reached (an exception first).
            number, self._native_tbreak = self._native_tbreak, None
            if st.breakpoint(number) is not None:
                await session.cmd(f"-break-delete {number}", check=False)
                await session.refresh_breakpoints()
        data = await self._read_out()
        stop = AgentStop.from_json(data, st.stop.thread_id if st.stop else None)
        if data.get("deleted_bp") is not None:  # a temporary breakpoint that just stopped the program
            self._bps.pop(int(data["deleted_bp"]), None)
        self._apply_statuses(data.get("bps") or [])
        self._step_token = 0
        self._interrupted_token = 0
        if stop.reason == P.R_REPLY:
            # An answer nobody waits for any more (a request that timed out): let the program go on.
            await self._answer(stop, [{"op": "resume", "mode": P.M_CONTINUE}])
            await session.cmd("-exec-continue")
            return
        if stop.reason == P.R_NATIVE_CALL and self._native_step and stop.native_addr:
            await self._native_call_stop(stop, data)
            return
        self._native_step = False
        self._last_stop = stop
        self._last_stop_gen = generation
        if stop.message:
            self._notify(f"tuidbg: {stop.describe()}")
        cur = session.state
        if cur.generation == generation:
            new = cur.evolve(python_breakpoints=self.breakpoints)
            session.set_state(new.with_python(stop=stop, stop_pending=False, stop_generation=generation))

    async def _native_call_stop(self, stop: AgentStop, data: Mapping[str, Any]) -> None:
        """"step into native" found the C function: break there and let the call happen."""
        s = self._session()
        self._native_step = False
        bp = await s.break_insert(address=int(stop.native_addr or 0), temporary=True)
        s.set_state(mark_internal(s.state, bp.number))
        self._native_tbreak = bp.number
        token = int(data.get("step_token") or next(self._tokens))
        await self._answer(stop, [{"op": "resume", "mode": P.M_NATIVE_ARMED, "token": token}], ctl_token=token)
        self._step_token = token
        self._step_native_id = stop.native_id
        await s.cmd("-exec-continue")

    def _on_state(self, st: DebuggerState) -> None:
        self._select_link(st)
        had_process, self._had_process = self._had_process, st.has_process
        if (
            self._stub_bp is None
            and self._hello is None
            and st.process is ProcessState.EXITED
            and self.config.mode == "run"
            and self.info.status == "waiting"
            and self._link.pid is None
        ):
            self._set_info(
                status="failed",
                message="the Python agent did not start: the interpreter ignored PYTHONPATH or site "
                "(python -E, -I or -S?), or it is not CPython 3.9+",
            )
            return
        # A process that is gone takes its stop function's breakpoint with it (its address means nothing
        # in the next process; only this connection's: the next program's agent may say hello first).
        for link in {self._link, *self._links.values()}:
            if link.stub_bp is None:
                continue
            if link is self._link and not had_process:
                continue
            inf = next((x for x in st.inferiors if x.pid == link.pid), None) if len(st.inferiors) > 1 else st.inferior
            if inf is None or inf.process in (ProcessState.EXITED, ProcessState.DETACHED):
                self._spawn(self._after_exit(link, link.stub_bp, link.conn))
        if self._stub_bp is None:
            return
        if self.info.connected and st.has_process and st.breakpoint(self._stub_bp) is None:
            if not self._stub_check_pending:  # someone deleted it (gdb's "delete"): put it back
                self._stub_check_pending = True
                self._spawn(self._restore_stub_bp())

    async def before_run(self, session) -> None:
        """The program starts again: the stop function's breakpoints of the previous processes must go
        first (their addresses are unmapped in the new one and gdb would refuse to run)."""
        if session.state.has_process:
            return
        for link in {self._link, *self._links.values()}:
            if link.stub_bp is not None:
                await self._after_exit(link, link.stub_bp, link.conn)
        self._links = {k: v for k, v in self._links.items() if v is self._link}

    async def _after_exit(self, link, number: str, conn: int) -> None:
        if link.conn != conn or link.stub_bp != number:
            return
        link.stub_bp = None
        try:
            await self._delete_bp(number)
            if link.conn == conn:
                link.info = replace(link.info, status="disconnected", message="the program is not running")
                link.connected.clear()
                self._publish()
        except (MIError, EngineError, Timeout, GdbExited) as exc:
            log.info("cannot remove the agent breakpoint: %s", exc)

    async def _restore_stub_bp(self) -> None:
        try:
            s = self._session()
            if self.info.stub_addr and self._stub_bp and s.state.breakpoint(self._stub_bp) is None:
                await self._insert_stub_bp(self.info.stub_addr)
        except (MIError, EngineError, Timeout, GdbExited) as exc:
            log.info("cannot restore the agent breakpoint: %s", exc)
        finally:
            self._stub_check_pending = False

    # -- stepping -------------------------------------------------------------------------------

    async def _step(self, mode: str, frame: int, thread: str | None) -> None:
        s = self._session()
        # After a request under way has had its answer (the program runs for it meanwhile, unseen).
        async with self._agent_lock():
            if self.at_agent_stop() is None:
                st = s.state
                if not st.is_stopped:
                    raise EngineError(f"cannot step: {s.process_description()}")
                await self._step_from_native(mode, frame, thread)
                return
            await self._step_at_agent_stop(mode, frame, thread)

    async def _step_at_agent_stop(self, mode: str, frame: int, thread: str | None) -> None:
        s = self._session()
        stop = self.at_agent_stop()
        if stop is None:
            st = s.state
            if not st.is_stopped:
                raise EngineError(f"cannot step: {s.process_description()}")
            await self._step_from_native(mode, frame, thread)
            return
        if stop.reason in (P.R_UNCAUGHT, P.R_FAILURE):
            raise EngineError("the exception has ended the code it was raised in: continue, or inspect the frames")
        token = next(self._tokens)
        op: dict[str, Any] = {"op": "resume", "mode": mode, "token": token, "frame": int(frame)}
        native_id = stop.native_id
        if thread is not None and thread != stop.thread_id:
            t = s.state.thread(thread)
            if t is None or t.lwp is None:
                raise EngineError(f"no thread {thread}")
            op["thread"] = t.lwp
            native_id = t.lwp
        await self._answer(stop, [op], ctl_token=token)
        self._step_token = token
        self._step_native_id = native_id
        self._interrupted_token = 0
        await s.cmd("-exec-continue")

    async def _step_from_native(self, mode: str, frame: int, thread: str | None, return_to_python: bool = False) -> None:
        """A Python step from a native stop (SIGTRAP, a native breakpoint, an interrupt): the thread
        runs back to the eval loop of the Python frame (gdb's finish), then gdb calls the agent's arm
        function in it (only that thread running; every thread in a free-threaded build, where arming
        stops the world), which arms the step there; then the program goes on.
        ``frame`` counts the thread's Python frames from the innermost, the agent's left out;
        ``return_to_python``: the step stops as soon as control is back in that frame (the line that
        made the native call), not at its next line."""
        s = self._session()
        if mode not in P.ARM_MODES:
            raise EngineError(f"cannot start a Python {mode} step from a native stop")
        if not self.info.connected or not self.info.arm_addr:
            raise EngineError("Python stepping needs tuidbg's Python agent running in the program")
        st = s.state
        tid = thread or st.selected_thread or st.current_thread
        ps = st.python.stack
        pt = ps.thread(tid) if ps is not None and ps.ok else None
        frames = user_frames(pt.frames) if pt is not None else ()
        if not 0 <= frame < len(frames):
            raise EngineError("no Python frame to step in this thread (its Python stack is not known)")
        level = frames[frame].native_level
        # The innermost Python frame's eval loop: the thread holds the GIL there once the native
        # frames above it have returned.
        inner = next((f.native_level for f in frames if f.native_level is not None), None)
        if inner is None or level is None:
            raise EngineError("cannot find the eval loop that runs this Python frame; use gdb's finish, then step")
        self._transient_native += 1
        try:
            if inner > 0:
                last = st.last_generation
                # Where the eval loop resumes (without debug info gdb's *stopped of a finish may carry
                # no reason: the address tells).
                eval_frame = next((f for f in st.frames if f.level == inner), None) if st.frames_thread == tid else None
                if eval_frame is None:  # the stop's frames are not read yet (a key pressed right after it)
                    fetched, _more = await s.fetch_frames(tid, inner, 1)
                    eval_frame = fetched[0] if fetched else None
                back = eval_frame.addr if eval_frame is not None else None
                await s.cmd(f"-exec-finish --thread {tid} --frame {inner - 1}")
                await _wait_stop(s, last, 600)
                st = s.state
                stop = st.stop
                finished = stop is not None and (
                    stop.reason == "function-finished"
                    or (not stop.reason and stop.thread_id in (tid, None) and stop.frame is not None
                        and back is not None and mi.to_int(stop.frame.addr) == mi.to_int(back))
                )
                if st.process is not ProcessState.STOPPED or not finished:
                    # Something else stopped the program first (a breakpoint in another thread): show it.
                    s.set_state(st.with_python(transient=False))
                    return
            token = next(self._tokens)
            old = await self._scheduler_locking()
            # The others run during the call (the few milliseconds it takes), or it may never return: with a
            # GIL, a thread that asked for it before the stop has the interpreter hand it over at the first
            # bytecode the call runs, and waits for that thread to take it; free-threaded, arming instruments
            # code, which stops the world, which waits for every thread. (The agent holds its stop lock
            # meanwhile: no other thread's Python stop reaches gdb during the call.)
            await s.cmd("-gdb-set unwindonsignal on", check=False)
            try:
                async with self._python_error_kept(tid, old):
                    await s.cmd("-gdb-set scheduler-locking off")
                    async with self._only_this_process():
                        r = await s.cmd(
                            f"-data-evaluate-expression --thread {tid} --frame 0 "
                            + mi.quote(f"((int(*)(int,int,unsigned long))({self.info.arm_addr:#x}))"
                                       f"({P.ARM_MODES.index(mode)},{frame},{token})"),
                            timeout=REQUEST_TIMEOUT,
                        )
            finally:
                await s.cmd("-gdb-set unwindonsignal off", check=False)
                await s.cmd(f"-gdb-set scheduler-locking {old}", check=False)
            armed = mi.to_int(r.get("value"))
            if armed == 2:
                raise EngineError("another thread is stopping at a Python breakpoint: continue to see it, then step")
            if armed != 1:
                raise EngineError("the Python agent could not arm the step in this thread")
        finally:
            self._transient_native -= 1
        if return_to_python:
            await self._write_ctl(token, P.CTL_RETURN_TO_PYTHON)
        # (no longer transient: the step's own stop may come before -exec-continue's answer)
        self._step_token = token
        self._step_native_id = st.thread(tid).lwp if st.thread(tid) else None
        self._interrupted_token = 0
        await s.cmd("-exec-continue")

    @contextlib.asynccontextmanager
    async def _python_error_kept(self, tid: str, locking: str) -> AsyncIterator[None]:
        """The thread's Python error indicator put aside around the block (the arm call runs Python code,
        which must not find one set, and would clear it): a native call that failed has just returned NULL
        into the eval loop with its exception set (a C++ exception the binding turned into one). Calls in
        this thread alone, which holds the GIL there."""
        s = self._session()
        where = f"-data-evaluate-expression --thread {tid} --frame 0 "

        async def call(expr: str) -> int | None:
            res = await s.cmd(where + mi.quote(expr), check=False)
            return mi.to_int(res.get("value")) if res.cls == "done" else None

        await s.cmd("-gdb-set scheduler-locking on", check=False)
        try:
            pending = await call("(unsigned long)((void*(*)(void))PyErr_Occurred)()")
        finally:
            await s.cmd(f"-gdb-set scheduler-locking {locking}", check=False)
        if not pending:
            yield
            return
        new_api = tuple(int(x) for x in (self.info.python or "0.0").split(".")[:2]) >= (3, 12)
        await s.cmd("-gdb-set scheduler-locking on", check=False)
        try:
            if new_api:
                kept = await call("(unsigned long)((void*(*)(void))PyErr_GetRaisedException)()")
            else:
                kept = await call("(unsigned long)((void*(*)(unsigned long))malloc)(24)")
                if kept:
                    await call(f"((void(*)(void*,void*,void*))PyErr_Fetch)((void*){kept},(void*){kept + 8},(void*){kept + 16})")
        finally:
            await s.cmd(f"-gdb-set scheduler-locking {locking}", check=False)
        try:
            yield
        finally:
            if kept:
                await s.cmd("-gdb-set scheduler-locking on", check=False)
                try:
                    if new_api:
                        await call(f"((void(*)(void*))PyErr_SetRaisedException)((void*){kept})")
                    else:
                        await call(f"((void(*)(void*,void*,void*))PyErr_Restore)(*(void**){kept},*(void**){kept + 8},"
                                   f"*(void**){kept + 16})")
                        await call(f"((void(*)(void*))free)((void*){kept})")
                finally:
                    await s.cmd(f"-gdb-set scheduler-locking {locking}", check=False)

    async def _finish_to_interpreter(self) -> None:
        """gdb's finish, repeated up to the first frame that belongs to the interpreter."""
        s = self._session()
        st = s.state
        tid = st.selected_thread or st.current_thread
        frames, _more = await s.fetch_frames(tid, 0, 256) if tid else ((), False)
        ranges = _interpreter_ranges(st.pid or self.config.pid)
        target = None
        for f in frames:
            if f.level == 0:
                continue
            a = mi.to_int(f.addr)
            if a is not None and any(lo <= a < hi for lo, hi in ranges):
                target = f.level
                break
        if target is None:
            await s.finish()
            return
        opt = f"--thread {tid} " if tid else ""
        await s.cmd(f"-exec-finish {opt}--frame {target - 1}")


def _interpreter_ranges(pid: int | None) -> list[tuple[int, int]]:
    """Address ranges of the interpreter's code in a process (libpython, or the executable)."""
    if not pid:
        return []
    try:
        exe = os.path.realpath(f"/proc/{pid}/exe")
        with open(f"/proc/{pid}/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) < 6:
            continue
        path = parts[5].strip()
        base = os.path.basename(path)
        if path == exe or (base.startswith("libpython3") and ".so" in base):
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            out.append((lo, hi))
    return out
