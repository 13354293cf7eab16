"""The source area and the views: which file and line show, marks, opening and finding, watches,
panes and their focus, help, screenshots.

A part of ``TuidbgApp`` (``tuidbg.ui.app``): a mixin over the app's panes and session."""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from textual.content import Content
from textual.message import Message
from textual.widgets import Static, TabbedContent

from tuidbg.engine import mi
from tuidbg.engine.errors import EngineError
from tuidbg.engine.python import view as pyview
from tuidbg.engine.state import DebuggerState, ProcessState, StopSeen
from tuidbg.ui import fastpath, keyplan
from tuidbg.ui.panes.source import BreakpointMark, SourceView
from tuidbg.ui.panes.variables import WatchPane
from tuidbg.ui.screens.modals import OpenFileScreen, PromptScreen
from tuidbg.ui.text import visible

log = logging.getLogger("tuidbg.ui")

# pane name -> (widget id to focus, group id, tab id)
PANES = {
    "source": ("source", None, None),
    "python": ("py-list", "stack-group", "tab-stack"),
    "cpp": ("cpp-list", "stack-group", "tab-stack"),
    "threads": ("threads", "stack-group", "tab-threads"),
    "processes": ("processes", "stack-group", "tab-processes"),
    "tasks": ("tasks", "stack-group", "tab-tasks"),
    "parallel": ("parallel-list", "stack-group", "tab-parallel"),
    "cuda": ("cuda", "stack-group", "tab-cuda"),
    "locals": ("locals", "vars-group", "tab-locals"),
    "watch": ("watch", "vars-group", "tab-watch"),
    "breakpoints": ("breakpoints", "vars-group", "tab-breakpoints"),
    "registers": ("registers", "vars-group", "tab-registers"),
    "memory": ("memory", "vars-group", "tab-memory"),
    "console": ("console-input", "io-group", "tab-console"),
    "output": ("output-input", "io-group", "tab-output"),
}


class StateChanged(Message):
    """The engine's state, to the app's queue (a newer one takes the place of one not handled yet)."""

    def __init__(self, state: DebuggerState) -> None:
        super().__init__()
        self.state = state

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, StateChanged)


OTHERS_PAINT = 0.25  # seconds: a change of other processes than the shown one waits this long to be painted


def others_only(painted: DebuggerState, new: DebuggerState) -> bool:
    """Whether ``new`` differs from the state on the screen in other processes than the shown one only."""
    return (new.selected_inferior == painted.selected_inferior and new.inferior is painted.inferior
            and new.breakpoints is painted.breakpoints and new.python_breakpoints is painted.python_breakpoints
            and new.activity == painted.activity and new.gdb_exit == painted.gdb_exit
            and new.run_group == painted.run_group and new.run_group_name == painted.run_group_name)


# A run that begins at a stop the screen shows: its state reaches the panes this much later, if no
# other state came meanwhile (app_source._on_engine_state).
RUN_QUIET = 0.003


class SourcePart:
    """Part of ``TuidbgApp`` (see the module's docstring)."""

    _source_title: str | None = None  # what the source pane's title shows
    _quiet_run: DebuggerState | None = None  # a run held back (_on_engine_state)
    _posted: DebuggerState | None = None  # the latest state posted to the app's queue, not handled yet
    _source_view: SourceView | None = None
    _stop_paint: Any = None  # a planned step's rows the reader's thread may write (ui.stoppaint), till its stop

    def _on_engine_state(self, state: DebuggerState) -> None:
        """The engine's new state, to the panes (``on_state_changed``), in order.

        A run that begins at a stop the screen shows (a step: gdb's ``^running``, its ``*stopped`` a
        millisecond or two later) goes RUN_QUIET seconds later: the latest state of the run then,
        unless a stop came first. The screen keeps the stop through a short run anyway
        (``_apply_state``), and taking the message in while gdb steps takes the core gdb needs (~0.4
        ms of a step on 2 cores, bench/RESULTS.md). What the keys read (``self.state``) is the run
        at once.

        A stop when no state waits in the app's queue is handled at once, here, not after the queue's
        hop (~0.15 ms of a step's key to its line, bench/RESULTS.md); states keep their order.

        Every state drops the step keys' plan (``ui.keyplan``); a stop's refreshed state makes a new one
        ARM_AFTER seconds later.

        A state in which only other processes than the shown one changed (gdb attaching to a job's 48
        processes one by one, their threads and stacks coming in) is painted OTHERS_PAINT seconds later,
        with those after it: the Processes and Parallel tabs and the status line are all it changes."""
        if self._others_timer is not None:
            if others_only(self._painted, state) and self._posted is None and self._quiet_run is None:
                self._others_state = state
                return
            self._others_timer.stop()
            self._others_timer = None
        elif (len(state.inferiors) > 1 and self._posted is None and self._quiet_run is None
              and others_only(self._painted, state)):
            self._others_state = state
            self._others_timer = self.set_timer(OTHERS_PAINT, self._paint_others)
            return
        keyplan.disarm(self)
        if state.is_stopped and state.refreshed:
            self._arm_keys_later()
        if not fastpath.ENABLED:
            self.post_state(state)  # (every state through the app's queue, as Textual's messages go)
            return
        if state.process is ProcessState.RUNNING and self._painted.is_stopped:
            if not state.python.transient:
                self.state = state
            if self._quiet_run is None:
                asyncio.get_running_loop().call_later(RUN_QUIET, self._post_quiet_run)
            self._quiet_run = state
            return
        self._quiet_run = None
        if state.is_stopped and self._posted is None and self.is_running:
            try:
                with self._context():  # (as the app's own handlers run: the engine's reader calls this)
                    self.take_state(state)
            except Exception as error:
                self._handle_exception(error)
            return
        self.post_state(state)

    _others_timer: Any = None
    _others_state: DebuggerState | None = None

    def _paint_others(self) -> None:
        self._others_timer = None
        state, self._others_state = self._others_state, None
        if state is not None and not self._closing_screen():
            self.take_state(state)

    def _on_stop_seen(self, stop: StopSeen) -> None:
        """A stop as gdb's record names it, before the engine builds its state (which follows at once, in
        the same call): the source pane shows its line now, when this is a native step's stop in the
        thread and file the pane shows, which the state's own way then shows the same
        (``_update_source``: ``set_pc(line, top=True)``; that call writes nothing again,
        ``SourceView.show_stop_early``). The reducer, the hand-over and the state's checks come after
        the line (~0.25 ms of a step's key to its line, bench/RESULTS.md). A planned step's line may be
        on the screen already (``ui.stoppaint``): not written again."""
        paint, self._stop_paint = self._stop_paint, None
        if not fastpath.ENABLED:
            return
        src = self._early_view()
        if (stop.reason != "end-stepping-range" or stop.line is None or not stop.fullname or src is None
                or src.path != stop.fullname or stop.thread_id != self._painted.selected_thread):
            if paint is not None and paint.painted is not None:  # (rows the pane does not take for its own)
                self._source().refresh()
            return
        on_screen = paint.on_screen(stop.line) if paint is not None else None
        try:
            with self._context():
                src.show_stop_early(stop.line, on_screen)
        except Exception as error:
            self._handle_exception(error)

    def _early_view(self) -> SourceView | None:
        """The source pane, where a native step's stop may show its line from gdb's record, before
        the engine's state (``_on_stop_seen``, ``ui.stoppaint``); None where it may not."""
        painted = self._painted
        if (painted.selected_frame != 0 or painted.python.stack is not None or self._posted is not None
                or self._line_pending is not None or self._user_file or not self.is_running
                or self.session.config.python_target or self.session.info.is_cuda):
            return None
        src = self._source()
        # (not displayed: the disassembly is shown in its place, native_actions._show_disasm)
        if src.path is None or src.pc_line is None or not src.display or not src.region.area:
            return None
        return src

    @property
    def state_queued(self) -> DebuggerState | None:
        """The latest state posted to the app's queue and not taken in yet (a stop from the engine waits
        behind it), or None."""
        return self._posted

    def _source(self) -> SourceView:
        """The source pane (kept: looked up at every stop)."""
        src = self._source_view
        if src is None or not src.is_attached:
            src = self._source_view = self.query_one(SourceView)
        return src

    def post_state(self, state: DebuggerState) -> None:
        """``state`` to the app's queue (``StateChanged``), taken in after what is queued before it."""
        self._posted = state
        self.post_message(StateChanged(state))

    def _post_quiet_run(self) -> None:
        state, self._quiet_run = self._quiet_run, None
        if state is not None and self.is_running:
            self.post_state(state)

    # -- a stop's line, shown first --------------------------------------------------------------

    def _show_stop_line(self, state: DebuggerState) -> bool:
        """A stop that the panes do not show yet, whose line is known (the frame of gdb's ``*stopped``
        record, before the refresh of threads, frames and locals; or the agent's Python frame): the
        source pane shows it at once, in a screen update of its own (about a millisecond to render,
        against every pane's); the other panes and the status line keep the last stop until that
        update is out, then show this one (``_after_stop_line``). Returns whether it did."""
        key = _stop_key(state)
        if (not fastpath.ENABLED or not state.is_stopped or state.python.transient or state.python.stop_pending or key == self._line_key
                or _stop_key(self._painted) == key or self.disasm_shown or self.session.info.is_cuda):
            return False
        src = self._source()
        if not src.display or not src.region.area:
            return False  # (a source pane not on the screen draws no line to wait for)
        if self.session.config.python_target:
            sel = pyview.next_selection(state, self._py_selection)
            pyf = pyview.selected_frame(state, sel.index)
            if pyf is None or not os.path.exists(pyf.file):
                return False  # (a native stop of a Python program: its Python frame is shown once read)
            self._update_python_selection(state)
        else:
            frame, stop = state.selected, state.stop
            if self._painted.python.stack is not None:
                return False  # (a program that runs Python: its stops may show a Python frame)
            if frame is None or not frame.fullname or frame.line is None or not os.path.exists(frame.fullname):
                return False
            bp = state.breakpoint(stop.bkptno) if stop is not None and stop.bkptno else None
            if bp is not None and bp.internal:
                return False  # tuidbg's own (a C++ throw: its refresh stage says more)
        # (not call_after_refresh: a screen that goes idle before the source pane's update reaches it
        # runs that at once, and the rest of the stop would go out first, in one update of every pane;
        # asked before the line is shown: the source pane may write its rows at once, ui.rows_now)
        src.after_pc_painted(lambda: self._after_stop_line(key))
        # (the source pane alone: a screen update re-renders every widget in the box around what
        # changed, and the status line at the bottom would take in most of the screen)
        self._update_source(state, self._painted)
        self._line_key = self._line_pending = key
        self._held = state if state.refreshed else None
        # ... and that update goes out now, from here, rather than after the source pane's message to the
        # screen, the screen's idle and its frame timer: ~1.5 ms less from the key to the line on the
        # screen (bench/step_tmux.py). It is the update Textual's frame timer would run, called by its
        # private names: pyproject pins textual to 8.2.
        # (src's own screen: under a dialog the screen on top is the dialog's. Textual counts the screen
        # just below the top one as current too; there the call only asks the top screen to repaint,
        # and the rest of the stop waits for the line the 50 ms at most.)
        # (Not when the source pane wrote the rows itself, ui.rows_now: they are out already.)
        screen = src.screen
        if screen.is_current and not self._batch_count and not src.painted_now:
            screen._dirty_widgets.add(src)
            screen._on_timer_update()
        return True

    def _stop_line_held(self, state: DebuggerState) -> bool:
        """Whether ``state`` waits for its stop's line to be on the screen (the latest one is kept)."""
        if self._line_pending is None:
            return False
        if state.is_stopped and _stop_key(state) == self._line_pending:
            if state.refreshed and not state.python.stop_pending:
                self._held = state
            return True
        self._line_pending = self._held = None  # a run or another stop: what was held is out of date
        return False

    def _after_stop_line(self, key: tuple) -> None:
        if self._line_pending != key:
            return
        held, self._line_pending, self._held = self._held, None, None
        if held is not None and not self._closing_screen() and self.state is not held:
            self._apply_state(held)

    # -- source -----------------------------------------------------------------------------------

    def _update_source(self, state: DebuggerState, prev: DebuggerState) -> None:
        src = self._source()
        title = self._set_source_title
        pyf = pyview.selected_frame(state, self.py_sel)
        skey = (pyview.stop_generation(state), state.selected_thread, state.selected_frame, state.process, state.frames, pyf)
        moved = skey != self._source_key
        self._source_key = skey
        if moved and state.is_stopped and pyf is not None and os.path.exists(pyf.file):
            self._user_file = None
            if src.show_file(pyf.file):
                src.set_pc(pyf.line, top=pyf.index == 0)
                title(visible(pyf.file) + f"  (Python, {pyf.name})")
        elif moved and state.is_stopped:
            self._user_file = None
            frame = state.selected
            if frame is None and state.frames:
                frame = state.frames[0]
            if frame is not None and frame.fullname and frame.line is not None and os.path.exists(frame.fullname):
                if src.show_file(frame.fullname):
                    src.set_pc(frame.line, top=state.selected_frame == 0)
                    title(visible(frame.fullname))
            elif frame is not None:
                lib = f" in {frame.library}" if frame.library else ""
                what = frame.func or "??"
                lines = [f"Source not available for {what}{lib}.", f"Address {frame.addr}."]
                if frame.fullname and frame.line is not None:
                    lines.append(f"gdb names {frame.fullname}:{frame.line}, which is not on this machine (set substitute-path maps folders).")
                elif not frame.file:
                    lines.append("The library has no line information (no DWARF); the C++ frames pane still shows where it is.")
                src.show_message(lines)
                title("Source — not available")
        elif moved and not state.is_stopped and not self._user_file:
            src.set_pc(None)
        self._update_marks(state)

    def on_source_view_file_read(self, message: SourceView.FileRead) -> None:
        """A stop's file whose read outlasted the view's wait is read now: the stop shows it."""
        if self._user_file is None and self.state.is_stopped:
            self._source_key = None
            self._update_source(self.state, self.state)

    def _set_source_title(self, text: str) -> None:
        if text != self._source_title:  # (an update repaints it: not at every stop in the same file)
            self._source_title = text
            self.query_one("#source-title", Static).update(Content(text), layout=False)

    def _update_marks(self, state: DebuggerState) -> None:
        src = self._source()
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
            why = src.message[0] if src.message else f"Cannot open {path}"  # (what the view says: why not)
            self.notify(why, severity="warning", markup=False)
            return False
        self._source_opened()
        self._user_file = path
        self._set_source_title(visible(path))
        st = self.state
        frame = st.selected if st.is_stopped else None
        if frame is not None and frame.fullname == path and frame.line is not None:
            src.set_pc(frame.line, top=st.selected_frame == 0)
            if line is not None:
                src.goto_line(line)
        else:
            src.set_pc(None)
        self._update_marks(st)
        return True

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
        if target is not None and target.id is not None and not screen.maximize(target, container=False):
            screen.maximized = target  # (the source area is a container: Textual maximizes focusable widgets only)

    def action_open_file(self) -> None:
        async def known_files() -> None:
            from tuidbg.ui import filerank

            files: list[tuple[str, str | None]] = []  # (source file, the objfile naming it)
            try:
                res = await self.session.cmd("-file-list-exec-source-files --group-by-objfile", timeout=20, check=False)
                if res.cls != "done":  # (a gdb before 10: one list)
                    res = await self.session.cmd("-file-list-exec-source-files", timeout=20, check=False)
                for f in mi.as_list(res.get("files")):
                    if isinstance(f, dict) and isinstance(f.get("sources"), list):
                        objfile = str(f.get("filename") or "") or None
                        files += [(str(x["fullname"]), objfile) for x in f["sources"] if isinstance(x, dict) and x.get("fullname")]
                    elif isinstance(f, dict) and f.get("fullname"):
                        files.append((str(f["fullname"]), None))
            except EngineError:
                pass
            cfg = self.session.config
            script = cfg.args[0] if cfg.python_target and cfg.args and cfg.args[0] != "-m" else None
            places = filerank.Places.of(cfg.program, cfg.cwd or os.getcwd(), script, python=cfg.python_target)
            stack = self.state.python.stack
            shown = [f.file for t in (stack.threads if stack else ()) for f in t.frames if f.file.startswith("/")]
            cands = await asyncio.to_thread(filerank.candidates, files, places, shown)  # (it reads the disk)
            self.push_screen(OpenFileScreen(cands), self._opened)  # (empty: the program's own files on top)

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
        if name in ("processes", "parallel") and len(self.state.inferiors) < 2:
            self.notify("one process under the debugger: its children appear here (tuidbg run --children)",
                        markup=False)
            return
        if name == "tasks" and not self._tasks_ready():
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
        """The keys in force, and which signals stop the program (gdb's handling, asked now)."""
        from tuidbg.ui import keyhelp
        from tuidbg.ui.screens.modals import HELP_SIGNALS, signals_text

        screen = keyhelp.show(self, self.keymap_info.name, self._keymap)

        async def signals() -> None:
            if self.session.client is None or not self.session.client.alive:
                return
            handling = await self.session.signal_handling(HELP_SIGNALS)
            if screen.is_attached:
                screen.show_signals(signals_text(handling))

        self._run(signals, "signals", group="help")

    def action_screenshot(self) -> None:
        path = self.save_screenshot(path=os.getcwd())
        self.notify(f"screenshot saved: {path}", markup=False)

    def action_redraw(self) -> None:
        """Every widget rendered again and the whole screen written out, as gdb's TUI and cgdb do on
        ctrl+l (after something else wrote on the terminal: a program writing to /dev/tty, a system
        message over ssh)."""
        redraw(self.screen)


def redraw(screen) -> None:
    """``screen`` rendered anew (no widget's cached lines) and written out whole."""
    for widget in screen.query("*"):
        widget.refresh()
    screen.refresh()


def _stop_key(state: DebuggerState) -> tuple:
    """Which stop a state shows: its process and the stop's generation (the agent's requests make
    stops of their own that are the same stop for the user)."""
    return state.selected_inferior, pyview.stop_generation(state), state.is_stopped
