"""The CUDA pane's views (threads, devices, kernels, warp): each builds the lazy tree of rows
from the snapshot; a mixin of ``CudaPane``, using its state, snapshot and requests."""

from __future__ import annotations


from typing import Any


from tuidbg.engine.cuda import (
    BlockRange,
    LaneValue,
    ThreadRanges,
    WarpWatch,
)
from tuidbg.engine.state import ProcessState
from tuidbg.ui.panes.cuda.items import BlockRangeItem, DeviceItem, GridItem, GroupItem, KernelItem, LaneItem, RangesSeq
from tuidbg.ui.panes.cuda.tree import Item, ListSeq, NoteItem, Part, Seq, fmt_ints, location
from tuidbg.ui.text import visible


class CudaViews:
    """A part of ``CudaPane`` (see the module's docstring)."""

    def _not_stopped_view(self) -> Seq:
        st = self.state
        p = st.process if st is not None else ProcessState.NOT_STARTED
        text = {
            ProcessState.RUNNING: "The program is running: cuda-gdb's tables are read at the next stop.",
            ProcessState.EXITED: "The program exited.",
            ProcessState.DETACHED: "Detached from the program.",
            ProcessState.GDB_EXITED: "gdb exited.",
        }.get(p, "The program has not started.")
        return ListSeq([NoteItem([(text, "muted")])])

    # threads view

    def _threads_view(self) -> Seq:
        snap = self.snap
        assert snap is not None
        self._threads_seq = None
        alt = self._alt
        if alt is not None:
            if alt.loading:
                return ListSeq([NoteItem([(f"reading {alt.label}…", "muted")])])
            if alt.error is not None:
                return ListSeq([NoteItem([(f"{alt.label}: ", "muted"), (visible(alt.error), "error")]), _escape_note(self)])
            return self._ranges_tree(alt.kernel, alt.blocks, alt.threads, "full", alt.label, {})
        if not self.state or not self.state.is_stopped:
            return ListSeq([NoteItem([("The program is not stopped.", "muted")])])
        if not snap.loaded and snap.threads is None and not snap.blocks:
            return ListSeq([NoteItem([("reading the blocks and threads…", "muted")])])
        if snap.kernel is None:
            return ListSeq([NoteItem([("No CUDA kernel is running.", "muted")])] + _error_notes(snap.errors))
        return self._ranges_tree(snap.kernel, snap.blocks, snap.threads, snap.threads_mode, f"kernel {snap.kernel}", snap.errors)

    def _ranges_tree(self, kernel: int | None, blocks: tuple[BlockRange, ...], threads: ThreadRanges | None, mode: str, label: str, errors: Any) -> Seq:
        snap = self.snap
        assert snap is not None
        kinfo = snap.kernel_info(kernel) if kernel is not None else None
        nblocks = sum(b.count for b in blocks)
        btitle: list[Part] = [("Blocks", ""), (f"  {label}", "muted"), (f" · {len(blocks):,} range{'s' if len(blocks) != 1 else ''} · {nblocks:,} resident blocks", "muted")]
        if kinfo is not None:
            btitle.append((f" of {kinfo.grid_dim.volume if kinfo.grid_dim else '?':,}", "muted"))
        bitems: list[Item] = [BlockRangeItem(b, kernel) for b in blocks]
        if "blocks" in errors:
            bitems.append(NoteItem([(visible(errors["blocks"]), "error")]))
        bseq = ListSeq(bitems)
        if threads is not None:
            tseq = RangesSeq(threads, kernel)
            if self._alt is None:
                self._threads_seq = tseq
            skey = self._summary_of(threads, kernel)
            nranges = f" · {len(threads):,} range{'s' if len(threads) != 1 else ''}"

            def ttitle() -> list[Part]:
                got = self._summary if self._summary_key == skey else None
                if got is None:
                    return [("Threads", ""), (f"{nranges} · counting threads…", "muted")]
                total, summary = got
                out: list[Part] = [("Threads", ""), (f"{nranges} · {total:,} threads", "muted")]
                if summary:
                    out.append(("  at ", "muted"))
                    for i, (pc, fname, line, n, _nr) in enumerate(summary[:3]):
                        out += [((", " if i else ""), "muted"), (visible(location(fname, line, pc)), "loc"), (f" ×{n:,}", "muted")]
                    if len(summary) > 3:
                        out.append((f", … {len(summary) - 3} more", "muted"))
                return out

            tgroup: Item = GroupItem(ttitle, tseq, lambda: tseq.current_index(self) is not None)
        else:
            if mode == "per-block":
                note = "Threads: this kernel's table was too big to read at every stop; expand a block to read its threads."
            elif "threads" in errors:
                note = f"Threads: {errors['threads']}"
            elif not snap.loaded:
                note = "Threads: reading…"
            else:
                note = "Threads: cuda-gdb listed none."
            items: list[Item] = [NoteItem([(visible(note), "error" if "threads" in errors else "muted")])]
            items += [BlockRangeItem(b, kernel) for b in blocks]
            tseq2 = ListSeq(items)
            tgroup = GroupItem([("Threads", ""), ("  per block", "muted")], tseq2, lambda: tseq2.current_index(self) is not None)
        bgroup = GroupItem(btitle, bseq, lambda: bseq.current_index(self) is not None)
        root_items: list[Item] = [bgroup, tgroup]
        if self._alt is not None:
            root_items.append(_escape_note(self))
        root = ListSeq(root_items, focus_order=[1, 0])
        root.attach(0, bseq)
        root.attach(1, tgroup.child)  # type: ignore[attr-defined]
        return root

    def _summary_of(self, threads: ThreadRanges, kernel: int | None) -> tuple:
        """Count a table's threads per location once the rows are on screen (20,000 ranges take
        tens of ms: the first paint does not wait for it); returns the summary's key."""
        snap = self.snap
        key = (snap.generation if snap else None, kernel, id(self._alt), len(threads), threads.table)
        if snap is not None and not snap.loaded and self._alt is None:
            return key  # counted after the stop's last table arrived and was painted
        if key != self._summary_key:
            self._summary_key = key
            self._summary = None

            def count() -> None:
                if key == self._summary_key:
                    summary = threads.summary()
                    self._summary_ready(key, (sum(t[3] for t in summary), summary))

            self.call_after_refresh(count)
        return key

    def _summary_ready(self, key: tuple, result: tuple) -> None:
        if key == self._summary_key:
            self._summary = result
            self.rows.restyle()

    # devices, kernels, warp views

    def _devices_view(self) -> Seq:
        snap = self.snap
        assert snap is not None
        items: list[Item] = [DeviceItem(d) for d in snap.devices]
        if not items:
            if "devices" in snap.errors:
                items.append(NoteItem([(visible(snap.errors["devices"]), "error")]))
            elif snap.loaded:
                items.append(NoteItem([("cuda-gdb reports no CUDA device (no GPU, or no CUDA context yet).", "muted")]))
            else:
                items.append(NoteItem([("reading the devices…" if self.state and self.state.is_stopped else "The program is not stopped.", "muted")]))
        return ListSeq(items)

    def _kernels_view(self) -> Seq:
        snap = self.snap
        assert snap is not None
        items: list[Item] = [KernelItem(k) for k in snap.kernels]
        if not items:
            if "kernels" in snap.errors:
                items.append(NoteItem([(visible(snap.errors["kernels"]), "error")]))
            elif snap.loaded:
                items.append(NoteItem([("No CUDA kernel is running.", "muted")]))
            else:
                items.append(NoteItem([("reading the kernels…" if self.state and self.state.is_stopped else "The program is not stopped.", "muted")]))
        return ListSeq(items)

    def _warp_view(self) -> Seq:
        snap = self.snap
        assert snap is not None
        f = snap.focus
        items: list[Item] = []
        watch = self.watch
        fresh = watch is not None and self._watch_gen == snap.generation
        if f is None:
            items.append(NoteItem([("No device thread has the focus: nothing to show for a warp.", "muted")]))
            return ListSeq(items)
        head: list[Part] = [("warp ", "muted"), (f"device {f.device} sm {f.sm} warp {f.warp}", "")]
        if f.kernel is not None:
            head.append((f"  kernel {f.kernel} block {f.block}", "muted"))
        if snap.lanes:
            active = sum(1 for ln in snap.lanes if ln.active)
            head.append((f"  · {len(snap.lanes)} lanes, {active} active", "muted"))
        items.append(NoteItem(head))
        values: dict[int, LaneValue] = {}
        if watch is not None and watch.focus.same_warp(f):
            values = {lv.lane: lv for lv in watch.lanes}
            note: list[Part] = [("watch ", "muted"), (visible(watch.expression), "value"), (f"  · {len(watch.lanes)} lanes, {watch.distinct_values} distinct value{'s' if watch.distinct_values != 1 else ''}", "muted")]
            errs = [lv for lv in watch.lanes if not lv.ok]
            if errs:
                note.append((f", {len(errs)} with errors", "error"))
            if not fresh:
                note.append(("  (from an earlier stop: E evaluates it again)", "error"))
            if not watch.restored:
                note.append(("  (cuda-gdb could not return to the focused lane)", "error"))
            items.append(NoteItem(note))
            items += self._watch_grid(watch)
            by_error: dict[str, list[int]] = {}
            for lv in errs:
                by_error.setdefault(lv.error or "", []).append(lv.lane)
            for msg, lanes in by_error.items():
                items.append(NoteItem([(f"lanes {fmt_ints(lanes)}: ", "error"), (visible(msg), "error")]))
        elif watch is not None:
            items.append(NoteItem([("the last warp watch was on another warp; E evaluates it here", "muted")]))
        else:
            items.append(NoteItem([(f"{self._key('cuda.warp_watch', 'e')} evaluates an expression in every lane of this warp", "muted")]))
        if snap.lanes:
            for ln in snap.lanes:
                items.append(LaneItem(f.device, f.sm, f.warp, ln, values.get(ln.lane)))
        elif "lanes" in snap.errors:
            items.append(NoteItem([("lanes: ", "muted"), (visible(snap.errors["lanes"]), "error")]))
        elif not snap.loaded:
            items.append(NoteItem([("reading the lanes…", "muted")]))
        return ListSeq(items, focus_order=[i for i in range(len(items)) if isinstance(items[i], LaneItem)])

    def _watch_grid(self, watch: WarpWatch) -> list[Item]:
        width = max(20, self.rows.size.width - 4)
        self._warp_width = self.rows.size.width
        texts = [len(visible(lv.value or "")) if lv.ok else len(visible(lv.error or "")) + 2 for lv in watch.lanes]
        cell = max(3, min(28, max(texts, default=3)))
        per = max(1, min(8, width // (cell + 6)))
        out: list[Item] = []
        lanes = list(watch.lanes)
        for i in range(0, len(lanes), per):
            out.append(GridItem([(lv, cell) for lv in lanes[i : i + per]]))
        return out


def _error_notes(errors: Any) -> list[Item]:
    return [NoteItem([(f"{k}: ", "muted"), (visible(str(v)), "error")]) for k, v in errors.items()]


def _escape_note(pane: Any) -> Item:
    return NoteItem([(f"{pane._key('cuda.escape', 'escape')}: back to the blocks and threads of this stop", "more")])
