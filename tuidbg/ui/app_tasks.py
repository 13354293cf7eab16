"""The asyncio tasks in the TUI: the Tasks tab (``panes/tasks.py``, made when a program with asyncio
first stops), read when it is shown at a stop,
and a task chosen there shown in the Python frames pane (``engine.pytasks.show_task``: the stacks,
the source and the locals follow ``engine.python.view.python_thread``).

A part of ``TuidbgApp`` (``tuidbg.ui.app``): a mixin over the app's panes and session."""

from __future__ import annotations

from textual.widgets import TabbedContent, TabPane

from tuidbg.engine import pytasks
from tuidbg.engine.python import view as pyview
from tuidbg.engine.state import DebuggerState
from tuidbg.ui.panes.tasks import TasksPane


class TasksPart:
    """Part of ``TuidbgApp`` (see the module's docstring)."""

    _tasks_tab: bool | None = None
    _tasks_loading: tuple | None = None  # (session, generation) whose tasks are being read
    _tasks_session = None  # the session the tab was shown or hidden for
    _tasks_adding = False  # the tab is being made
    _tasks_retries = 0  # the pane key's retries while the tab is being made

    def _update_tasks(self, state: DebuggerState) -> None:
        tabs = self.query_one("#stack-group", TabbedContent)
        if self._tasks_session is not self.session:  # (a new gdb: decided again)
            self._tasks_session, self._tasks_tab = self.session, None
        tasks = state.python.tasks
        show = pytasks.has_asyncio(state) or (tasks is not None and bool(tasks.tasks))
        panes = self.query(TasksPane)
        if show and not panes:
            # The tab is made the first time a program with asyncio stops (the others never see it);
            # the pane asks for its tasks once it is there (TasksPane.Wanted).
            if not self._tasks_adding:
                self._tasks_adding = True
                tabs.add_pane(TabPane("Tasks", TasksPane(id="tasks"), id="tab-tasks"), after="tab-processes")
            return
        if show != self._tasks_tab and panes:
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

    def _tasks_ready(self) -> bool:
        """The Tasks tab can be shown now (the pane key): False, having said why or asked again for
        when it is made."""
        st = self.state
        if not (pytasks.has_asyncio(st) or (st.python.tasks is not None and st.python.tasks.tasks)):
            self.notify("no asyncio tasks: the program has not imported asyncio", markup=False)
            return False
        if not self._tasks_tab:  # (being made: shown once it is, a few refreshes later at most)
            self._update_tasks(st)
            self._tasks_retries += 1
            if self._tasks_retries <= 20:
                self.call_after_refresh(self.action_pane, "tasks")
            return False
        self._tasks_retries = 0
        return True

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
        self._update_tasks(self.state)
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
