"""TuidbgApp: the one place where engine events become Textual messages.

The session's listeners (state, program output, console output) post messages
or fill buffers that a 50 ms timer flushes, so a flood of output is written in
batches. Panes are small widgets that each own one view of the state; key
presses run actions that await session operations in workers, and any error
they raise is shown in the UI (a notification and the status line), never as a
traceback.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.content import Content
from textual.message import Message
from textual.theme import Theme
from textual.widgets import Footer, Static, TabbedContent, TabPane
from textual.worker import Worker, WorkerState

from tuidbg import config as tconfig
from tuidbg.engine import mi
from tuidbg.engine.errors import EngineError, GdbExited, MIError, StartupError
from tuidbg.engine import pyagent, pystack
from tuidbg.engine.python import view as pyview
from tuidbg.engine.python.merge import merged_stack
from tuidbg.engine.python.model import user_frames
from tuidbg.engine.session import DebugSession
from tuidbg.engine.state import DebuggerState, ProcessState
from tuidbg.ui import bindings, profile_commands, remembered
from tuidbg.engine import cuda
from tuidbg.ui.bridge import SessionBridge
from tuidbg.ui.native_actions import NativeActions
from tuidbg.ui.panes.cuda import CudaPane
from tuidbg.ui.panes.disasm import DisasmView
from tuidbg.ui.panes.memory import MemoryView
from tuidbg.ui.panes.registers import RegistersPane
from tuidbg.ui.panes.frames import CppFramesPane, HostStack, PyFramesPane
from tuidbg.ui.panes.io import CommandInput, ConsolePane, OutputPane
from tuidbg.ui.panes.source import BreakpointMark, SourceView
from tuidbg.ui.panes.tables import BreakpointsPane, ThreadsPane
from tuidbg.ui.panes.variables import LocalsPane, PythonFrameRef, VariablesTree, VarNode, WatchPane
from tuidbg.engine import watchdog
from tuidbg.ui.screens.modals import (
    GdbExitedScreen,
    GdbHungScreen,
    HelpScreen,
    OpenFileScreen,
    PromptScreen,
    QuitScreen,
    ValueScreen,
)
from tuidbg.ui.text import visible

log = logging.getLogger("tuidbg.ui")

NARROW_WIDTH = 100
NARROW_HEIGHT = 30

# pane name -> (widget id to focus, group id, tab id)
PANES = {
    "source": ("source", None, None),
    "python": ("py-list", "stack-group", "tab-stack"),
    "cpp": ("cpp-list", "stack-group", "tab-stack"),
    "threads": ("threads", "stack-group", "tab-threads"),
    "cuda": ("cuda", "stack-group", "tab-cuda"),
    "locals": ("locals", "vars-group", "tab-locals"),
    "watch": ("watch", "vars-group", "tab-watch"),
    "breakpoints": ("breakpoints", "vars-group", "tab-breakpoints"),
    "registers": ("registers", "vars-group", "tab-registers"),
    "memory": ("memory", "vars-group", "tab-memory"),
    "console": ("console-input", "io-group", "tab-console"),
    "output": ("output-input", "io-group", "tab-output"),
}
GROUP_CLASS = {"stack-group": "-show-stack", "vars-group": "-show-vars", "io-group": "-show-io"}

THEME_VARIABLE_DEFAULTS = {
    "pc-line-background": "#4a3f1f",
    "caller-line-background": "#33301f",
    "cursor-line-background": "#25303b",
    "source-keyword": "#FF8F40",
    "source-type": "#59C2FF",
    "source-string": "#AAD94C",
    "source-comment": "#7a8390",
    "source-number": "#D2A6FF",
    "source-function": "#FFB454",
    "source-builtin": "#F07178",
    "source-operator": "#F29668",
    "source-preproc": "#E6B673",
    "source-match": "#4D5566",
    "python-frame": "#7FD962",
}

_THEME_FIELDS = {
    "name", "primary", "secondary", "warning", "error", "success", "accent", "foreground",
    "background", "surface", "panel", "boost", "dark", "luminosity_spread", "text_alpha", "variables", "ansi",
}


def theme_from_file(path: Path) -> Theme:
    data = tconfig.load_theme_data(path)
    unknown = set(data) - _THEME_FIELDS
    if unknown:
        raise tconfig.UsageError(f"{path}: unknown theme fields {sorted(unknown)}")
    return Theme(**data)


class StateChanged(Message):
    def __init__(self, state: DebuggerState) -> None:
        super().__init__()
        self.state = state

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, StateChanged)


@dataclass
class _Pending:
    output: bytearray
    console: list[mi.MIRecord]


class StatusLine(Static):
    state_class = ""


FULL_VALUE_ELEMENTS = 200_000  # what "v" (the whole value) asks gdb for: strings and arrays up to this


class TuidbgApp(NativeActions, App[int], inherit_bindings=False):
    CSS_PATH = "app.tcss"
    TITLE = "tuidbg"
    BINDINGS = bindings.global_bindings()
    ENABLE_COMMAND_PALETTE = True

    def __init__(
        self,
        session: DebugSession,
        theme: str | None = None,
        keymap: tconfig.Keymap | None = None,
        settings: tconfig.Settings | None = None,
        ui_options: Any = None,
    ) -> None:
        super().__init__()
        self.session = session
        self.settings = settings or tconfig.Settings()
        self.keymap_info = keymap or tconfig.load_keymap(None, self.settings.keys)
        self._theme_name = theme or tconfig.DEFAULT_THEME
        self.ui_options = ui_options
        self.state: DebuggerState = session.state
        self._pending = _Pending(bytearray(), [])
        self.narrow = False
        self._last_process: ProcessState | None = None
        self._gdb_exit_shown = False
        self._shown: tuple[str | None, int | None] = (None, None)
        self._user_file: str | None = None  # a file the user opened, shown until the next stop
        self.merged = False
        self.show_host_stack = False  # h in the C++ pane, under a CUDA device focus
        self._host_key: tuple | None = None
        self._host_cache: tuple | None = None  # (key, HostStack) of the last fetch
        self._quitting = False
        # The selected Python frame (its index, 0 = innermost; see python.view.next_selection).
        self._py_selection = pyview.PySelection()
        self._py_locals: dict[tuple, list[VarNode]] = {}
        self._py_locals_inflight: set[tuple] = set()
        self._py_locals_epoch = 0  # bumped when Python ran in the program at a stop: older reads are stale
        self._thread_names: tuple | None = None  # (pid, {LWP: threading name}) from the agent's last stop
        self._source_key: tuple | None = None
        self._cuda_tab: bool | None = None
        self._health = watchdog.GdbHealth()
        self._hung_screen: GdbHungScreen | None = None
        self._hung_asked: dict[int, float] = {}  # command token -> wait time at which to ask (again)

    # -- composition ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Grid(id="main"):
            with Vertical(id="source-pane"):
                yield Static(Content("Source"), id="source-title", classes="pane-title")
                yield SourceView(id="source")
                yield DisasmView(id="disasm")
            with TabbedContent(id="stack-group", initial="tab-stack"):
                with TabPane("Stack", id="tab-stack"):
                    with Vertical(id="stack-box"):
                        with Vertical(id="py-box"):
                            yield Static(Content("Python frames"), id="py-title", classes="pane-title")
                            yield PyFramesPane(id="py-frames")
                        with Vertical(id="cpp-box"):
                            yield Static(Content("C++ frames"), id="cpp-title", classes="pane-title")
                            yield CppFramesPane(id="cpp-frames")
                with TabPane("Threads", id="tab-threads"):
                    yield ThreadsPane(id="threads")
                with TabPane("CUDA", id="tab-cuda"):
                    yield CudaPane(id="cuda")
            with TabbedContent(id="vars-group", initial="tab-locals"):
                with TabPane("Locals", id="tab-locals"):
                    yield LocalsPane(id="locals")
                with TabPane("Watch", id="tab-watch"):
                    yield WatchPane(id="watch")
                with TabPane("Breakpoints", id="tab-breakpoints"):
                    yield BreakpointsPane(id="breakpoints")
                with TabPane("Registers", id="tab-registers"):
                    yield RegistersPane(id="registers")
                with TabPane("Memory", id="tab-memory"):
                    yield MemoryView(id="memory")
            with TabbedContent(id="io-group", initial="tab-console"):
                with TabPane("Console", id="tab-console"):
                    yield ConsolePane(id="console")
                with TabPane("Output", id="tab-output"):
                    yield OutputPane(id="output")
        yield StatusLine(id="status")
        yield Footer()

    def get_system_commands(self, screen):
        yield from super().get_system_commands(screen)
        for title, help_text, callback in profile_commands.commands(self):
            yield SystemCommand(title, help_text, callback)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(THEME_VARIABLE_DEFAULTS)

    # -- start-up -------------------------------------------------------------------------------

    def on_mount(self) -> None:
        self._register_themes()
        self._apply_theme(self._theme_name)
        self.set_keymap(self.keymap_info.keys)
        self._attach_panes(self.session)
        remembered.restore(self)  # the last run's watches and layout
        self.set_interval(1.0, lambda: remembered.sync(self))
        self.session.on_state(self._on_engine_state)
        self.session.on_program_output(self._on_engine_output)
        self.session.on_console(self._on_engine_console)
        self.set_interval(0.05, self._flush_buffers)
        self.set_interval(1.0, self._check_gdb)
        self._layout(self.size.width, self.size.height)
        self._write_console_intro()
        self._apply_state(self.session.state)
        self._start_session()

    def _attach_panes(self, session: DebugSession) -> None:
        bridge = SessionBridge(session)  # the panes' one door to this session
        # A Python program's stops show a Python frame's locals first: native ones when shown.
        session.native_locals_on_stop = not session.config.python_target
        for w in self.query(VariablesTree):
            w.source = bridge
        for p in self.query(CudaPane):
            p.source = bridge
        self._native_attach(bridge)
        self.query_one(WatchPane).python_eval = self._python_watch
        self._cuda_tab: bool | None = None
        ag = pyagent.controller(session)
        if ag is not None:
            ag.on_message(self._agent_message)

    def _agent_message(self, text: str) -> None:
        """A note from the Python agent ("breakpoint moved to line 12", a failed condition)."""
        self.notify(text, markup=False)
        self._pending.console.append(mi.MIRecord(mi.TEXT, payload=f"python agent: {text}"))

    def _show_cuda_tab(self) -> None:
        """The CUDA tab is there under cuda-gdb only (known once gdb has started)."""
        if not self.session.info.version or self._cuda_tab is not None:
            return
        self._cuda_tab = self.session.info.is_cuda
        tabs = self.query_one("#stack-group", TabbedContent)
        if self._cuda_tab:
            tabs.show_tab("tab-cuda")
        else:
            tabs.hide_tab("tab-cuda")

    def _register_themes(self) -> None:
        for name, path in tconfig.theme_files().items():
            try:
                self.register_theme(theme_from_file(path))
            except Exception as exc:  # a broken user theme must not stop the debugger
                self.notify(f"theme {path}: {exc}", severity="warning", markup=False)

    def _apply_theme(self, name: str) -> None:
        if name.endswith(".toml") and os.path.exists(name):
            theme = theme_from_file(Path(name))
            self.register_theme(theme)
            name = theme.name
        try:
            self.theme = name
        except Exception as exc:
            self.notify(f"theme {name!r}: {exc}; using {tconfig.DEFAULT_THEME}", severity="warning", markup=False)
            self.theme = tconfig.DEFAULT_THEME

    def _write_console_intro(self) -> None:
        self.query_one(ConsolePane).log_widget.write_lines(
            ["Type gdb commands here; :help lists tuidbg's own (:e FILE, :w EXPR, :theme, :keymap, :q)."],
            style="note",
        )

    @work(group="session", exit_on_error=False)
    async def _start_session(self) -> None:
        s = self.session
        try:
            if s.client is None:
                await s.start(load=False)
            await s.load()
            if s.state.process is ProcessState.NOT_STARTED and s.config.mode in ("run", "attach", "core"):
                if s.config.mode == "run":
                    self.query_one(OutputPane).note(f"── starting {s.config.describe()}")
                await s.launch()
        except (StartupError, EngineError) as exc:
            self._error(str(exc))

    # -- engine -> UI ---------------------------------------------------------------------------

    def _on_engine_state(self, state: DebuggerState) -> None:
        self.post_message(StateChanged(state))

    def _on_engine_output(self, data: bytes) -> None:
        self._pending.output += data

    def _on_engine_console(self, rec: mi.MIRecord) -> None:
        self._pending.console.append(rec)

    def _flush_buffers(self) -> None:
        if self._pending.output:
            data = bytes(self._pending.output)
            self._pending.output.clear()
            self.query_one(OutputPane).feed(data)
        if self._pending.console:
            recs, self._pending.console = self._pending.console, []
            log_w = self.query_one(ConsolePane).log_widget
            for style, group in _group_console(recs):
                log_w.write_lines(group, style=style)

    def on_state_changed(self, message: StateChanged) -> None:
        if self._closing_screen():
            return
        state = message.state
        if state.python.transient:
            return  # a short internal stop (or run) of the Python agent: nothing for the user to see
        if state.is_stopped and (not state.refreshed or state.python.stop_pending):
            # The refresh after a stop usually lands within a few ms: paint the stop
            # once, complete. Only a slow refresh shows the bare stop first.
            gen = state.generation
            self.set_timer(0.15, lambda: self._apply_if_still(gen))
            return
        self._apply_state(state)

    def _closing_screen(self) -> bool:
        """The app is shutting down: its panes may be gone already."""
        return not self.is_running or not self.screen_stack or not self.query("#main")

    def _apply_if_still(self, generation: int) -> None:
        st = self.session.state
        if st.generation == generation and st.is_stopped and self.state is not st:
            if not st.python.transient:
                self._apply_state(st)

    def _apply_state(self, state: DebuggerState) -> None:
        prev = self.state
        self.state = state
        # Between a stop and its refresh the panes keep what they show: the stacks,
        # threads and variables change once per stop, when the refresh has arrived.
        settled = state.refreshed or not state.is_stopped
        if settled:
            self._update_python_selection(state)
        self._show_cuda_tab()
        with self.batch_update():
            self._update_status(state)
            for p in self.query(CudaPane):
                p.update_state(state)
            if settled:
                self._update_stacks(state)
                self.query_one(ThreadsPane).update_state(state, *self._thread_python(state))
                self._update_locals(state)
                self.query_one(WatchPane).update_state(state, python=self._python_frame_ref(state))
            self.query_one(BreakpointsPane).update_state(state, self._python_breakpoint_rows(state),
                                                         *remembered.pane_extras(self.session))
            self._update_source(state, prev)
            self._native_update(state)
        self._notice_transitions(prev, state)

    def _notice_transitions(self, prev: DebuggerState, state: DebuggerState) -> None:
        out = self.query_one(OutputPane)
        if prev.process is not state.process:
            if state.process is ProcessState.EXITED and prev.process in (ProcessState.RUNNING, ProcessState.STOPPED):
                self._flush_buffers()
                out.note(f"── the program {state.exit_description or 'exited'}")
            elif state.process is ProcessState.DETACHED:
                out.note("── detached; the process runs on")
            elif (
                state.process is ProcessState.GDB_EXITED
                and not self._gdb_exit_shown
                and not self._quitting
                and not self.session.closing
            ):
                self._gdb_exit_shown = True
                self._flush_buffers()
                self.query_one(ConsolePane).log_widget.write_lines([f"gdb is gone: {state.gdb_exit}"], style="error")
                self.push_screen(GdbExitedScreen(state.gdb_exit or "gdb exited"), self._after_gdb_exit)

    # -- status line ------------------------------------------------------------------------------

    def _update_status(self, state: DebuggerState) -> None:
        status = self.query_one(StatusLine)
        p = state.process
        cls = {
            ProcessState.RUNNING: "-running",
            ProcessState.STOPPED: "-stopped",
            ProcessState.EXITED: "-exited",
            ProcessState.DETACHED: "-exited",
            ProcessState.GDB_EXITED: "-dead",
        }.get(p, "")
        if cls != status.state_class:
            if status.state_class:
                status.remove_class(status.state_class)
            if cls:
                status.add_class(cls)
            status.state_class = cls
        parts: list[Any] = []
        if p is ProcessState.RUNNING:
            parts.append(("● running", "bold"))
            if state.activity:
                parts.append(f" — gdb: {visible(state.activity)}")
            parts.append("   ctrl+c interrupts")
        elif p is ProcessState.STOPPED:
            stop = state.stop
            why = stop.describe() if stop else "stopped"
            if stop is None or not stop.reason:
                # gdb gives no reason for the stop that attaching makes
                mode = self.session.config.mode
                if mode == "attach":
                    why = f"attached to process {state.pid}" if state.pid else "attached"
            astop = state.python.stop
            if astop is not None:
                why = astop.describe()
            elif state.python.native_step:
                why = "stepped into native code"  # (tuidbg's temporary breakpoint, not one of the user's)
            parts.append(("■ stopped: ", "bold"))
            parts.append((visible(why), "bold"))
            pyf = pyview.selected_frame(state, self.py_sel)
            fr = state.frames[0] if state.frames else (stop.frame if stop else None)
            if pyf is not None:
                parts.append(f"  in {visible(pyf.name)} at {visible(pyf.file.rsplit('/', 1)[-1])}:{pyf.line} (Python)")
            elif fr is not None:
                where = fr.func or fr.addr
                if fr.file and fr.line is not None:
                    where += f" at {fr.file.rsplit('/', 1)[-1]}:{fr.line}"
                parts.append(f"  in {visible(where)}")
            rv = stop.payload.get("return-value") if stop else None
            if rv is not None:
                parts.append(f" → returned {visible(str(rv))[:80]}")
            if state.selected_thread:
                parts.append(f"   thread {state.selected_thread}")
                if state.selected_frame:
                    parts.append(f", frame {state.selected_frame}")
        elif p is ProcessState.EXITED:
            parts.append((f"program {state.exit_description or 'exited'}", "bold"))
            if self.session.config.mode == "run":
                parts.append("   R runs it again")
        elif p is ProcessState.DETACHED:
            parts.append(("detached", "bold"))
        elif p is ProcessState.GDB_EXITED:
            parts.append((f"gdb exited: {visible(state.gdb_exit or '')}", "bold"))
        else:
            parts.append(("starting…" if self.session.config.mode == "run" else "not started", "bold"))
            if state.activity:
                parts.append(f" — gdb: {visible(state.activity)}")
        if self._health.kind != watchdog.OK and self._health.describe():
            parts.append((f"   ⚠ {self._health.describe()}", "bold"))
        status.update(Content.assemble(*parts), layout=False)

    # -- stacks ------------------------------------------------------------------------------------

    @property
    def py_sel(self) -> int | None:
        """The selected Python frame: its index in the selected thread's Python stack (0 = innermost)."""
        return self._py_selection.index

    @py_sel.setter
    def py_sel(self, index: int | None) -> None:
        self._py_selection = replace(self._py_selection, index=index)

    def _update_python_selection(self, state: DebuggerState) -> None:
        self._py_selection = pyview.next_selection(state, self._py_selection)
        if self._py_selection.select_native is not None:
            self._select_frame(self._py_selection.select_native)

    def _agent(self):
        ag = pyagent.controller(self.session)
        return ag if ag is not None and ag.info.connected else None

    def _python_frame_ref(self, state: DebuggerState) -> PythonFrameRef | None:
        """The selected Python frame when the agent made this stop and a Python frame of its thread is
        selected (the watches are Python expressions there), else None."""
        if self.py_sel is None or pyview.agent_stop_here(state) is None or self._agent() is None:
            return None
        return PythonFrameRef(pyview.stop_generation(state), state.selected_thread,
                              pyview.agent_frame_index(state, self.py_sel))

    async def _python_watch(self, expressions: list[str], frame: int) -> list[tuple[str | None, str | None, str | None]]:
        ag = self._agent()
        if ag is None:
            raise EngineError("the Python agent is not connected")
        return await ag.evaluate_many(expressions, frame)

    def _update_stacks(self, state: DebuggerState) -> None:
        cpp = self.query_one(CppFramesPane)
        pt = pyview.python_thread(state) if state.is_stopped else None
        notes = pyview.eval_frame_notes(pt)
        top = pyview.agent_top(state)
        merged = merged_stack(state) if (self.merged and state.is_stopped) else None
        if merged and top:
            merged = pyview.fold_agent_top(merged, top)
        cpp.update_state(state, notes, merged, self.py_sel, top)
        self._sync_host_stack(state)
        title = "Merged stack" if self.merged else "C++ frames"
        if state.frames_thread:
            title += f" — thread {state.frames_thread}"
        self.query_one("#cpp-title", Static).update(Content(title), layout=False)
        self._update_python_frames(state, pt)

    def _thread_python(self, state: DebuggerState) -> tuple[dict[str, str], dict[int, str]]:
        """For the threads pane: the innermost Python frame of each thread (read from memory), and the
        threading names the agent reported at its last stop in this process (kept until the next)."""
        stop = state.python.stop
        if stop is not None and stop.thread_names:
            self._thread_names = (state.pid, dict(stop.thread_names))
        names = self._thread_names[1] if self._thread_names and self._thread_names[0] == state.pid else {}
        return pyview.thread_python(state, names), names

    def _sync_host_stack(self, state: DebuggerState) -> None:
        """Under a CUDA device focus, with the host stack shown (h in the C++ pane): the frames of the
        host thread that launched the kernel, below the device frames; fetched once per stop and focus."""
        cpp = self.query_one(CppFramesPane)
        ext = cuda.get(self.session)
        f = cuda.focus(state)
        tid = state.selected_thread or state.current_thread
        if not (self.show_host_stack and ext is not None and f is not None and state.is_stopped and tid):
            self._host_key = None
            cpp.set_host(None)
            return
        key = (state.generation, tid, f)
        if key == self._host_key:
            return
        self._host_key = key
        if self._host_cache is not None and self._host_cache[0] == key:  # shown again (h, h)
            cpp.set_host(self._host_cache[1])
            return
        t = state.thread(tid)
        name = f" “{t.name}”" if t is not None and t.name else ""
        label = f"host thread {tid}{name}, which launched the kernel"

        async def fetch() -> None:
            try:
                frames = await ext.host_frames(tid)
            except (EngineError, cuda.CudaError) as exc:
                cpp.set_host(HostStack(tid, label, (), f"cannot read its frames: {exc}"))
                return
            if self._host_key == key:
                host = HostStack(tid, label, frames)
                self._host_cache = (key, host)
                cpp.set_host(host)

        cpp.set_host(HostStack(tid, label, (), "reading its frames…"))
        self.run_worker(fetch, group="host-stack", exclusive=True, exit_on_error=False)

    def _update_python_frames(self, state: DebuggerState, pt) -> None:
        pane = self.query_one(PyFramesPane)
        box = self.query_one("#stack-box")
        ps = state.python.stack
        has_python = ps is not None or self.session.config.python_target
        box.set_class(not has_python, "-nopython")
        title = "Python frames"
        if ps is not None and ps.python:
            title += f" — Python {ps.python}"
        if pyview.exception_stop(state) is not None:
            title += " — traceback"
        self.query_one("#py-title", Static).update(Content(title), layout=False)
        if not state.is_stopped:
            pane.show_message(f"(the program is {state.process.value})", ("py", state.process))
        elif pt is not None and pt.frames and pyview.exception_stop(state) is not None:
            pane.show_frames(pt.frames, self.py_sel, ("py", pyview.stop_generation(state), state.selected_thread, "tb", len(pt.frames)))
        elif ps is None:
            pane.show_message("No Python interpreter found in this process (yet).", ("py", "none"))
        elif not ps.ok:
            pane.show_message(f"Python frames unavailable: {ps.reason}", ("py", "error", ps.reason))
        elif pt is None or not pt.frames:
            why = pt.error if pt is not None and pt.error else "no Python frames in this thread"
            pane.show_message(why[:1].upper() + why[1:] + ".", ("py", "empty", state.selected_thread, why))
        else:
            shown = user_frames(pt.frames)
            pane.show_frames(shown, self.py_sel, ("py", pyview.stop_generation(state), state.selected_thread, len(pt.frames)))

    def _update_locals(self, state: DebuggerState) -> None:
        pane = self.query_one(LocalsPane)
        pt = pyview.python_thread(state) if state.is_stopped else None
        if pt is not None and self.py_sel is not None:
            key = (pyview.stop_generation(state), state.selected_thread, self.py_sel)
            vars_ = self._py_locals.get(key)
            if vars_ is None:
                self._fetch_python_locals(key)
                return
            pane.update_state(state, python_vars=vars_, python_key=key)
            return
        self._native_locals_wanted(state)
        pane.update_state(state)

    def _native_locals_wanted(self, state: DebuggerState, waited: bool = False) -> None:
        """The selected native frame's locals are shown: read them if the refresh left them out
        (a Python program's session). While this stop's Python stacks are still being read, wait
        for them (they may select a Python frame) or half a second (a process without Python)."""
        s = self.session
        if not state.is_stopped or s.native_locals_on_stop:
            return
        if state.locals_key == (state.selected_thread or state.current_thread, state.selected_frame):
            return
        if not waited and state.python.stack is None and pyview.exception_stop(state) is None:
            gen = state.generation

            def later() -> None:
                st = self.state
                if st.generation == gen and self.py_sel is None:
                    self._native_locals_wanted(st, waited=True)

            self.set_timer(0.5, later)
            return
        self._run(s.load_locals, "read the locals", group="locals")

    def _fetch_python_locals(self, key: tuple) -> None:
        if key in self._py_locals_inflight:
            return  # (a fetch through the agent makes states of its own: one fetch per key)
        self._py_locals_inflight.add(key)
        epoch = self._py_locals_epoch
        gen, tid, index = key
        ag = self._agent()
        from_agent = ag is not None and pyview.exception_stop(self.state) is not None

        async def fetch() -> None:
            try:
                if from_agent:
                    # a frame of the traceback: no longer on the stack in memory; the agent has it
                    nodes = [VarNode(path=f"py:{name}", name=name, type=type_, value=value, expandable=False)
                             for name, type_, value in await ag.python_locals(index)]
                else:
                    nodes = await self._python_locals_from_memory(tid, index)
            except EngineError as exc:
                nodes = [VarNode(path="py:!", name="(Python locals)", error=str(exc), expandable=False)]
            finally:
                if epoch == self._py_locals_epoch:
                    self._py_locals_inflight.discard(key)
            if epoch != self._py_locals_epoch:
                return  # read before Python ran in the program (pyeval): a newer fetch has it
            if len(self._py_locals) > 64:
                self._py_locals.clear()
            self._py_locals[key] = nodes
            if (pyview.stop_generation(self.state), self.state.selected_thread, self.py_sel) == key:
                self.query_one(LocalsPane).update_state(self.state, python_vars=nodes, python_key=key)

        # not exclusive: a newer fetch must not cancel one under way (it would be asked again)
        self.run_worker(fetch, group="pylocals", exit_on_error=False)

    async def _python_locals_from_memory(self, tid: str, index: int) -> list[VarNode]:
        locs = await pystack.python_locals(self.session, tid, index)
        return [
            VarNode(
                path=f"py:{loc.name}", name=loc.name, type=loc.type, value=loc.value,
                error=None if loc.value is not None else (loc.error or "cannot be read"), expandable=False,
            )
            for loc in locs
        ]

    def _python_values_may_have_changed(self) -> None:
        """After Python code ran in the program at a stop (pyeval x = 5): read the locals and the
        watches again (they are kept per stop)."""
        self._py_locals.clear()
        self._py_locals_inflight.clear()
        self._py_locals_epoch += 1
        st = self.state
        self._update_locals(st)
        self.query_one(WatchPane).update_state(st, force=True, python=self._python_frame_ref(st))

    def _python_breakpoint_rows(self, state: DebuggerState) -> list[dict]:
        bps = state.python_breakpoints
        return [
            {
                "id": b.id, "file": b.file, "line": b.effective_line, "requested_line": b.line,
                "condition": b.condition, "enabled": b.enabled, "hits": b.hits,
            }
            for b in bps
        ]

    # -- source -----------------------------------------------------------------------------------

    def _update_source(self, state: DebuggerState, prev: DebuggerState) -> None:
        src = self.query_one(SourceView)
        title = self.query_one("#source-title", Static)
        pyf = pyview.selected_frame(state, self.py_sel)
        skey = (pyview.stop_generation(state), state.selected_thread, state.selected_frame, state.process, state.frames, pyf)
        moved = skey != self._source_key
        self._source_key = skey
        if moved and state.is_stopped and pyf is not None and os.path.exists(pyf.file):
            self._user_file = None
            if src.show_file(pyf.file):
                src.set_pc(pyf.line, top=pyf.index == 0)
                title.update(Content(visible(pyf.file) + f"  (Python, {pyf.name})"), layout=False)
        elif moved and state.is_stopped:
            self._user_file = None
            frame = state.selected
            if frame is None and state.frames:
                frame = state.frames[0]
            if frame is not None and frame.fullname and frame.line is not None and os.path.exists(frame.fullname):
                if src.show_file(frame.fullname):
                    src.set_pc(frame.line, top=state.selected_frame == 0)
                    title.update(Content(visible(frame.fullname)), layout=False)
            elif frame is not None:
                lib = f" in {frame.library}" if frame.library else ""
                what = frame.func or "??"
                lines = [f"Source not available for {what}{lib}.", f"Address {frame.addr}."]
                if frame.fullname and frame.line is not None:
                    lines.append(f"gdb names {frame.fullname}:{frame.line}, which is not on this machine (set substitute-path maps folders).")
                elif not frame.file:
                    lines.append("The library has no line information (no DWARF); the C++ frames pane still shows where it is.")
                src.show_message(lines)
                title.update(Content("Source — not available"), layout=False)
        elif moved and not state.is_stopped and not self._user_file:
            src.set_pc(None)
        self._update_marks(state)

    def _update_marks(self, state: DebuggerState) -> None:
        src = self.query_one(SourceView)
        marks: dict[int, BreakpointMark] = {}
        if src.path:
            for b in state.breakpoints:
                if b.internal:
                    continue
                for full, line in b.source_lines():
                    if full == src.path:
                        marks[line] = BreakpointMark(enabled=b.enabled, conditional=bool(b.condition), pending=False)
            for r in self._python_breakpoint_rows(state):
                if r.get("file") == src.path:
                    marks[int(r["line"])] = BreakpointMark(enabled=r.get("enabled", True), conditional=bool(r.get("condition")), python=True)
        src.set_marks(marks)

    def show_file(self, path: str, line: int | None = None) -> bool:
        src = self.query_one(SourceView)
        path = os.path.abspath(os.path.expanduser(path))
        if not src.show_file(path, line):
            self.notify(f"cannot open {path}", severity="warning", markup=False)
            return False
        self._source_opened()
        self._user_file = path
        self.query_one("#source-title", Static).update(Content(visible(path)), layout=False)
        st = self.state
        frame = st.selected if st.is_stopped else None
        if frame is not None and frame.fullname == path and frame.line is not None:
            src.set_pc(frame.line, top=st.selected_frame == 0)
            if line is not None:
                src.goto_line(line)
        else:
            src.pc_line = None
        self._update_marks(st)
        return True

    # -- layout -------------------------------------------------------------------------------------

    def on_resize(self, event) -> None:
        self._layout(event.size.width, event.size.height)

    def _layout(self, width: int, height: int) -> None:
        main = self.query_one("#main", Grid)
        narrow = width < NARROW_WIDTH or height < NARROW_HEIGHT
        self.narrow = narrow
        main.set_class(narrow, "-narrow")
        if narrow and not any(main.has_class(c) for c in GROUP_CLASS.values()):
            main.add_class("-show-stack")

    def _show_group(self, group: str) -> None:
        main = self.query_one("#main", Grid)
        for g, cls in GROUP_CLASS.items():
            main.set_class(g == group, cls)

    # -- errors ---------------------------------------------------------------------------------------

    def _error(self, message: str) -> None:
        self.notify(message, severity="error", markup=False, timeout=8)
        try:
            self.query_one(ConsolePane).log_widget.write_lines([message], style="error")
        except Exception:
            pass

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR and event.worker.error is not None:
            err = event.worker.error
            if isinstance(err, (EngineError, asyncio.TimeoutError)):
                self._error(str(err) or type(err).__name__)
            else:
                log.exception("worker failed", exc_info=err)
                self._error(f"internal error in {event.worker.name or 'a task'}: {type(err).__name__}: {err}")

    # -- actions: execution -----------------------------------------------------------------------------

    def _run(self, coro_factory, what: str, group: str = "exec") -> None:
        async def job() -> None:
            try:
                await coro_factory()
            except GdbExited as exc:
                self._error(f"{what}: gdb is gone ({exc.reason})")
            except EngineError as exc:
                self._error(f"{what}: {exc}")

        self.run_worker(job(), group=group, exit_on_error=False, name=what)

    def action_exec(self, op: str) -> None:
        st = self.state
        if st.process is ProcessState.EXITED and self.session.config.mode == "run":
            self.notify("the program has exited; R runs it again", markup=False)
            return
        if op in ("stepi", "nexti"):
            self._step_instruction(over=op == "nexti")
            return
        names = {"cont": "continue", "next": "next", "step": "step", "finish": "finish", "until": "until"}
        ag = self._agent()
        if ag is not None and st.is_stopped:
            tid = st.selected_thread
            if op == "cont":
                self._run(ag.resume, "continue")
                return
            # A Python frame is selected, or the agent stopped here and the Python stack is not
            # decoded yet (a key pressed right after the stop): step at the Python level.
            python_level = self.py_sel is not None or (
                st.python.stop is not None and pyview.python_thread(st) is None
            )
            if python_level and op in ("next", "step", "finish", "until"):
                frame = pyview.agent_frame_index(st, self.py_sel)
                fn = {"next": ag.step_over, "until": ag.step_over, "step": ag.step_into, "finish": ag.step_out}[op]
                self._run(lambda: fn(frame=frame, thread=tid), f"Python {names[op]}")
                return
            if op == "finish" and pyview.returns_into_python(st):
                self._run(ag.step_out_to_python, "finish to Python")
                return
        self._run(getattr(self.session, op), names.get(op, op))

    def action_interrupt(self) -> None:
        if self.state.is_running:
            self.notify("interrupting the program…", markup=False, timeout=2)
        self._run(self.session.interrupt, "interrupt", group="interrupt")

    def action_restart_program(self) -> None:
        if self.session.config.mode != "run":
            self.notify(f"only a program started by tuidbg run can be restarted ({self.session.config.mode} mode)", markup=False)
            return
        if self.state.process is ProcessState.GDB_EXITED:
            self.restart_session()
            return

        async def restart() -> None:
            if self.state.process is ProcessState.RUNNING:
                await self.session.interrupt()
            self.query_one(OutputPane).note(f"── restarting {self.session.config.describe()}")
            await self.session.run()

        self._run(restart, "restart")

    def action_step_into_native(self) -> None:
        ag = self._agent()
        if ag is None:
            self.notify("step into native needs tuidbg's Python agent (a Python program under tuidbg run or attach)", markup=False)
            return
        frame = pyview.agent_frame_index(self.state, self.py_sel)
        self._run(lambda: ag.step_into_native(frame=frame), "step into native")

    def action_run_to_cursor(self) -> None:
        if self._disasm_focused():
            self._run_to_instruction()
            return
        src = self.query_one(SourceView)
        if not src.path:
            self.notify("no source file shown", markup=False)
            return
        path, line = src.path, src.cursor_line
        if path.endswith(".py"):
            ag = self._agent()
            if ag is None:
                self.notify("running to a Python line needs tuidbg's Python agent (a Python program under tuidbg run or attach)",
                            markup=False)
                return

            async def to_python_line() -> None:
                # a temporary Python breakpoint there, then continue (what gdb does for a C line)
                bp = await ag.add_breakpoint(path, line, temporary=True)
                if bp.message:
                    self.notify(bp.message, markup=False)
                if self.state.is_stopped:
                    await ag.resume()

            self._run(to_python_line, "run to cursor")
            return
        self._run(lambda: self.session.run_to(path, line), "run to cursor")

    def action_frame(self, delta: int) -> None:
        st = self.state
        if not st.is_stopped:
            return
        pt = pyview.python_thread(st) if self.py_sel is not None else None
        if pt is not None:
            # a Python frame is selected: up and down go from Python frame to Python frame (pdb's u/d)
            shown = user_frames(pt.frames)
            at = next((i for i, f in enumerate(shown) if f.index == self.py_sel), None)
            if at is not None:
                if 0 <= at + delta < len(shown):
                    self._choose_python(shown[at + delta])
                    return
                # past the last Python frame that way: on to the native frames beyond it (C code it
                # calls, the process's start), never into the agent's own frames
                level = shown[at].native_level
                target = level + delta if level is not None else -1
                if target < pyview.agent_top(st) or target >= len(st.frames):
                    return
                self.py_sel = None
                self._select_frame(target)
                return
        if not st.frames:
            return
        target = st.selected_frame + delta
        if 0 <= target < len(st.frames):
            self._select_frame(target)
        elif target >= len(st.frames) and st.more_frames:
            self._run(self.session.load_more_frames, "load more frames")

    def _select_frame(self, level: int) -> None:
        self._run(lambda: self.session.select_frame(level), "select frame", group="select")

    # -- actions: breakpoints -----------------------------------------------------------------------

    def action_toggle_breakpoint(self) -> None:
        if self._disasm_focused():
            self._toggle_instruction_breakpoint()
            return
        src = self.query_one(SourceView)
        if not src.path:
            self.notify("no source file shown", markup=False)
            return
        self._toggle_bp_at(src.path, src.cursor_line)

    def _toggle_bp_at(self, path: str, line: int) -> None:
        if path.endswith(".py"):
            ag = pyagent.controller(self.session)
            if ag is None:
                self.notify("Python breakpoints need tuidbg's Python agent (a Python program under tuidbg run or attach)", markup=False)
                return

            async def toggle_py() -> None:
                bp = await ag.toggle_breakpoint_at(path, line)
                if bp is not None and bp.message:
                    self.notify(bp.message, markup=False)

            self._run(toggle_py, "Python breakpoint")
            return

        async def toggle() -> None:
            bp = await self.session.toggle_breakpoint_at(path, line)
            if bp is not None and bp.line is not None and bp.line != line and bp.fullname == path:
                self.notify(f"breakpoint {bp.number} placed at line {bp.line} (no code at line {line})", markup=False)

        self._run(toggle, "breakpoint")

    @on(SourceView.BreakpointToggle)
    def _source_toggle(self, message: SourceView.BreakpointToggle) -> None:
        self._toggle_bp_at(message.path, message.line)

    def action_breakpoint_condition(self) -> None:
        src = self.query_one(SourceView)
        if not src.path:
            return
        for row in self._python_breakpoint_rows(self.state):
            if row["file"] == src.path and row["line"] == src.cursor_line:
                self._edit_python_condition(int(row["id"]), row.get("condition") or "")
                return
        bps = [b for b in self.state.breakpoints if not b.internal and (src.path, src.cursor_line) in b.source_lines()]
        if not bps:
            self.notify("no breakpoint on this line (b sets one)", markup=False)
            return
        self._edit_condition(bps[0].number.split(".")[0], bps[0].condition or "")

    def _edit_python_condition(self, bp_id: int, current: str) -> None:
        ag = pyagent.controller(self.session)
        if ag is None:
            return

        def done(value: str | None) -> None:
            if value is not None:
                self._run(lambda: ag.set_condition(bp_id, value.strip() or None), "condition")

        self.push_screen(PromptScreen(f"Condition for Python breakpoint {bp_id}", current, "a Python expression, e.g. n > 3"), done)

    def _edit_condition(self, number: str, current: str) -> None:
        def done(value: str | None) -> None:
            if value is None:
                return
            self._run(lambda: self.session.break_condition(number, value.strip() or None), "condition")

        self.push_screen(
            PromptScreen(f"Condition for breakpoint {number}", current, "e.g. i == 42 (empty: none)"), done
        )

    @on(BreakpointsPane.Action)
    def _breakpoint_action(self, message: BreakpointsPane.Action) -> None:
        num = message.number
        if num.startswith("gone"):
            remembered.forget(self, message.kind, int(num[4:]))
            return
        b = self.state.breakpoint(num)
        if message.python:
            self._python_breakpoint_action(message.kind, int(num))
            return
        if b is None:
            return
        if message.kind == "toggle":
            self._run(lambda: self.session.break_enable(num, not b.enabled), "enable breakpoint")
        elif message.kind == "delete":
            self._run(lambda: self.session.break_delete(num), "delete breakpoint")
        elif message.kind == "condition":
            self._edit_condition(num, b.condition or "")
        elif message.kind == "goto":
            lines = b.source_lines()
            if lines:
                self.show_file(lines[0][0], lines[0][1])
                self.action_pane("source")

    def _python_breakpoint_action(self, kind: str, bp_id: int) -> None:
        ag = pyagent.controller(self.session)
        bp = ag.breakpoint(bp_id) if ag is not None else None
        if ag is None or bp is None:
            return
        if kind == "toggle":
            self._run(lambda: ag.enable_breakpoint(bp_id, not bp.enabled), "enable Python breakpoint")
        elif kind == "delete":
            self._run(lambda: ag.delete_breakpoint(bp_id), "delete Python breakpoint")
        elif kind == "condition":
            self._edit_python_condition(bp_id, bp.condition or "")
        elif kind == "goto":
            self.show_file(bp.file, bp.effective_line)
            self.action_pane("source")

    # -- actions: views -----------------------------------------------------------------------------

    def action_toggle_merged(self) -> None:
        self.merged = not self.merged
        self.query_one("#stack-box").set_class(self.merged, "-merged")
        self._update_stacks(self.state)
        self.notify("merged Python/C++ stack" if self.merged else "separate Python and C++ stacks", markup=False, timeout=2)

    def action_toggle_maximize(self) -> None:
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
            return
        focused = self.focused
        target = focused
        while target is not None and target.parent is not None and target.id not in (
            "source-pane", "stack-group", "vars-group", "io-group"
        ):
            target = target.parent  # type: ignore[assignment]
        if target is not None and target.id is not None:
            screen.maximize(target, container=False)

    def action_open_file(self) -> None:
        async def known_files() -> None:
            files: list[str] = []
            try:
                res = await self.session.cmd("-file-list-exec-source-files", timeout=20, check=False)
                for f in mi.as_list(res.get("files")):
                    if isinstance(f, dict) and f.get("fullname"):
                        files.append(str(f["fullname"]))
            except EngineError:
                pass
            start = os.path.dirname(self.query_one(SourceView).path or "") 
            self.push_screen(OpenFileScreen(files, start + "/" if start else ""), self._opened)

        self.run_worker(known_files(), group="open", exit_on_error=False)

    def _opened(self, path: str | None) -> None:
        if path:
            spec, line = path, None
            if ":" in path and path.rsplit(":", 1)[1].isdigit():
                spec, num = path.rsplit(":", 1)
                line = int(num)
            if self.show_file(spec, line):
                self.action_pane("source")

    def action_find(self) -> None:
        src = self.query_one(SourceView)

        def done(text: str | None) -> None:
            if text:
                if src.find(text) is None:
                    self.notify(f"{text!r} not found", markup=False)
                self.action_pane("source")

        self.push_screen(PromptScreen("Find in this file", src.search or ""), done)

    def action_goto_line(self) -> None:
        src = self.query_one(SourceView)

        def done(text: str | None) -> None:
            if text and text.strip().isdigit():
                src.goto_line(int(text))
                self.action_pane("source")

        self.push_screen(PromptScreen("Go to line", ""), done)

    def action_add_watch(self) -> None:
        def done(text: str | None) -> None:
            if text and text.strip():
                self.query_one(WatchPane).add_expression(text)
                self.action_pane("watch")

        if self._python_frame_ref(self.state) is not None:
            # a Python frame of an agent stop is selected: the watches are Python there
            self.push_screen(PromptScreen("Watch expression (Python here, C/C++ in native frames)", "",
                                          "e.g. len(items), t.shape"), done)
            return
        self.push_screen(PromptScreen("Watch expression", "", "e.g. pt.x + pt.y, *array@10"), done)

    def action_pane(self, name: str) -> None:
        widget_id, group, tab = PANES.get(name, (None, None, None))
        if widget_id is None:
            return
        if name == "cuda" and not self.session.info.is_cuda:
            self.notify("the CUDA pane needs cuda-gdb: start tuidbg with --cuda", markup=False)
            return
        if group and tab:
            self.query_one(f"#{group}", TabbedContent).active = tab
            if self.narrow:
                self._show_group(group)
        if name == "python" and self.merged:
            widget_id = "cpp-list"
        if name == "source" and self.disasm_shown:
            widget_id = "disasm"
        try:
            self.query_one(f"#{widget_id}").focus()
        except Exception:
            pass

    def action_help(self) -> None:
        rows = []
        chain: list[Any] = []
        node = self.focused
        while node is not None:
            chain.append(node)
            node = node.parent  # type: ignore[assignment]
        chain.append(self)
        keymap = self._keymap
        all_rows: dict[str, tuple[str, str]] = {}
        for node in chain:
            for b in getattr(type(node), "BINDINGS", []):
                if isinstance(b, Binding) and b.id and b.id not in all_rows:
                    keys = keymap.get(b.id, b.key)
                    all_rows[b.id] = (keys, b.description)
        for bid, (keys, desc) in all_rows.items():
            rows.append((", ".join(self.get_key_display(Binding(k.strip(), "")) for k in keys.split(",")), desc, bid))
        self.push_screen(HelpScreen(rows, self.keymap_info.name))

    def action_screenshot(self) -> None:
        path = self.save_screenshot(path=os.getcwd())
        self.notify(f"screenshot saved: {path}", markup=False)

    # -- quitting and restarting ------------------------------------------------------------------------

    def action_quit_debugger(self) -> None:
        st = self.state
        if not st.has_process or self.session.config.mode == "core" or st.process is ProcessState.GDB_EXITED:
            self._close_and_exit("auto")
            return
        desc = f"process {st.pid or self.session.config.pid}" if st.pid or self.session.config.pid else "the program"

        def chosen(choice: str | None) -> None:
            if choice in ("detach", "kill"):
                self._close_and_exit(choice)

        self.push_screen(QuitScreen(self.session.config.mode, desc), chosen)

    @work(group="quit", exit_on_error=False)
    async def _close_and_exit(self, how: str) -> None:
        self._quitting = True
        remembered.sync(self)
        try:
            await asyncio.wait_for(self.session.close(how), 15)
        except Exception as exc:
            log.info("closing the session: %s", exc)
        self.exit(0)

    def quit_on_signal(self, signum: int) -> None:
        """SIGTERM, SIGHUP, SIGQUIT or a SIGINT sent with kill: quit as q does (run: the program is killed;
        attach: detached, it runs on), without asking."""
        if self._quitting:
            return
        self._close_and_exit("auto")

    # -- a gdb that does not answer ----------------------------------------------------------------------

    def _check_gdb(self) -> None:
        if self._quitting or self._closing_screen():
            return
        health = self.session.health()
        changed = health != self._health
        self._health = health
        if changed:
            self._update_status(self.state)
        if self._hung_screen is not None and not health.hung:
            screen, self._hung_screen = self._hung_screen, None
            if screen.is_attached:
                screen.dismiss("answered")
            return
        if self._hung_screen is not None:
            self._hung_screen.update_what(health.describe())
            return
        if not health.hung or health.token is None:
            return
        ask_at = self._hung_asked.get(health.token, 6.0)
        if health.waited < ask_at:
            return
        self._hung_asked[health.token] = health.waited + 20.0  # "wait": ask again 20 s later
        self._hung_screen = GdbHungScreen(health.describe(), health.kind == watchdog.STOPPED, self.session.config.mode)
        self.push_screen(self._hung_screen, self._after_gdb_hung)

    def _after_gdb_hung(self, choice: str | None) -> None:
        self._hung_screen = None
        if choice == "wake":
            self.session.wake_gdb()
        elif choice in ("kill", "restart"):
            if choice == "restart":
                self._gdb_exit_shown = True  # (no "gdb is gone" dialog: it comes back at once)

            async def kill_gdb() -> None:
                what = await asyncio.get_running_loop().run_in_executor(None, self.session.abandon)
                self.query_one(ConsolePane).log_widget.write_lines([f"gdb killed; {what}"], style="error")
                if choice == "restart":
                    self.restart_session()

            self._run(kill_gdb, "kill gdb", group="session")

    def _after_gdb_exit(self, choice: str | None) -> None:
        if choice == "restart":
            self.restart_session()
        elif choice == "quit":
            self._close_and_exit("auto")

    def restart_session(self, config=None) -> None:
        """A new gdb: with the same configuration, or ``config`` (a launch profile chosen in the palette)."""
        async def restart() -> None:
            old = self.session
            try:
                await old.close()
            except Exception:
                pass
            new = old.renew(config)
            self.session = new
            self._attach_panes(new)
            new.on_state(self._on_engine_state)
            new.on_program_output(self._on_engine_output)
            new.on_console(self._on_engine_console)
            self._gdb_exit_shown = False
            self.query_one(ConsolePane).log_widget.write_lines(["── restarting gdb"], style="note")
            await new.start()
            if old.config.mode in ("attach", "core"):
                await new.launch()
            self._apply_state(new.state)
            if new.config.mode == "run":
                self.query_one(OutputPane).note(f"── starting {new.config.describe()}")
                await new.launch()

        self._run(restart, "restart session", group="session")

    # -- console ----------------------------------------------------------------------------------------

    @on(ConsolePane.CommandSubmitted)
    def _console_command(self, message: ConsolePane.CommandSubmitted) -> None:
        cmd = message.command
        log_w = self.query_one(ConsolePane).log_widget
        log_w.write_lines([f"(gdb) {cmd}"], style="echo")
        if cmd.startswith(":"):
            self._tuidbg_command(cmd[1:].strip())
            return

        async def run() -> None:
            try:
                ag = pyagent.controller(self.session)
                if ag is not None:
                    ref = self._python_frame_ref(self.state)
                    stop = ag.at_agent_stop()
                    word = cmd.split()[0] if cmd.split() else ""
                    if (stop is not None and ref is None and word in ("pyprint", "pyeval", "pylocals")
                            and self.state.selected_thread != stop.thread_id):
                        log_w.write_lines([f"(in thread {stop.thread_id}, where the agent stopped: Python runs only there)"],
                                          style="note")
                    if word in ("c", "cont", "continue") and len(cmd.split()) == 1 and self.state.is_stopped:
                        # gdb's continue, through the agent: it answers its own stop, and a Python
                        # breakpoint set at a native stop is in place before the program runs on
                        await ag.resume()
                        return
                    text = await ag.handle_console(cmd, ref.frame if ref is not None else 0)
                    if text is not None:
                        log_w.write_lines(text.splitlines() or [""])
                        if word in ("pyprint", "pyeval") and stop is not None:
                            self._python_values_may_have_changed()
                        return
                await self.session.console(cmd, timeout=None if cmd.split()[0] in ("run", "start") else 120)
            except MIError as exc:
                self._flush_buffers()
                log_w.write_lines(exc.message.splitlines() or [""], style="error")
            except EngineError as exc:
                self._flush_buffers()
                log_w.write_lines([str(exc)], style="error")

        self.run_worker(run(), group="console", exit_on_error=False, name="console")

    def _tuidbg_command(self, text: str) -> None:
        log_w = self.query_one(ConsolePane).log_widget
        word, _, arg = text.partition(" ")
        arg = arg.strip()
        if word in ("e", "edit", "open"):
            if not arg:
                self.action_open_file()
            else:
                self._opened(arg)
        elif word in ("w", "watch"):
            if arg:
                self.query_one(WatchPane).add_expression(arg)
                self.action_pane("watch")
        elif word in ("q", "quit"):
            self.action_quit_debugger()
        elif word == "theme":
            if not arg:
                log_w.write_lines(["themes: " + ", ".join(sorted(self.available_themes))], style="note")
            else:
                self._apply_theme(arg)
        elif word == "keymap":
            try:
                km = tconfig.load_keymap(arg or None, self.settings.keys)
            except tconfig.UsageError as exc:
                log_w.write_lines([str(exc)], style="error")
                return
            self.keymap_info = km
            self.set_keymap(km.keys)
            log_w.write_lines([f"keymap {km.name}"], style="note")
        elif word in ("help", "h", ""):
            log_w.write_lines(
                [
                    ":e FILE[:LINE]   open a file in the source pane (no FILE: pick one)",
                    ":w EXPR          add a watch expression",
                    ":theme [NAME]    list themes or switch to one",
                    ":keymap NAME     switch keymap (default, vscode, vim or a .toml file)",
                    ":q               quit (asks whether to detach or kill)",
                    "Anything else is a gdb command; an empty line repeats the last one.",
                ],
                style="note",
            )
        else:
            log_w.write_lines([f"unknown tuidbg command :{word} (:help lists them)"], style="error")

    @on(CommandInput.CompleteRequested)
    def _complete(self, message: CommandInput.CompleteRequested) -> None:
        text = message.text

        async def complete() -> None:
            try:
                matches = await self.session.complete(text)
            except EngineError:
                return
            inp = self.query_one(CommandInput)
            if not matches:
                return
            if len(matches) == 1:
                inp.value = matches[0] + " "
            else:
                prefix = os.path.commonprefix(matches)
                if len(prefix) > len(text):
                    inp.value = prefix
                self.query_one(ConsolePane).log_widget.write_lines(["  ".join(matches[:200])], style="log")
            inp.cursor_position = len(inp.value)

        self.run_worker(complete, group="complete", exclusive=True, exit_on_error=False)

    @on(OutputPane.InputSubmitted)
    def _program_input(self, message: OutputPane.InputSubmitted) -> None:
        if not self.state.has_process:
            self.notify("the program is not running", markup=False)
            return
        self.session.write_program_input(message.data)

    # -- selection ------------------------------------------------------------------------------------

    @on(CppFramesPane.FrameChosen)
    def _frame_chosen(self, message: CppFramesPane.FrameChosen) -> None:
        st = self.state
        pt = pyview.python_thread(st)
        partners = pt.frames_at(message.level) if pt is not None else ()
        self.py_sel = partners[0].index if partners else None
        if message.level != st.selected_frame:
            self._select_frame(message.level)
        else:
            self._apply_state(st)

    @on(CppFramesPane.PythonChosen)
    @on(PyFramesPane.FrameChosen)
    def _python_chosen(self, message) -> None:
        self._choose_python(message.frame)

    def _choose_python(self, frame) -> None:
        self.py_sel = frame.index
        st = self.state
        if frame.native_level is not None and frame.native_level != st.selected_frame:
            self._select_frame(frame.native_level)
        else:
            self._apply_state(st)

    @on(CppFramesPane.HostStackToggled)
    def _host_stack_toggled(self, message: CppFramesPane.HostStackToggled) -> None:
        if cuda.get(self.session) is None or not cuda.device_focus(self.state):
            self.notify("h shows the host stack that launched the kernel when the focus is on a CUDA device thread",
                        markup=False)
            return
        self.show_host_stack = not self.show_host_stack
        self._sync_host_stack(self.state)

    @on(CppFramesPane.HostFrameChosen)
    def _host_frame_chosen(self, message: CppFramesPane.HostFrameChosen) -> None:
        ext = cuda.get(self.session)
        if ext is None:
            return
        tid, level = message.thread, message.level

        async def go() -> None:
            await ext.select_host_thread(tid)  # leaves the device focus; "." in the CUDA pane returns
            if level:
                await self.session.select_frame(level)

        self._run(go, "select the host frame", group="select")

    @on(CppFramesPane.MoreRequested)
    def _more_frames(self, message: CppFramesPane.MoreRequested) -> None:
        self._run(self.session.load_more_frames, "load more frames")

    @on(ThreadsPane.ThreadChosen)
    def _thread_chosen(self, message: ThreadsPane.ThreadChosen) -> None:
        if message.thread_id != self.state.selected_thread:
            tid = message.thread_id
            ext = cuda.get(self.session)
            if ext is not None and cuda.device_focus(self.state):
                # leave the device focus cleanly; the CUDA pane's "." goes back to it
                self._run(lambda: ext.select_host_thread(tid), "select thread", group="select")
            else:
                self._run(lambda: self.session.select_thread(tid), "select thread", group="select")

    @on(VariablesTree.ShowValue)
    def _show_value(self, message: VariablesTree.ShowValue) -> None:
        varobj, expr = message.varobj, message.expression
        st = self.state
        if (varobj is None and expr is None) or not st.is_stopped or st.python.stack is not None and self.py_sel is not None:
            # (Python locals are read from memory, whole up to their own caps)
            self.push_screen(ValueScreen(message.title, message.value))
            return

        async def whole() -> None:
            # gdb cuts strings and arrays at "print elements" (200): read this one again with a
            # much larger bound, then put the user's setting back.
            value = message.value
            s = self.session
            old = await s.cmd("-gdb-show print elements", check=False)
            limit = str(old.get("value") or "200") if old.cls == "done" else "200"
            try:
                if limit != "unlimited":
                    await s.cmd(f"-gdb-set print elements {FULL_VALUE_ELEMENTS}", check=False)
                if varobj is not None:
                    r = await s.cmd(f"-var-evaluate-expression -f natural {varobj}", check=False)
                else:
                    opt = s.thread_options(frame=st.selected_frame)  # nothing under a CUDA device focus
                    r = await s.cmd(f"-data-evaluate-expression {opt}{mi.quote(expr)}", check=False)
                if r.cls == "done" and r.get("value") is not None:
                    value = str(r.get("value"))
            finally:
                if limit != "unlimited":
                    await s.cmd(f"-gdb-set print elements {limit}", check=False)
            self.push_screen(ValueScreen(message.title, value))

        self._run(whole, "read the whole value")

    def handle_bindings_clash(self, clashed_bindings, node) -> None:
        ids = sorted(b.id or b.action for b in clashed_bindings)
        self.notify(f"keys clash between {', '.join(ids)}", severity="warning", markup=False)


def _group_console(recs: list[mi.MIRecord]) -> list[tuple[str, list[str]]]:
    """Console records as (style, lines), merging consecutive records of one style."""
    out: list[tuple[str, list[str]]] = []
    buf = ""
    style = ""

    def flush() -> None:
        nonlocal buf
        if buf:
            lines = buf.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            out.append((style, lines))
            buf = ""

    for r in recs:
        s = {mi.CONSOLE: "", mi.TARGET: "", mi.LOG: "log", mi.TEXT: "note"}.get(r.kind, "")
        text = r.text if r.kind != mi.TEXT else (r.text + "\n")
        if s != style:
            flush()
            style = s
        buf += text
    flush()
    return out
