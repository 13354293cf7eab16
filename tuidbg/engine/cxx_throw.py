"""Stops where libtorch throws ``c10::Error`` (and its subclasses), with the error's message.

gdb's ``catch throw REGEX`` needs ``$_exception``, which needs libstdc++'s debug info or
probes; on Debian's stripped libstdc++ the regex form never stops. So the catchpoint is a
plain ``-catch-throw`` whose condition reads the thrown type's mangled name from the
``std::type_info`` passed to ``__cxa_throw`` (second argument, ``$rsi``; the name pointer
sits after the vtable pointer) and matches ``^N3c10`` (gdb's ``$_regex``: no inferior call).

The message is read from memory, not through the virtual ``what()``: the exception object
(first argument, ``$rdi``) is a ``c10::Error``, ``std::exception``'s vtable pointer then
``std::string msg_`` (data pointer first). Checked on torch 2.13 / x86_64 with gcc's
libstdc++ (tests/engine/test_cxx_throw.py). x86_64 only: the registers are read at the
catchpoint, which gdb puts at the end of ``__cxa_throw``'s prologue.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tuidbg.engine import mi

CONDITION = '$_regex((char*)*(long*)($rsi+8), "^N3c10")'
_TYPE_EXPR = "(char*)*(long*)($rsi+8)"
_MSG_EXPR = "(char*)*(long*)($rdi+8)"
_TYPEINFO = re.compile(r"<typeinfo name for ([^>]+)>")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class CxxThrow:
    type_name: str  # e.g. c10::IndexError
    message: str


async def arm(session) -> str:
    """Insert the c10::Error throw catchpoint; returns its breakpoint number."""
    res = await session.cmd("-catch-throw")
    number = str((res.get("bkpt") or {}).get("number", ""))
    await session.cmd(f"-break-condition {number} {mi.quote(CONDITION)}")
    return number


async def read_throw(session) -> CxxThrow:
    """The thrown type and message at a stop of the catchpoint (frame 0, __cxa_throw, selected)."""
    await session.cmd("-gdb-set print elements 4000", check=False)
    t = await session.cmd(f"-data-evaluate-expression {mi.quote(_TYPE_EXPR)}", check=False)
    m = await session.cmd(f"-data-evaluate-expression {mi.quote(_MSG_EXPR)}", check=False)
    tv, mv = str(t.get("value") or ""), str(m.get("value") or "")
    tm = _TYPEINFO.search(tv)
    mm = _QUOTED.search(mv)
    message = mm.group(1).encode().decode("unicode_escape", "replace") if mm else mv
    return CxxThrow(type_name=tm.group(1) if tm else tv, message=message)
