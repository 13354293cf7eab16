"""cuda-gdb's focus: query it, switch it (cuda-gdb grants the closest valid thread), follow it with
frames and locals, go back to a host thread and to the device again."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Mapping

from tuidbg.engine import mi
from tuidbg.engine.cuda_model import (
    CudaError,
    CudaFilter,
    CudaFilterError,
    CudaFocus,
    ThreadRange,
    make_filter,
    parse_filter,
)
from tuidbg.engine.commands.stack import FRAME_PAGE
from tuidbg.engine.state import Frame, apply_refresh
from tuidbg.engine.cuda.base import CudaBase, focus, snapshot

if TYPE_CHECKING:
    from tuidbg.engine.session import DebugSession

log = logging.getLogger("tuidbg.engine")

@dataclass(frozen=True)
class FocusSwitch:
    """What a focus switch did: the focus cuda-gdb granted (it picks the closest valid thread)."""

    request: str
    focus: CudaFocus
    changed: bool
    exact: bool
    frame: Frame | None = None


def _matches(flt: CudaFilter, f: CudaFocus) -> bool:
    """Whether the granted focus has every coordinate the request named by value."""
    for kind, v in flt.items:
        if kind in ("block", "thread"):
            got = f.block if kind == "block" else f.thread
            if got is None:
                return False
            for want, have in zip(v, (got.x, got.y, got.z)):
                if isinstance(want, int) and want != have:
                    return False
        elif isinstance(v, int) and getattr(f, kind) != v:
            return False
    return True


class CudaFocusing(CudaBase):
    """Part of ``CudaExtension`` (see the module's docstring)."""

    # -- focus ------------------------------------------------------------------------------

    async def query_focus(self) -> CudaFocus | None:
        """Ask cuda-gdb for its focus (11.x answers with text, 12.x with a CudaFocus tuple)."""
        s = self._require_stopped("query the CUDA focus")
        res = await s.cmd("-cuda-focus-query device sm warp lane kernel grid block thread", check=False)
        if res.cls != "done":
            msg = str(res.get("msg", ""))
            if "not set" in msg or "Focus" in msg:
                return None
            raise CudaError(msg or "cuda-gdb could not report its focus")
        if "CudaFocus" in res.payload:
            return CudaFocus.from_mi(res.get("CudaFocus"))
        text = res.get("text")
        if isinstance(text, str):
            return CudaFocus.from_text(text)
        return None

    def _focus_request(self, target: Any, coords: Mapping[str, Any]) -> CudaFilter:
        if coords:
            if target is not None:
                raise CudaFilterError("give a focus request or keyword coordinates, not both")
            return make_filter(**coords)
        if isinstance(target, CudaFilter):
            return parse_filter(target, what="focus")
        if isinstance(target, str):
            flt = parse_filter(target, what="focus")
            if not flt:
                raise CudaFilterError("focus: name at least one of kernel, grid, block, thread, device, sm, warp, lane")
            return flt
        if isinstance(target, CudaFocus):
            return parse_filter(target.logical_args() if target.has_logical else target.physical_args(), what="focus")
        if isinstance(target, ThreadRange):
            return make_filter(kernel=target.kernel, block=target.first_block, thread=target.first_thread)
        raise CudaFilterError(f"focus: cannot switch to {target!r}")

    async def switch_focus(self, target: Any = None, **coords: Any) -> FocusSwitch:
        """Switch cuda-gdb's focus and make frames, locals and the snapshot follow.

        ``target``: a request string (``"block (1,0,0) thread (3,0,0)"``), a
        CudaFilter, a CudaFocus, a ThreadRange (its first thread); or keyword
        coordinates (``kernel=0, block=(1,0,0), thread=(3,0,0)``). cuda-gdb picks
        the closest valid thread, so read ``.focus`` of the result. Raises
        CudaError with cuda-gdb's message when the request cannot be satisfied.
        """
        s = self._require_stopped("switch the CUDA focus")
        flt = self._focus_request(target, coords)
        async with self._lock:
            return await self._switch(s, flt)

    async def _switch(self, s: "DebugSession", flt: CudaFilter) -> FocusSwitch:
        gen = s.state.generation
        old = focus(s.state)
        res = await s.cmd(f"-cuda-focus-switch {flt}", check=False)
        if res.cls == "error":
            raise CudaError(str(res.get("msg", "cuda-gdb refused the focus switch")))
        granted = CudaFocus.from_mi(res.get("CudaFocus")) if "CudaFocus" in res.payload else None
        frame = Frame.from_mi(res.get("frame")) if isinstance(res.get("frame"), Mapping) else None
        text = res.get("text")
        unchanged = isinstance(text, str) and "unchanged" in text
        if granted is None:
            granted = old if unchanged and old is not None else await self.query_focus()
        if granted is None:
            raise CudaError(f"cuda-gdb accepted 'cuda {flt}' but reports no device focus")
        changed = not unchanged and not (old is not None and granted == old and frame is None)
        if changed or old is None or granted != old:
            await self._apply_focus(s, gen, granted, old)
        return FocusSwitch(request=str(flt), focus=granted, changed=changed, exact=_matches(flt, granted), frame=frame)

    async def _apply_focus(self, s: "DebugSession", gen: int, new: CudaFocus, old: CudaFocus | None) -> None:
        """Put a granted focus into the state, then re-read device frames and locals (no --thread)."""
        st = s.state
        if st.generation != gen:
            return
        self.last_device_focus = new
        snap = snapshot(st)
        tid = st.current_thread
        if snap is not None:
            snap = replace(
                snap,
                focus=new,
                threads=snap.threads.with_focus(new) if snap.threads is not None else None,
                lanes=snap.lanes if new.same_warp(old) else (),
            )
            st = st.with_cuda(snapshot=snap)
        st = st.with_cuda(focus=new, focus_known=True).evolve(selected_thread=tid, selected_frame=0)
        s.set_state(st)
        frames, more = await s.fetch_frames(tid or "", 0, FRAME_PAGE)
        s.set_state(apply_refresh(s.state, gen, frames=frames, frames_thread=tid, more_frames=more))
        # A key of its own per device thread, so locals are not marked changed across threads.
        key = f"cuda:{new.kernel}:{new.block}:{new.thread}"
        locs = await s.fetch_locals(key, 0)
        s.set_state(apply_refresh(s.state, gen, locals_=locs, locals_key=(tid or "", 0)))
        if snap is not None and not new.same_warp(old) and new.has_physical:
            assert new.device is not None and new.sm is not None and new.warp is not None
            try:
                lanes = await self.fetch_lanes(new.device, new.sm, new.warp)
            except CudaError as exc:
                log.info("lanes after the focus switch: %s", exc)
            else:
                cur = snapshot(s.state)
                if cur is not None and s.state.generation == gen:
                    lanes = tuple(replace(ln, current=(ln.lane == new.lane)) for ln in lanes)
                    s.set_state(s.state.with_cuda(snapshot=replace(cur, lanes=lanes)))

    async def select_host_thread(self, tid: str) -> None:
        """Look at a host thread: this drops cuda-gdb's device focus (restore_device_focus brings it back)."""
        s = self._require_stopped("select a host thread")
        async with self._lock:
            st = s.state
            f = focus(st)
            if f is not None:
                self.last_device_focus = f
            snap = snapshot(st)
            if snap is not None:
                st = st.with_cuda(
                    snapshot=replace(snap, focus=None, threads=snap.threads.with_focus(None) if snap.threads is not None else None)
                )
            s.set_state(st.with_cuda(focus=None, focus_known=True))
            await s.select_thread(tid)

    async def restore_device_focus(self) -> FocusSwitch:
        """Return to the device thread that had the focus before a host thread was selected."""
        f = self.last_device_focus
        if f is None:
            raise CudaError("there is no device focus to return to")
        return await self.switch_focus(f)

    async def host_frames(self, tid: str, count: int = FRAME_PAGE) -> tuple[Frame, ...]:
        """A host thread's frames (e.g. the thread that launched the kernel) without losing the device focus.

        ``--thread`` drops cuda-gdb's focus, so the focus is re-asserted right after.
        """
        s = self._require_stopped("read a host thread's frames")
        async with self._lock:
            f = focus(s.state)
            res = await s.cmd(f"-stack-list-frames --thread {tid} 0 {max(0, count - 1)}", check=False)
            frames: tuple[Frame, ...] = ()
            if res.cls == "done":
                frames = tuple(
                    x for x in (Frame.from_mi(d, i) for i, d in enumerate(mi.as_list(res.get("stack")))) if x is not None
                )
            if f is not None:
                back = await s.cmd(f"-cuda-focus-switch {f.logical_args() if f.has_logical else f.physical_args()}", check=False)
                granted = CudaFocus.from_mi(back.get("CudaFocus")) if back.cls == "done" else None
                if back.cls != "done" or (granted is not None and not granted.same_thread(f)):
                    # The device thread is gone or elsewhere: say so in the state.
                    st = s.state
                    snap = snapshot(st)
                    if snap is not None:
                        st = st.with_cuda(snapshot=replace(snap, focus=granted))
                    s.set_state(st.with_cuda(focus=granted, focus_known=True))
            if res.cls != "done":
                raise CudaError(str(res.get("msg", f"cannot read the frames of thread {tid}")))
            return frames
