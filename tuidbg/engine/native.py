"""The machine level of a stopped program: instructions, registers, memory, instruction stepping.

- :func:`disassemble` runs ``-data-disassemble`` on a bounded address range (mode 5: source lines
  mixed in where there is line information, raw opcodes), as ``Instruction`` and ``SourceLine``
  rows. :class:`DisasmWindow` keeps a window of rows around an address and grows it a chunk at a
  time in either direction, so that a function of tens of thousands of instructions is never
  disassembled whole. Going up needs an instruction boundary below the window: the function's
  start when the symbol says it is near (``func+offset``), else a decode from a little further
  back that must land exactly on the window's first instruction (x86's variable-length decoding
  falls into step within a few instructions; the rows before the slack are dropped).
- Under a CUDA device focus the same calls give SASS (cuda-gdb gives no raw opcodes: sizes come
  from the addresses) and ``stepi`` steps the warp.
- ``stepi``/``nexti`` (``-exec-step-instruction``/``-exec-next-instruction``), a breakpoint on an
  instruction and running to one.

Everything takes the session and talks MI through ``session.cmd``; the records are frozen.
Registers and memory: ``tuidbg.engine.machine``.
"""

from __future__ import annotations

import os
import re
import weakref
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Iterable, Union

from tuidbg.engine import files, mi
from tuidbg.engine.errors import EngineError, MIError
from tuidbg.engine.machine import require_stopped
from tuidbg.gdbext.cxxnames import demangle, demangle_text

if TYPE_CHECKING:
    from tuidbg.engine.session import DebugSession

CHUNK = 768  # bytes disassembled per extension (about 150-250 x86 instructions)
SLACK = 48  # extra bytes decoded before a range whose start is not a known boundary
MAX_INSN = 16  # longest x86 instruction

# -- records ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    address: int
    size: int  # bytes (from the raw opcodes; 0 when gdb gave none)
    text: str  # "mov    %edi,%eax"
    opcodes: str = ""  # "89 f8"
    func: str | None = None
    offset: int | None = None

    @property
    def symbol(self) -> str:
        """``func+offset`` (``func`` at its first byte), or "" where gdb names no symbol."""
        if not self.func:
            return ""
        return self.func if not self.offset else f"{self.func}+{self.offset}"

    def _words(self) -> list[str]:
        words = self.text.split(None, 1)
        if words and _GUARD.match(words[0]):  # a SASS predicate guard: "@P0 BRA 0x..."
            words = words[1].split(None, 1) if len(words) > 1 else []
        return words

    @property
    def mnemonic(self) -> str:
        """The operation, lower case ("mov", "call", "bra" for SASS's BRA), without a predicate guard."""
        words = self._words()
        return words[0].lower() if words else ""

    @property
    def is_call(self) -> bool:
        m = self.mnemonic
        return m.startswith(("call", "bl")) and not m.startswith("blr")

    @property
    def is_jump(self) -> bool:
        m = self.mnemonic
        return m.startswith(("j", "bra", "brx")) or m in ("b", "cbz", "cbnz", "tbz", "tbnz") or m.startswith("b.")

    @property
    def target(self) -> int | None:
        """The address a direct call or jump goes to (``call 0x1234 <f>``), else None."""
        if not (self.is_call or self.is_jump):
            return None
        words = self._words()
        m = _TARGET.search(words[1]) if len(words) > 1 else None
        return int(m.group(1), 16) if m else None

    @property
    def target_symbol(self) -> str | None:
        m = _TARGET.search(self.text)
        return m.group(2) if m and m.group(2) else None


_TARGET = re.compile(r"(?:^|[\s,#`(])(?:0x)?([0-9a-fA-F]{4,16})\)?(?:\s+<([^>]+)>)?\s*;?\s*$")
_GUARD = re.compile(r"^@!?U?P(?:\d+|T)$")


@dataclass(frozen=True)
class SourceLine:
    fullname: str
    line: int
    text: str | None  # None when the file is not on this machine

    @property
    def file(self) -> str:
        return os.path.basename(self.fullname)


Row = Union[Instruction, SourceLine]


def _size(opcodes: str) -> int:
    return len(opcodes.split())


def _instruction(d: dict) -> Instruction | None:
    addr = mi.to_int(d.get("address"))
    if addr is None:
        return None
    opcodes = str(d.get("opcodes", "") or "")
    return Instruction(
        address=addr,
        size=_size(opcodes),
        text=demangle_text(str(d.get("inst", "") or "")),
        opcodes=opcodes,
        func=demangle(d.get("func-name") or "") or None,
        offset=mi.to_int(d.get("offset")),
    )


_SOURCE_CACHE: dict[str, tuple[float, list[str]]] = {}


def source_text(fullname: str, line: int) -> str | None:
    """Line ``line`` of a source file that ``read_sources`` read (None: not read, or no such line)."""
    cached = _SOURCE_CACHE.get(fullname)
    lines = cached[1] if cached is not None else []
    return lines[line - 1] if 0 < line <= len(lines) else None


async def read_sources(result: Any) -> None:
    """The source files a ``-data-disassemble`` result names, read into the cache (per file and
    modification time) off the loop: only regular files under the cap (``tuidbg.engine.files``); one
    that cannot be read has no lines."""
    names = {str(item.get("fullname") or item.get("file")) for item in mi.as_list(result)
             if isinstance(item, dict) and "line_asm_insn" in item and (item.get("fullname") or item.get("file"))}
    for name in names:
        try:
            mtime = os.stat(name).st_mtime
        except OSError:
            continue
        cached = _SOURCE_CACHE.get(name)
        if cached is not None and cached[0] == mtime:
            continue
        try:
            lines = (await files.read_text_async(name, files.SOURCE_CAP)).splitlines()
        except files.Unreadable:
            lines = []
        if len(_SOURCE_CACHE) > 256:
            _SOURCE_CACHE.clear()
        _SOURCE_CACHE[name] = (mtime, lines)


def parse_disassembly(result: Any) -> list[Row]:
    """Rows of a ``-data-disassemble`` result (mode 2 or 5), in address order.

    Source lines gdb lists with no instructions (the lines leading up to the range) are left out.
    """
    rows: list[Row] = []
    for item in mi.as_list(result):
        if not isinstance(item, dict):
            continue
        if "line_asm_insn" in item:
            insns = [i for i in (_instruction(x) for x in mi.as_list(item.get("line_asm_insn")) if isinstance(x, dict)) if i]
            if not insns:
                continue
            full = item.get("fullname") or item.get("file")
            line = mi.to_int(item.get("line"))
            if full and line:
                rows.append(SourceLine(str(full), line, source_text(str(full), line)))
            rows.extend(insns)
        else:
            ins = _instruction(item)
            if ins is not None:
                rows.append(ins)
    return _sized(rows)


def _sized(rows: list[Row]) -> list[Row]:
    """Instructions without raw opcodes (cuda-gdb's SASS) get their size from the next address
    (the last one the size before it: SASS instructions are all one size)."""
    ins = [i for i, r in enumerate(rows) if isinstance(r, Instruction)]
    if not any(rows[i].size == 0 for i in ins):  # type: ignore[union-attr]
        return rows
    out = list(rows)
    last = 0
    for k, i in enumerate(ins):
        r = out[i]
        assert isinstance(r, Instruction)
        if r.size:
            last = r.size
            continue
        if k + 1 < len(ins):
            gap = out[ins[k + 1]].address - r.address  # type: ignore[union-attr]
            if 0 < gap <= 64:
                last = gap
        if last:
            out[i] = replace(r, size=last)
    return out


# -- disassembly -----------------------------------------------------------------------------------


_DEMANGLING: "weakref.WeakKeyDictionary[Any, bool]" = weakref.WeakKeyDictionary()


async def disassemble(session: "DebugSession", start: int, end: int, source: bool = True) -> list[Row]:
    """Rows for the addresses [start, end): decoding starts at ``start`` (which should be an
    instruction boundary) and includes the instruction that starts before ``end``."""
    if end <= start:
        return []
    mode = 5 if source else 2
    if session not in _DEMANGLING:
        # symbols in disassembly (func-name, call targets) demangled, as gdb's frames already are
        # (gdb reads libraries without debug info without demangling: tuidbg does it, _instruction)
        await session.cmd("-gdb-set print asm-demangle on", check=False)
        _DEMANGLING[session] = True
    try:
        res = await session.cmd(f"-data-disassemble -s {start:#x} -e {end:#x} -- {mode}")
    except MIError as exc:
        raise EngineError(f"cannot disassemble {start:#x}-{end:#x}: {exc.message}") from exc
    if source:
        await read_sources(res.get("asm_insns"))
    return parse_disassembly(res.get("asm_insns"))


def instructions(rows: Iterable[Row]) -> list[Instruction]:
    return [r for r in rows if isinstance(r, Instruction)]


async def disassemble_before(session: "DebugSession", end: int, nbytes: int, known: Instruction | None = None,
                             source: bool = True) -> list[Row]:
    """Rows that end exactly at ``end`` (an instruction boundary), covering about ``nbytes`` before it.

    ``known``, the instruction at ``end``, tells where its function starts; from there the decoding
    is exact. Otherwise a decode from further back must land on ``end``; starts are tried byte by
    byte until one does, and the slack's rows are dropped.
    """
    if end <= 0:
        return []
    if known is not None and known.func and known.offset is not None and 0 < known.offset <= nbytes + SLACK:
        start = end - known.offset
        return [r for r in await disassemble(session, start, end, source) if _before(r, end)]
    want = max(end - nbytes, 0)
    for shift in range(MAX_INSN):
        start = max(want - SLACK - shift, 0)
        rows = await disassemble(session, start, end, source)
        ins = [i for i in instructions(rows) if i.address < end]
        if not ins:
            return []
        last = ins[-1]
        if last.address + last.size == end or last.size == 0:
            cut = min(want, end)
            kept: list[Row] = []
            first = next((i.address for i in ins if i.address >= start + SLACK or start == 0), None)
            if first is None:
                first = cut
            for r in rows:
                if isinstance(r, Instruction):
                    if first <= r.address < end:
                        kept.append(r)
                elif kept or _next_is_kept(rows, r, first, end):
                    kept.append(r)
            return kept
        if start == 0:
            break
    return []


def _before(r: Row, end: int) -> bool:
    return not isinstance(r, Instruction) or r.address < end


def _next_is_kept(rows: list[Row], src: SourceLine, first: int, end: int) -> bool:
    i = rows.index(src)
    for r in rows[i + 1:]:
        if isinstance(r, Instruction):
            return first <= r.address < end
    return False


class DisasmWindow:
    """A window of disassembly rows around an address that grows a chunk at a time both ways."""

    def __init__(self, session: "DebugSession", source: bool = True, chunk: int = CHUNK) -> None:
        self.session = session
        self.source = source
        self.chunk = chunk
        self.rows: list[Row] = []
        self.at_top = False  # nothing more can be decoded above
        self.at_bottom = False

    @property
    def start(self) -> int | None:
        ins = self.first_instruction
        return ins.address if ins else None

    @property
    def end(self) -> int | None:
        for r in reversed(self.rows):
            if isinstance(r, Instruction):
                return r.address + max(r.size, 1)
        return None

    @property
    def first_instruction(self) -> Instruction | None:
        return next((r for r in self.rows if isinstance(r, Instruction)), None)

    def index_of(self, address: int) -> int | None:
        """The row index of the instruction at ``address`` (a binary search), or None."""
        rows = self.rows
        lo, hi = 0, len(rows)
        while lo < hi:
            mid = (lo + hi) // 2
            j = mid
            while j < hi and not isinstance(rows[j], Instruction):
                j += 1
            if j >= hi:
                hi = mid
                continue
            a = rows[j].address  # type: ignore[union-attr]
            if a == address:
                return j
            if a < address:
                lo = j + 1
            else:
                hi = mid
        return None

    def contains(self, address: int) -> bool:
        return self.index_of(address) is not None

    async def load_around(self, address: int, before: int | None = None, after: int | None = None) -> None:
        """Replace the window with rows from about ``before`` bytes above ``address`` to ``after`` below."""
        after = self.chunk if after is None else after
        before = self.chunk // 2 if before is None else before
        rows = await disassemble(self.session, address, address + after, self.source)
        self.rows = rows
        self.at_top = self.at_bottom = False
        if not instructions(rows):
            self.at_bottom = True
            return
        if before:
            await self.extend_up(before)

    async def extend_down(self, nbytes: int | None = None) -> int:
        """Decode the next chunk below; returns how many rows were added."""
        end = self.end
        if end is None or self.at_bottom:
            return 0
        try:
            rows = await disassemble(self.session, end, end + (nbytes or self.chunk), self.source)
        except EngineError:
            self.at_bottom = True
            return 0
        rows = [r for r in rows if not isinstance(r, Instruction) or r.address >= end]
        if not instructions(rows):
            self.at_bottom = True
            return 0
        # a source line repeated at the seam (the same line continues) is not shown twice
        if rows and isinstance(rows[0], SourceLine) and self._last_source() == rows[0]:
            rows = rows[1:]
        self.rows.extend(rows)
        return len(rows)

    async def extend_up(self, nbytes: int | None = None) -> int:
        """Decode the chunk above; returns how many rows were added at the top."""
        first = self.first_instruction
        if first is None or self.at_top:
            return 0
        try:
            rows = await disassemble_before(self.session, first.address, nbytes or self.chunk, first, self.source)
        except EngineError:
            rows = []
        if not instructions(rows):
            self.at_top = True
            return 0
        # the window's own leading source line repeats the tail's when a line spans the seam
        if self.rows and isinstance(self.rows[0], SourceLine):
            tail_src = next((r for r in reversed(rows) if isinstance(r, SourceLine)), None)
            if tail_src == self.rows[0] and not isinstance(rows[-1], SourceLine):
                self.rows.pop(0)
        self.rows[:0] = rows
        return len(rows)

    def _last_source(self) -> SourceLine | None:
        return next((r for r in reversed(self.rows) if isinstance(r, SourceLine)), None)


# -- execution -------------------------------------------------------------------------------------


async def stepi(session: "DebugSession") -> None:
    """One machine instruction, into calls (gdb's ``stepi``)."""
    require_stopped(session, "step an instruction")
    await session.cmd(f"-exec-step-instruction {session.thread_options()}".rstrip())


async def nexti(session: "DebugSession") -> None:
    """One machine instruction, over calls (gdb's ``nexti``)."""
    require_stopped(session, "step over an instruction")
    await session.cmd(f"-exec-next-instruction {session.thread_options()}".rstrip())


async def run_to_address(session: "DebugSession", address: int) -> None:
    """Continue to an instruction (a temporary breakpoint there, then continue)."""
    require_stopped(session, "run to an instruction")
    await session.cmd(f"-break-insert -t {mi.quote(f'*{address:#x}')}")
    await session.cmd("-exec-continue")
