"""``finish`` (``-exec-finish``), also out of a C++ frame that throws.

gdb's own finish waits for a return that never comes when the frame is left by an exception (it is
unwound past gdb's breakpoint at the return address), and the program runs on, to its end or the next
stop. Here finish also watches C++ catches while it runs (a catchpoint on ``__cxa_begin_catch``,
``-catch-catch``, tuidbg's own: hidden). At a catch in the finishing thread whose handler is outside the
finished frame (its stack pointer at or above the caller's), the exception has left that frame: gdb
finishes ``__cxa_begin_catch`` so that the stop is in the handler, the catch block that caught it (in
PyTorch, the binding's catch that turns a ``c10::Error`` into a Python exception, with the Python line
that called it on the merged stack). A catch inside the finished frame (an exception it handles
itself) goes on unseen. The watch ends at the finish's stop, whatever it is.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import NamedTuple

from tuidbg.engine import mi
from tuidbg.engine.commands.base import CommandBase
from tuidbg.engine.errors import EngineError, GdbExited, MIError, Timeout
from tuidbg.engine.state import DebuggerState, mark_internal

log = logging.getLogger("tuidbg.engine")

MAX_LEVELS = 256  # frames looked through for the finished one at a catch under it


class _Watch(NamedTuple):
    catch: str  # the catchpoint
    thread: str  # the finishing thread
    caller_sp: int  # the stack pointer in the frame finish returns to


class FinishCommands(CommandBase):
    _finish_watch: _Watch | None = None
    _finish_landing: str | None = None  # the thread a finish out of __cxa_begin_catch runs in
    _finish_hooked = False
    _finish_tasks: set[asyncio.Task]

    async def finish(self) -> None:
        """Run until the selected frame returns, or until the exception that leaves it is caught."""
        self._require_stopped("finish")
        st = self._state
        tid = st.selected_thread or st.current_thread
        if tid and st.device_focus is None:
            await self._watch_catches(tid, st.selected_frame)
        try:
            await self.cmd(f"-exec-finish {self._thread_opt(frame=st.selected_frame)}".rstrip())
        except MIError as exc:
            await self._end_watch()
            if "outermost" in exc.message:
                raise EngineError('"finish" is not meaningful in the outermost frame') from exc
            raise

    async def _watch_catches(self, tid: str, level: int) -> None:
        await self._end_watch()
        res = await self.cmd(f"-data-evaluate-expression --thread {tid} --frame {level + 1} $sp", check=False)
        sp = mi.to_int(res.get("value")) if res.cls == "done" else None
        if sp is None:  # (the outermost frame: finish says so itself)
            return
        res = await self.cmd("-catch-catch", check=False)
        bkpt = res.get("bkpt") if res.cls == "done" else None
        number = str(bkpt.get("number") or "") if isinstance(bkpt, dict) else ""
        if not number:  # (no C++ runtime gdb knows of: a plain finish)
            return
        self.set_state(mark_internal(self._state, number))
        self._finish_watch = _Watch(number, tid, sp)
        if not self._finish_hooked:
            self._finish_hooked = True
            self._finish_tasks = set()
            self.stop_hooks.append(self._finish_stop)  # type: ignore[attr-defined]

    async def _end_watch(self) -> None:
        w, self._finish_watch = self._finish_watch, None
        if w is not None:
            await self._delete_catch(w.catch)

    async def _delete_catch(self, number: str) -> None:
        await self.cmd(f"-break-delete {number}", check=False)
        st = self._state  # (gdb says nothing of a breakpoint MI deletes)
        self.set_state(replace(st, breakpoints=tuple(b for b in st.breakpoints if b.number != number)))

    def _finish_stop(self, st: DebuggerState) -> DebuggerState:
        """The stop hook while a finish watches catches: its catch goes on (``_at_catch``), unseen; any other
        stop ends the watch."""
        landing, self._finish_landing = self._finish_landing, None
        stop = st.stop
        if landing is not None and stop is not None and stop.thread_id == landing and stop.reason in ("function-finished", ""):
            # the finish out of __cxa_begin_catch: the stop is where the exception was caught
            return st.evolve(stop=replace(stop, reason="exception-caught"))
        w = self._finish_watch
        if w is None:
            return st
        if st.is_stopped and stop is not None and stop.reason == "breakpoint-hit" and str(stop.bkptno) == w.catch:
            self._finish_task(self._at_catch(w, st.generation))
            return st.with_python(transient=True)
        self._finish_watch = None
        self._finish_task(self._delete_catch(w.catch))
        return st

    def _finish_task(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._finish_tasks.add(task)
        task.add_done_callback(self._finish_tasks.discard)

    async def _finished_level(self, w: _Watch) -> int | None:
        """The level the finished frame has now (its caller's stack pointer is the one it had), or None."""
        for level in range(1, MAX_LEVELS):
            res = await self.cmd(f"-data-evaluate-expression --thread {w.thread} --frame {level + 1} $sp", check=False)
            sp = mi.to_int(res.get("value")) if res.cls == "done" else None
            if sp is None or sp > w.caller_sp:
                return None
            if sp == w.caller_sp:
                return level
        return None

    async def _at_catch(self, w: _Watch, generation: int) -> None:
        await asyncio.sleep(0)  # (the stop's state is set once the hooks have run)
        st = self._state
        stop = st.stop
        if st.generation != generation or stop is None or self._finish_watch is not w:
            return
        try:
            here = None
            if stop.thread_id == w.thread:
                res = await self.cmd(f"-data-evaluate-expression --thread {w.thread} --frame 1 $sp", check=False)
                here = mi.to_int(res.get("value")) if res.cls == "done" else None
            if here is not None and here >= w.caller_sp:
                # caught outside the finished frame: into the handler, out of __cxa_begin_catch
                await self._end_watch()
                self._finish_landing = w.thread
                await self.cmd(f"-exec-finish --thread {w.thread} --frame 0")
                return
            level = await self._finished_level(w) if here is not None else None
            if level is not None:
                # caught inside it: the finish goes on (gdb forgot it at this stop: asked again of that frame)
                await self.cmd(f"-exec-finish --thread {w.thread} --frame {level}")
            else:
                await self.cmd("-exec-continue")  # (in another thread: the finish goes on)
        except (MIError, EngineError, Timeout) as exc:
            log.info("finish at a catch: %s", exc)
            await self._end_watch()
            self.set_state(self._state.with_python(transient=False))
        except GdbExited:
            pass
