"""What the CUDA pane asks cuda-gdb (through the engine's CUDA extension): focus switches,
another kernel's blocks, filters, the warp watch, the CUDA settings, reading the tables again;
a mixin of ``CudaPane``, each request run as a worker whose outcome the pane shows."""

from __future__ import annotations


import asyncio
from dataclasses import dataclass
from typing import Any, Awaitable


from tuidbg.engine import cuda
from tuidbg.engine.cuda import BlockRange, CudaFilter, ThreadRanges
from tuidbg.engine.errors import EngineError


@dataclass
class _Alt:
    """Blocks and threads read on request (a filter, or a kernel other than the snapshot's)."""

    label: str
    kernel: int | None
    blocks: tuple[BlockRange, ...] = ()
    threads: ThreadRanges | None = None
    error: str | None = None
    loading: bool = True
    filter: CudaFilter | None = None


class CudaRequests:
    """A part of ``CudaPane`` (see the module's docstring)."""

    # -- actions that ask cuda-gdb -------------------------------------------------------------

    def _run(self, coro: Awaitable[None], group: str) -> None:
        self.run_worker(coro, group=group, exit_on_error=False)

    def switch_focus(self, target: Any, *, jump: bool = False) -> None:
        """Ask cuda-gdb to move its focus; the pane says what it granted (or its error)."""
        ext = self.ext
        if ext is None:
            self.say("not a cuda-gdb session", error=True)
            return
        req = str(target)
        self.say(f"switching the focus to {req}…")

        async def job() -> None:
            self._jump_after_switch = jump
            try:
                sw = await ext.switch_focus(target)
            except (EngineError, asyncio.TimeoutError) as exc:
                self._jump_after_switch = False
                self.say(f"focus {req}: {exc}", error=True, notify=True)
                return
            got = sw.focus
            phys = f" · device {got.device} sm {got.sm} warp {got.warp} lane {got.lane}" if got.has_physical else ""
            if not sw.changed:
                self.say(f"focus unchanged: {got.logical_label}{phys}")
            elif sw.exact:
                self.say(f"focus → {got.logical_label}{phys}")
            else:
                self.say(f"cuda-gdb chose the closest valid thread: {got.logical_label}{phys}")
            if self._jump_after_switch and (not sw.changed or (self.snap is not None and self.snap.focus == got)):
                # the pane already shows this focus (else update_state jumps when it arrives)
                self._jump_after_switch = False
                self._jump_to_focus()

        self._run(job(), "cuda-focus")

    def _restore_device_focus(self) -> None:
        ext = self.ext
        if ext is None:
            return

        async def job() -> None:
            self._jump_after_switch = True
            try:
                sw = await ext.restore_device_focus()
            except (EngineError, asyncio.TimeoutError) as exc:
                self._jump_after_switch = False
                self.say(f"back to the device thread: {exc}", error=True, notify=True)
                return
            self.say(f"focus → {sw.focus.logical_label}")
            if self._jump_after_switch and self.snap is not None and self.snap.focus == sw.focus:
                self._jump_after_switch = False
                self._jump_to_focus()

        self._run(job(), "cuda-focus")

    def show_kernel(self, kernel: int) -> None:
        """The threads view for one kernel (read from cuda-gdb when it is not the snapshot's)."""
        snap = self.snap
        ext = self.ext
        if snap is None or ext is None:
            return
        self.filter = None
        if kernel == snap.kernel:
            self._alt = None
        else:
            alt = _Alt(label=f"kernel {kernel}", kernel=kernel)
            self._alt = alt
            self._alt_gen = snap.generation

            async def job() -> None:
                try:
                    alt.blocks = await ext.fetch_blocks(kernel)
                    alt.threads = await ext.fetch_threads(kernel)
                except (EngineError, asyncio.TimeoutError) as exc:
                    alt.error = str(exc)
                alt.loading = False
                if self._alt is alt:
                    self._refresh_view()

            self._run(job(), "cuda-load")
        self.view = "threads"
        self._jump.add("threads")
        self._render_bar()
        self._refresh_view()

    def _apply_filter(self, flt: CudaFilter) -> None:
        snap = self.snap
        ext = self.ext
        if snap is None or ext is None:
            return
        k = flt.get("kernel")
        if isinstance(k, int):
            kernel: int | None = k
        elif snap.focus is not None and snap.focus.kernel is not None:
            kernel = snap.focus.kernel
        else:
            kernel = snap.kernel
        alt = _Alt(label=f"filter {flt}", kernel=kernel, filter=flt)
        self._alt = alt
        self._alt_gen = snap.generation
        kinfo = snap.kernel_info(kernel) if kernel is not None else None
        order = snap.caps.order
        bflt = CudaFilter(tuple((kind, v) for kind, v in flt.items if kind in ("kernel", "grid", "block", "device", "sm")))

        async def job() -> None:
            try:
                t = await ext.info("threads", flt)
                tr = ThreadRanges.from_table(t, kernel=kernel, grid_dim=kinfo.grid_dim if kinfo else None, block_dim=kinfo.block_dim if kinfo else None, order=order)
                o = tr.infer_order()
                if o is not tr.order:
                    tr = ThreadRanges.from_table(t, kernel=kernel, grid_dim=tr.grid_dim, block_dim=tr.block_dim, order=o)
                alt.threads = tr
                b = await ext.info("blocks", bflt)
                alt.blocks = tuple(BlockRange.from_row(r) for r in b.rows)
            except (EngineError, asyncio.TimeoutError) as exc:
                alt.error = str(exc)
            alt.loading = False
            if self._alt is alt:
                n = len(alt.threads) if alt.threads is not None else 0
                if alt.error is None:
                    self.say(f"filter {flt}: {n:,} thread range{'s' if n != 1 else ''}")
                else:
                    self.say(f"filter {flt}: {alt.error}", error=True)
                self._jump.add("threads")
                self._refresh_view()

        self._run(job(), "cuda-load")
        self.view = "threads"
        self._render_bar()
        self._refresh_view()

    def action_rewatch(self) -> None:
        expr = self.watch_expression or (self.watch.expression if self.watch is not None else "")
        if not expr:
            self.action_open_input("watch")
            return
        self._warp_watch(expr)

    def _warp_watch(self, expr: str) -> None:
        ext = self.ext
        if ext is None:
            return
        self.watch_expression = expr
        self.say(f"evaluating {expr} in every lane of the warp…")
        if self.view != "warp":
            self.action_view("warp")

        async def job() -> None:
            try:
                w = await ext.warp_watch(expr)
            except (EngineError, asyncio.TimeoutError) as exc:
                self.say(f"warp watch: {exc}", error=True, notify=True)
                return
            bad = sum(1 for lv in w.lanes if not lv.ok)
            tail = f", {bad} lane{'s' if bad != 1 else ''} with errors" if bad else ""
            self.say(f"warp watch {expr}: {len(w.lanes)} lanes{tail}")

        self._run(job(), "cuda-watch")

    def action_toggle_setting(self, name: str) -> None:
        snap = self.snap
        ext = self.ext
        if snap is None or ext is None:
            return
        settings = snap.settings
        current = settings.get(name) if settings is not None else None
        if name not in snap.caps.options or current is None:
            msg = "this cuda-gdb has no memcheck (removed in 12.8; use compute-sanitizer)" if name == "memcheck" else f"this cuda-gdb has no 'cuda {name}' setting"
            self.say(msg, error=True)
            return
        values = [v for v in cuda.OPTION_VALUES[name] if (name, v) not in self._refused]
        nxt = values[(values.index(current) + 1) % len(values)] if current in values else values[0]

        async def job() -> None:
            try:
                got = await ext.set_option(name, nxt)
            except (EngineError, asyncio.TimeoutError) as exc:
                self._refused.add((name, nxt))
                self.say(f"cuda {name} {nxt}: {exc}", error=True, notify=True)
                return
            self.say(f"cuda {name} is now {got.get(name)}")

        self._run(job(), "cuda-settings")

    def action_reread(self) -> None:
        ext = self.ext
        if ext is None or self.state is None or not self.state.is_stopped:
            return
        self.say("reading the CUDA tables again…")

        async def job() -> None:
            try:
                await ext.refresh()
            except (EngineError, asyncio.TimeoutError) as exc:
                self.say(f"CUDA tables: {exc}", error=True, notify=True)
                return
            self._view_keys.clear()
            self._refresh_view()
            self.say("CUDA tables read again")

        self._run(job(), "cuda-load")
