"""What gdb reports, as frozen values: frames, threads, breakpoints, libraries, variables, and the
reason for a stop. Built from MI results (``from_mi``); MI's strings become ints and bools here.

These are the words the rest of the engine is written in (``tuidbg.engine.state`` holds them per
process; the CUDA model and the Python view refer to them); this module imports nothing of the
engine but the MI parser's helpers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from tuidbg.engine.mi import as_list, to_int
from tuidbg.gdbext.cxxnames import NameSpec, demangle

CHILDREN_PAGE = 100  # var-object children fetched per request


def _demangled(name: Any) -> Any:
    """A C++ name as gdb shows it with its own demangling on (tuidbg runs gdb without it:
    ``tuidbg.gdbext.cxxnames``)."""
    return demangle(name) if isinstance(name, str) else name


def _location(loc: Any) -> Any:
    """A breakpoint's location as the user would have written it (``-function _ZN2ns5entryEi``, as
    gdbext.cxxbreak makes them: ``ns::entry(int)``)."""
    if isinstance(loc, str) and loc.startswith("-function _Z"):
        return demangle(loc[len("-function "):])
    return _demangled(loc)


@dataclass(frozen=True)
class Frame:
    level: int
    addr: str = ""
    func: str = ""
    file: str | None = None
    fullname: str | None = None
    line: int | None = None
    library: str | None = None
    arch: str | None = None
    mangled: str | None = None  # the name as gdb knows it, where tuidbg demangled ``func``

    @property
    def has_source(self) -> bool:
        return bool(self.fullname) and self.line is not None

    @property
    def location(self) -> str:
        if self.file and self.line is not None:
            return f"{self.file}:{self.line}"
        if self.library:
            return self.library
        return self.addr

    @classmethod
    def from_mi(cls, d: Mapping[str, Any] | None, default_level: int = 0) -> Frame | None:
        if not isinstance(d, Mapping):
            return None
        raw = str(d.get("func", "") or "")
        func = demangle(raw)
        return cls(
            level=to_int(d.get("level"), default_level) or 0,
            addr=str(d.get("addr", "")),
            func=func,
            file=d.get("file"),
            fullname=d.get("fullname"),
            line=to_int(d.get("line")),
            library=d.get("from"),
            arch=d.get("arch"),
            mangled=raw if func != raw else None,
        )


@dataclass(frozen=True)
class Thread:
    id: str
    target_id: str = ""
    name: str | None = None
    state: str = "stopped"
    frame: Frame | None = None
    core: str | None = None

    @property
    def lwp(self) -> int | None:
        m = re.search(r"LWP (\d+)", self.target_id) or re.search(r"process (\d+)", self.target_id)
        if m is None:  # a remote target's (gdbserver): "Thread PID.LWP"
            m = re.search(r"Thread \d+\.(\d+)", self.target_id)
        return int(m.group(1)) if m else None

    @classmethod
    def from_mi(cls, d: Mapping[str, Any]) -> Thread:
        return cls(
            id=str(d.get("id", "")),
            target_id=str(d.get("target-id", "")),
            name=d.get("name"),
            state=str(d.get("state", "stopped")),
            frame=Frame.from_mi(d.get("frame")),
            core=d.get("core"),
        )


@dataclass(frozen=True)
class BreakpointLocation:
    number: str
    enabled: bool = True
    addr: str = ""
    func: str | None = None
    file: str | None = None
    fullname: str | None = None
    line: int | None = None

    @classmethod
    def from_mi(cls, d: Mapping[str, Any]) -> BreakpointLocation:
        return cls(
            number=str(d.get("number", "")),
            enabled=d.get("enabled", "y") == "y",
            addr=str(d.get("addr", "")),
            func=_demangled(d.get("func")),
            file=d.get("file"),
            fullname=d.get("fullname"),
            line=to_int(d.get("line")),
        )


@dataclass(frozen=True)
class Breakpoint:
    number: str
    type: str = "breakpoint"
    disp: str = "keep"
    enabled: bool = True
    addr: str = ""
    func: str | None = None
    file: str | None = None
    fullname: str | None = None
    line: int | None = None
    times: int = 0
    condition: str | None = None
    ignore: int = 0
    pending: str | None = None
    original_location: str | None = None
    what: str | None = None
    thread: str | None = None
    locations: tuple[BreakpointLocation, ...] = ()
    # Breakpoints tuidbg sets for itself (the Python agent's stop function) are hidden.
    internal: bool = False
    # Added by tuidbg (gdbext.cxxbreak) on one function a user's breakpoint on a C++ name means, in
    # a library gdb read without demangling: shown, not remembered (the user's one is).
    cxx_added: bool = False

    @property
    def is_pending(self) -> bool:
        return self.pending is not None or self.addr == "<PENDING>"

    def source_lines(self) -> list[tuple[str, int]]:
        """(fullname, line) of every location that has a source line."""
        out = []
        if self.fullname and self.line is not None:
            out.append((self.fullname, self.line))
        for loc in self.locations:
            if loc.fullname and loc.line is not None and (loc.fullname, loc.line) not in out:
                out.append((loc.fullname, loc.line))
        return out

    @property
    def label(self) -> str:
        if self.file and self.line is not None:
            return f"{self.file}:{self.line}"
        if self.pending:
            return self.pending
        if self.what:
            return self.what
        if self.func:
            return self.func
        return self.original_location or self.addr

    @classmethod
    def from_mi(cls, d: Mapping[str, Any]) -> Breakpoint:
        locs = tuple(BreakpointLocation.from_mi(x) for x in as_list(d.get("locations")) if isinstance(x, Mapping))
        file, fullname, line = d.get("file"), d.get("fullname"), to_int(d.get("line"))
        func = _demangled(d.get("func"))
        if not fullname and locs:
            # Several locations: show the first enabled one that has a source line.
            for loc in locs:
                if loc.fullname and loc.line is not None and loc.enabled:
                    file, fullname, line, func = loc.file, loc.fullname, loc.line, loc.func
                    break
        thread = d.get("thread")
        if isinstance(thread, list):
            thread = ",".join(str(t) for t in thread)
        return cls(
            number=str(d.get("number", "")),
            type=str(d.get("type", "breakpoint")),
            disp=str(d.get("disp", "keep")),
            enabled=d.get("enabled", "y") == "y",
            addr=str(d.get("addr", "")),
            func=func,
            file=file,
            fullname=fullname,
            line=line,
            times=to_int(d.get("times"), 0) or 0,
            condition=d.get("cond"),
            ignore=to_int(d.get("ignore"), 0) or 0,
            pending=_location(d.get("pending")),
            original_location=_location(d.get("original-location")),
            cxx_added=str(d.get("original-location") or "").startswith("-function _Z"),
            what=d.get("what"),
            thread=thread,
            locations=locs,
        )


def cxx_added_for(breakpoints: tuple[Breakpoint, ...] | list[Breakpoint]) -> dict[str, str]:
    """{added breakpoint's number: the user's breakpoint's number} of the breakpoints gdbext.cxxbreak
    added (``cxx_added``): each is for the user's breakpoint whose location names its function."""
    added = [b for b in breakpoints if b.cxx_added]
    out: dict[str, str] = {}
    if not added:
        return out
    for parent in breakpoints:
        if parent.cxx_added or parent.type != "breakpoint":
            continue
        spec = NameSpec.parse(parent.pending or parent.original_location or "")
        if spec is None:
            continue
        for b in added:
            if b.number not in out and spec.matches(b.original_location or ""):
                out[b.number] = parent.number
    return out


@dataclass(frozen=True)
class Library:
    id: str
    target_name: str = ""
    host_name: str = ""
    symbols_loaded: bool = False

    @property
    def basename(self) -> str:
        return (self.target_name or self.id).rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Variable:
    """A local, argument or watch expression's value (``value`` None: not shown by --simple-values)."""

    name: str
    value: str | None = None
    type: str | None = None
    is_arg: bool = False
    changed: bool = False


@dataclass(frozen=True)
class StopInfo:
    reason: str = ""
    thread_id: str | None = None
    frame: Frame | None = None
    signal_name: str | None = None
    signal_meaning: str | None = None
    bkptno: str | None = None
    exit_code: int | None = None
    payload: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def describe(self) -> str:
        r = self.reason
        if r == "breakpoint-hit":
            return f"breakpoint {self.bkptno}" if self.bkptno else "breakpoint"
        if r == "signal-received":
            name = self.signal_name or "signal"
            return f"{name} ({self.signal_meaning})" if self.signal_meaning else name
        if r == "end-stepping-range":
            return "step finished"
        if r == "function-finished":
            return "function finished"
        if r == "location-reached":
            return "location reached"
        if r in ("watchpoint-trigger", "read-watchpoint-trigger", "access-watchpoint-trigger"):
            return "watchpoint"
        if r == "watchpoint-scope":
            return "watchpoint went out of scope"
        if r == "exited-normally":
            return "exited normally (code 0)"
        if r == "exited":
            return f"exited with code {self.exit_code}"
        if r == "exited-signalled":
            return f"killed by {self.signal_name}" + (f" ({self.signal_meaning})" if self.signal_meaning else "")
        if r == "solib-event":
            return "shared library event"
        if r == "no-history":
            return "no more history"
        if r == "entry":
            # (tuidbg's own reason: the temporary breakpoint on main of the stop at entry, engine.entry)
            return "at entry (main)"
        if r == "core file" and self.signal_name:
            # (tuidbg's own reason for the state a core file holds)
            return f"core file: the program got {self.signal_name}" + (f" ({self.signal_meaning})" if self.signal_meaning else "")
        if not r:
            return "stopped"
        return r.replace("-", " ")


@dataclass(frozen=True)
class VarObj:
    name: str
    expression: str
    value: str | None
    type: str | None
    numchild: int
    dynamic: bool = False
    has_more: bool = False
    error: str | None = None  # why its value cannot be shown ("cannot read memory at 0x10")

    @classmethod
    def from_mi(cls, d: dict, expression: str = "") -> VarObj:
        return cls(
            name=str(d.get("name", "")),
            expression=str(d.get("exp", expression)),
            value=d.get("value"),
            type=d.get("type"),
            numchild=to_int(d.get("numchild"), 0) or 0,
            dynamic=d.get("dynamic") == "1",
            has_more=d.get("has_more") == "1",
        )


@dataclass(frozen=True)
class CxxThrow:
    """A C++ exception thrown in the program, where ``catch throw`` stopped it (tuidbg.engine.cxxthrow)."""

    type_name: str  # "c10::IndexError"
    message: str  # what() without the C++ backtrace c10 appends
    site: str  # the function that threw, as gdb names it ("" if not known)
    generation: int  # the stop it was thrown at

    def describe(self) -> str:
        where = f" in {self.site.split('(', 1)[0]}" if self.site else ""
        first = self.message.splitlines()[0] if self.message else ""
        return f"C++ {self.type_name} thrown{where}" + (f": {first}" if first else "")
