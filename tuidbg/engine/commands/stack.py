"""Threads, frames and locals: the refresh after each stop, paging, thread and frame selection
(``-thread-info``, ``-stack-*``).

After each ``*stopped`` the refresh fetches threads, a bounded list of frames and the locals of the
selected frame, stamped with the stop's generation so that a stale reply never overwrites a newer
stop; then the extensions' refresh stages run (Python stacks, CUDA tables)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from tuidbg.engine import mi, rescue
from tuidbg.engine.commands.base import CommandBase
from tuidbg.engine.commands.data import is_char_array
from tuidbg.engine.errors import EngineError, GdbExited, MIError, Timeout
from tuidbg.engine.state import DebuggerState, Frame, ProcessState, Thread, Variable, apply_refresh

log = logging.getLogger("tuidbg.engine")

FRAME_PAGE = 64  # frames fetched per request


class StackCommands(CommandBase):
    # False: the refresh after a stop leaves the selected frame's native locals out, and
    # load_locals() reads them when they are to be shown. The session turns this off for a Python
    # program (SessionConfig.python_target): its stops show a Python frame's locals first, and asking
    # gdb for a libc frame's locals with their types makes it read libc's debug info (bench/gdb_memory.py).
    native_locals_on_stop = True
    _locals_asked: tuple | None = None  # (generation, thread, frame) load_locals() last asked for
    def _start_refresh(self, generation: int) -> None:
        if self._refresh_task is not None and not self._refresh_task.done():
            self._refresh_task.cancel()
        self._refresh_task = asyncio.ensure_future(self._refresh(generation))

    @property
    def refreshing(self) -> bool:
        """The refresh after the current stop (threads, frames, locals, the extensions' stages) is under way."""
        task = self._refresh_task
        return task is not None and not task.done()

    async def wait_refreshed(self, timeout: float = 30.0) -> DebuggerState:
        """Wait until the refresh for the current stop is done (tests, benchmarks, dump)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            task = self._refresh_task
            if task is not None and not task.done():
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    raise Timeout("refresh", timeout)
                try:
                    await asyncio.wait_for(asyncio.shield(task), remaining)
                except asyncio.CancelledError:
                    if task is self._refresh_task:
                        raise
                continue
            return self._state

    async def _refresh(self, generation: int) -> None:
        try:
            st = self._state
            tid = st.selected_thread
            if tid and len(st.inferiors) > 1:
                # gdb's own selection may be in another process (one that exited: then even -thread-info fails)
                await self.cmd(f"-thread-select {st.live_thread() or tid}", check=False)
            # The three queries go out together (gdb answers them in order) and the
            # state changes once, so the UI repaints once per stop, not three times.
            if tid and not self.native_locals_on_stop:
                threads, (frames, more) = await asyncio.gather(self.fetch_threads(), self.fetch_frames(tid, 0, FRAME_PAGE))
                self.set_state(
                    apply_refresh(
                        self._state, generation, threads=threads, frames=frames, frames_thread=tid, more_frames=more,
                        done=True,
                    )
                )
            elif tid:
                threads, (frames, more), locs = await asyncio.gather(
                    self.fetch_threads(), self.fetch_frames(tid, 0, FRAME_PAGE), self.fetch_locals(tid, 0)
                )
                self.set_state(
                    apply_refresh(
                        self._state, generation, threads=threads, frames=frames, frames_thread=tid,
                        more_frames=more, locals_=locs, locals_key=(tid, 0), done=True,
                    )
                )
            else:
                threads = await self.fetch_threads()
                self.set_state(apply_refresh(self._state, generation, threads=threads, done=True))
        except asyncio.CancelledError:
            return
        except GdbExited:
            return
        except (MIError, Timeout) as exc:
            log.info("refresh failed: %s", exc)
            if not self._state.python.transient and not self._selected_ended():
                # (a stop the user does not see, such as a child's exit the session goes on from, or a process
                # that was ending as gdb stopped it, killed by a signal it passed on, fails to be read: gdb still
                # lists it, without registers; the session marks it ended before going on)
                self._emit_console(mi.MIRecord(mi.LOG, payload=f"tuidbg: could not refresh after the stop: {exc}\n"))
            # (the extensions' stages still run: the agent's stop is read from its mailbox, not the threads)
        try:
            for stage in list(self.refresh_stages):
                if self._state.generation != generation:
                    return
                try:
                    await stage(self, generation)
                except (MIError, Timeout) as exc:
                    log.info("refresh stage failed: %s", exc)
        except (asyncio.CancelledError, GdbExited):
            pass

    def _selected_ended(self) -> bool:
        inf = self._state.inferior
        pid = inf.os_pid or inf.pid
        return bool(pid) and not self.config.remote and rescue.has_ended(pid)

    async def load_locals(self) -> None:
        """The selected frame's native locals, when the refresh left them out (once per stop and frame)."""
        st = self._state
        tid = st.selected_thread or st.current_thread
        if not st.is_stopped or not tid:
            return
        key = (tid, st.selected_frame)
        asked = (st.generation, *key)
        if st.locals_key == key or self._locals_asked == asked:
            return
        self._locals_asked = asked
        locs = await self.fetch_locals(*key)
        self.set_state(apply_refresh(self._state, st.generation, locals_=locs, locals_key=key))

    async def fetch_threads(self) -> tuple[Thread, ...]:
        st = self._state
        # Several processes: only the selected one's (-thread-info reads every process's, and fails on
        # one that is exiting).
        res = await self.cmd(f"-list-thread-groups {st.selected_inferior}" if len(st.inferiors) > 1 else "-thread-info")
        threads = tuple(Thread.from_mi(t) for t in mi.as_list(res.get("threads")) if isinstance(t, dict))
        return threads

    async def fetch_frames(self, tid: str, low: int, count: int) -> tuple[tuple[Frame, ...], bool]:
        """Frames low..low+count-1 of a thread, and whether there are more beyond."""
        high = low + count  # one extra tells whether more exist
        opt = self._thread_opt(tid) if tid else ""
        try:
            res = await self.cmd(f"-stack-list-frames {opt}{low} {high}")
        except MIError as exc:
            if "Not enough frames" in exc.message:
                return (), False
            raise
        frames = tuple(
            f for f in (Frame.from_mi(x, i + low) for i, x in enumerate(mi.as_list(res.get("stack")))) if f is not None
        )
        more = len(frames) > count
        return frames[:count], more

    async def load_more_frames(self) -> None:
        """Extend the selected thread's frame list by one page (the "load more" row)."""
        st = self._state
        if not st.is_stopped or not st.frames_thread or not st.more_frames:
            return
        gen = st.generation
        low = len(st.frames)
        frames, more = await self.fetch_frames(st.frames_thread, low, FRAME_PAGE)
        cur = self._state
        if cur.generation == gen and cur.frames_thread == st.frames_thread and len(cur.frames) == low:
            self.set_state(apply_refresh(cur, gen, frames=cur.frames + frames, frames_thread=st.frames_thread, more_frames=more))

    async def fetch_locals(self, tid: str, frame: int) -> tuple[Variable, ...]:
        res = await self.cmd(
            f"-stack-list-variables {self._thread_opt(tid, frame)}--skip-unavailable --simple-values", check=False
        )
        if res.cls != "done":
            return ()
        out = []
        new_prev: dict[tuple[str, str], str] = {}
        for v in mi.as_list(res.get("variables")):
            if not isinstance(v, dict):
                continue
            name = str(v.get("name", ""))
            value = v.get("value")
            if value is None and (_is_tensor_type(v.get("type")) or is_char_array(v.get("type"))):
                # --simple-values leaves structs and arrays out; a tensor reads as one line through
                # tuidbg's pretty-printer (gdbext/torch_printers.py: memory reads only), a character
                # array as gdb prints it ("node2\000...": it still expands to its characters).
                ev = await self.cmd(f"-data-evaluate-expression {self._thread_opt(tid, frame)}{mi.quote(name)}", check=False)
                value = str(ev.get("value")) if ev.cls == "done" and ev.get("value") is not None else None
            key = (f"{tid}/{frame}", name)
            changed = value is not None and key in self._prev_values and self._prev_values[key] != value
            if value is not None:
                new_prev[key] = value
            out.append(Variable(name=name, value=value, type=v.get("type"), is_arg=v.get("arg") == "1", changed=changed))
        self._prev_values = {k: v for k, v in self._prev_values.items() if k[0] != f"{tid}/{frame}"}
        self._prev_values.update(new_prev)
        return tuple(out)

    async def select_thread(self, tid: str) -> None:
        st = self._state
        if not st.is_stopped:
            raise EngineError(f"cannot select a thread: {self.process_description()}")
        gen = st.generation
        self.set_state(st.evolve(selected_thread=tid, selected_frame=0))
        if st.device_focus is None:
            await self.cmd(f"-thread-select {tid}", check=False)
        frames, more = await self.fetch_frames(tid, 0, FRAME_PAGE)
        self.set_state(apply_refresh(self._state, gen, frames=frames, frames_thread=tid, more_frames=more))
        if self.native_locals_on_stop:  # (otherwise load_locals() reads them if frame 0 stays shown)
            locs = await self.fetch_locals(tid, 0)
            self.set_state(apply_refresh(self._state, gen, locals_=locs, locals_key=(tid, 0)))
        for stage in self.select_stages:
            await stage(self, gen)

    async def select_process(self, iid: str) -> None:
        """Show another process under the debugger (gdb's inferior ``iid``): its threads, frames and
        locals, read now if it stopped only because another process did (all-stop)."""
        st = self._state
        inf = st.find(iid)
        if inf is None:
            raise EngineError(f"no process {iid}")
        if iid == st.selected_inferior:
            return
        tid = inf.selected_thread or inf.current_thread or (inf.threads[0].id if inf.threads else None)
        st = replace(st, selected_inferior=iid)
        if tid and inf.process is ProcessState.STOPPED:
            st = st.evolve(selected_thread=tid, current_thread=inf.current_thread or tid)
        self.set_state(st)
        if inf.process is not ProcessState.STOPPED or not tid:
            return
        await self.cmd(f"-thread-select {tid}", check=False)
        # (read again too when its Python stack is missing: a refresh of it that another process's attach or
        # stop cancelled had read its threads and frames, not run its stages)
        if not inf.refreshed or inf.python.stack is None:
            self._start_refresh(inf.generation)

    async def select_frame(self, level: int) -> None:
        st = self._state
        if not st.is_stopped:
            raise EngineError(f"cannot select a frame: {self.process_description()}")
        gen = st.generation
        tid = st.selected_thread or st.current_thread
        self.set_state(st.evolve(selected_frame=level))
        await self.cmd(f"-stack-select-frame {self._thread_opt(tid)}{int(level)}", check=False)
        if tid:
            locs = await self.fetch_locals(tid, level)
            self.set_state(apply_refresh(self._state, gen, locals_=locs, locals_key=(tid, level)))


_TENSOR_TYPES = ("at::Tensor", "at::TensorBase", "torch::Tensor")


def _is_tensor_type(type_) -> bool:
    """Whether a local's type (as gdb names it) is an at::Tensor, by value or reference."""
    if not isinstance(type_, str):
        return False
    t = type_.replace("const ", "").replace("&", "").strip()
    return t in _TENSOR_TYPES
