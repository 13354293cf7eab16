"""One expression across every process of a session, its answers grouped by value (DDT's
cross-process comparison): ``pyall EXPR`` and ``printall EXPR`` in the console, A on a Watch row.

``pyall EXPR`` (also ``pyprint --all EXPR``) is Python, evaluated in the same function's frame of every
stopped process that has that function on its stack (the function of the selected Python frame; else
where the shown process is in Python): the innermost frame that runs it, in the thread where the
process is in Python first (``python.view.process_line``), else in any of its threads. How each value is had:

- a plain name (``step``, ``loss``) is read from each process's memory, all at once in worker
  threads (gdbext's value reader over ``/proc/PID/mem``, as the Locals pane reads locals): no agent is
  asked and nothing runs in the program. A value memory cannot describe (an object: a tensor, a
  module) is asked of the agent instead, where one runs;
- anything else (``self.step``, ``t.shape``, ``len(batch)``) is evaluated by each process's agent,
  all at once (``pyagent.across``: only the agents' threads run meanwhile). A torch value is its
  metadata line (shape, dtype, device), never its data.

``printall EXPR`` (also ``print --all EXPR``) is C/C++, evaluated by gdb in each stopped process, in the
frame of the selected native frame's function where that process has it (else its innermost frame):
one process after another (gdb evaluates in one process at a time).

Answers are grouped by their text ("step = 124  ×7  (rank 0-2,4-7)"), the largest group first; each
group says how its values were had; then the processes where the function is not on the stack, those
running, and errors. The console commands and ``group`` (``tuidbg.engine.ranks``' words) are run
by the ``CrossRank`` extension.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import keyword
import re
from dataclasses import dataclass, field, replace

from tuidbg.engine import mi, procstacks, pyagent, ranks
from tuidbg.engine.errors import EngineError, MIError, Timeout
from tuidbg.engine.extensions import Extension
from tuidbg.engine.pyagent.across import ThreadAsk
from tuidbg.engine.python.model import PyFrame, PyStack, user_frames
from tuidbg.engine.python.view import process_line
from tuidbg.engine.state import DebuggerState, Inferior, ProcessState

WORKERS = 4
READ_WAIT = 10.0  # seconds to wait for every process's stacks of this stop (procstacks)
_ADDR = re.compile(r"^<(.+) at 0x[0-9a-f]+>$")
# The types whose value memory shows whole (gdbext's value reader): any other is asked of the agent.
MEMORY_TYPES = frozenset({"int", "float", "bool", "complex", "str", "bytes", "NoneType", "list", "tuple", "dict",
                          "set", "frozenset"})


@dataclass(frozen=True)
class Where:
    """A Python function: its qualified name (as the Python frames pane names it) and its file."""

    func: str
    file: str

    @classmethod
    def of(cls, f: PyFrame) -> Where:
        return cls(f.name, f.file)

    def matches(self, f: PyFrame) -> bool:
        return f.file == self.file and self.func in (f.name, f.function)


@dataclass(frozen=True)
class Answer:
    """One process's: ``kind`` "value", "absent" (the function is not on its stack), "running",
    "no-python" or "error"; ``how``: "memory", "agent" or "gdb"."""

    iid: str
    kind: str
    value: str = ""
    type: str = ""
    how: str = ""
    error: str = ""


@dataclass
class Across:
    expr: str
    where: Where | None  # None: a native expression (printall)
    answers: list[Answer] = field(default_factory=list)
    native_func: str | None = None  # printall's function

    def groups(self) -> list[tuple[str, tuple[str, ...], str]]:
        """(value, processes, how) of each distinct value, the largest group first."""
        by: dict[str, list[Answer]] = {}
        for a in self.answers:
            if a.kind == "value":
                by.setdefault(a.value, []).append(a)
        out = []
        for value, ans in by.items():
            hows = sorted({a.how for a in ans})
            out.append((value, tuple(a.iid for a in ans), "+".join(hows)))
        out.sort(key=lambda g: -len(g[1]))
        return out

    def lines(self, state: DebuggerState) -> list[str]:
        """The console's report (see the module's docstring)."""
        where = (f" in {self.where.func} ({self.where.file.rsplit('/', 1)[-1]})" if self.where
                 else f" in {self.native_func}" if self.native_func else "")
        out = [f"{'pyall' if self.where else 'printall'} {self.expr}{where}:"]
        how_words = {"memory": "read from memory", "agent": "by the agent", "gdb": "by gdb",
                     "agent+memory": "from memory and by the agent"}
        groups = self.groups()
        for value, iids, how in groups:
            out.append(f"  {self.expr} = {value}  ×{len(iids)}  ({ranks.describe(state, iids)})"
                       f"{'  · ' + how_words.get(how, how) if how else ''}")
        if len(groups) > 1:
            odd = min(groups, key=lambda g: len(g[1]))
            out.append(f"  the values differ: {ranks.describe(state, odd[1])} holds {odd[0]}")
        func = self.where.func if self.where else self.native_func or "it"
        for kind, words in (("absent", f"no frame of {func}"),
                            ("running", "running"), ("no-python", "no Python")):
            iids = [a.iid for a in self.answers if a.kind == kind]
            if iids:
                out.append(f"  {words}: {ranks.describe(state, iids)}")
        for a in self.answers:
            if a.kind == "error":
                out.append(f"  {ranks.describe(state, [a.iid])}: {a.error}")
        if not self.answers:
            out.append("  no process is stopped")
        return out


def is_plain_name(expr: str) -> bool:
    return expr.isidentifier() and not keyword.iskeyword(expr)


def find_frame(inf: Inferior, stack: PyStack, where: Where) -> tuple[int | None, PyFrame] | None:
    """(the thread's LWP, the frame) of the innermost frame that runs ``where`` in process ``inf``: in the
    thread where the process is in Python first, else in any thread."""
    line = process_line(inf)
    threads = list(stack.threads)
    if line is not None:
        threads.sort(key=lambda t: 0 if (t.lwp == line.lwp or (line.tid and t.tid == line.tid)) else 1)
    for t in threads:
        for f in user_frames(t.frames):
            if where.matches(f):
                return t.lwp, f
    return None


def default_where(state: DebuggerState) -> Where:
    """Where the shown process is in Python (its stopped thread's innermost frame of the user's)."""
    line = process_line(state.inferior)
    if line is None or not isinstance(line.frame, PyFrame):
        raise EngineError("no Python frame is selected (select one in the Python frames pane)")
    return Where.of(line.frame)


# ---------------------------------------------------------------------------------------------
# A name read from memory


def read_name(pid: int, frame: PyFrame, name: str) -> tuple[str, str]:
    """(type, text) of local ``name`` of a stopped process's Python frame, read from its memory (a worker
    thread); LookupError when the frame has no such local, OSError/ValueError when it cannot be read."""
    from tuidbg.gdbext.cpython_interp import Interpreter
    from tuidbg.gdbext.cpython_walk import PyFrameRec, PyThreadRec, StopCache, ValueFormatter, Walker
    from tuidbg.procread.target import ProcTarget

    target = ProcTarget(pid)
    try:
        w = Walker(Interpreter(target), StopCache())
        rec = PyThreadRec(0, 0, 0, 0)
        rec.frames = [PyFrameRec(frame.function, frame.qualname, frame.file, frame.line, False, frame.code_addr,
                                 frame.frame_addr)]
        fmt = ValueFormatter(w, max_items=10, max_str=200)
        for n, _kind, addr in fmt.frame_locals(rec, 0):
            if n == name:
                return fmt.format(addr)
    finally:
        target.close()
    raise LookupError(name)


# ---------------------------------------------------------------------------------------------
# pyall


class _Pool:
    pool: concurrent.futures.ThreadPoolExecutor | None = None

    @classmethod
    def get(cls) -> concurrent.futures.ThreadPoolExecutor:
        if cls.pool is None:
            cls.pool = concurrent.futures.ThreadPoolExecutor(WORKERS, thread_name_prefix="tuidbg-crossrank")
        return cls.pool


async def pyall(session, expr: str, where: Where | None = None) -> Across:
    """``expr`` in the frame of ``where`` (default: ``default_where``) of every stopped process."""
    expr = expr.strip()
    if not expr:
        raise EngineError("usage: pyall EXPRESSION")
    ctl = procstacks.controller(session)
    if ctl is not None:
        try:
            await ctl.wait_read(READ_WAIT)
        except Timeout:
            pass  # (those not read yet are said so)
    st = session.state
    where = where or default_where(st)
    out = Across(expr, where)
    todo: list[tuple[Inferior, int | None, PyFrame]] = []
    for inf in st.inferiors:
        if inf.process is ProcessState.RUNNING:
            out.answers.append(Answer(inf.id, "running"))
            continue
        if inf.process is not ProcessState.STOPPED or not (inf.pid or inf.os_pid):
            continue
        stack = inf.python.stack
        if stack is None:
            out.answers.append(Answer(inf.id, "no-python") if inf.python.stack_read
                               else Answer(inf.id, "error", error="its Python stacks are not read yet"))
            continue
        if not stack.ok:
            out.answers.append(Answer(inf.id, "error", error=f"its Python stacks cannot be read: {stack.reason}"))
            continue
        found = find_frame(inf, stack, where)
        if found is None:
            out.answers.append(Answer(inf.id, "absent"))
            continue
        todo.append((inf, found[0], found[1]))
    ag = pyagent.controller(session)
    to_agent: list[tuple[Inferior, int | None, PyFrame]] = []
    if is_plain_name(expr):
        loop = asyncio.get_running_loop()
        pool = _Pool.get()

        async def one(inf: Inferior, lwp: int | None, f: PyFrame) -> None:
            try:
                tname, text = await loop.run_in_executor(pool, read_name, int(inf.pid or inf.os_pid), f, expr)
            except LookupError:
                if ag is not None and ag.agent_connected_in(inf.pid):
                    to_agent.append((inf, lwp, f))  # (a global, a builtin: the agent knows)
                else:
                    out.answers.append(Answer(inf.id, "error", how="memory", error=f"{expr!r} is not a local of {f.name}"))
                return
            except (OSError, ValueError) as exc:
                out.answers.append(Answer(inf.id, "error", how="memory", error=f"cannot read it from memory: {exc}"))
                return
            m = _ADDR.match(text)
            if (m is not None or tname not in MEMORY_TYPES) and ag is not None and ag.agent_connected_in(inf.pid):
                # (an object of a class: the agent describes it, a tensor by its metadata; memory shows only
                # its attributes, a tensor's none)
                to_agent.append((inf, lwp, f))
                return
            if m is not None:
                text = f"<{m.group(1)} object>"  # (its address differs in every process: compared by type)
            out.answers.append(Answer(inf.id, "value", text, tname, "memory"))

        await asyncio.gather(*(one(*x) for x in todo))
    else:
        to_agent = todo
    if to_agent:
        if ag is None:
            for inf, _lwp, _f in to_agent:
                out.answers.append(Answer(inf.id, "error", error="needs tuidbg's Python agent (only a plain name is "
                                                                  "read from memory)"))
        else:
            asks = [ThreadAsk(inf.id, int(inf.pid or inf.os_pid), lwp, f.file, f.name, expr) for inf, lwp, f in to_agent]
            replies = await ag.evaluate_in_threads(asks)
            for inf, _lwp, _f in to_agent:
                r = replies.get(inf.id, {"error": "no answer"})
                if r.get("absent"):
                    out.answers.append(Answer(inf.id, "absent", how="agent"))
                elif r.get("error"):
                    out.answers.append(Answer(inf.id, "error", how="agent", error=str(r["error"])))
                else:
                    out.answers.append(Answer(inf.id, "value", str(r.get("value")), str(r.get("type") or ""), "agent"))
    order = {inf.id: i for i, inf in enumerate(st.inferiors)}
    out.answers.sort(key=lambda a: order.get(a.iid, 0))
    return out


# ---------------------------------------------------------------------------------------------
# printall


async def printall(session, expr: str, func: str | None = None) -> Across:
    """The C/C++ expression ``expr`` through gdb in every stopped process: in the innermost frame of
    ``func`` where the process has it (its stopped thread, else its first), else in its innermost frame."""
    expr = expr.strip()
    if not expr:
        raise EngineError("usage: printall EXPRESSION")
    st = session.state
    if not st.is_stopped:
        raise EngineError("the program is not stopped")
    out = Across(expr, None, native_func=func)
    for inf in st.inferiors:
        if inf.process is ProcessState.RUNNING:
            out.answers.append(Answer(inf.id, "running"))
            continue
        if inf.process is not ProcessState.STOPPED or not inf.threads:
            continue
        tid = (inf.stop.thread_id if inf.stop is not None and inf.stop.thread_id else None) or inf.current_thread \
            or inf.threads[0].id
        level = 0
        if func:
            res = await session.cmd(f"-stack-list-frames --thread {tid} 0 63", check=False)
            levels = [int(fr.get("level", 0)) for fr in mi.as_list(res.get("stack"))
                      if isinstance(fr, dict) and fr.get("func") == func]
            if not levels:
                out.answers.append(Answer(inf.id, "absent"))
                continue
            level = levels[0]
        try:
            r = await session.cmd(f"-data-evaluate-expression --thread {tid} --frame {level} {mi.quote(expr)}")
            out.answers.append(Answer(inf.id, "value", str(r.get("value")), how="gdb"))
        except MIError as exc:
            out.answers.append(Answer(inf.id, "error", how="gdb", error=exc.message))
    return out


# ---------------------------------------------------------------------------------------------
# The console's commands


def controller(session) -> CrossRank | None:
    for ext in getattr(session, "extensions", ()):
        if isinstance(ext, CrossRank):
            return ext
    return None


_ALL_FORMS = {"pyprint": "pyall", "pyeval": "pyall", "print": "printall", "p": "printall"}


def across_form(text: str) -> str:
    """The command ``text`` as ``pyall``/``printall`` where it is a print's ``--all`` form: ``pyprint --all
    EXPR`` and ``pyprint EXPR --all`` are ``pyall EXPR``; ``print --all EXPR`` (``p``) is ``printall EXPR``
    (gdb's print has no such option: ``--`` alone ends its options). Anything else: ``text`` stripped."""
    text = text.strip()
    word, _, rest = text.partition(" ")
    rest = rest.strip()
    if word not in _ALL_FORMS:
        return text
    if rest.startswith("--all ") or rest == "--all":
        expr = rest[len("--all"):].strip()
    elif rest.endswith(" --all"):
        expr = rest[: -len("--all")].strip()
    else:
        return text
    return f"{_ALL_FORMS[word]} {expr}".strip()


GROUP_HELP = ("group RANKS|all|ranks|workers|launcher|pid PID,...: the processes c continues (the others stay "
              "stopped); group all: every process again; group: the group now")


class CrossRank(Extension):
    """Session extension (a session of several processes): ``pyall``, ``printall`` and ``group``."""

    COMMANDS = ("pyall", "printall", "group")

    def __init__(self, config) -> None:
        self.config = config
        self.session = None

    async def on_configure(self, session) -> None:
        self.session = session
        session.on_state(self._on_state)

    # -- a run group's new processes ----------------------------------------------------------------

    _joining: set[str] = set()

    def _on_state(self, st: DebuggerState) -> None:
        """A process that a process of the run group starts (a DataLoader's worker, a Pool's) joins the group
        and runs: gdb keeps a new child stopped while it resumes only the group's processes, and the
        parent would wait for it."""
        if not st.run_group:
            return
        pids = {inf.pid for inf in st.inferiors if inf.id in st.run_group and inf.pid}
        for inf in st.inferiors:
            if (inf.id not in st.run_group and inf.pid and inf.ppid in pids and inf.threads
                    and inf.process is ProcessState.NOT_STARTED and inf.id not in self._joining):
                self._joining = self._joining | {inf.id}
                task = asyncio.ensure_future(self._join(inf.id, inf.threads[0].id))
                task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def _join(self, iid: str, tid: str) -> None:
        s = self.session
        try:
            st = s.state
            if iid not in st.run_group:
                s.set_state(replace(st, run_group=st.run_group + (iid,)))
            await s.cmd(f"-exec-continue --thread {tid}", check=False)
        finally:
            self._joining = self._joining - {iid}

    def claims_console(self, text: str) -> bool:
        words = across_form(text).split(None, 1)
        return bool(words) and words[0] in self.COMMANDS

    async def handle_console(self, text: str, where: Where | None = None, native_func: str | None = None) -> str | None:
        """Run ``pyall EXPR`` (in ``where``'s frames), ``printall EXPR`` (in ``native_func``'s) or ``group ...``;
        also their ``--all`` forms (``pyprint --all EXPR``, ``print --all EXPR``: ``across_form``)."""
        if not self.claims_console(text) or self.session is None:
            return None
        s = self.session
        word, _, rest = across_form(text).partition(" ")
        rest = rest.strip()
        if word == "pyall":
            return "\n".join((await pyall(s, rest, where)).lines(s.state))
        if word == "printall":
            return "\n".join((await printall(s, rest, native_func)).lines(s.state))
        return await self._group(rest)

    async def _group(self, words: str) -> str:
        s = self.session
        st = s.state
        if not words:
            if not st.run_group:
                return "no run group: c continues every process (" + GROUP_HELP + ")"
            return f"run group: {st.run_group_name} ({len(st.run_group)} processes)"
        if words in ("all", "off", "none"):
            await s.set_run_group(())
            return "every process continues together again"
        iids = ranks.select(st, words)
        name = ranks.describe(st, iids)
        await s.set_run_group(iids, name)
        if not s.state.run_group:
            return "every process continues together again (the group named every live process)"
        return (f"run group: {name} ({len(iids)} process{'es' if len(iids) != 1 else ''}): c continues them, the "
                "others stay stopped; n, s and the Python steps step the shown process alone; group all ends it")
