"""The CUDA pane's controller: state, header and bar, the view switch, the input line.

See ``tuidbg.ui.panes.cuda`` for what the pane shows and how it is built."""

from __future__ import annotations


import asyncio
from typing import Any, Protocol

from textual import events
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Input, Static

from tuidbg.engine import cuda
from tuidbg.engine.cuda import (
    CudaError,
    CudaFilter,
    CudaFocus,
    CudaSnapshot,
    Dim3,
    LogicalOrder,
    WarpWatch,
    parse_filter,
)
from tuidbg.engine.errors import EngineError
from tuidbg.engine.state import DebuggerState, ProcessState
from tuidbg.ui.panes.cuda.items import LaneItem, RangesSeq
from tuidbg.ui.panes.cuda.requests import CudaRequests, _Alt
from tuidbg.ui.panes.cuda.rows import CudaRows
from tuidbg.ui.panes.cuda.tree import AsyncSeq, ListSeq, NOT_CUDA, PagedSeq, TOGGLES, VIEWS, fmt_ints
from tuidbg.ui.panes.cuda.views import CudaViews
from tuidbg.ui.text import visible


class CudaInput(Input):
    """The pane's input line (filter, focus request or warp-watch expression)."""


# ---------------------------------------------------------------------------------------------
# The pane




class CudaSource(Protocol):
    """What the CUDA pane reads of the session (``tuidbg.ui.bridge.SessionBridge`` provides it)."""

    @property
    def state(self) -> DebuggerState: ...

    @property
    def gdb_started(self) -> bool: ...

    def cuda(self) -> cuda.CudaExtension | None: ...


class CudaPane(CudaViews, CudaRequests, Vertical):
    """Devices, kernels, blocks/threads and the focused warp of a cuda-gdb session."""

    DEFAULT_CSS = """
    CudaPane { height: 1fr; background: $surface; }
    CudaPane > #cuda-header { height: 3; padding: 0 1; background: $panel; text-wrap: nowrap; text-overflow: ellipsis; }
    CudaPane > #cuda-bar { height: 1; padding: 0 1; background: $boost; text-wrap: nowrap; text-overflow: ellipsis; }
    CudaPane > #cuda-message { height: 1; padding: 0 1; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis; }
    CudaPane > #cuda-message.-error { color: $text-error; }
    CudaPane > CudaInput { height: 1; border: none; padding: 0 1; background: $boost; display: none; }
    CudaPane > CudaInput:focus { border: none; background: $boost; }
    CudaPane > CudaInput.-open { display: block; }
    CudaPane > #cuda-off { height: 1; padding: 0 1; color: $text-muted; display: none; text-wrap: nowrap; text-overflow: ellipsis; }
    CudaPane.-off > * { display: none; }
    CudaPane.-off > #cuda-off { display: block; }
    """
    BINDINGS = [
        Binding("r", "view('threads')", "Blocks and threads", show=False, id="cuda.view_threads"),
        Binding("D", "view('devices')", "Devices, SMs, warps, lanes", show=False, id="cuda.view_devices"),
        Binding("k", "view('kernels')", "Kernels", show=False, id="cuda.view_kernels"),
        Binding("l", "view('warp')", "Focused warp and warp watch", show=False, id="cuda.view_warp"),
        Binding("i", "open_input('filter')", "Filter", id="cuda.filter"),
        Binding("G", "open_input('focus')", "Focus on…", id="cuda.goto"),
        Binding("e", "open_input('watch')", "Warp watch", id="cuda.warp_watch"),
        Binding("E", "rewatch", "Evaluate the warp watch again", show=False, id="cuda.warp_watch_again"),
        Binding("full_stop", "show_focus", "Go to the focused thread", show=False, id="cuda.show_focus"),
        Binding("L", "toggle_setting('break_on_launch')", "Cycle cuda break_on_launch", show=False, id="cuda.break_on_launch"),
        Binding("A", "toggle_setting('api_failures')", "Cycle cuda api_failures", show=False, id="cuda.api_failures"),
        Binding("M", "toggle_setting('memcheck')", "Cycle cuda memcheck", show=False, id="cuda.memcheck"),
        Binding("ctrl+r", "reread", "Read the CUDA tables again", show=False, id="cuda.refresh"),
        Binding("escape", "escape", "Close the input / clear the filter", show=False, id="cuda.escape"),
    ]

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.source: CudaSource | None = None  # set by the app (a SessionBridge)
        self.state: DebuggerState | None = None
        self.snap: CudaSnapshot | None = None
        self.watch: WarpWatch | None = None
        self.view = "threads"
        self.message = ""
        self.message_is_error = False
        self.filter: CudaFilter | None = None
        self.input_mode: str | None = None
        self.watch_expression = ""
        self._process: ProcessState | None = None
        self._watch_gen = -1
        self._view_keys: dict[str, tuple] = {}
        self._jump: set[str] = set()
        self._jump_after_switch = False
        self._alt: _Alt | None = None
        self._alt_gen = -1
        self._summary_key: tuple | None = None
        self._summary: tuple | None = None
        self._dims: dict[int, Any] = {}  # per snapshot
        self._refused: set[tuple[str, str]] = set()
        self._header_text: tuple = ()
        self._bar_key: tuple = ()
        self._threads_seq: RangesSeq | None = None
        self._warp_width = 0

    # -- composition -------------------------------------------------------------------------

    def compose(self):
        yield Static(Content(""), id="cuda-header")
        yield Static(Content(""), id="cuda-bar")
        rows = CudaRows(id="cuda-rows")
        rows.ctx = self
        yield rows
        yield Static(Content(""), id="cuda-message")
        yield CudaInput(id="cuda-input")
        yield Static(Content(NOT_CUDA), id="cuda-off")

    @property
    def rows(self) -> CudaRows:
        return self.query_one(CudaRows)

    def focus(self, scroll_visible: bool = True) -> "CudaPane":
        """Focus goes to the rows (the pane itself is a container)."""
        if self.has_class("-off"):
            return self
        self.rows.focus(scroll_visible)
        return self

    def on_mount(self) -> None:
        self.add_class("-off")
        if self.source is not None:
            self.update_state(self.source.state)

    # -- what the rows read ------------------------------------------------------------------

    @property
    def ext(self) -> cuda.CudaExtension | None:
        return self.source.cuda() if self.source is not None else None

    @property
    def cuda_focus(self) -> CudaFocus | None:
        """cuda-gdb's focus as the pane shows it (None: a host thread)."""
        return self.snap.focus if self.snap is not None else None

    def dims(self, kernel: int | None) -> tuple[LogicalOrder, Dim3, Dim3] | None:
        """A kernel's logical order, grid and block dims (None when the kernels table lacks it)."""
        snap = self.snap
        if snap is None or kernel is None:
            return None
        if kernel in self._dims:
            return self._dims[kernel]
        self._dims[kernel] = d = self._find_dims(snap, kernel)
        return d

    def _find_dims(self, snap: CudaSnapshot, kernel: int) -> tuple[LogicalOrder, Dim3, Dim3] | None:
        k = snap.kernel_info(kernel)
        if k is None or k.grid_dim is None or k.block_dim is None or not k.grid_dim.volume or not k.block_dim.volume:
            return None
        order = snap.threads.order if snap.threads is not None and snap.kernel == kernel else snap.caps.order
        return order, k.grid_dim, k.block_dim

    def load(self, seq: AsyncSeq) -> None:
        """Read an expanded row's children in a worker; the row shows "reading…" until then."""

        async def job() -> None:
            try:
                seq.source = await seq.loader()
            except (EngineError, asyncio.TimeoutError) as exc:
                seq.error = str(exc) or type(exc).__name__
            except Exception as exc:  # shown in the row, never as a traceback
                seq.error = f"{type(exc).__name__}: {exc}"
            seq.changed()
            self.rows.structure_changed()

        self.run_worker(job(), group="cuda-load", exit_on_error=False)

    def load_more(self, seq: PagedSeq) -> None:
        try:
            seq.load_more()
        except EngineError as exc:
            self.say(str(exc), error=True)
        self.rows.structure_changed()

    # -- state ---------------------------------------------------------------------------------

    def update_state(self, state: DebuggerState) -> None:
        """Called by the app on every state change; cheap when nothing CUDA changed."""
        snap = cuda.snapshot(state)
        watch = state.cuda.warp_watch
        if snap is self.snap and watch is self.watch and state.process is self._process and self.state is not None:
            return
        self.state = state
        self._process = state.process
        if snap is None:
            self.snap = None
            self.watch = watch
            self._show_off()
            return
        if self.has_class("-off"):
            self.remove_class("-off")
        prev = self.snap
        new_stop = prev is None or snap.generation != prev.generation
        focus_moved = prev is not None and not new_stop and snap.focus != prev.focus
        self.snap = snap
        self._dims.clear()
        if watch is not self.watch:
            self.watch = watch
            self._watch_gen = snap.generation
        if new_stop:
            self._view_keys.clear()
            self._jump = set(VIEWS)
            self._alt = None
            self._summary_key = None
            if self.filter is None:
                self._alt_gen = -1
        self._render_header()
        self._render_bar()
        if self.filter is not None and snap.loaded and state.is_stopped and self._alt_gen != snap.generation:
            self._apply_filter(self.filter)
        self._refresh_view()
        if focus_moved and self._jump_after_switch:
            self._jump_after_switch = False
            self._jump_to_focus()

    def _show_off(self) -> None:
        if self.source is not None and not self.source.gdb_started:
            text = "CUDA: waiting for gdb to start…"
            self.state = None  # look again at the next call: the banner tells whether it is cuda-gdb
        else:
            text = NOT_CUDA
        self.query_one("#cuda-off", Static).update(Content(text), layout=False)
        self.add_class("-off")
        if self.rows.has_focus or self.query_one(CudaInput).has_focus:
            self.screen.set_focus(None)

    # -- header and bar ------------------------------------------------------------------------

    def _render_header(self) -> None:
        snap = self.snap
        st = self.state
        assert snap is not None and st is not None
        lines: list[Content] = []
        kinfo = snap.focused_kernel or snap.kernel_info()
        launch = visible(kinfo.launch) if kinfo is not None else ""
        if st.process is ProcessState.RUNNING:
            lines.append(Content.styled("● running", "bold"))
        elif st.process is not ProcessState.STOPPED:
            what = {
                ProcessState.EXITED: f"the program {st.exit_description or 'exited'}",
                ProcessState.NOT_STARTED: "the program has not started",
                ProcessState.DETACHED: "detached",
                ProcessState.GDB_EXITED: "gdb exited",
            }.get(st.process, st.process.value)
            lines.append(Content.styled(visible(what), "bold"))
        else:
            kind = snap.stop_kind
            exc = snap.exception
            if kind == cuda.STOP_EXCEPTION and exc is not None:
                lines.append(Content.assemble(("■ CUDA exception ", "bold $text-error"), (visible(f"{exc.signal}: {exc.name}"), "bold $text-error"), (f"  ({exc.scope} scope)", "$text-muted")))
            elif kind == cuda.STOP_BREAKPOINT:
                lines.append(Content.assemble(("■ breakpoint ", "bold"), (visible(snap.bkptno or "?"), "bold"), (f"  in {launch}" if launch else "", "")))
            elif kind == cuda.STOP_KERNEL_ENTRY:
                lines.append(Content.assemble(("■ kernel entry", "bold"), (" (break_on_launch)", "$text-muted"), (f"  {launch}" if launch else "", "")))
            elif kind == cuda.STOP_STEP:
                lines.append(Content.assemble(("■ stepped on the device", "bold"), (f"  in {launch}" if launch else "", "")))
            elif kind == cuda.STOP_SIGNAL:
                sig = st.stop.payload.get("signal-name", "") if st.stop is not None else ""
                lines.append(Content.assemble(("■ signal on the device ", "bold"), (visible(str(sig)), "bold")))
            elif kind == cuda.STOP_HOST:
                n = len(snap.kernels)
                tail = f"  ({n} kernel{'s' if n != 1 else ''} on the GPU)" if snap.loaded and n else ""
                lines.append(Content.assemble(("■ host stop", "bold"), (tail, "$text-muted")))
            else:
                lines.append(Content.assemble(("■ stopped on the device", "bold"), (f"  in {launch}" if launch else "", "")))
        f = snap.focus
        if f is not None:
            parts: list[Any] = [("focus ▶ ", "$text-warning"), (visible(f.logical_label), "bold")]
            if f.has_physical:
                parts.append((f"  · device {f.device} sm {f.sm} warp {f.warp} lane {f.lane}", "$text-muted"))
            sf = snap.stop_focus
            if sf is not None and not sf.same_thread(f):
                parts.append((f"  (the stop was in {sf.logical_label})", "$text-muted"))
            lines.append(Content.assemble(*parts))
        elif st.is_stopped:
            back = " (. returns to the device thread)" if snap.stop_focus is not None else ""
            lines.append(Content.styled(f"focus: host thread {st.selected_thread or '?'}, no device thread{back}", "$text-muted"))
        else:
            lines.append(Content(""))
        exc = snap.exception if st.is_stopped else None
        if exc is not None:
            # most telling first: the pane is often narrow and the line is cut at its end
            parts = []
            if exc.lanes:
                parts += [("faulting lanes ", "$text-muted"), (fmt_ints(exc.lanes), "bold $text-error"), (" · ", "$text-muted")]
            if exc.scope in ("warp", "lane"):
                parts.append(("precise · " if exc.precise else "imprecise (no error PC) · ", "$text-muted"))
            if exc.pc is not None:
                parts += [("error pc ", "$text-muted"), (f"{exc.pc:#x}", "bold")]
            if exc.filename and exc.line is not None:
                parts.append((visible(f" {exc.filename}:{exc.line}"), "$text-success"))
            elif exc.device is not None:
                parts.append((f" device {exc.device}", ""))
            if exc.function:
                parts.append((visible(f" {exc.function}"), ""))
            if exc.errorpc:
                parts += [(" · $errorpc = ", "$text-muted"), (visible(exc.errorpc), "")]
            lines.append(Content.assemble(*parts))
        else:
            parts = self._settings_parts()
            caps = snap.caps
            bits = [f"cuda-gdb {caps.version_text}"]
            if caps.minimal:
                bits.append("no Python (cuda-gdb-minimal)")
            if caps.workaround_applied:
                bits.append("11.8 unwinder workaround on")
            if st.is_stopped and not snap.loaded:
                bits.append("reading the CUDA tables…")
            parts.append(("  │ " if parts else "", "$text-muted"))
            parts.append((visible(" · ".join(bits)), "$text-muted"))
            if snap.errors and snap.loaded:
                parts.append((visible("  · " + "; ".join(f"{k}: {v}" for k, v in snap.errors.items())), "$text-error"))
            lines.append(Content.assemble(*parts))
        content = Content("\n").join(lines)
        key = tuple(c.plain for c in lines) + tuple(str(c.spans) for c in lines)
        if key != self._header_text:
            self._header_text = key
            self.query_one("#cuda-header", Static).update(content, layout=False)

    def _key(self, bid: str, default: str) -> str:
        km = getattr(self.app, "_keymap", None) or {}
        keys = km.get(bid, default)
        first = keys.split(",")[0].strip()
        return {"full_stop": "."}.get(first, first)

    def _settings_parts(self) -> list[Any]:
        """The toggles this cuda-gdb has, with their values and keys."""
        snap = self.snap
        parts: list[Any] = []
        if snap is None or snap.settings is None:
            return parts
        keys = {"break_on_launch": ("cuda.break_on_launch", "L"), "api_failures": ("cuda.api_failures", "A"), "memcheck": ("cuda.memcheck", "M")}
        for name in TOGGLES:
            value = snap.settings.get(name)
            if value is None or name not in snap.caps.options:
                continue  # this cuda-gdb has no such setting
            bid, dflt = keys[name]
            if parts:
                parts.append(("  ", ""))
            parts += [(self._key(bid, dflt), "$text-accent"), (f" {name} ", "$text-muted"), (visible(value), "bold")]
        return parts

    def _render_bar(self) -> None:
        parts: list[Any] = []
        names = {"threads": ("cuda.view_threads", "r", "threads"), "devices": ("cuda.view_devices", "D", "devices"), "kernels": ("cuda.view_kernels", "k", "kernels"), "warp": ("cuda.view_warp", "l", "warp")}
        for v in VIEWS:
            bid, dflt, label = names[v]
            style = "bold reverse" if v == self.view else ""
            parts += [(self._key(bid, dflt), "$text-accent"), (f" {label} ", style), (" ", "")]
        if self._alt is not None:
            parts += [("│ ", "$text-muted"), (visible(self._alt.label), "bold $text-warning"), (f"  ({self._key('cuda.escape', 'escape')} clears)", "$text-muted")]
        else:
            parts += [("│ ", "$text-muted"), (self._key("cuda.filter", "i"), "$text-accent"), (" filter  ", "$text-muted"), (self._key("cuda.goto", "G"), "$text-accent"), (" focus  ", "$text-muted"), (self._key("cuda.warp_watch", "e"), "$text-accent"), (" watch", "$text-muted")]
        content = Content.assemble(*parts)
        key = (content.plain, str(content.spans))
        if key != self._bar_key:
            self._bar_key = key
            self.query_one("#cuda-bar", Static).update(content, layout=False)

    def say(self, text: str, *, error: bool = False, notify: bool = False) -> None:
        """A one-line message under the rows (and a notification for errors that need one)."""
        self.message = text
        self.message_is_error = error
        msg = self.query_one("#cuda-message", Static)
        msg.set_class(error, "-error")
        msg.update(Content(visible(text)), layout=False)
        if notify:
            self.notify(text, severity="error" if error else "information", markup=False)

    # -- views ---------------------------------------------------------------------------------

    def action_view(self, name: str) -> None:
        if name not in VIEWS or self.snap is None:
            return
        if name != self.view:
            self.view = name
            self.rows.cursor = 0
            self.rows.scroll_to(y=0, animate=False, immediate=True)
            self._view_keys.pop(name, None)
            self._jump.add(name)
            self._render_bar()
            self._refresh_view()

    def _refresh_view(self) -> None:
        snap = self.snap
        if snap is None:
            return
        rows = self.rows
        builder = {"threads": self._threads_view, "devices": self._devices_view, "kernels": self._kernels_view, "warp": self._warp_view}[self.view]
        if self.state is None or not self.state.is_stopped:
            builder = self._not_stopped_view
        key = self._data_key()
        if self._view_keys.get(self.view) != key:
            self._view_keys[self.view] = key
            lane = self._cursor_lane()
            rows.set_root(builder())
            if lane is not None:
                # the warp view is rebuilt when values arrive: the cursor stays on its lane
                for r in range(rows.row_count):
                    item = rows.row_item(r)[2]
                    if isinstance(item, LaneItem) and item.ln.lane == lane:
                        rows.move_to(r, center=True)
                        break
        else:
            if self.view == "threads" and self._threads_seq is not None and snap.threads is not None and self._alt is None:
                self._threads_seq.threads = snap.threads  # the same rows; the current marker may have moved
            rows.restyle()
        if self.view in self._jump and self._data_ready():
            self._jump.discard(self.view)
            self._jump_to_focus()

    def _cursor_lane(self) -> int | None:
        rows = self.rows
        if self.view != "warp" or not rows.row_count or not isinstance(rows.root, ListSeq):
            return None
        item = rows.row_item(rows.cursor)[2]
        return item.ln.lane if isinstance(item, LaneItem) else None

    def _data_ready(self) -> bool:
        snap = self.snap
        if snap is None or not snap.loaded:
            return False
        if self.view == "threads" and self._alt is not None and self._alt.loading:
            return False
        return True

    def _data_key(self) -> tuple:
        snap = self.snap
        assert snap is not None
        g = (snap.generation, snap.loaded, self._process)
        if self.view == "threads":
            alt = self._alt
            if alt is not None:
                return g + ("alt", id(alt), alt.loading)
            th = snap.threads
            return g + (snap.kernel, snap.blocks, len(th) if th is not None else None, th.table if th is not None else "", snap.threads_mode, tuple(snap.errors.items()))
        if self.view == "devices":
            return g + (snap.devices, tuple(snap.errors.items()))
        if self.view == "kernels":
            return g + (snap.kernels,)
        return g + (snap.lanes, id(self.watch), snap.focus, self._warp_width, self._watch_gen)

    def _jump_to_focus(self) -> None:
        r = self.rows.focus_row()
        if r is not None:
            self.rows.move_to(r, center=True)

    def action_show_focus(self) -> None:
        snap = self.snap
        if snap is None:
            return
        if snap.focus is None and snap.stop_focus is not None and self.state is not None and self.state.is_stopped:
            self._restore_device_focus()
            return
        self._jump_to_focus()

    def on_resize(self, event: events.Resize) -> None:
        if self.view == "warp" and self.snap is not None and self.watch is not None and self.rows.size.width != self._warp_width:
            self._refresh_view()

    # -- the input line ------------------------------------------------------------------------

    PROMPTS = {
        "filter": "filter: kernel 1 block (0,0,0)  (empty: no filter)",
        "focus": "switch focus: block (1,0,0) thread (3,0,0), or device 0 sm 2 warp 1 lane 7",
        "watch": "warp watch: an expression evaluated in every lane (e.g. i, a[i] * 2)",
    }

    def action_open_input(self, mode: str) -> None:
        if self.snap is None:
            return
        inp = self.query_one(CudaInput)
        self.input_mode = mode
        inp.placeholder = self.PROMPTS[mode]
        inp.value = {"filter": str(self.filter) if self.filter else "", "watch": self.watch_expression}.get(mode, "")
        inp.add_class("-open")
        inp.focus()

    def _close_input(self) -> None:
        inp = self.query_one(CudaInput)
        inp.remove_class("-open")
        self.input_mode = None
        self.rows.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        mode = self.input_mode
        text = event.value.strip()
        if mode == "filter":
            if not text:
                self._close_input()
                self._clear_alt()
                return
            try:
                flt = parse_filter(text, what="filter")
            except CudaError as exc:
                self.say(str(exc), error=True)
                return  # the input stays open to be corrected
            self.filter = flt
            self._close_input()
            self.say(f"filter {flt}: asking cuda-gdb…")
            self._apply_filter(flt)
        elif mode == "focus":
            if not text:
                self._close_input()
                return
            try:
                flt = parse_filter(text, what="focus")
                if not flt:
                    raise CudaError("focus: name a kernel, block, thread, device, sm, warp or lane")
            except CudaError as exc:
                self.say(str(exc), error=True)
                return
            self._close_input()
            self.switch_focus(flt, jump=True)
        elif mode == "watch":
            self._close_input()
            if text:
                self._warp_watch(text)

    def action_escape(self) -> None:
        if self.input_mode is not None:
            self._close_input()
        elif self._alt is not None:
            self._clear_alt()

    def _clear_alt(self) -> None:
        self.filter = None
        self._alt = None
        self._alt_gen = -1
        self._jump.add("threads")
        self.say("")
        self._render_bar()
        self._refresh_view()


