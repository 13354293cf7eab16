"""Running the program and its breakpoints: continue, steps, run to the cursor, frames up and down,
breakpoints toggled and edited, native and Python; the notes of the program exiting or detached,
and of gdb gone.

A part of ``TuidbgApp`` (``tuidbg.ui.app``): a mixin over the app's panes and session."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Coroutine

from tuidbg.engine import cxxthrow, pyagent, remote
from tuidbg.engine.errors import EngineError, GdbExited
from tuidbg.engine.python import view as pyview
from tuidbg.engine.python.model import user_frames
from tuidbg.engine.state import DebuggerState, ProcessState
from tuidbg.ui import keyplan, remembered
from tuidbg.ui.panes.io import ConsolePane, OutputPane
from tuidbg.ui.panes.source import SourceView
from tuidbg.ui.panes.tables import BreakpointsPane
from tuidbg.ui.screens.modals import GdbExitedScreen, PromptScreen

log = logging.getLogger("tuidbg.ui")


class ExecPart:
    """Part of ``TuidbgApp`` (see the module's docstring)."""

    _answers: set[asyncio.Future]

    # -- actions: execution -----------------------------------------------------------------------------

    def _run(self, coro_factory, what: str, group: str = "exec") -> None:
        self.run_worker(self._reported(coro_factory, what), group=group, exit_on_error=False, name=what)

    def _answered(self, task: asyncio.Future, what: str) -> None:
        # (a step's answer awaited by a task, not a worker: an error that is not the engine's is
        # reported as a worker's is, not left to asyncio's log)
        self._answers.discard(task)
        err = None if task.cancelled() else task.exception()
        if err is not None:
            self._internal_error(what, err)

    async def _reported(self, coro_factory, what: str) -> None:
        """``coro_factory()`` awaited, its engine errors shown as "WHAT: ..."."""
        try:
            await coro_factory()
        except EngineError as exc:
            self._engine_error(what, exc)

    def _engine_error(self, what: str, exc: EngineError) -> None:
        self._error(f"{what}: gdb is gone ({exc.reason})" if isinstance(exc, GdbExited) else f"{what}: {exc}")

    def action_exec(self, op: str) -> None:
        st = self.state
        if st.process is ProcessState.EXITED and self.session.config.mode == "run":
            self.notify("the program has exited; R runs it again", markup=False)
            return
        if op in ("stepi", "nexti"):
            self._step_instruction(over=op == "nexti")
            return
        names = {"cont": "continue", "next": "next", "step": "step", "finish": "finish", "until": "until"}
        refused = self.python_step_refused() if op in ("next", "step", "finish", "until") else None
        if refused is not None:
            # (a native step from a Python frame would run the interpreter's C code from wherever the
            # thread is, a futex wait or the eval loop, and lose the Python line)
            self.refuse_at_stop(f"Python {names[op]} refused: {refused}")
            return
        ag = self._agent()
        if ag is not None and st.is_stopped:
            tid = st.selected_thread
            if op == "cont":
                self._run(ag.resume, "continue")
                return
            if self._python_level(st) and op in ("next", "step", "finish", "until"):
                frame = pyview.agent_frame_index(st, self.py_sel)
                fn = {"next": ag.step_over, "until": ag.step_over, "step": ag.step_into, "finish": ag.step_out}[op]
                self._run(lambda: fn(frame=frame, thread=tid), f"Python {names[op]}")
                return
            if op == "finish" and pyview.returns_into_python(st):
                self._run(ag.step_out_to_python, "finish to Python")
                return
        if op in ("next", "step", "until"):
            # Written to gdb here, not when a worker starts: the program steps while the loop goes on.
            try:
                answer = self.session.step_now(op)
            except EngineError as exc:
                self._engine_error(names[op], exc)
                return
            self._await_step_answer(answer, names[op])
            return
        self._run(getattr(self.session, op), names.get(op, op))

    def _python_level(self, st: DebuggerState) -> bool:
        """A Python frame is selected, or the agent stopped here and the Python stack is not decoded yet
        (a key pressed right after the stop): a step is taken at the Python level."""
        return self.py_sel is not None or (st.python.stop is not None and pyview.python_thread(st) is None)

    def python_step_refused(self) -> str | None:
        """Why a step from the selected frame is refused now, or None: a Python frame is selected (or
        the selected thread shows Python frames while no frame is chosen yet) and the Python agent of
        this process is not active (not loaded yet, failed, gone, or none in this session)."""
        st = self.state
        if not st.is_stopped or self._agent() is not None:
            return None
        pt = pyview.python_thread(st)
        if not self._python_level(st) or pt is None or not pt.frames:
            return None
        ag = pyagent.controller(self.session)
        why = pyview.agent_inactive_reason(ag.info if ag is not None else None)
        return why + "; choose a C frame for a native step"

    def refuse_at_stop(self, text: str) -> None:
        """An action refused at this stop: its reason in the status line (until the next stop) and a
        toast (where an 80-column status line cuts it)."""
        self.stop_note = ((self.state.selected_inferior, pyview.stop_generation(self.state)), text)
        self._update_status(self.state)
        self.notify(text, markup=False)

    def take_input_bytes(self, data: bytes) -> bool:
        """The terminal driver's input thread, at each read: a planned step key, written to gdb now
        (``ui.keyplan``; the driver: ``ui.driver``)."""
        return keyplan.take(self, data)

    def on_descendant_focus(self, _event) -> None:
        # (the keys' way goes from the focused widget up: a plan for the new focus, ui.keyplan)
        if self.state.is_stopped:
            self._arm_keys_later()

    def _arm_keys_later(self) -> None:
        """A plan for the step keys ARM_AFTER seconds from now (a stop's refreshed state, a focus change)."""
        asyncio.get_running_loop().call_later(keyplan.ARM_AFTER, self.arm_keys)

    def on_unmount(self) -> None:
        keyplan.disarm(self)  # (its copy of gdb's input closed)

    # -- the step keys' plan (ui.keyplan): its public seam ------------------------------------------

    def arm_keys(self, tries: int = 0) -> None:
        """Make the step keys' plan for the app as it is now (``keyplan.arm``; a stop's refreshed state and
        a focus change do, ARM_AFTER seconds later)."""
        try:
            keyplan.arm(self, tries)
        except Exception as error:  # (from the loop's timer: an error stops the app as Textual's would)
            self._handle_exception(error)

    @property
    def key_plan(self) -> keyplan.Plan | None:
        """The step keys' plan armed now, or None. (Kept in the instance's dict: the input thread takes it
        with one dict operation, ``keyplan.take``.) Setting it puts a plan back, as if it were armed."""
        return self.__dict__.get("_key_plan")

    @key_plan.setter
    def key_plan(self, plan: keyplan.Plan | None) -> None:
        if plan is None:
            self.__dict__.pop("_key_plan", None)
        else:
            self.__dict__["_key_plan"] = plan

    def input_in_flight(self) -> bool:
        """A key read by the terminal's input thread, handed to the loop and not taken in there yet
        (``ui.driver``): a planned key after it must not go first."""
        return getattr(self._driver, "input_in_flight", False)

    @property
    def terminal_writer(self) -> Any:
        """The terminal driver's writer thread (``ui.driver.OrderedWriter`` under tuidbg's driver), or None
        (headless, inline, not started)."""
        return getattr(getattr(self, "_driver", None), "_writer_thread", None)

    @property
    def steps_in_flight(self) -> int:
        """How many steps' answers (sent at once, or written by a plan) the app still awaits."""
        return len(self._answers)

    def _await_step_answer(self, answer: Coroutine[Any, Any, Any], what: str) -> None:
        """A step's answer awaited by a plain task, its errors shown as "WHAT: ...": a worker's start and
        its state messages, handled while gdb steps, would take the core gdb needs (bench/RESULTS.md,
        issue 11). Also the answer of a step a key's plan wrote (``ui.keyplan``)."""
        task = asyncio.ensure_future(self._reported(lambda: answer, what))
        self._answers.add(task)
        task.add_done_callback(lambda t: self._answered(t, what))

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
                self.notify(remote.NO_AGENT if self.session.config.remote else
                            "Python breakpoints need tuidbg's Python agent (a Python program under tuidbg run or attach)", markup=False)
                return

            async def toggle_py() -> None:
                bp = await ag.toggle_breakpoint_at(path, line)
                if bp is not None and bp.message:
                    self.notify(bp.message, markup=False)
                waits = pyview.breakpoint_waits_note(ag.info, self.state.process is ProcessState.RUNNING)
                if bp is not None and waits is not None:
                    # (not silently waiting: issue 30; while running the status line says it too, app_status)
                    text = f"Python breakpoint {bp.id} set; {waits}"
                    if self.state.is_stopped:
                        self.refuse_at_stop(text)
                    else:
                        self.notify(text, markup=False)

            self._run(toggle_py, "Python breakpoint")
            return

        async def toggle() -> None:
            bp = await self.session.toggle_breakpoint_at(path, line)
            if bp is not None and bp.line is not None and bp.line != line and bp.fullname == path:
                self.notify(f"breakpoint {bp.number} placed at line {bp.line} (no code at line {line})", markup=False)

        self._run(toggle, "breakpoint")

    def on_source_view_breakpoint_toggle(self, message: SourceView.BreakpointToggle) -> None:
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

    def on_breakpoints_pane_action(self, message: BreakpointsPane.Action) -> None:
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

    def action_skip_throw(self) -> None:
        """At a stop on a C++ throw (a c10 error libtorch may catch itself): throws from this site no
        longer stop the program, for the rest of the session; the program continues."""
        throws = cxxthrow.get(self.session)
        throw = self.state.cxx_throw
        if throws is None or throw is None or not self.state.is_stopped:
            self.notify("not stopped at a C++ throw", markup=False)
            return
        if not throw.site:
            self.notify("the function that threw is not known: nothing to skip", markup=False)
            return
        ag = self._agent()

        async def skip_and_continue() -> None:
            await throws.skip_site(throw.site)
            await (ag.resume() if ag is not None else self.session.cont())

        self._run(skip_and_continue, "skip the throw site")

    # -- what the program and gdb did, said in the Output pane and the console --------------------------

    def _notice_transitions(self, prev: DebuggerState, state: DebuggerState) -> None:
        out = self.query_one(OutputPane)
        if prev.process is not state.process:
            # (from NOT_STARTED: a program that tuidbg run started, ended before the screen was up)
            ran = prev.process in (ProcessState.NOT_STARTED, ProcessState.RUNNING, ProcessState.STOPPED)
            if state.process is ProcessState.EXITED and ran:
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
        self._watch_start(prev, state)  # (a program that exited at once: its last lines, app_start)
