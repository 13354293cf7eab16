"""The ``py*`` console commands (``pybreak``, ``pystep``, ``pyprint``, ``pyhelp`` ...) and gdb's ``break`` on a
``.py`` line: parsed here, carried out through ``PyAgent``'s public API."""

from __future__ import annotations

import logging
import os
import re
import shlex

from tuidbg.agent import protocol as P
from tuidbg.engine import ranks
from tuidbg.engine.errors import EngineError
from tuidbg.engine.pyagent.base import AgentBase
from tuidbg.engine.python import view as pyview
from tuidbg.engine.python.model import PyBreakpoint
from tuidbg.engine.state import ProcessState

log = logging.getLogger("tuidbg.engine")


class ConsoleCommands(AgentBase):
    """Part of ``PyAgent`` (see the module's docstring)."""

    # -- console --------------------------------------------------------------------------------

    COMMANDS = (
        "pybreak", "pyb", "pytbreak", "pydelete", "pyenable", "pydisable", "pycondition", "pyignore", "pyinfo",
        "pystep", "pynext", "pyfinish", "pystepnative", "pyfinishnative", "pycontinue", "pycatch", "pyprint",
        "pyeval", "pylocals", "pyuntilgil", "pyhelp",
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
        if cmd == "pyuntilgil":
            return await self._cmd_until_gil(rest)
        if cmd == "pycatch":
            return await self._cmd_catch(rest)
        if cmd in ("pyprint", "pyeval"):
            if not rest:
                raise EngineError(f"usage: {cmd} EXPRESSION")
            if rest == "--all" or rest.startswith("--all ") or rest.endswith(" --all"):
                # (with several processes the CrossRank extension runs it: crossrank.across_form)
                raise EngineError(f"{cmd} --all: one process is under the debugger (several: run --children, "
                                  "attach --children, attach PID PID...)")
            return await self.evaluate(rest, frame)
        if cmd == "pylocals":
            rows = await self.python_locals(int(rest) if rest.isdigit() else frame)
            return "\n".join(f"{n} = {v}  ({t})" for n, t, v in rows) or "no locals"
        return _HELP

    async def _cmd_until_gil(self, rest: str) -> str:
        """At a native stop: run until the thread that holds the GIL (or THREAD) reaches its next Python
        line, an agent stop where pyprint and the watches evaluate (native_eval.py's way out)."""
        st = self._session().state
        if not st.is_stopped or self.at_agent_stop(st) is not None:
            raise EngineError("pyuntilgil: the program is not at a native stop (Python evaluates here already)")
        tid = rest.strip() or None
        if tid is None:
            gil = await self.gil_holder()  # type: ignore[attr-defined]  (NativeEvaluation, beside it in PyAgent)
            if gil.get("status") != "ok":
                raise EngineError(f"pyuntilgil: which thread holds the GIL is not readable ({gil.get('reason')}); "
                                  "give the thread: pyuntilgil THREAD")
            tid = gil.get("holder_thread") or st.selected_thread
        if not tid or st.thread(str(tid)) is None:
            raise EngineError(f"pyuntilgil: no thread {tid}")
        if st.selected_thread != str(tid):
            await self._session().select_thread(str(tid))  # (its Python frames placed on its C stack)
        await self._step_from_native(P.M_INTO, 0, str(tid))  # type: ignore[attr-defined]
        return f"running until thread {tid}'s next Python line"

    async def _cmd_break(self, rest: str, temporary: bool) -> str:
        if not rest:
            raise EngineError("usage: pybreak [FILE:]LINE [task NAME] [rank RANKS|pid PIDS|group] [if CONDITION]")
        cond = None
        loc = rest
        m = _split_if(rest)
        if m is not None:
            loc, cond = m
        loc, quals = split_qualifiers(loc.strip())
        task = quals.get("task") or None
        ranks_, pids = self._break_processes(quals)
        if ":" in loc:
            file, _, line_s = loc.rpartition(":")
        else:
            stop = self.at_agent_stop()
            if stop is None or not stop.file:
                raise EngineError("give FILE:LINE (there is no current Python file)")
            file, line_s = stop.file, loc
        if not line_s.strip().isdigit():
            raise EngineError(f"{line_s!r} is not a line number")
        # One breakpoint a line (for the same task and processes): a second (typed again, or one remembered
        # from the last run) adds nothing, also when the line asked for has no code and the breakpoint would
        # move to one that has one.
        def same(found: list[PyBreakpoint]) -> list[PyBreakpoint]:
            return [b for b in found if (b.task, b.ranks, b.pids) == (task, tuple(sorted(set(ranks_))),
                                                                       tuple(sorted(set(pids))))]

        there = same(self.breakpoints_at(os.path.expanduser(file), int(line_s)))
        if there:
            return _already(there[0])
        bp = await self.add_breakpoint(os.path.expanduser(file), int(line_s), condition=cond, temporary=temporary,
                                       task=task, ranks=ranks_, pids=pids)
        if bp.verified:
            there = [b for b in same(self.breakpoints_at(bp.file, bp.effective_line)) if b.id != bp.id]
            if there:
                await self.delete_breakpoint(bp.id)
                return _already(there[0])
        text = bp.describe()
        if bp.message and bp.verified:
            text += f"\n{bp.message}"
        st = self._state()
        waits = pyview.breakpoint_waits_note(self.info, st is not None and st.process is ProcessState.RUNNING)
        if waits is not None:
            text += f"\n({waits})"
        elif not self.info.connected:
            text += "\n(the Python agent is not running yet: the breakpoint is set when it starts)"
        return text

    def _break_processes(self, quals: dict[str, str]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(ranks, pids) a breakpoint is limited to by its qualifiers: ``rank 0,2-5``, ``pid 4101,4102``,
        ``group`` (the run group's processes: by rank where each is a rank)."""
        rs: tuple[int, ...] = ranks.parse_ranks(quals["rank"]) if "rank" in quals else ()
        pids: tuple[int, ...] = ()
        if "pid" in quals:
            words = quals["pid"].replace(",", " ").split()
            if not words or not all(w.isdigit() for w in words):
                raise EngineError(f"{quals['pid']!r} is not a list of process IDs")
            pids = tuple(int(w) for w in words)
        if "group" in quals:
            st = self._session().state
            if not st.run_group:
                raise EngineError("pybreak ... group: no run group is set (group RANKS sets one)")
            members = [inf for inf in st.inferiors if inf.id in st.run_group]
            by_rank = [ranks.rank_of(inf, st) for inf in members]
            if all(r is not None for r in by_rank):
                rs = tuple(sorted(set(rs) | {r for r in by_rank if r is not None}))
            else:
                pids = tuple(sorted(set(pids) | {inf.pid for inf in members if inf.pid}))
        return rs, pids

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
  pybreak [FILE:]LINE [if COND]   set a Python breakpoint (pytbreak: temporary);
                                  gdb's break/tbreak on FILE.py:LINE does the same;
                                  after the line: task NAME limits it to that asyncio task,
                                  rank 0,2-5 / pid PID,... / group to those processes
                                  (the run group's)
  pydelete [ID ...]               delete Python breakpoints (all without IDs)
  pyenable / pydisable [ID ...]   enable or disable them
  pycondition ID [COND]           set or clear a condition
  pyignore ID COUNT               ignore the next COUNT hits
  pyinfo                          the agent and the Python breakpoints
  pynext / pystep / pyfinish [FRAME]  step over / into / out (Python; the selected frame)
  pystepnative                    step into the first native function the line calls
  pyfinishnative                  from a native frame, run back to the Python caller
  pycontinue                      continue
  pyuntilgil [THREAD]             at a native stop: run until the GIL's holder (or THREAD) runs its next
                                  Python line, where pyprint and the watches evaluate
  pycatch [uncaught|raise TYPE...|failure|off]  stop on exceptions / failing tests
  pyprint EXPR                    evaluate Python in the selected Python frame
  pylocals [FRAME]                the locals of a Python frame (the selected one)
Several processes (run --children, attach PID PID..., attach --children):
  pyall EXPR, pyprint --all EXPR  EXPR in the same function's frame of every process, grouped by value
  printall EXPR, print --all EXPR a C/C++ expression through gdb in every process, grouped by value
  group RANKS|ranks|workers|all   the processes c continues; the others stay stopped (group all: every one)"""


def _py_location(rest: str) -> bool:
    """``FILE.py:LINE`` (with an optional ``if COND``)."""
    m = _split_if(rest)
    loc = (m[0] if m is not None else rest).strip()
    if " " in loc:  # (its qualifiers after it)
        try:
            loc = split_qualifiers(loc)[0]
        except EngineError:  # (pybreak says what is wrong with them)
            loc = loc.split(None, 1)[0]
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


# pybreak's qualifiers after FILE:LINE (and before ``if COND``): a keyword, then how many words its value
# takes. ``split_qualifiers`` is the one parser of them: a new qualifier is a line here.
QUALIFIERS = {
    "task": 1,  # task NAME: only in the asyncio task of that name (quoted if it has spaces)
    "rank": 1,  # rank 3, rank 0,2-5: only in those ranks (engine.ranks)
    "pid": 1,  # pid 4101,4102: only in those processes
    "group": 0,  # group: only in the run group's processes
}


def split_qualifiers(loc: str) -> tuple[str, dict[str, str]]:
    """``FILE:LINE rank 0,2-5`` -> (``FILE:LINE``, {"rank": "0,2-5"}): the qualifiers start at the first
    word after the location that is one (a path may have spaces); a value may be quoted. EngineError for
    a qualifier given twice or without its value, or a word that is none."""
    m = re.search(r"\s(%s)(\s|$)" % "|".join(map(re.escape, QUALIFIERS)), loc)
    if m is None:
        return loc, {}
    head, tail = loc[:m.start()].strip(), loc[m.start():]
    try:
        words = shlex.split(tail)
    except ValueError:
        words = tail.split()
    quals: dict[str, str] = {}
    i = 0
    while i < len(words):
        key = words[i]
        if key not in QUALIFIERS:
            raise EngineError(f"pybreak: {key!r} is not {', '.join(QUALIFIERS)} (after FILE:LINE)")
        if key in quals:
            raise EngineError(f"pybreak: {key} given twice")
        n = QUALIFIERS[key]
        if i + n > len(words) - 1:
            raise EngineError(f"pybreak: {key} needs a value")
        quals[key] = " ".join(words[i + 1:i + 1 + n])
        i += 1 + n
    return head, quals


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
