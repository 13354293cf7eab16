"""cuda-gdb's settings (break_on_launch, api_failures, memcheck), the warp watch (an expression in
every lane of the focused warp) and kernel breakpoints' view."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Iterable

from tuidbg.engine import mi
from tuidbg.engine.cuda_model import (
    CudaError,
    CudaFocus,
    CudaSettings,
    KernelBreakpointView,
    LaneValue,
    WarpWatch,
    check_option,
    kernel_breakpoint_view,
)
from tuidbg.engine.errors import MIError
from tuidbg.engine.cuda.base import CudaBase, focus, snapshot


log = logging.getLogger("tuidbg.engine")

class CudaSettingsWatch(CudaBase):
    """Part of ``CudaExtension`` (see the module's docstring)."""

    # -- settings ---------------------------------------------------------------------------

    async def read_settings(self) -> CudaSettings:
        s = self._session()
        self.settings = await self._read_settings(s)
        self._put_settings()
        return self.settings

    async def set_option(self, name: str, value: str) -> CudaSettings:
        """Set ``cuda break_on_launch`` / ``api_failures`` / ``memcheck`` and read the value back."""
        s = self._session()
        avail = self.caps.options if self.caps is not None else ()
        v = check_option(name, value, avail)
        try:
            await s.cmd(f"-gdb-set cuda {name} {v}")
        except MIError as exc:
            raise CudaError(f"cuda {name}: {exc.message}") from exc
        return await self.read_settings()

    def _put_settings(self) -> None:
        s = self._session()
        snap = snapshot(s.state)
        if snap is not None:
            s.set_state(s.state.with_cuda(snapshot=replace(snap, settings=self.settings)))

    # -- warp watch -------------------------------------------------------------------------

    async def warp_watch(self, expression: str, *, lanes: Iterable[int] | None = None) -> WarpWatch:
        """Evaluate ``expression`` in each valid lane of the focused warp, then restore the focus.

        Costs one focus switch and one evaluation per lane (at most 32), plus a
        frame selection per lane when a frame other than 0 is selected. A lane
        where evaluation fails reports its error; the others still report.
        """
        s = self._require_stopped("watch an expression across a warp")
        expr = expression.strip()
        if not expr:
            raise CudaError("warp watch needs an expression")
        async with self._lock:
            st = s.state
            gen = st.generation
            f = focus(st)
            if f is None or not f.has_physical:
                raise CudaError("warp watch needs the focus on a device thread")
            assert f.device is not None and f.sm is not None and f.warp is not None and f.lane is not None
            level = st.selected_frame
            all_lanes = await self.fetch_lanes(f.device, f.sm, f.warp)
            want = None if lanes is None else set(lanes)
            targets = [ln for ln in all_lanes if want is None or ln.lane in want]
            # Evaluate the focused lane first: it needs no switch.
            targets.sort(key=lambda ln: (ln.lane != f.lane, ln.lane))
            out: list[LaneValue] = []
            moved = False
            restored = True
            try:
                for ln in targets:
                    if s.state.generation != gen:
                        raise CudaError("the program moved during the warp watch")
                    if ln.lane != f.lane:
                        r = await s.cmd(f"-cuda-focus-switch device {f.device} sm {f.sm} warp {f.warp} lane {ln.lane}", check=False)
                        moved = True
                        if r.cls != "done":
                            out.append(LaneValue(ln.lane, ln.thread, ln.state, error=str(r.get("msg", "cannot switch to this lane"))))
                            continue
                        got = CudaFocus.from_mi(r.get("CudaFocus")) if "CudaFocus" in r.payload else None
                        if got is not None and got.lane != ln.lane:
                            out.append(LaneValue(ln.lane, ln.thread, ln.state, error=f"cuda-gdb focused lane {got.lane} instead"))
                            continue
                        if level:
                            await s.cmd(f"-stack-select-frame {int(level)}", check=False)
                    r = await s.cmd(f"-data-evaluate-expression {mi.quote(expr)}", check=False)
                    if r.cls == "done":
                        out.append(LaneValue(ln.lane, ln.thread, ln.state, value=str(r.get("value", ""))))
                    else:
                        out.append(LaneValue(ln.lane, ln.thread, ln.state, error=str(r.get("msg", "cannot evaluate"))))
            finally:
                if moved:
                    r = await s.cmd(f"-cuda-focus-switch {f.physical_args()}", check=False)
                    got = CudaFocus.from_mi(r.get("CudaFocus")) if r.cls == "done" and "CudaFocus" in r.payload else None
                    restored = r.cls == "done" and (got is None or got.same_thread(f))
                    if level:
                        await s.cmd(f"-stack-select-frame {int(level)}", check=False)
            out.sort(key=lambda lv: lv.lane)
            watch = WarpWatch(expression=expr, focus=f, lanes=tuple(out), restored=restored, frame=level)
            if s.state.generation == gen:
                s.set_state(s.state.with_cuda(warp_watch=watch))
            return watch

    # -- breakpoints ------------------------------------------------------------------------

    def breakpoint_view(self, number: str) -> KernelBreakpointView | None:
        """A breakpoint's locations with cuda-gdb's disabled host stubs of kernels hidden."""
        s = self._session()
        bp = s.state.breakpoint(number)
        return kernel_breakpoint_view(bp) if bp is not None else None
