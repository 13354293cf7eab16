"""Registers and memory of a stopped program (the machine-level panes' reads and writes).

- Registers: names once per session (again at each CUDA device focus), values in hex (flags
  registers also in gdb's decoded ``[ ZF IF ]`` form, vector registers in gdb's natural form),
  ``-data-list-changed-registers`` for what changed since the last look (``RegisterTracker``),
  grouped: general, flags, vector, x87, other on the host (sub-registers such as ``eax`` are left
  out); under a device focus cuda-gdb's R*, predicates P*/UP*/CC and uniform UR*.
- Memory: ``-data-read-memory-bytes`` in chunks that say which pages could not be read rather
  than failing the whole range; ``-data-write-memory-bytes``; an expression's address; the pc.

Everything takes the session and talks MI through ``session.cmd``; the records are frozen.
Instructions and instruction stepping: ``tuidbg.engine.native`` (above this module).
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from tuidbg.engine import mi
from tuidbg.engine.errors import EngineError, MIError
from tuidbg.engine.state import ProcessState

if TYPE_CHECKING:
    from tuidbg.engine.session import DebugSession

PAGE = 4096


def require_stopped(session: "DebugSession", what: str) -> None:
    st = session.state.process
    if st is ProcessState.RUNNING:
        raise EngineError(f"cannot {what}: the program is running (interrupt it first)")
    if st is not ProcessState.STOPPED:
        raise EngineError(f"cannot {what}: {session.process_description()}")


# -- registers -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Register:
    number: int
    name: str
    group: str  # "general", "flags", "vector", "x87", "other"
    value: str = ""  # hex, or gdb's natural form for vector registers
    decoded: str = ""  # flags: gdb's "[ ZF PF ]"
    changed: bool = False


GROUPS = ("general", "flags", "predicate", "uniform", "vector", "x87", "other")
COLLAPSED = frozenset({"uniform", "vector", "x87", "other"})  # shown on demand

_X86_GENERAL = {
    "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "rip", "cs", "ss", "ds", "es", "fs", "gs",
    "fs_base", "gs_base",
} | {f"r{i}" for i in range(8, 16)}
_FLAGS = {"eflags", "cpsr", "pstate", "fpscr"}
_X86_SUB = re.compile(r"^(?:[abcd][lhx]|[sd]il|[sb]pl|[sd]i|bp|sp|r\d+[lwd]|e[abcd]x|e[sd]i|e[bs]p|orig_rax|ymm\d+h|zmm\d+h)$")
_VECTOR = re.compile(r"^(?:[xyz]mm\d+|k[0-7]|mxcsr|v\d+|[qdsbh]\d+|z\d+|p\d+|ffr|vg|fpsr|fpcr)$")
_X87 = re.compile(r"^(?:st\d|fctrl|fstat|ftag|fiseg|fioff|foseg|fooff|fop)$")
_AARCH64_GENERAL = re.compile(r"^(?:x\d+|sp|pc|fp|lr)$")


_DEVICE_SKIP = {"RZ", "URZ", "(dummy internal register)"}


def device_register_group(name: str) -> str | None:
    """cuda-gdb's names under a device focus (cuda-tdep.c's cuda_register_name): R0.., pc and
    errorpc; predicates P0.., UP0.. and CC; uniform UR0..; RZ/URZ (always 0) are left out."""
    if not name or name in _DEVICE_SKIP:
        return None
    if re.fullmatch(r"R\d+", name) or name == "pc":
        return "general"
    if re.fullmatch(r"U?P\d+", name) or name == "CC":
        return "predicate"
    if re.fullmatch(r"UR\d+", name):
        return "uniform"
    return "other"


def register_group(name: str, x86: bool = True) -> str | None:
    """The group a register is shown in, or None for sub-registers (``eax``, ``w0``) and unnamed slots."""
    if not name:
        return None
    if name in _FLAGS:
        return "flags"
    if (name in _X86_GENERAL) if x86 else bool(_AARCH64_GENERAL.match(name)):
        return "general"
    if (x86 and _X86_SUB.match(name)) or (not x86 and re.fullmatch(r"w\d+", name)):
        return None
    if _VECTOR.match(name):
        return "vector"
    if _X87.match(name):
        return "x87"
    return "other"


_NAMES: "weakref.WeakKeyDictionary[Any, tuple[str, ...]]" = weakref.WeakKeyDictionary()


async def register_names(session: "DebugSession") -> tuple[str, ...]:
    """gdb's register names by number ("" for unused numbers); asked once per session for the
    host, and at each device focus (the device's register count depends on the kernel)."""
    device = session.state.device_focus is not None
    names = None if device else _NAMES.get(session)
    if names is None:
        res = await session.cmd("-data-list-register-names")
        names = tuple(str(n) for n in mi.as_list(res.get("register-names")))
        if not device:
            _NAMES[session] = names
    return names


def grouper(names: tuple[str, ...], device: bool):
    """The grouping function for these names: the device's, x86-64's or AArch64's."""
    if device:
        return device_register_group
    x86 = "rip" in names or "eip" in names
    return lambda n: register_group(n, x86)


def _frame_options(session: "DebugSession") -> str:
    st = session.state
    return session.thread_options(frame=st.selected_frame if st.selected_thread else None)


async def register_values(session: "DebugSession", numbers: Iterable[int], fmt: str = "x") -> dict[int, str]:
    nums = " ".join(str(int(n)) for n in numbers)
    if not nums:
        return {}
    res = await session.cmd(f"-data-list-register-values {_frame_options(session)}--skip-unavailable {fmt} {nums}")
    out: dict[int, str] = {}
    for item in mi.as_list(res.get("register-values")):
        if isinstance(item, dict):
            n = mi.to_int(item.get("number"))
            if n is not None:
                out[n] = str(item.get("value", ""))
    return out


async def changed_registers(session: "DebugSession") -> set[int]:
    """Registers that changed since the previous call (gdb compares with its last answer)."""
    res = await session.cmd(f"-data-list-changed-registers {_frame_options(session)}".rstrip())
    return {n for n in (mi.to_int(x) for x in mi.as_list(res.get("changed-registers"))) if n is not None}


class RegisterTracker:
    """Reads registers at each stop and says which changed since the previous stop it read.

    gdb answers ``-data-list-changed-registers`` against its previous answer; the first answer
    (everything) is not a change, so it is only used once a previous stop was read.
    """

    def __init__(self, session: "DebugSession") -> None:
        self.session = session
        self._primed = False
        self._device: bool | None = None
        self.registers: tuple[Register, ...] = ()
        self.counts: dict[str, int] = {}  # registers in each collapsed group (as of the last read)

    async def read(self, groups: Iterable[str] = ("general", "flags")) -> tuple[Register, ...]:
        device = self.session.state.device_focus is not None
        if device != self._device:  # host and device registers are different files: nothing to compare
            self._device, self._primed = device, False
        names = await register_names(self.session)
        group_of = grouper(names, device)
        wanted = set(groups)
        regs = [(i, n, group_of(n)) for i, n in enumerate(names)]
        self.counts = {}
        for _, _, g in regs:
            if g in COLLAPSED:
                self.counts[g] = self.counts.get(g, 0) + 1
        chosen = [(i, n, g) for i, n, g in regs if g in wanted]
        changed = await changed_registers(self.session)
        if not self._primed:
            changed = set()
            self._primed = True
        plain = [i for i, _, g in chosen if g != "vector"]
        values = await register_values(self.session, plain, "x")
        vec = [i for i, _, g in chosen if g == "vector"]
        if vec:
            values.update(await register_values(self.session, vec, "N"))
        flags = [i for i, _, g in chosen if g == "flags"]
        decoded = await register_values(self.session, flags, "N") if flags else {}
        self.registers = tuple(
            Register(i, n, g or "other", values.get(i, "<unavailable>"), decoded.get(i, ""), i in changed)
            for i, n, g in chosen
        )
        return self.registers

    def reset(self) -> None:
        self._primed = False


async def write_register(session: "DebugSession", name: str, value: str) -> str:
    """Set register ``name`` to the expression ``value``; returns its new value."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name):
        raise EngineError(f"not a register name: {name!r}")
    require_stopped(session, "set a register")
    try:
        res = await session.cmd(f"-data-evaluate-expression {_frame_options(session)}{mi.quote(f'${name} = {value}')}")
    except MIError as exc:
        raise EngineError(f"cannot set ${name}: {exc.message}") from exc
    return str(res.get("value", ""))


# -- memory ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryChunk:
    address: int
    size: int
    data: bytes | None  # None: this range cannot be read
    error: str = ""

    @property
    def readable(self) -> bool:
        return self.data is not None


async def _read_bytes(session: "DebugSession", address: int, count: int) -> bytes:
    res = await session.cmd(f"-data-read-memory-bytes {address:#x} {int(count)}")
    out = bytearray()
    for block in mi.as_list(res.get("memory")):
        if isinstance(block, dict):
            out += bytes.fromhex(str(block.get("contents", "")))
    return bytes(out)


async def read_memory(session: "DebugSession", address: int, count: int) -> list[MemoryChunk]:
    """``count`` bytes from ``address`` as chunks; a range that cannot be read is a chunk without
    data (read again page by page, so that a readable part next to it is still shown)."""
    if count <= 0:
        return []
    if address < 0 or address + count > 1 << 64:
        return [MemoryChunk(address, count, None, "outside the address space")]
    try:
        data = await _read_bytes(session, address, count)
        if len(data) == count:
            return [MemoryChunk(address, count, data)]
    except MIError as exc:
        err = exc.message
    else:
        err = "Unable to read memory."
    chunks: list[MemoryChunk] = []
    a = address
    end = address + count
    while a < end:
        nxt = min((a // PAGE + 1) * PAGE, end)
        try:
            data = await _read_bytes(session, a, nxt - a)
            ok = len(data) == nxt - a
        except MIError as exc:
            ok, err = False, exc.message
        piece = MemoryChunk(a, nxt - a, data if ok else None, "" if ok else err)
        if chunks and chunks[-1].readable == piece.readable:
            prev = chunks.pop()
            piece = MemoryChunk(prev.address, prev.size + piece.size,
                                (prev.data + piece.data) if piece.readable else None, piece.error)  # type: ignore[operator]
        chunks.append(piece)
        a = nxt
    return chunks


async def write_memory(session: "DebugSession", address: int, data: bytes) -> None:
    require_stopped(session, "write memory")
    try:
        await session.cmd(f"-data-write-memory-bytes {address:#x} {data.hex()}")
    except MIError as exc:
        raise EngineError(f"cannot write memory at {address:#x}: {exc.message}") from exc


_HEX = re.compile(r"^\s*(?:\([^)]*\)\s*)?(0x[0-9a-fA-F]+)")


async def address_of(session: "DebugSession", expression: str) -> int:
    """The address an expression means: a pointer's value, an array's first element, a number."""
    expr = expression.strip()
    if not expr:
        raise EngineError("no address or expression given")
    try:
        res = await session.cmd(f"-data-evaluate-expression {_frame_options(session)}{mi.quote(f'(void *)({expr})')}")
    except MIError as exc:
        raise EngineError(f"cannot take the address of {expr!r}: {exc.message}") from exc
    value = str(res.get("value", ""))
    m = _HEX.match(value)
    if m is None:
        if value.strip() == "0x0" or value.strip() == "0":
            return 0
        raise EngineError(f"{expr!r} is not an address ({value})")
    return int(m.group(1), 16)


async def pc(session: "DebugSession") -> int:
    """The selected frame's program counter."""
    res = await session.cmd(f"-data-evaluate-expression {_frame_options(session)}$pc")
    m = _HEX.match(str(res.get("value", "")))
    if m is None:
        raise EngineError(f"gdb gave no program counter ({res.get('value')})")
    return int(m.group(1), 16)
