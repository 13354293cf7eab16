"""C++ errors stopped where they are thrown: PyTorch's ``c10::Error`` and its subclasses.

With ``--break-on-exception`` (or the console's ``pycatch uncaught``), gdb's ``catch throw`` stops
the program in ``__cxa_throw`` when the thrown object's type is in the ``c10`` namespace
(``c10::Error``, ``c10::IndexError``, ``c10::ValueError``, ...): the catchpoint's condition reads the
type's name from the ``std::type_info`` that libstdc++'s throw probe passes (``$_probe_arg1``), so
other C++ exceptions never stop the program. At such a stop the refresh stage reads the type and
the error's message (``what()``, a virtual call on the thrown object, made with only this thread
running) and the function that threw, into ``Inferior.cxx_throw``; the merged stack shows the Python
line that called into libtorch. The Python exception that follows keeps the throw in
``Inferior.cxx_last_throw``, so its stop can say where in C++ it came from.

A site libtorch throws from and catches itself (a probe, a fallback) can be skipped for the rest of
the session (``skip_site``): the condition then also asks that the throwing function
(``$_caller_is``) is none of the skipped ones.

libtorch ships symbols but no DWARF: nothing here needs debug info, only libstdc++'s SDT probe
(Debian's and conda's libstdc++ have it) and gdb's Python convenience functions.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from tuidbg.engine import mi
from tuidbg.engine.extensions import Extension
from tuidbg.engine.records import CxxThrow
from tuidbg.engine.state import DebuggerState, ProcessState, mark_internal

if TYPE_CHECKING:
    from tuidbg.engine.session import DebugSession

NAMESPACE = "c10"
# type_info is {vptr, const char *name}; the name is mangled: "N3c1010IndexErrorE" for c10::IndexError.
# Compared a character at a time: a string literal in a condition is copied into the program with a
# call of its malloc, at every throw.
_NAME = "(*(char**)((char*)$_probe_arg1 + sizeof(void*)))"
_COND = "(" + " && ".join(f"{_NAME}[{i}] == {ord(c)}" for i, c in enumerate("N3c10")) + ")"
_WHAT = "(char*)(*(char*(**)(void*))(*(void**)$_probe_arg0 + 2 * sizeof(void*)))($_probe_arg0)"
_TYPE = "*(char**)((char*)$_probe_arg1 + sizeof(void*))"
_STRING = re.compile(r'^0x[0-9a-fA-F]+(?: <[^>]*>)? "(.*)"(?:\.\.\.)?$', re.S)
_TYPEINFO = re.compile(r"<typeinfo name for ([^>]+)>")


def get(session: Any) -> "CxxThrows | None":
    for ext in getattr(session, "extensions", ()):
        if isinstance(ext, CxxThrows):
            return ext
    return None


class CxxThrows(Extension):
    def __init__(self, config: Any) -> None:
        self.wanted = bool(getattr(config, "break_on_exception", False))
        self.number: str | None = None  # gdb's catchpoint
        self.skipped: list[str] = []  # throwing functions skipped for the rest of the session
        self._gdb_names: dict[str, str] = {}  # a site's name -> gdb's (mangled, where tuidbg demangled it)
        self._session: DebugSession | None = None

    async def on_configure(self, session: "DebugSession") -> None:
        self._session = session
        session.stop_hooks.append(_clear_at_stop)
        session.refresh_stages.append(self._stage)
        if self.wanted:
            await self.set_enabled(True)

    @property
    def enabled(self) -> bool:
        return self.number is not None

    async def set_enabled(self, on: bool) -> None:
        s = self._session
        if s is None:
            self.wanted = on
            return
        self.wanted = on
        if on and self.number is None:
            r = await s.cmd("-catch-throw")
            bkpt = r.get("bkpt") or {}
            self.number = str(bkpt.get("number") or "") or None
            if self.number is None:
                return
            await self._condition()
            await s.refresh_breakpoints()
            s.set_state(mark_internal(s.state, self.number))  # (tuidbg's, not listed as the user's)
        elif not on and self.number is not None:
            number, self.number = self.number, None
            await s.cmd(f"-break-delete {number}", check=False)
            await s.refresh_breakpoints()

    async def skip_site(self, site: str) -> None:
        """The throws from ``site`` (a function as gdb names it) no longer stop the program."""
        if site and site not in self.skipped:
            self.skipped.append(site)
            await self._condition()

    async def _condition(self) -> None:
        s = self._session
        if s is None or self.number is None:
            return
        names = (self._gdb_names.get(site, site) for site in self.skipped)
        cond = _COND + "".join(f" && !$_caller_is({_c_string(name)}, 1)" for name in names)
        await s.console(f"condition {self.number} {cond}")  # (MI's -break-condition splits it at its quotes)

    def at_throw(self, state: DebuggerState) -> bool:
        stop = state.stop
        return (self.number is not None and state.process is ProcessState.STOPPED and stop is not None
                and stop.reason == "breakpoint-hit" and str(stop.bkptno or "") == self.number)

    async def _stage(self, session: "DebugSession", generation: int) -> None:
        st = session.state
        if st.generation != generation or not self.at_throw(st):
            return
        tid = st.stop.thread_id if st.stop else None
        thread = f"--thread {tid} --frame 0 " if tid else ""
        tname = await session.cmd(f"-data-evaluate-expression {thread}{mi.quote(_TYPE)}", check=False)
        type_name = _type_name(str(tname.get("value") or ""))
        old = str((await session.cmd("-gdb-show scheduler-locking", check=False)).get("value") or "replay")
        await session.cmd("-gdb-set scheduler-locking on", check=False)
        try:  # what(): a virtual call, this thread alone (it takes no lock)
            what = await session.cmd(f"-data-evaluate-expression {thread}{mi.quote(_WHAT)}", check=False, timeout=10)
        finally:
            await session.cmd(f"-gdb-set scheduler-locking {old}", check=False)
        message = _message(str(what.get("value") or "")) if what.cls == "done" else ""
        site = ""
        if st.frames_thread == tid or not tid:
            caller = next((f for f in st.frames if f.level == 1 and f.func), None)
            if caller is not None:
                site = caller.func
                self._gdb_names[site] = caller.mangled or site
        cur = session.state
        if cur.generation != generation:
            return
        rec = CxxThrow(type_name=type_name or "C++ exception", message=message, site=site, generation=generation)
        session.set_state(cur.evolve(cxx_throw=rec, cxx_last_throw=rec))


def _clear_at_stop(state: DebuggerState) -> DebuggerState:
    """Every stop starts without a throw (the stage adds it at a throw's stop); the last one stays."""
    return state.evolve(cxx_throw=None) if state.inferior.cxx_throw is not None else state


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _unescape(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            n = text[i + 1]
            out.append({"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(n, "\\" + n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _message(value: str) -> str:
    """The error's message from gdb's print of what(): its first paragraph, without the C++ backtrace
    that c10 appends ("Exception raised from ... (most recent call first):")."""
    m = _STRING.match(value.strip())
    if not m:
        return ""
    text = _unescape(m.group(1))
    text = text.split("\nException raised from ", 1)[0]
    return text.strip()


def _type_name(value: str) -> str:
    m = _TYPEINFO.search(value)
    if m:
        return m.group(1)
    s = _STRING.match(value.strip())
    return demangle_nested(_unescape(s.group(1))) if s else ""


def demangle_nested(name: str) -> str:
    """``N3c1010IndexErrorE`` -> ``c10::IndexError`` (a nested name of plain identifiers; anything
    else is returned as it is)."""
    if not (name.startswith("N") and name.endswith("E")):
        return name
    parts = []
    i, body = 0, name[1:-1]
    while i < len(body):
        j = i
        while j < len(body) and body[j].isdigit():
            j += 1
        if j == i:
            return name
        n = int(body[i:j])
        parts.append(body[j:j + n])
        i = j + n
    return "::".join(parts)
