"""The app's side of the machine-level panes (Disassembly, Registers, Memory): a mixin of TuidbgApp.

- The Disassembly view shares the source area: ``a`` switches between them, and a stop in a frame
  without source (a stripped library, libtorch) shows it by itself; it follows the pc at each stop.
- ``b`` and ``t`` act on the instruction under the cursor when the Disassembly view has the focus
  (``break *ADDR``, run to it); ``I``/``N`` step one instruction (gdb's ``stepi``/``nexti``).
- Registers and Memory are tabs beside Locals; they read at a stop while shown (and when shown).
- The prompts for editing a register, going to an address and writing a byte are here (panes do
  not open screens).
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any

from textual.widgets import TabbedContent

from tuidbg.engine import machine, native
from tuidbg.engine.errors import EngineError
from tuidbg.ui.panes.disasm import DisasmView
from tuidbg.ui.panes.memory import MemoryView, open_expression
from tuidbg.ui.panes.registers import RegistersPane
from tuidbg.ui.panes.source import SourceView
from tuidbg.ui.panes.variables import VariablesTree
from tuidbg.ui.screens.modals import PromptScreen
from tuidbg.ui.text import visible

if TYPE_CHECKING:
    from tuidbg.engine.state import DebuggerState

SETTLE = 0.06  # seconds a frame stays selected before the disassembly follows it
_POINTER = re.compile(r"^\s*(?:\([^)]*\)\s*)?(0x[0-9a-fA-F]+)")


class NativeActions:
    """Mixed into TuidbgApp (which provides query_one, _run, notify, push_screen, state, session)."""

    _asm_on: bool = False  # the user asked for the Disassembly view (a)
    _asm_key: tuple | None = None
    _asm_pid: int | None = None

    # -- state --------------------------------------------------------------------------------

    def _native_attach(self: Any, bridge) -> None:
        """The panes read through the app's SessionBridge for this session."""
        view = self.query_one(DisasmView)
        view.source = bridge
        view.window = None
        self.query_one(RegistersPane).source = bridge
        self.query_one(MemoryView).source = bridge
        self._asm_key = None

    @property
    def disasm_shown(self: Any) -> bool:
        return bool(self.query_one(DisasmView).display)

    def _show_disasm(self: Any, on: bool) -> None:
        view, src = self.query_one(DisasmView), self.query_one(SourceView)
        # The focus stays in the source area: a focused widget that is hidden passes the focus on to its
        # neighbour in the focus chain (Textual's Widget._on_hide), and the step keys would be typed into
        # the console's input (a stop without source before a stop with it: the disassembly is shown a
        # moment, in place of the source).
        area = self.focused is not None and self.focused in (view, src)
        view.display = on
        src.display = not on
        if area:
            (view if on else src).focus(scroll_visible=False)
        if on:
            self._disasm_title()

    def _source_opened(self: Any) -> None:
        """The user opened a file: the source area shows it (until the next ``a``)."""
        self._asm_on = False
        self._show_disasm(False)

    def _disasm_title(self: Any) -> None:
        if self.disasm_shown:
            self._set_source_title(self.query_one(DisasmView).title)

    def _native_update(self: Any, state: "DebuggerState") -> None:
        """At each state: the Disassembly view follows the pc, marks, the Registers and Memory panes."""
        view = self.query_one(DisasmView)
        marks: dict[int, bool] = {}
        for b in state.breakpoints:
            if b.internal:
                continue
            for addr in [b.addr] + [loc.addr for loc in getattr(b, "locations", ())]:
                m = _POINTER.match(str(addr or ""))
                if m:
                    marks[int(m.group(1), 16)] = b.enabled
        view.set_breakpoints(marks)
        if state.pid != self._asm_pid:  # a new process: its code may be elsewhere (or other code)
            self._asm_pid = state.pid
            view.window = None
        if not state.is_stopped:
            view.set_pc(None)
            return
        frame = state.selected or (state.frames[0] if state.frames else None)
        if frame is None or not frame.addr or not state.refreshed:
            return
        sourceless = _no_source(self, frame)
        want = self._asm_on or sourceless
        if want != self.disasm_shown:
            self._show_disasm(want)
        key = (state.generation, state.selected_thread, state.selected_frame, frame.addr)
        if not want:
            self._asm_key = None
        elif key != self._asm_key:
            self._asm_key = key
            addr = int(frame.addr, 16)
            top = (state.selected_frame or 0) == 0

            async def follow() -> None:
                # a frame passed through on the way to another (a thread selected, then its frame)
                # is not disassembled: only one that is still selected a moment later
                await asyncio.sleep(SETTLE)
                if self._asm_key != key:
                    return
                await view.show_address(addr, pc=True, top=top)
                self._disasm_title()

            self.run_worker(follow, group="disasm", exclusive=True, exit_on_error=False)
        self._native_panes(state)

    def _native_panes(self: Any, state: "DebuggerState") -> None:
        vars_group = self.query_one("#vars-group", TabbedContent)
        shown = (not self.narrow) or self.query_one("#main").has_class("-show-vars")
        self.query_one(RegistersPane).update_state(state, shown and vars_group.active == "tab-registers")
        self.query_one(MemoryView).update_state(state, shown and vars_group.active == "tab-memory")

    def on_tabbed_content_tab_activated(self: Any, event: TabbedContent.TabActivated) -> None:
        if event.tabbed_content.id == "vars-group" and self.state.is_stopped:
            self._native_panes(self.state)

    # -- actions ------------------------------------------------------------------------------

    def action_toggle_disassembly(self: Any) -> None:
        self._asm_on = not (self._asm_on or self.disasm_shown)
        st = self.state
        frame = st.selected or (st.frames[0] if st.frames else None) if st.is_stopped else None
        sourceless = frame is not None and _no_source(self, frame)
        on = self._asm_on or sourceless
        if not on and sourceless:
            self.notify("this frame has no source: the disassembly stays", markup=False)
        self._show_disasm(on)
        if on:
            self._asm_key = None
            self._native_update(st)
            self.query_one(DisasmView).focus()
        else:
            self._set_source_title(self.query_one(SourceView).path or "Source")
            self.query_one(SourceView).focus()

    def _disasm_focused(self: Any) -> bool:
        return self.disasm_shown and self.focused is self.query_one(DisasmView)

    def _instruction_at_cursor(self: Any) -> native.Instruction | None:
        ins = self.query_one(DisasmView).cursor_instruction
        if ins is None:
            self.notify("no instruction under the cursor", markup=False)
        return ins

    def _toggle_instruction_breakpoint(self: Any) -> None:
        ins = self._instruction_at_cursor()
        if ins is None:
            return
        existing = [b for b in self.state.breakpoints if not b.internal and _addr(b.addr) == ins.address]

        async def toggle() -> None:
            if existing:
                for b in existing:
                    await self.session.break_delete(b.number)
            else:
                await self.session.break_insert(address=ins.address)

        self._run(toggle, "breakpoint on an instruction")

    def _run_to_instruction(self: Any) -> None:
        ins = self._instruction_at_cursor()
        if ins is not None:
            self._run(lambda: native.run_to_address(self.session, ins.address), "run to instruction")

    def _step_instruction(self: Any, over: bool) -> None:
        fn = native.nexti if over else native.stepi
        self._run(lambda: fn(self.session), "nexti" if over else "stepi")

    # -- prompts --------------------------------------------------------------------------------

    def on_registers_pane_edit_register(self: Any, message: RegistersPane.EditRegister) -> None:
        name = message.name
        pane = self.query_one(RegistersPane)

        def done(value: str | None) -> None:
            if value is None or not value.strip():
                return

            async def write() -> None:
                await machine.write_register(self.session, name, value.strip())
                await pane.read()

            self._run(write, f"set ${name}")

        self.push_screen(PromptScreen(f"New value of ${name}", message.value, "an expression, e.g. 0x10 or $rsp+8"), done)

    def on_memory_view_goto_requested(self: Any, message: MemoryView.GotoRequested) -> None:
        view = self.query_one(MemoryView)
        self.push_screen(PromptScreen("Memory at", view.expression or "", "an address or expression: 0x7ffd..., buf, &s.field, $sp"),
                         lambda text: self._open_memory(text) if text and text.strip() else None)

    def _open_memory(self: Any, expression: str) -> None:
        view = self.query_one(MemoryView)

        async def go() -> None:
            await open_expression(view, expression.strip())

        self.action_pane("memory")
        self._run(go, "memory")

    def on_memory_view_write_requested(self: Any, message: MemoryView.WriteRequested) -> None:
        addr, old = message.address, message.old
        view = self.query_one(MemoryView)

        def value_given(text: str | None) -> None:
            if text is None or not text.strip():
                return
            try:
                value = int(text.strip(), 0)
                if not 0 <= value <= 255:
                    raise ValueError
            except ValueError:
                self.notify(f"not a byte value: {text.strip()} (0-255, or 0x00-0xff)", severity="error", markup=False)
                return

            def confirmed(answer: str | None) -> None:
                if (answer or "").strip().lower() not in ("y", "yes"):
                    self.notify("nothing written", markup=False)
                    return

                async def write() -> None:
                    await machine.write_memory(self.session, addr, bytes([value]))
                    await view.reread()

                self._run(write, "write memory")

            self.push_screen(PromptScreen(f"Write {value:#04x} at {addr:#x}? (y/n)", "", "y writes the byte into the program"), confirmed)

        self.push_screen(PromptScreen(f"New value of the byte at {addr:#x}", "" if old is None else f"{old:#04x}", "0-255 or 0x00-0xff"),
                         value_given)

    def on_variables_tree_show_memory(self: Any, message: VariablesTree.ShowMemory) -> None:
        """x in Locals or Watch: a pointer opens memory where it points, an array at its first element,
        a struct where it is; any other value (an int) is not an address: the app asks first, the
        value filled in."""
        kind = memory_kind(message.type, message.value)
        m = _POINTER.match(message.value or "")
        if kind == "pointer" and m is not None:
            self._open_memory(m.group(1))
            return
        if kind == "scalar":
            number = _number(message.value)
            name = message.expression or message.name
            self.push_screen(
                PromptScreen(f"{visible(name)} ({visible(message.type or 'a value')}) is not an address: show memory at",
                             f"{number:#x}" if number is not None else "", "an address or expression",
                             f"Enter opens memory at its value; &{visible(name)} opens where it is stored"),
                lambda text: self._open_memory(text) if text and text.strip() else None)
            return
        where = "&(%s)" if kind == "object" else "%s"
        if message.expression:
            self._open_memory(where % message.expression)
        elif message.varobj:
            async def path_then_open() -> None:
                res = await self.session.cmd(f"-var-info-path-expression {message.varobj}")
                expr = str(res.get("path_expr") or "")
                if not expr:
                    raise EngineError("gdb gave no expression for this value")
                await open_expression(self.query_one(MemoryView), where % expr)

            self.action_pane("memory")
            self._run(path_then_open, "memory")
        else:
            self.notify("this value has no address to show", markup=False)


def memory_kind(type_: str | None, value: str | None) -> str:
    """What x opens for a value of this type: "pointer" (where it points), "array" (its first element),
    "object" (where a struct or union is), "scalar" (not an address: asked first)."""
    t = (type_ or "").strip()
    if t.endswith("*") or "(*)" in t or (not t and _POINTER.match(value or "")):
        return "pointer"
    if t.endswith("]"):
        return "array"
    if value is None or value.startswith("{") or t.endswith("&") or t.startswith(("struct ", "union ", "class ")):
        return "object"  # (a reference: where the object it names is)
    return "scalar"


def _number(text: str | None) -> int | None:
    """An integer value as gdb prints it (``4``, ``-1``, ``0x10``, ``65 'A'``), or None."""
    word = (text or "").split(" ", 1)[0]
    try:
        return int(word, 0)
    except ValueError:
        return None


def _addr(text: str | None) -> int | None:
    m = _POINTER.match(str(text or ""))
    return int(m.group(1), 16) if m else None


def _no_source(app: Any, frame) -> bool:
    """Whether the disassembly takes the source area by itself: the frame has no line information
    (a stripped library, libtorch, JIT code) and the source view has nothing else to show (a
    Python frame's file, a file the user opened, or why such a file cannot be shown). A frame whose
    file gdb names but this machine lacks keeps the source view's explanation (substitute-path); ``a``
    shows its instructions."""
    src = app.query_one(SourceView)
    if src.path or src.refused:  # (a file it cannot show: the source view says why)
        return False
    return not (frame.fullname and frame.line is not None)
