"""The stacks, the Python view and the locals of the selected frame, and the choices made in them
(a frame, a thread, the host stack, a value shown whole).

A part of ``TuidbgApp`` (``tuidbg.ui.app``): a mixin over the app's panes and session."""

from __future__ import annotations

import logging
import re
from dataclasses import replace

from textual.content import Content
from textual.widgets import Static, TabbedContent, TabPane

from tuidbg.engine import cuda, mi, pyagent, pystack, pytasks
from tuidbg.engine.errors import EngineError
from tuidbg.engine.python import view as pyview
from tuidbg.engine.python.merge import merged_stack
from tuidbg.engine.python.model import user_frames
from tuidbg.engine.state import DebuggerState
from tuidbg.ui.panes.frames import CppFramesPane, HostStack, PyFramesPane
from tuidbg.ui.panes.processes import ProcessesPane
from tuidbg.ui.panes.tables import ThreadsPane
from tuidbg.ui.panes.variables import (LocalsPane, PythonFrameRef, VariablesTree, VarNode, WatchPane, python_extra,
                                       python_may_expand)
from tuidbg.ui.screens.modals import ValueScreen

log = logging.getLogger("tuidbg.ui")

# types of Python locals that are never torch values (a frame holding only these asks the agent nothing)
_BUILTIN_TYPES = frozenset("int float complex bool str bytes bytearray NoneType list tuple dict set frozenset "
                           "function builtin_function_or_method module type range".split())

FULL_VALUE_ELEMENTS = 200_000  # what "v" (the whole value) asks gdb for: strings and arrays up to this


class StacksPart:
    """Part of ``TuidbgApp`` (see the module's docstring)."""

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
        """The selected Python frame when a Python frame is selected (the watches are Python expressions
        there), else None: at the agent's stop, in its thread; at a native stop (SIGTRAP, ctrl+c, a native
        breakpoint, attach), in any thread with Python frames, where the agent evaluates through gdb
        (engine/pyagent/native_eval.py: or says why not, and which thread holds the GIL)."""
        ag = self._agent()
        if self.py_sel is None or ag is None or pyview.shown_task(state) is not None:
            return None
        if pyview.agent_stop_here(state) is None:
            native = (state.is_stopped and state.python.stop is None and ag.info.eval_addr
                      and pyview.live_thread(state) is not None)
            if not native:
                return None
        return PythonFrameRef(pyview.stop_generation(state), state.selected_thread,
                              pyview.agent_frame_index(state, self.py_sel))

    async def _python_watch(self, expressions: list[str], frame: int) -> list[tuple[str | None, str | None, str | None, bool]]:
        ag = self._agent()
        if ag is None:
            raise EngineError("the Python agent is not connected")
        return await ag.evaluate_many(expressions, frame)

    def _update_stacks(self, state: DebuggerState) -> None:
        cpp = self.query_one(CppFramesPane)
        pt = pyview.python_thread(state) if state.is_stopped else None
        notes = pyview.eval_frame_notes(pyview.python_thread(state, tasks=False) if state.is_stopped else None)
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
        task = pyview.shown_task(state)
        if task is not None:
            title += f" — task '{task.task.name}'"
        elif pyview.exception_stop(state) is not None:
            title += " — traceback"
        self.query_one("#py-title", Static).update(Content(title), layout=False)
        if not state.is_stopped:
            pane.show_message(f"(the program is {state.process.value})", ("py", state.process))
        elif task is not None:
            pane.show_frames(pt.frames, self.py_sel, ("py", pyview.stop_generation(state), state.selected_thread, "task",
                                                      task.task.addr))
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
            key = (pyview.stop_generation(state), state.selected_thread, self.py_sel, pyview.task_key(state))
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
                if st.generation == gen and self.py_sel is None and not self._closing_screen():
                    self._native_locals_wanted(st, waited=True)

            self.set_timer(0.5, later)
            return
        self._run(s.load_locals, "read the locals", group="locals")

    def _fetch_python_locals(self, key: tuple) -> None:
        if key in self._py_locals_inflight:
            return  # (a fetch through the agent makes states of its own: one fetch per key)
        self._py_locals_inflight.add(key)
        epoch = self._py_locals_epoch
        gen, tid, index, task = key
        ag = self._agent()
        from_agent = ag is not None and pyview.exception_stop(self.state) is not None and not task
        coro = pyview.selected_frame(self.state, index) if task else None

        async def fetch() -> None:
            try:
                if from_agent:
                    # a frame of the traceback: no longer on the stack in memory; the agent has it
                    nodes = [VarNode(path=f"py:{name}", name=name, type=type_, value=value, expandable=False)
                             for name, type_, value in await ag.python_locals(index)]
                elif coro is not None:  # (a coroutine of an asyncio task: on no thread's stack)
                    nodes = _nodes(await pytasks.frame_locals(self.session, coro.frame_addr, coro.code_addr))
                else:
                    nodes = await self._python_locals_from_memory(tid, index)
                if ag is not None and pyview.agent_stop_here(self.state) is not None and not task:
                    frame = index if from_agent else pyview.agent_frame_index(self.state, index)
                    for n in nodes:  # containers and objects: the agent has their children
                        if n.error is None and python_may_expand(n.type, n.value):
                            n.expandable, n.extra = True, python_extra(frame, n.name, [])
                    await self._torch_values(ag, frame, nodes)
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
            if (pyview.stop_generation(self.state), self.state.selected_thread, self.py_sel,
                    pyview.task_key(self.state)) == key:
                self.query_one(LocalsPane).update_state(self.state, python_vars=nodes, python_key=key)

        # not exclusive: a newer fetch must not cancel one under way (it would be asked again)
        self.run_worker(fetch, group="pylocals", exit_on_error=False)

    async def _torch_values(self, ag, frame: int, nodes: list[VarNode]) -> None:
        """Torch values (tensors, modules, optimizers) among the Python locals: their lines come from
        the agent (metadata only, no user code runs) and they expand through it. A program that has not
        loaded libtorch, or a frame whose locals are all of builtin types, holds none: the agent is not
        asked (a request is a short run of the program, at every stop)."""
        if not any(lib.basename.startswith("libtorch") for lib in self.state.libraries):
            return
        if all((n.type or "") in _BUILTIN_TYPES for n in nodes):
            return
        try:
            found = {name: (type_, value, exp) for name, type_, value, exp in await ag.python_torch_locals(frame)}
        except EngineError:
            return  # (the values read from memory stay)
        for n in nodes:
            if n.name in found:
                n.type, n.value, exp = found[n.name]
                n.error = None
                n.expandable, n.extra = exp, (python_extra(frame, n.name, []) if exp else {})

    async def _python_children(self, expr: str, path: list[str], frame: int,
                               device_data: bool = False) -> list[tuple[str, str, str, bool]]:
        ag = self._agent()
        if ag is None:
            raise EngineError("the Python agent is not connected")
        return await ag.python_children(expr, path, frame, device_data)

    async def _python_locals_from_memory(self, tid: str, index: int) -> list[VarNode]:
        return _nodes(await pystack.python_locals(self.session, tid, index))

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
                "condition": b.condition, "enabled": b.enabled, "hits": b.hits, "task": b.task,
            }
            for b in bps
        ]

    # -- selection ------------------------------------------------------------------------------------

    def on_cpp_frames_pane_frame_chosen(self, message: CppFramesPane.FrameChosen) -> None:
        st = self.state
        pt = pyview.python_thread(st)
        partners = pt.frames_at(message.level) if pt is not None else ()
        self.py_sel = partners[0].index if partners else None
        if message.level != st.selected_frame:
            self._select_frame(message.level)
        else:
            self._apply_state(st)

    def on_cpp_frames_pane_python_chosen(self, message) -> None:
        self._choose_python(message.frame)


    def on_py_frames_pane_frame_chosen(self, message) -> None:
        self._choose_python(message.frame)

    def _choose_python(self, frame) -> None:
        self.py_sel = frame.index
        st = self.state
        if frame.native_level is not None and frame.native_level != st.selected_frame:
            self._select_frame(frame.native_level)
        else:
            self._apply_state(st)

    def _show_cuda_tab(self) -> None:
        """The CUDA tab is there under cuda-gdb only (known once gdb has started); its pane is imported and mounted
        then (the first screen does without it: tests/cli/test_import_hygiene.py)."""
        if not self._processes_tab and not self._processes_hidden:
            self._processes_hidden = True
            self.query_one("#stack-group", TabbedContent).hide_tab("tab-processes")
        if not self.session.info.version or self._cuda_tab is not None:
            return
        self._cuda_tab = self.session.info.is_cuda
        tabs = self.query_one("#stack-group", TabbedContent)
        if self._cuda_tab:
            if not self.query("#cuda"):
                from tuidbg.ui.panes.cuda import CudaPane

                pane = CudaPane(id="cuda")
                pane.source = self._bridge  # (it reads the session's state when mounted)
                self.query_one("#tab-cuda", TabPane).mount(pane)
            tabs.show_tab("tab-cuda")
        else:
            tabs.hide_tab("tab-cuda")

    def on_cpp_frames_pane_host_stack_toggled(self, message: CppFramesPane.HostStackToggled) -> None:
        if cuda.get(self.session) is None or not cuda.device_focus(self.state):
            self.notify("h shows the host stack that launched the kernel when the focus is on a CUDA device thread",
                        markup=False)
            return
        self.show_host_stack = not self.show_host_stack
        self._sync_host_stack(self.state)

    def on_cpp_frames_pane_host_frame_chosen(self, message: CppFramesPane.HostFrameChosen) -> None:
        ext = cuda.get(self.session)
        if ext is None:
            return
        tid, level = message.thread, message.level

        async def go() -> None:
            await ext.select_host_thread(tid)  # leaves the device focus; "." in the CUDA pane returns
            if level:
                await self.session.select_frame(level)

        self._run(go, "select the host frame", group="select")

    def on_cpp_frames_pane_more_requested(self, message: CppFramesPane.MoreRequested) -> None:
        self._run(self.session.load_more_frames, "load more frames")

    def _update_processes(self, state: DebuggerState) -> None:
        """The Processes tab is there once a second process is under the debugger (``--children``)."""
        if len(state.inferiors) > 1 and not self._processes_tab:
            self._processes_tab = True
            self.query_one("#stack-group", TabbedContent).show_tab("tab-processes")
        if self._processes_tab:
            self.query_one(ProcessesPane).update_state(state)
        self._update_tasks(state)  # (the stack group's other tab that comes and goes: app_tasks)
        self._update_parallel(state)

    def on_processes_pane_process_chosen(self, message: ProcessesPane.ProcessChosen) -> None:
        iid = message.inferior_id
        if iid != self.state.selected_inferior:
            self._run(lambda: self.session.select_process(iid), "select process", group="select")

    def on_threads_pane_thread_chosen(self, message: ThreadsPane.ThreadChosen) -> None:
        if message.thread_id != self.state.selected_thread:
            tid = message.thread_id
            ext = cuda.get(self.session)
            if ext is not None and cuda.device_focus(self.state):
                # leave the device focus cleanly; the CUDA pane's "." goes back to it
                self._run(lambda: ext.select_host_thread(tid), "select thread", group="select")
            else:
                self._run(lambda: self.session.select_thread(tid), "select thread", group="select")

    def on_variables_tree_show_value(self, message: VariablesTree.ShowValue) -> None:
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
                opt = s.thread_options(frame=st.selected_frame)  # nothing under a CUDA device focus
                if varobj is not None:
                    r = await s.cmd(f"-var-evaluate-expression -f natural {varobj}", check=False)
                    if r.cls == "done" and re.match(r"^(\{\.\.\.\}|\[\d+\])$", str(r.get("value") or "")):
                        # (an array or a struct: a var object says [16] or {...}; gdb prints it whole)
                        p = await s.cmd(f"-var-info-path-expression {varobj}", check=False)
                        if p.cls == "done" and p.get("path_expr"):
                            r = await s.cmd(f"-data-evaluate-expression {opt}{mi.quote(str(p.get('path_expr')))}", check=False)
                else:
                    r = await s.cmd(f"-data-evaluate-expression {opt}{mi.quote(expr)}", check=False)
                if r.cls == "done" and r.get("value") is not None:
                    value = str(r.get("value"))
            finally:
                if limit != "unlimited":
                    await s.cmd(f"-gdb-set print elements {limit}", check=False)
            self.push_screen(ValueScreen(message.title, value))

        self._run(whole, "read the whole value")

    def handle_bindings_clash(self, clashed_bindings, node) -> None:
        """Textual's report, at every key press, is not used: it takes a binding given fewer keys by the
        keymap for a clash with itself. A keymap's real clashes are named once (``ui.keyclash``)."""


def _nodes(locs) -> list[VarNode]:
    """Python locals read from memory, as the Locals pane's rows."""
    return [
        VarNode(
            path=f"py:{loc.name}", name=loc.name, type=loc.type, value=loc.value,
            error=None if loc.value is not None else (loc.error or "cannot be read"), expandable=False,
        )
        for loc in locs
    ]
