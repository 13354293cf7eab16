"""TuidbgApp: the one place where engine events become Textual messages.

The session's listeners (state, program output, console output) post messages
or fill buffers that a 50 ms timer flushes, so a flood of output is written in
batches. Panes are small widgets that each own one view of the state; key
presses run actions that await session operations in workers, and any error
they raise is shown in the UI (a notification and the status line), never as a
traceback.

This module holds composition, start-up, the engine -> UI door, layout, errors, quitting and a
gdb that does not answer. The rest of the app is in mixins, one job each (each uses the app's
panes, ``state`` and ``session``):

- ``app_status.StatusPart``: the status line;
- ``app_stacks.StacksPart``: the stacks, the Python view, locals, and choices made in them (app_tasks: tasks);
- ``app_source.SourcePart``: the source area, files, marks, watches, pane focus and views;
- ``app_exec.ExecPart``: running, stepping, frames up and down, breakpoints, exit notes;
- ``app_console.ConsolePart``: the console, completion, the program's input;
- ``app_parallel.ParallelPart``: the Parallel Stacks tab, ``pyall``, the run group;
- ``native_actions.NativeActions``: disassembly, registers, memory, instruction stepping.

Handlers of pane messages in the mixins are named by Textual's convention (``on_<pane>_<message>``):
``@on`` needs the App's metaclass, which a plain mixin does not have.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Grid, Vertical
from textual.content import Content
from textual.theme import Theme
from textual.timer import Timer
from textual.widgets import Footer, Static, TabbedContent, TabPane
from textual.worker import Worker, WorkerState

from tuidbg import config as tconfig
from tuidbg.engine import mi, pyagent, watchdog
from tuidbg.engine.errors import EngineError, StartupError
from tuidbg.engine.python import view as pyview
from tuidbg.engine.session import DebugSession
from tuidbg.engine.state import DebuggerState, ProcessState
from tuidbg.ui import bindings, remembered
from tuidbg.ui.app_console import ConsolePart, group_console
from tuidbg.ui.app_exec import ExecPart
from tuidbg.ui.app_parallel import ParallelPane, ParallelPart
from tuidbg.ui.app_source import SourcePart, StateChanged
from tuidbg.ui.app_stacks import StacksPart
from tuidbg.ui.app_status import StatusLine, StatusPart
from tuidbg.ui.app_start import StartPart
from tuidbg.ui.app_tasks import TasksPart
from tuidbg.ui.bridge import SessionBridge
from tuidbg.ui.fastkeys import FastKeys
from tuidbg.ui.native_actions import NativeActions
from tuidbg.ui.panes.disasm import DisasmView
from tuidbg.ui.panes.frames import CppFramesPane, PyFramesPane
from tuidbg.ui.panes.io import ConsolePane, OutputPane
from tuidbg.ui.panes.memory import MemoryView
from tuidbg.ui.panes.registers import RegistersPane
from tuidbg.ui.panes.source import SourceView
from tuidbg.ui.panes.processes import ProcessesPane
from tuidbg.ui.panes.tables import BreakpointsPane, ThreadsPane
from tuidbg.ui.panes.variables import LocalsPane, VariablesTree, VarNode, WatchPane
from tuidbg.ui.screens.modals import GdbHungScreen, QuitScreen

log = logging.getLogger("tuidbg.ui")

NARROW_WIDTH = 100
RUN_SHOWN = 0.1  # seconds a resumed program runs before the stacks and variables show it running
NARROW_HEIGHT = 30
GIL_SWITCH_S = 0.0001  # (see on_mount)

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


@dataclass
class _Pending:
    output: bytearray
    console: list[mi.MIRecord]


class TuidbgApp(StatusPart, StartPart, StacksPart, TasksPart, SourcePart, ExecPart, ConsolePart, ParallelPart,
                NativeActions, FastKeys, App[int], inherit_bindings=False):
    CSS_PATH = "app.tcss"
    TITLE = "tuidbg"
    BINDINGS = bindings.global_bindings()
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = {lambda: importlib.import_module("tuidbg.ui.palette").DebuggerCommands}  # (loaded as the palette opens)

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
        # (a program tuidbg run started before the screen: the screen starts from nothing, so that what
        # happened meanwhile, its exit or gdb's, is noticed as it is for a program started later)
        first = DebuggerState() if session.launch_begun else session.state
        self.state: DebuggerState = first
        self._painted: DebuggerState = first  # the state the panes show (a brief run is not shown)
        self._run_timer: Timer | None = None
        self._answers: set[asyncio.Future] = set()  # the answers of steps sent at once (app_exec)
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
        self._main_grid: Grid | None = None
        # Called once the session is closed after a signal (the terminal guard: leave at once after SIGHUP).
        self.after_signal_close: Callable[[], object] | None = None
        self._signal_quit = False
        # The selected Python frame (its index, 0 = innermost; see python.view.next_selection).
        self._py_selection = pyview.PySelection()
        self._py_locals: dict[tuple, list[VarNode]] = {}
        self._py_locals_inflight: set[tuple] = set()
        self._py_locals_epoch = 0  # bumped when Python ran in the program at a stop: older reads are stale
        self._thread_names: tuple | None = None  # (pid, {LWP: threading name}) from the agent's last stop
        self._source_key: tuple | None = None
        # A stop's line shown first (app_source._show_stop_line): its stop, the stop whose other panes
        # wait for that screen update, and the latest state of that stop meanwhile.
        self._line_key: tuple | None = None
        self._line_pending: tuple | None = None
        self._held: DebuggerState | None = None
        self._cuda_tab: bool | None = None
        self._processes_tab = False  # shown once a second process is under the debugger
        self._processes_hidden = False
        self._health = watchdog.GdbHealth()
        # an action refused at a stop ((inferior, stop generation), the reason): in the status line until the next stop
        self.stop_note: tuple[Any, str] | None = None
        self._hung_screen: GdbHungScreen | None = None
        self._hung_asked: dict[int, float] = {}  # command token -> wait time at which to ask (again)
        self._register_themes()
        self._apply_theme(self._theme_name)

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
                with TabPane("Processes", id="tab-processes"):
                    yield ProcessesPane(id="processes")
                with TabPane("Parallel", id="tab-parallel"):
                    yield ParallelPane(id="parallel")
                yield TabPane("CUDA", id="tab-cuda")  # (its pane mounted under cuda-gdb only: _show_cuda_tab)
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
        """The command palette's commands (``ui.palette``, which the palette itself reads, with their keys)."""
        from tuidbg.ui import palette

        for cmd in palette.commands(self):
            yield SystemCommand(cmd.title, cmd.help or cmd.keys, cmd.run)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(THEME_VARIABLE_DEFAULTS)

    # -- start-up -------------------------------------------------------------------------------

    def on_mount(self) -> None:
        # Textual writes each screen update from a thread of its own, which waits for the GIL while
        # this thread works: up to the switch interval, 5 ms by default; a step's first update (its
        # line, app_source._show_stop_line) is followed at once by the rest of the stop's work.
        # (0.1 ms: a step's line 0.2-0.3 ms sooner than at 0.5, bench/step_tmux.py --watch control.)
        sys.setswitchinterval(GIL_SWITCH_S)
        self.use_keymap(self.keymap_info)
        self._attach_panes(self.session)
        remembered.restore(self)  # the last run's watches and layout
        self.set_interval(1.0, lambda: None if self._closing_screen() else remembered.sync(self))
        self.session.on_state(self._on_engine_state)
        self.session.on_stop_seen(self._on_stop_seen)
        self.session.on_program_output(self._on_engine_output)
        self.session.on_console(self._on_engine_console)
        self.set_interval(0.05, self._flush_buffers)
        self.set_interval(1.0, self._check_gdb)
        self._layout(self.size.width, self.size.height)
        self._write_console_intro()
        if self.session.launch_begun and self.session.config.mode == "run":
            self._note_start()  # (before what the program printed meanwhile, and its exit)
        self._apply_state(self.session.state)
        self._start_session()

    def _attach_panes(self, session: DebugSession) -> None:
        bridge = self._bridge = SessionBridge(session)  # the panes' one door to this session
        for w in self.query(VariablesTree):
            w.source = bridge
            w.python_children = self._python_children
        for p in self.query("#cuda"):
            p.source = bridge
        self._native_attach(bridge)
        self.query_one(WatchPane).python_eval = self._python_watch
        self._cuda_tab: bool | None = None
        if self._processes_tab:
            self._processes_tab = False
            self.query_one("#stack-group", TabbedContent).hide_tab("tab-processes")
        ag = pyagent.controller(session)
        if ag is not None:
            ag.on_message(self._agent_message)

    def _agent_message(self, text: str) -> None:
        """A note from the Python agent ("breakpoint moved to line 12", a failed condition)."""
        self.notify(text, markup=False)
        self._pending.console.append(mi.MIRecord(mi.TEXT, payload=f"python agent: {text}"))

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

    def _note_start(self) -> None:
        self.query_one(OutputPane).note(f"── starting {self.session.config.describe()}")

    @work(group="session", exit_on_error=False)
    async def _start_session(self) -> None:
        s = self.session
        try:
            if s.client is None:
                await s.start(load=False)
            await s.load()
            if s.config.mode in ("run", "attach", "core") and (
                    s.launch_begun or s.state.process is ProcessState.NOT_STARTED):
                if s.config.mode == "run" and not s.launch_begun:  # (else on_mount said it)
                    self._note_start()
                await s.launch()  # (tuidbg run set it going before the screen was up: its end, or its error)
        except (StartupError, EngineError) as exc:
            self._start_failed(exc)  # (named in the status line: app_start)

    # -- engine -> UI ---------------------------------------------------------------------------

    def _on_engine_output(self, data: bytes) -> None:
        self._pending.output += data

    def _on_engine_console(self, rec: mi.MIRecord) -> None:
        self._pending.console.append(rec)

    @property
    def output_buffered(self) -> bool:
        """Program output or console records taken in and not yet written to their panes (they are
        batched, written by a 50 ms timer): what a test waits on before it reads those panes."""
        return bool(self._pending.output or self._pending.console)

    def _flush_buffers(self) -> None:
        if self._closing_screen():
            return  # (the interval outlived the panes: what is left was the program's last words)
        if self._pending.output:
            data = bytes(self._pending.output)
            self._pending.output.clear()
            self.query_one(OutputPane).feed(data)
        if self._pending.console:
            recs, self._pending.console = self._pending.console, []
            log_w = self.query_one(ConsolePane).log_widget
            for style, group in group_console(recs):
                log_w.write_lines(group, style=style)

    def on_state_changed(self, message: StateChanged) -> None:
        if message.state is self._posted:
            self._posted = None  # (the queue holds no state now: the next stop is taken at once)
        self.take_state(message.state)

    def take_state(self, state: DebuggerState) -> None:
        """The app takes in an engine state: from its queue (``on_state_changed``), or in the engine's own
        call (``app_source._on_engine_state``); the panes show it now or once its stop's line is out."""
        if self._closing_screen():
            return
        if state.python.transient:
            return  # a short internal stop (or run) of the Python agent: nothing for the user to see
        if self._stop_line_held(state):
            return  # painted once the source pane's update for this stop is out (app_source)
        line_shown = self._show_stop_line(state)
        if state.is_stopped and (not state.refreshed or state.python.stop_pending):
            # The refresh after a stop usually lands within a few ms: paint the stop once, complete
            # (its line first, when gdb's stop record names it). Only a slow refresh shows the bare stop.
            gen = state.generation
            self.set_timer(0.15, lambda: self._apply_if_still(gen))
            return
        if not line_shown:
            self._apply_state(state)

    def _closing_screen(self) -> bool:
        """The app is shutting down: its panes may be gone already."""
        # (called at every state change and output batch: a reference kept, not a query of the DOM)
        main = self._main_grid
        if main is None and self.is_running and self.screen_stack:
            found = self.query("#main")
            main = self._main_grid = found.first() if found else None
        return not self.is_running or not self.screen_stack or main is None or not main.is_attached

    def _apply_if_still(self, generation: int) -> None:
        if self._closing_screen():
            return  # (the timer outlived the panes)
        st = self.session.state
        if st.generation == generation and st.is_stopped and self.state is not st:
            if not st.python.transient:
                self._apply_state(st)

    def _apply_state(self, state: DebuggerState) -> None:
        prev = self.state
        self.state = state
        if state.process is ProcessState.RUNNING and self._painted.is_stopped:
            # A step or a continue that stops again within a moment (a `next`: about a millisecond):
            # the screen keeps the last stop until the next one instead of showing the run in between
            # (twice the work, a flicker); a run that goes on is shown RUN_SHOWN seconds after it began.
            if self._run_timer is None:
                self._run_timer = self.set_timer(RUN_SHOWN, self._show_running_if_still)
        else:
            if self._run_timer is not None:
                self._run_timer.stop()
                self._run_timer = None
            self._paint(state)
        self._notice_transitions(prev, state)

    def _show_running_if_still(self) -> None:
        self._run_timer = None
        if not self._closing_screen() and self.state.process is ProcessState.RUNNING:
            self._paint(self.state)

    def _paint(self, state: DebuggerState) -> None:
        prev = self._painted
        self._painted = state
        # Between a stop and its refresh the panes keep what they show: the stacks,
        # threads and variables change once per stop, when the refresh has arrived.
        settled = state.refreshed or not state.is_stopped
        if settled:
            self._update_python_selection(state)
        self._show_cuda_tab()
        with self.batch_update():
            self._update_status(state)
            self._update_processes(state)
            for p in self.query("#cuda"):
                if p.is_mounted:  # (else its on_mount reads the state)
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
                self._internal_error(event.worker.name or "a task", err)

    def _internal_error(self, what: str, err: BaseException) -> None:
        """A bug of tuidbg's in ``what`` (a worker's, a step's answer): logged, shown, and the
        debugger goes on."""
        log.error("%s failed", what, exc_info=err)
        self._error(f"internal error in {what}: {type(err).__name__}: {err}")

    # -- quitting and restarting ------------------------------------------------------------------------

    def action_quit_debugger(self) -> None:
        st = self.state
        if not st.has_process or self.session.config.mode == "core" or st.process is ProcessState.GDB_EXITED:
            self._close_and_exit("auto")
            return
        desc = f"process {st.pid or self.session.config.pid}" if st.pid or self.session.config.pid else "the program"
        live = [str(inf.pid) for inf in st.live_inferiors() if inf.pid]
        if len(live) > 1:  # (the program's children, the PIDs of attach PID PID...: each one goes)
            desc = f"the {len(live)} processes ({', '.join(live[:4])}{', ...' if len(live) > 4 else ''})"

        def chosen(choice: str | None) -> None:
            if choice in ("detach", "kill"):
                self._close_and_exit(choice)

        self.push_screen(QuitScreen(self.session.config.mode, desc, several=len(live) > 1), chosen)

    @work(group="quit", exit_on_error=False)
    async def _close_and_exit(self, how: str) -> None:
        self._quitting = True
        remembered.sync(self)
        try:
            await asyncio.wait_for(self.session.close(how), 15)
        except Exception as exc:
            log.info("closing the session: %s", exc)
        if self._signal_quit and self.after_signal_close is not None:
            self.after_signal_close()
        self.exit(0)

    def quit_on_signal(self, signum: int) -> None:
        """SIGTERM, SIGHUP, SIGQUIT or a SIGINT sent with kill: quit as q does (run: the program is killed;
        attach: detached, it runs on), without asking."""
        if self._quitting:
            return
        self._signal_quit = True
        self._close_and_exit("auto")

    # -- a gdb that does not answer ----------------------------------------------------------------------

    def _check_gdb(self) -> None:
        if self._quitting or self._closing_screen():
            return
        health = self.session.health()
        changed = health != self._health
        self._health = health
        if changed:
            self._update_status(self._painted)  # (what the screen shows: a quick step's run is not)
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
            new.on_stop_seen(self._on_stop_seen)
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
