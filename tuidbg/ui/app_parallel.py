"""Many processes at once: the Parallel Stacks tab, one expression across every process (``pyall``,
``printall``, A on a Watch row) and the run group (``group``, G on a tree row).

A part of ``TuidbgApp`` (``tuidbg.ui.app``): a mixin over the app's panes and session. The tab is there
once a second process is under the debugger, as the Processes tab is; its tree is made only while it
shows (``ParallelPane.update_state``), from the stacks the state has (``engine.python.parallel``)."""

from __future__ import annotations

import logging

from textual.widgets import TabbedContent

from tuidbg.engine import crossrank, ranks
from tuidbg.engine.errors import EngineError
from tuidbg.engine.python import view as pyview
from tuidbg.engine.state import DebuggerState, ProcessState
from tuidbg.ui.panes.io import ConsolePane
from tuidbg.ui.panes.parallel import ParallelPane

log = logging.getLogger("tuidbg.ui")

__all__ = ["ParallelPane", "ParallelPart"]


class ParallelPart:
    """Part of ``TuidbgApp`` (see the module's docstring)."""

    _parallel_tab: bool | None = None  # whether the tab is shown (None: not decided yet)

    def _update_parallel(self, state: DebuggerState) -> None:
        tabs = self.query_one("#stack-group", TabbedContent)
        show = len(state.inferiors) > 1
        if show != self._parallel_tab:
            self._parallel_tab = show
            (tabs.show_tab if show else tabs.hide_tab)("tab-parallel")
        if show and tabs.active == "tab-parallel":
            self.query_one(ParallelPane).update_state(state)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.tabbed_content.id == "stack-group" and event.tabbed_content.active == "tab-parallel":
            self.query_one(ParallelPane).update_state(self._painted)

    def on_parallel_pane_node_chosen(self, message: ParallelPane.NodeChosen) -> None:
        """Enter on a frame of the tree: its first process shown (every pane follows), in the thread that
        has the frame."""
        iid = message.iids[0]
        tid, lwp = message.thread if message.thread is not None else (None, None)
        frame = message.frame
        self._chosen_processes = message.iids
        s = self.session

        async def go() -> None:
            if iid != s.state.selected_inferior:
                await s.select_process(iid)
                if tid is None and lwp:
                    await s.wait_refreshed(30)  # (its threads as gdb names them)
            st = s.state
            if st.selected_inferior != iid or not st.is_stopped:
                return
            thread = tid or next((t.id for t in st.threads if lwp and t.lwp == lwp), None)
            if thread and thread != st.selected_thread:
                await s.select_thread(thread)
            if frame is not None:
                await s.wait_refreshed(30)
                self._choose_python_like(frame)

        if len(message.iids) > 1:
            self.notify(f"{ranks.short_names(self.state, message.iids)}: showing the first; G makes them the run group",
                        markup=False, timeout=4)
        self._run(go, "select the process", group="select")

    def _choose_python_like(self, key: tuple) -> None:
        """The shown thread's Python frame that the tree's row is ("py", name, file, line): selected, as a
        choice in the Python frames pane would (the innermost such frame)."""
        st = self.session.state
        pt = pyview.python_thread(st)
        if pt is None or len(key) < 4:
            return
        _kind, name, file, line = key[:4]
        f = next((f for f in pt.frames if f.name == name and f.file == file and f.line == line), None)
        if f is not None:
            self._apply_state(st)
            self._choose_python(f)

    def on_parallel_pane_group_asked(self, message: ParallelPane.GroupAsked) -> None:
        self._set_group(message.iids)

    def _set_group(self, iids: tuple[str, ...]) -> None:
        st = self.state
        name = ranks.describe(st, iids)

        async def go() -> None:
            await self.session.set_run_group(iids, name)
            shown = self.session.state.run_group_name
            self.notify(f"run group: {shown} (c continues them, the others stay stopped)" if shown
                        else "every process continues together", markup=False)

        self._run(go, "set the run group")

    # -- one expression across every process ------------------------------------------------------

    def _across_args(self) -> tuple[crossrank.Where | None, str | None]:
        """The selected Python frame's function (pyall's), and the selected native frame's (printall's)."""
        st = self.state
        pyf = pyview.selected_frame(st, self.py_sel)
        native = st.selected.func if st.is_stopped and st.selected is not None else None
        return (crossrank.Where.of(pyf) if pyf is not None else None), native

    async def _crossrank_console(self, cmd: str) -> bool:
        """``pyall``, ``printall`` and ``group`` typed in the console; False for any other command."""
        ext = crossrank.controller(self.session)
        if ext is None or not ext.claims_console(cmd):
            return False
        where, native = self._across_args()
        text = await ext.handle_console(cmd, where=where, native_func=native)
        self.query_one(ConsolePane).log_widget.write_lines((text or "").splitlines() or [""])
        return True

    def on_watch_pane_across_asked(self, message) -> None:
        """A on a Watch row: its expression in every process (Python in a Python frame, else C/C++)."""
        if crossrank.controller(self.session) is None:
            self.notify("one process under the debugger: A compares a watch across the processes of a job",
                        markup=False)
            return
        where, _native = self._across_args()
        word = "pyall" if where is not None or self.state.python.stack is not None and self.py_sel is not None else "printall"
        cmd = f"{word} {message.expression}"
        log_w = self.query_one(ConsolePane).log_widget
        log_w.write_lines([f"(gdb) {cmd}"], style="echo")

        async def go() -> None:
            try:
                await self._crossrank_console(cmd)
            except EngineError as exc:
                log_w.write_lines([str(exc)], style="error")

        self.action_pane("console")
        self._run(go, word)

    def _running_group_words(self, state: DebuggerState) -> str:
        """For the status line: the run group, and whether it runs."""
        if not state.run_group:
            return ""
        running = any(inf.process is ProcessState.RUNNING for inf in state.inferiors if inf.id in state.run_group)
        return f"group {state.run_group_name}" + (" runs" if running and not state.is_running else "")
