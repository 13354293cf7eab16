"""The asyncio tasks in the TUI: the Tasks tab (``panes/tasks.py``), read when it is shown at a stop,
and a task chosen there shown in the Python frames pane (``engine.pytasks.show_task``: the stacks,
the source and the locals follow ``engine.python.view.python_thread``).

A part of ``TuidbgApp`` (``tuidbg.ui.app``): a mixin over the app's panes and session."""

from __future__ import annotations

from textual.widgets import TabbedContent

from tuidbg.engine import pytasks
from tuidbg.engine.python import view as pyview
from tuidbg.engine.state import DebuggerState
from tuidbg.ui.panes.tasks import TasksPane


class TasksPart:
    """Part of ``TuidbgApp`` (see the module's docstring)."""

    _tasks_tab: bool | None = None
    _tasks_loading: tuple | None = None  # (session, generation) whose tasks are being read
    _tasks_session = None  # the session the tab was shown or hidden for

    def _update_tasks(self, state: DebuggerState) -> None:
        tabs = self.query_one("#stack-group", TabbedContent)
        if self._tasks_session is not self.session:  # (a new gdb: decided again)
            self._tasks_session, self._tasks_tab = self.session, None
        tasks = state.python.tasks
        show = pytasks.has_asyncio(state) or (tasks is not None and bool(tasks.tasks))
        if show != self._tasks_tab:
            self._tasks_tab = show
            (tabs.show_tab if show else tabs.hide_tab)("tab-tasks")
        if not show:
            return  # (a program without asyncio: nothing here to keep up to date)
        tv = state.python.task_view
        if tv is not None and state.is_stopped and tv.tid != state.selected_thread:
            pytasks.show_task(self.session, None)  # (another thread: its own stack)
        pane = self.query_one(TasksPane)
        pane.update_state(state, pyview.task_key(state))
        if show and tabs.active == "tab-tasks":
            self._load_tasks(state)

    def _load_tasks(self, state: DebuggerState) -> None:
        """Read every task of this stop once (the Tasks pane is shown)."""
        tasks = state.python.tasks
        if not state.is_stopped or not state.refreshed or (tasks is not None and tasks.full):
            return
        if self._tasks_loading == (self.session, state.generation):
            return
        self._tasks_loading = (self.session, state.generation)
        self._run(lambda: pytasks.load(self.session), "read the asyncio tasks", group="tasks")

    def on_tasks_pane_wanted(self, _message: TasksPane.Wanted) -> None:
        self._load_tasks(self.state)

    def on_tasks_pane_task_chosen(self, message: TasksPane.TaskChosen) -> None:
        st = self.state
        tasks = st.python.tasks
        task = tasks.task(message.addr) if tasks is not None and message.addr is not None else None
        if message.addr is not None and task is None:
            return
        pytasks.show_task(self.session, task)
        if task is not None:
            self.action_pane("python")
