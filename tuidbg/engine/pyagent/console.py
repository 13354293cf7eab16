"""The ``py*`` console commands (``pybreak``, ``pystep``, ``pyprint``, ``pyhelp`` ...) and gdb's ``break`` on a
``.py`` line: parsed here, carried out through ``PyAgent``'s public API."""

from __future__ import annotations

import logging
import os
import shlex

from tuidbg.engine.errors import EngineError
from tuidbg.engine.pyagent.base import AgentBase
from tuidbg.engine.python.model import PyBreakpoint

log = logging.getLogger("tuidbg.engine")


class ConsoleCommands(AgentBase):
    """Part of ``PyAgent`` (see the module's docstring)."""

    # -- console --------------------------------------------------------------------------------

    COMMANDS = (
        "pybreak", "pyb", "pytbreak", "pydelete", "pyenable", "pydisable", "pycondition", "pyignore", "pyinfo",
        "pystep", "pynext", "pyfinish", "pystepnative", "pyfinishnative", "pycontinue", "pycatch", "pyprint",
        "pyeval", "pylocals", "pyhelp",
    )

    GDB_BREAK = ("break", "b", "br", "tbreak")

    def claims_console(self, text: str) -> bool:
        """Whether ``handle_console`` runs this command: a ``py*`` command, or gdb's ``break`` on a
        ``.py`` line (``b test_ops.py:42``), which means a Python breakpoint."""
        words = text.strip().split(None, 1)
        if not words:
            return False
        if words[0] in self.COMMANDS:
            return True
        return words[0] in self.GDB_BREAK and len(words) > 1 and _py_location(words[1])

    async def handle_console(self, text: str, frame: int = 0) -> str | None:
        """Run a ``py*`` console command (or ``break FILE.py:LINE``). None if ``text`` is not one;
        raises EngineError on bad input. ``frame``: the selected Python frame (the agent's numbering),
        where pyprint, pylocals and the steps act unless told otherwise."""
        if not self.claims_console(text):
            return None
        words = text.strip().split(None, 1)
        cmd, rest = words[0], (words[1].strip() if len(words) > 1 else "")
        if cmd in self.GDB_BREAK:
            cmd = "pytbreak" if cmd == "tbreak" else "pybreak"
        if cmd in ("pybreak", "pyb", "pytbreak"):
            return await self._cmd_break(rest, temporary=cmd == "pytbreak")
        if cmd == "pydelete":
            if not rest:
                n = len(self._bps)
                await self.delete_all_breakpoints()
                return f"deleted {n} Python breakpoint{'s' if n != 1 else ''}"
            for i in _ids(rest):
                await self.delete_breakpoint(i)
            return f"deleted Python breakpoint {rest}"
        if cmd in ("pyenable", "pydisable"):
            ids = _ids(rest) if rest else list(self._bps)
            for i in ids:
                await self.enable_breakpoint(i, cmd == "pyenable")
            return "\n".join(self._bps[i].describe() for i in ids if i in self._bps) or "no Python breakpoints"
        if cmd == "pycondition":
            parts = rest.split(None, 1)
            if not parts:
                raise EngineError("usage: pycondition ID [EXPRESSION]")
            bp = await self.set_condition(_ids(parts[0])[0], parts[1] if len(parts) > 1 else None)
            return bp.describe()
        if cmd == "pyignore":
            parts = rest.split()
            if len(parts) != 2 or not parts[1].isdigit():
                raise EngineError("usage: pyignore ID COUNT")
            bp = await self.set_ignore_count(_ids(parts[0])[0], int(parts[1]))
            return bp.describe()
        if cmd == "pyinfo":
            return self._info_text()
        if cmd in ("pystep", "pynext", "pyfinish", "pystepnative"):
            mode = {"pystep": self.step_into, "pynext": self.step_over, "pyfinish": self.step_out,
                    "pystepnative": self.step_into_native}[cmd]
            await mode(int(rest) if rest.isdigit() else frame)
            return ""
        if cmd == "pyfinishnative":
            await self.step_out_to_python()
            return ""
        if cmd == "pycontinue":
            await self.resume()
            return ""
        if cmd == "pycatch":
            return await self._cmd_catch(rest)
        if cmd in ("pyprint", "pyeval"):
            if not rest:
                raise EngineError(f"usage: {cmd} EXPRESSION")
            return await self.evaluate(rest, frame)
        if cmd == "pylocals":
            rows = await self.python_locals(int(rest) if rest.isdigit() else frame)
            return "\n".join(f"{n} = {v}  ({t})" for n, t, v in rows) or "no locals"
        return _HELP

    async def _cmd_break(self, rest: str, temporary: bool) -> str:
        if not rest:
            raise EngineError("usage: pybreak [FILE:]LINE [task NAME] [if CONDITION]")
        cond = None
        loc = rest
        m = _split_if(rest)
        if m is not None:
            loc, cond = m
        loc, task = _split_task(loc.strip())
        loc = loc.strip()
        if ":" in loc:
            file, _, line_s = loc.rpartition(":")
        else:
            stop = self.at_agent_stop()
            if stop is None or not stop.file:
                raise EngineError("give FILE:LINE (there is no current Python file)")
            file, line_s = stop.file, loc
        if not line_s.strip().isdigit():
            raise EngineError(f"{line_s!r} is not a line number")
        # One breakpoint a line: a second (typed again, or one remembered from the last run) adds nothing,
        # also when the line asked for has no code and the breakpoint would move to one that has one.
        there = self.breakpoints_at(os.path.expanduser(file), int(line_s))
        if there:
            return _already(there[0])
        bp = await self.add_breakpoint(os.path.expanduser(file), int(line_s), condition=cond, temporary=temporary,
                                       task=task)
        if bp.verified:
            there = [b for b in self.breakpoints_at(bp.file, bp.effective_line) if b.id != bp.id]
            if there:
                await self.delete_breakpoint(bp.id)
                return _already(there[0])
        text = bp.describe()
        if bp.message and bp.verified:
            text += f"\n{bp.message}"
        if not self.info.connected:
            text += "\n(the Python agent is not running yet: the breakpoint is set when it starts)"
        return text

    async def _cmd_catch(self, rest: str) -> str:
        words = rest.split()
        if not words:
            o = self._opts
            raised = ", ".join(o["raise"]) or "none"
            return f"uncaught exceptions: {'stop' if o['uncaught'] else 'ignore'}; raised: {raised}; " \
                   f"failing tests: {'stop' if o['failure'] else 'ignore'}"
        if words[0] == "off":
            await self.set_exception_breaks(uncaught=False, raised=[])
        elif words[0] == "uncaught":
            await self.set_exception_breaks(uncaught=not (len(words) > 1 and words[1] == "off"))
        elif words[0] == "raise":
            names = [w for x in words[1:] for w in x.split(",") if w]
            await self.set_exception_breaks(raised=[] if names == ["off"] else names or ["*"])
        elif words[0] == "failure":
            await self.set_break_on_failure(not (len(words) > 1 and words[1] == "off"))
        else:
            raise EngineError("usage: pycatch [uncaught [off] | raise [TYPE ...|off] | failure [off] | off]")
        return await self._cmd_catch("")

    def _info_text(self) -> str:
        i = self.info
        lines = [f"Python agent: {i.status}" + (f" ({i.message})" if i.message else "")]
        if i.python:
            lines[0] += f"; Python {i.python}, {i.backend}"
        for b in self.breakpoints:
            lines.append(b.describe())
        if not self._bps:
            lines.append("no Python breakpoints")
        return "\n".join(lines)


_HELP = """Python debugging commands (tuidbg's agent):
  pybreak [FILE:]LINE [task NAME] [if COND]   set a Python breakpoint (pytbreak: temporary;
                                  task NAME: only in that asyncio task);
                                  gdb's break/tbreak on FILE.py:LINE does the same
  pydelete [ID ...]               delete Python breakpoints (all without IDs)
  pyenable / pydisable [ID ...]   enable or disable them
  pycondition ID [COND]           set or clear a condition
  pyignore ID COUNT               ignore the next COUNT hits
  pyinfo                          the agent and the Python breakpoints
  pynext / pystep / pyfinish [FRAME]  step over / into / out (Python; the selected frame)
  pystepnative                    step into the first native function the line calls
  pyfinishnative                  from a native frame, run back to the Python caller
  pycontinue                      continue
  pycatch [uncaught|raise TYPE...|failure|off]  stop on exceptions / failing tests
  pyprint EXPR                    evaluate Python in the selected Python frame
  pylocals [FRAME]                the locals of a Python frame (the selected one)"""


def _py_location(rest: str) -> bool:
    """``FILE.py:LINE`` (with an optional ``if COND``)."""
    m = _split_if(rest)
    loc = (m[0] if m is not None else rest).strip()
    file, sep, line = loc.rpartition(":")
    return bool(sep) and file.endswith((".py", ".pyw")) and line.strip().isdigit()


def _ids(text: str) -> list[int]:
    out = []
    for w in text.replace(",", " ").split():
        w = w[2:] if w.startswith("py") else w
        if not w.isdigit():
            raise EngineError(f"{w!r} is not a Python breakpoint number")
        out.append(int(w))
    return out


def _already(b: PyBreakpoint) -> str:
    return (f"Python breakpoint {b.id} is already at {b.file}:{b.effective_line}: nothing added"
            f" (pycondition {b.id} EXPR gives it a condition, pydelete {b.id} removes it)")


def _split_task(text: str) -> tuple[str, str | None]:
    """``FILE:LINE task NAME`` -> (``FILE:LINE``, NAME); a name with spaces is quoted."""
    idx = text.find(" task ")
    if idx < 0:
        return text, None
    name = text[idx + 6:].strip()
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "'\"":
        name = name[1:-1]
    if not name:
        raise EngineError("pybreak FILE:LINE task NAME: which task? (its name, as asyncio names it)")
    return text[:idx], name


def _split_if(text: str) -> tuple[str, str] | None:
    try:
        words = shlex.split(text, posix=False)
    except ValueError:
        words = text.split()
    if "if" not in words:
        return None
    idx = text.find(" if ")
    if idx < 0:
        return None
    return text[:idx], text[idx + 4 :].strip()
