"""The CUDA data model: what cuda-gdb's ``-cuda-*`` MI commands report, as frozen values.

Pure code, no I/O: ``tuidbg.engine.cuda`` sends the commands and keeps the
results in the debugger state; this module turns MI payloads into values, parses
and checks filter strings, does the coordinate arithmetic that lets a pane show a
million-thread grid in pages, and decodes CUDA exceptions from ``*stopped``.

Rules that hold for every cuda-gdb version seen (11.8 captured, 12.x/13.x from
the source):

- A table's name is the single key of the ``^done`` payload
  (``InfoCudaKernelsTable``, ``CoalescedInfoCudaThreadsTable``...); cells are read
  by ``col_name``, never by header text (headers changed between 11.8 and 12.x)
  or by position (13.x dropped the kernels ``parent`` column).
- Every cell is a string. Special coordinates print as ``invalid``, ``*``
  (wildcard) or ``current``; they become ``None`` here.
- The "logical order" of threads, which coalesced ranges follow, is x-fastest in
  12.x and later (``threadIdx.x`` varies first, then y, then z, and the same for
  blocks) and z-fastest in 11.x. For one-dimensional grids both are the same.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Iterable, Iterator, Mapping, Sequence, overload

from tuidbg.engine.errors import EngineError
from tuidbg.engine.mi import as_list, to_int


class CudaError(EngineError):
    """A CUDA operation failed; the message is one line for the user."""


class CudaFilterError(CudaError, ValueError):
    """A filter or focus request string is not valid; says what is wrong and what is expected."""


# ---------------------------------------------------------------------------------------------
# Coordinates


_SPECIAL = {"invalid", "*", "current", "", "-"}


def _num(value: Any) -> int | None:
    """An MI number cell; cuda-gdb's special coordinates (invalid, *, current) are None."""
    if value is None:
        return None
    s = str(value).strip()
    if s in _SPECIAL:
        return None
    return to_int(s)


@dataclass(frozen=True, order=True)
class Dim3:
    """A CUDA dim3/uint3 (block or thread index, grid or block size)."""

    x: int = 0
    y: int = 0
    z: int = 0

    def __str__(self) -> str:
        return f"({self.x},{self.y},{self.z})"

    @property
    def volume(self) -> int:
        return self.x * self.y * self.z

    @classmethod
    def parse(cls, text: Any) -> Dim3 | None:
        """``"(1,0,0)"`` → Dim3(1, 0, 0). Special or malformed values give None."""
        if text is None:
            return None
        if isinstance(text, Dim3):
            return text
        if isinstance(text, (tuple, list)):
            vals = list(text) + [0] * (3 - len(text))
            return cls(int(vals[0]), int(vals[1]), int(vals[2]))
        s = str(text).strip()
        if s.startswith("(") and s.endswith(")"):
            s = s[1:-1]
        parts = [p.strip() for p in s.split(",")]
        if not 1 <= len(parts) <= 3:
            return None
        vals = []
        for p in parts:
            if not p.isdigit():
                return None
            vals.append(int(p))
        while len(vals) < 3:
            vals.append(0)
        return cls(vals[0], vals[1], vals[2])


def _dim(value: Any) -> Dim3 | None:
    return Dim3.parse(value)


def _fast_dim(text: Any) -> Dim3:
    """A table's ``(x,y,z)`` cell, parsed the quick way (falls back to Dim3.parse)."""
    try:
        x, y, z = str(text)[1:-1].split(",")
        return Dim3(int(x), int(y), int(z))
    except (ValueError, TypeError):
        return Dim3.parse(text) or Dim3()


class LogicalOrder(enum.Enum):
    """How cuda-gdb orders threads logically, which decides where coalesced ranges break.

    X_FASTEST: 12.x and later (``incrementDim`` bumps x first; ``CuDim3 operator<``
    compares z, then y, then x). Z_FASTEST: 11.x (``cuda_coords_increment_thread``
    bumps z first).
    """

    X_FASTEST = "x-fastest"
    Z_FASTEST = "z-fastest"

    @classmethod
    def for_version(cls, cuda_version: tuple[int, ...]) -> LogicalOrder:
        if cuda_version and cuda_version[0] < 12:
            return cls.Z_FASTEST
        return cls.X_FASTEST

    def index(self, idx: Dim3, dim: Dim3) -> int:
        """Position of ``idx`` inside a box of size ``dim`` in this order."""
        if self is LogicalOrder.X_FASTEST:
            return idx.x + dim.x * (idx.y + dim.y * idx.z)
        return idx.z + dim.z * (idx.y + dim.y * idx.x)

    def at(self, i: int, dim: Dim3) -> Dim3:
        """The inverse of :meth:`index`."""
        if self is LogicalOrder.X_FASTEST:
            x = i % dim.x
            rest = i // dim.x
            return Dim3(x, rest % dim.y, rest // dim.y)
        z = i % dim.z
        rest = i // dim.z
        return Dim3(rest // dim.y, rest % dim.y, z)

    def linear(self, block: Dim3, thread: Dim3, grid_dim: Dim3, block_dim: Dim3) -> int:
        """Logical position of a thread in the whole grid."""
        return self.index(block, grid_dim) * block_dim.volume + self.index(thread, block_dim)

    def other(self) -> LogicalOrder:
        return LogicalOrder.Z_FASTEST if self is LogicalOrder.X_FASTEST else LogicalOrder.X_FASTEST


@dataclass(frozen=True)
class CudaFocus:
    """cuda-gdb's focus: one device thread, logically (kernel/grid/block/thread) and physically.

    Fields that cuda-gdb reports as ``invalid`` (a query that did not ask for
    them) are None.
    """

    kernel: int | None = None
    grid: int | None = None
    block: Dim3 | None = None
    thread: Dim3 | None = None
    device: int | None = None
    sm: int | None = None
    warp: int | None = None
    lane: int | None = None
    cluster: Dim3 | None = None

    @classmethod
    def from_mi(cls, d: Mapping[str, Any] | None) -> CudaFocus | None:
        """From a ``CudaFocus={...}`` tuple (in ``*stopped``, a switch or a 12.x query reply)."""
        if not isinstance(d, Mapping):
            return None
        f = cls(
            kernel=_num(d.get("kernel")),
            grid=_num(d.get("grid")),
            block=_dim(d.get("blockIdx")),
            thread=_dim(d.get("threadIdx")),
            device=_num(d.get("device")),
            sm=_num(d.get("sm")),
            warp=_num(d.get("warp")),
            lane=_num(d.get("lane")),
            cluster=_dim(d.get("clusterIdx")),
        )
        return None if f.is_empty else f

    _TEXT_RE = re.compile(r"(kernel|grid|device|sm|warp|lane)\s+(\d+)|(block|thread|cluster)\s+(\([^)]*\))")

    @classmethod
    def from_text(cls, text: str) -> CudaFocus | None:
        """From cuda-gdb's text form: ``kernel 0, grid 1, block (1,0,0), thread (3,0,0), device 0, sm 2, ...``.

        11.x answers ``-cuda-focus-query`` with this text as a bare string.
        """
        if not text or "not set" in text:
            return None
        vals: dict[str, Any] = {}
        for m in cls._TEXT_RE.finditer(text):
            if m.group(1):
                vals[m.group(1)] = int(m.group(2))
            else:
                vals[m.group(3)] = Dim3.parse(m.group(4))
        if not vals:
            return None
        f = cls(**vals)
        return None if f.is_empty else f

    @property
    def is_empty(self) -> bool:
        return all(getattr(self, n) is None for n in ("kernel", "grid", "block", "thread", "device", "sm", "warp", "lane"))

    @property
    def has_logical(self) -> bool:
        return self.kernel is not None and self.block is not None and self.thread is not None

    @property
    def has_physical(self) -> bool:
        return None not in (self.device, self.sm, self.warp, self.lane)

    def logical_args(self) -> str:
        """Arguments for ``-cuda-focus-switch`` that name this thread logically."""
        if not self.has_logical:
            raise CudaError(f"the focus {self.label} has no kernel/block/thread to switch to")
        return f"kernel {self.kernel} block {self.block} thread {self.thread}"

    def physical_args(self) -> str:
        """Arguments for ``-cuda-focus-switch`` that name this thread by device/SM/warp/lane."""
        if not self.has_physical:
            raise CudaError(f"the focus {self.label} has no device/sm/warp/lane to switch to")
        return f"device {self.device} sm {self.sm} warp {self.warp} lane {self.lane}"

    def same_warp(self, other: CudaFocus | None) -> bool:
        return other is not None and (self.device, self.sm, self.warp) == (other.device, other.sm, other.warp)

    def same_thread(self, other: CudaFocus | None) -> bool:
        if other is None:
            return False
        if self.has_logical and other.has_logical:
            return (self.kernel, self.block, self.thread) == (other.kernel, other.block, other.thread)
        return self.has_physical and other.has_physical and self.same_warp(other) and self.lane == other.lane

    @property
    def label(self) -> str:
        parts = []
        if self.kernel is not None:
            parts.append(f"kernel {self.kernel}")
        if self.block is not None:
            parts.append(f"block {self.block}")
        if self.thread is not None:
            parts.append(f"thread {self.thread}")
        if self.device is not None:
            parts.append(f"device {self.device}")
        if self.sm is not None:
            parts.append(f"sm {self.sm}")
        if self.warp is not None:
            parts.append(f"warp {self.warp}")
        if self.lane is not None:
            parts.append(f"lane {self.lane}")
        return ", ".join(parts) or "no CUDA focus"


# ---------------------------------------------------------------------------------------------
# Filters (the argument grammar of -cuda-info-* and -cuda-focus-switch)

SCALAR_KINDS = ("device", "sm", "warp", "lane", "kernel", "grid")
DIM_KINDS = ("block", "thread")
ALL_KINDS = SCALAR_KINDS + DIM_KINDS
PHYSICAL_KINDS = ("device", "sm", "warp", "lane")

_TOKEN_RE = re.compile(r"\s*(?:(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<conv>\$[A-Za-z0-9_]+)|(?P<num>0[xX][0-9A-Fa-f]+|\d+)|(?P<p>[(),])|(?P<bad>\S))")

# What a component may be: an int, "current", "any" (wildcard) or a $convenience variable.
Component = Any


def _fmt_component(v: Component) -> str:
    return str(v)


@dataclass(frozen=True)
class CudaFilter:
    """A parsed, checked filter: ``kernel 1 block (0,0,0)``.

    ``items`` keeps the user's order; ``str()`` gives the canonical text sent to
    cuda-gdb. Dim3 values keep the components given (1 to 3); cuda-gdb fills the
    rest (wildcard in a filter, the current focus in a switch).
    """

    items: tuple[tuple[str, Any], ...] = ()

    def __str__(self) -> str:
        out = []
        for kind, value in self.items:
            if kind in DIM_KINDS:
                out.append(f"{kind} (" + ",".join(_fmt_component(c) for c in value) + ")")
            else:
                out.append(f"{kind} {_fmt_component(value)}")
        return " ".join(out)

    def __bool__(self) -> bool:
        return bool(self.items)

    def get(self, kind: str, default: Any = None) -> Any:
        for k, v in self.items:
            if k == kind:
                return v
        return default

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.items)

    @property
    def is_physical(self) -> bool:
        """Whether cuda-gdb resolves a switch to this in physical order (device/sm/warp/lane given)."""
        return any(k in PHYSICAL_KINDS for k in self.kinds)


def _check_component(kind: str, raw: str) -> Component:
    low = raw.lower()
    if low in ("current", "any"):
        return low
    if raw.startswith("$"):
        return raw
    v = to_int(raw)
    if v is None or v < 0:
        raise CudaFilterError(f"{kind}: {raw!r} is not a valid index (a number ≥ 0, 0x hex, 'current', 'any' or a $variable)")
    if v > 0xFFFFFFFF:
        raise CudaFilterError(f"{kind}: {raw} is too large for a CUDA index")
    return v


def parse_filter(
    text: str | CudaFilter | None,
    *,
    allowed: Sequence[str] = ALL_KINDS,
    what: str = "filter",
) -> CudaFilter:
    """Parse and check a cuda-gdb filter or focus request.

    Accepts what cuda-gdb accepts: ``kernel 1 block (0,0,0)``, ``block 1,0,0``,
    ``block (1, 0)``, ``thread 5``, ``kernel 0x1``, ``kernel current``,
    ``block (any,0,0)``, ``kernel $k``. Raises CudaFilterError with a message
    that says what is wrong: an unknown word, a missing or malformed value, a
    duplicate, a kind this command does not take.
    """
    if isinstance(text, CudaFilter):
        flt = text
        for k in flt.kinds:
            if k not in allowed:
                raise CudaFilterError(f"{what}: '{k}' is not accepted here (use {_or_list(allowed)})")
        return flt
    if text is None or not str(text).strip():
        return CudaFilter()
    toks: list[tuple[str, str]] = []
    for m in _TOKEN_RE.finditer(str(text)):
        if m.group("bad") is not None:
            raise CudaFilterError(f"{what}: unexpected character {m.group('bad')!r} in {str(text).strip()!r}")
        for kind in ("word", "conv", "num", "p"):
            if m.group(kind) is not None:
                toks.append((kind, m.group(kind)))
                break
    items: list[tuple[str, Any]] = []
    seen: set[str] = set()
    i = 0
    n = len(toks)
    while i < n:
        kind_tok, word = toks[i]
        if kind_tok != "word":
            raise CudaFilterError(f"{what}: expected one of {_or_list(allowed)}, got {word!r}")
        word = word.lower()
        if word not in ALL_KINDS:
            raise CudaFilterError(f"{what}: unknown word {word!r} (expected {_or_list(allowed)})")
        if word not in allowed:
            raise CudaFilterError(f"{what}: '{word}' is not accepted here (use {_or_list(allowed)})")
        if word in seen:
            raise CudaFilterError(f"{what}: '{word}' is given twice")
        seen.add(word)
        i += 1
        if word in SCALAR_KINDS:
            # N or (N)
            paren = i < n and toks[i] == ("p", "(")
            if paren:
                i += 1
            if i >= n or toks[i][0] not in ("num", "conv", "word"):
                raise CudaFilterError(f"{what}: '{word}' needs a number (e.g. '{word} 0')")
            if toks[i][0] == "word" and toks[i][1].lower() not in ("current", "any"):
                raise CudaFilterError(f"{what}: '{word}' needs a number, got {toks[i][1]!r}")
            comp = _check_component(word, toks[i][1])
            i += 1
            if paren:
                if i >= n or toks[i] != ("p", ")"):
                    raise CudaFilterError(f"{what}: missing ')' after '{word} ({toks[i - 1][1]}'")
                i += 1
            items.append((word, comp))
            continue
        # dim3: (x,y,z) | x,y,z | x,y | x, with or without parentheses
        paren = i < n and toks[i] == ("p", "(")
        if paren:
            i += 1
        comps: list[Component] = []
        while True:
            if i >= n or toks[i][0] not in ("num", "conv", "word") or (
                toks[i][0] == "word" and toks[i][1].lower() not in ("current", "any")
            ):
                got = toks[i][1] if i < n else "nothing"
                raise CudaFilterError(f"{what}: '{word}' needs an index like (1,0,0), got {got!r}")
            comps.append(_check_component(word, toks[i][1]))
            i += 1
            if i < n and toks[i] == ("p", ","):
                i += 1
                continue
            break
        if paren:
            if i >= n or toks[i] != ("p", ")"):
                raise CudaFilterError(f"{what}: missing ')' in '{word}' index")
            i += 1
        if len(comps) > 3:
            raise CudaFilterError(f"{what}: '{word}' has {len(comps)} components; a CUDA index has at most 3 (x,y,z)")
        items.append((word, tuple(comps)))
    return CudaFilter(tuple(items))


def make_filter(
    *,
    kernel: int | None = None,
    grid: int | None = None,
    block: Dim3 | Sequence[int] | None = None,
    thread: Dim3 | Sequence[int] | None = None,
    device: int | None = None,
    sm: int | None = None,
    warp: int | None = None,
    lane: int | None = None,
) -> CudaFilter:
    """A filter from values (checked like parsed text)."""
    items: list[tuple[str, Any]] = []
    for kind, v in (("kernel", kernel), ("grid", grid), ("device", device), ("sm", sm), ("warp", warp), ("lane", lane)):
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise CudaFilterError(f"{kind} must be a number ≥ 0, not {v!r}")
        items.append((kind, v))
    for kind, v in (("block", block), ("thread", thread)):
        if v is None:
            continue
        comps = (v.x, v.y, v.z) if isinstance(v, Dim3) else tuple(v)
        if not 1 <= len(comps) <= 3 or any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in comps):
            raise CudaFilterError(f"{kind} must be 1 to 3 numbers ≥ 0, not {v!r}")
        items.append((kind, comps))
    return CudaFilter(tuple(items))


def _or_list(words: Sequence[str]) -> str:
    words = list(words)
    if len(words) == 1:
        return f"'{words[0]}'"
    return ", ".join(words[:-1]) + " or " + words[-1]


# ---------------------------------------------------------------------------------------------
# Tables


@dataclass(frozen=True)
class MITable:
    """One MI table as cuda-gdb sends it: the name, the column names, the rows (dicts by col_name)."""

    name: str
    columns: tuple[str, ...]
    headers: tuple[str, ...]
    rows: Sequence[Mapping[str, Any]]

    @property
    def coalesced(self) -> bool:
        return self.name.startswith("Coalesced")

    @property
    def uncoalesced(self) -> bool:
        return self.name.startswith("Uncoalesced")

    def __len__(self) -> int:
        return len(self.rows)


def parse_table(payload: Mapping[str, Any], expect: str | None = None) -> MITable:
    """The table in a ``^done`` payload: its name is the payload's single key.

    ``expect`` (e.g. ``"InfoCudaKernelsTable"`` or ``"ThreadsTable"``) is matched
    against the end of the name, so Coalesced/Uncoalesced variants both pass.
    """
    keys = [k for k, v in payload.items() if isinstance(v, Mapping) and ("body" in v or "hdr" in v)]
    if len(keys) != 1:
        got = ", ".join(payload) or "nothing"
        raise CudaError(f"cuda-gdb did not answer with a table (got {got})")
    name = keys[0]
    if expect and not name.endswith(expect):
        raise CudaError(f"cuda-gdb answered with {name}, expected a {expect}")
    tbl = payload[name]
    hdr = [h for h in as_list(tbl.get("hdr")) if isinstance(h, Mapping)]
    body = [r for r in as_list(tbl.get("body")) if isinstance(r, Mapping)]
    return MITable(
        name=name,
        columns=tuple(str(h.get("col_name", "")) for h in hdr),
        headers=tuple(str(h.get("colhdr", "")) for h in hdr),
        rows=body,
    )


def _cur(row: Mapping[str, Any]) -> bool:
    return str(row.get("current", "")).strip() == "*"


def _mask(value: Any) -> int:
    v = to_int(value)
    return v or 0


def bits(mask: int) -> tuple[int, ...]:
    """Indices of the set bits of a mask, lowest first."""
    out = []
    i = 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return tuple(out)


@dataclass(frozen=True)
class CudaDevice:
    device: int
    current: bool = False
    name: str = ""
    description: str = ""
    sm_type: str = ""
    num_sms: int = 0
    num_warps: int = 0
    num_lanes: int = 0
    num_regs: int = 0
    pci_bus: str = ""
    active_sms_mask: int = 0

    @property
    def active_sms(self) -> tuple[int, ...]:
        return bits(self.active_sms_mask)

    @classmethod
    def from_row(cls, r: Mapping[str, Any]) -> CudaDevice:
        return cls(
            device=_num(r.get("device")) or 0,
            current=_cur(r),
            name=str(r.get("name", "")),
            description=str(r.get("description", "")),
            sm_type=str(r.get("sm_type", "")),
            num_sms=_num(r.get("num_sms")) or 0,
            num_warps=_num(r.get("num_warps")) or 0,
            num_lanes=_num(r.get("num_lanes")) or 0,
            num_regs=_num(r.get("num_regs")) or 0,
            pci_bus=str(r.get("pci_bus", "")),
            active_sms_mask=_mask(r.get("active_sms_mask")),
        )


@dataclass(frozen=True)
class CudaSM:
    sm: int
    current: bool = False
    active_warps_mask: int = 0

    @property
    def active_warps(self) -> tuple[int, ...]:
        return bits(self.active_warps_mask)

    @classmethod
    def from_row(cls, r: Mapping[str, Any]) -> CudaSM:
        return cls(sm=_num(r.get("sm")) or 0, current=_cur(r), active_warps_mask=_mask(r.get("active_warps_mask")))


@dataclass(frozen=True)
class CudaWarp:
    warp: int
    current: bool = False
    active_lanes_mask: int = 0
    divergent_lanes_mask: int = 0
    pc: int | None = None
    kernel: int | None = None
    block: Dim3 | None = None
    first_thread: Dim3 | None = None

    @property
    def active_lanes(self) -> tuple[int, ...]:
        return bits(self.active_lanes_mask)

    @property
    def divergent_lanes(self) -> tuple[int, ...]:
        return bits(self.divergent_lanes_mask)

    @classmethod
    def from_row(cls, r: Mapping[str, Any]) -> CudaWarp:
        return cls(
            warp=_num(r.get("warp")) or 0,
            current=_cur(r),
            active_lanes_mask=_mask(r.get("active_lanes_mask")),
            divergent_lanes_mask=_mask(r.get("divergent_lanes_mask")),
            # 11.8 and 12.x name the PC column the same; only the header changed.
            pc=_num(r.get("active_physical_pc", r.get("active_pc"))),
            kernel=_num(r.get("kernel")),
            block=_dim(r.get("blockIdx")),
            first_thread=_dim(r.get("threadIdx")),
        )


@dataclass(frozen=True)
class CudaLane:
    lane: int
    current: bool = False
    state: str = ""
    pc: int | None = None
    thread: Dim3 | None = None
    exception: str | None = None

    @property
    def active(self) -> bool:
        return self.state == "active"

    @classmethod
    def from_row(cls, r: Mapping[str, Any]) -> CudaLane:
        exc = str(r.get("exception", "") or "").strip()
        return cls(
            lane=_num(r.get("lane")) or 0,
            current=_cur(r),
            state=str(r.get("state", "")).strip(),
            pc=_num(r.get("physical_pc", r.get("pc"))),
            thread=_dim(r.get("threadIdx")),
            exception=None if exc in ("", "None") else exc,
        )


@dataclass(frozen=True)
class CudaKernel:
    kernel: int
    current: bool = False
    parent: int | None = None
    device: int | None = None
    grid: int | None = None
    status: str = ""
    sms_mask: int = 0
    grid_dim: Dim3 | None = None
    block_dim: Dim3 | None = None
    invocation: str = ""

    @property
    def name(self) -> str:
        """The kernel's function name (the invocation up to its argument list)."""
        inv = self.invocation
        depth = 0
        # a templated name may hold parentheses inside <...>; cut at the first '(' outside them
        for i, ch in enumerate(inv):
            if ch == "<":
                depth += 1
            elif ch == ">":
                depth = max(0, depth - 1)
            elif ch == "(" and depth == 0:
                return inv[:i]
        return inv

    @property
    def total_threads(self) -> int:
        if self.grid_dim is None or self.block_dim is None:
            return 0
        return self.grid_dim.volume * self.block_dim.volume

    @property
    def launch(self) -> str:
        """``vecAdd<<<(2,1,1),(64,1,1)>>>``, the way cuda-gdb names a launch."""
        return f"{self.name}<<<{self.grid_dim},{self.block_dim}>>>"

    @classmethod
    def from_row(cls, r: Mapping[str, Any]) -> CudaKernel:
        return cls(
            kernel=_num(r.get("kernel")) or 0,
            current=_cur(r),
            parent=_num(r.get("parent")),  # "-" or absent (13.x) → None
            device=_num(r.get("device")),
            grid=_num(r.get("grid")),
            status=str(r.get("status", "")).strip(),
            sms_mask=_mask(r.get("sms_mask")),
            grid_dim=_dim(r.get("gridDim")),
            block_dim=_dim(r.get("blockDim")),
            invocation=str(r.get("invocation", "")),
        )


@dataclass(frozen=True)
class CudaContext:
    context: int
    current: bool = False
    device: int | None = None
    state: str = ""

    @classmethod
    def from_row(cls, r: Mapping[str, Any]) -> CudaContext:
        return cls(context=_num(r.get("context")) or 0, current=_cur(r), device=_num(r.get("device")), state=str(r.get("state", "")))


@dataclass(frozen=True)
class BlockRange:
    """Resident blocks of a kernel: a coalesced range, or one block (uncoalesced, with its device/SM)."""

    kernel: int | None
    first: Dim3
    last: Dim3
    count: int
    state: str = ""
    current: bool = False
    device: int | None = None
    sm: int | None = None

    def blocks(self, order: LogicalOrder, grid_dim: Dim3, start: int = 0, count: int | None = None) -> tuple[Dim3, ...]:
        """The block indices of the range, ``start`` .. ``start+count-1``, in logical order."""
        first = order.index(self.first, grid_dim)
        n = order.index(self.last, grid_dim) - first + 1
        stop = n if count is None else min(n, max(0, start) + max(0, count))
        return tuple(order.at(first + i, grid_dim) for i in range(max(0, start), stop))

    @classmethod
    def from_row(cls, r: Mapping[str, Any]) -> BlockRange:
        if "blockIdx" in r:  # uncoalesced
            b = _dim(r.get("blockIdx")) or Dim3()
            return cls(
                kernel=_num(r.get("kernel")),
                first=b,
                last=b,
                count=1,
                state=str(r.get("state", "")),
                current=_cur(r),
                device=_num(r.get("device")),
                sm=_num(r.get("sm")),
            )
        return cls(
            kernel=_num(r.get("kernel")),
            first=_dim(r.get("from")) or Dim3(),
            last=_dim(r.get("to")) or Dim3(),
            count=_num(r.get("count")) or 0,
            state=str(r.get("state", "")),
            current=_cur(r),
        )


@dataclass(frozen=True)
class ThreadRange:
    """Threads of a kernel at one PC: a coalesced range, or one thread (uncoalesced, with device/SM/warp/lane)."""

    kernel: int | None
    first_block: Dim3
    first_thread: Dim3
    last_block: Dim3
    last_thread: Dim3
    count: int
    pc: int | None = None
    filename: str = ""
    line: int | None = None
    current: bool = False
    device: int | None = None
    sm: int | None = None
    warp: int | None = None
    lane: int | None = None

    @property
    def single(self) -> bool:
        return self.count == 1

    @property
    def blocks_spanned(self) -> bool:
        return self.first_block != self.last_block

    @property
    def location(self) -> str:
        if self.filename and self.line is not None:
            return f"{self.filename.rsplit('/', 1)[-1]}:{self.line}"
        return f"{self.pc:#x}" if self.pc is not None else "?"

    def focus_args(self, which: str = "first") -> str:
        """``-cuda-focus-switch`` arguments for the first (or last) thread of the range."""
        b, t = (self.first_block, self.first_thread) if which == "first" else (self.last_block, self.last_thread)
        if self.kernel is None:
            return f"block {b} thread {t}"
        return f"kernel {self.kernel} block {b} thread {t}"

    def contains(self, block: Dim3, thread: Dim3, order: LogicalOrder, grid_dim: Dim3, block_dim: Dim3) -> bool:
        i = order.linear(block, thread, grid_dim, block_dim)
        return self.start(order, grid_dim, block_dim) <= i <= self.end(order, grid_dim, block_dim)

    def start(self, order: LogicalOrder, grid_dim: Dim3, block_dim: Dim3) -> int:
        return order.linear(self.first_block, self.first_thread, grid_dim, block_dim)

    def end(self, order: LogicalOrder, grid_dim: Dim3, block_dim: Dim3) -> int:
        return order.linear(self.last_block, self.last_thread, grid_dim, block_dim)

    def span(self, order: LogicalOrder, grid_dim: Dim3, block_dim: Dim3) -> int:
        """How many threads lie between the range's ends in ``order`` (equals ``count`` when the order is right)."""
        return self.end(order, grid_dim, block_dim) - self.start(order, grid_dim, block_dim) + 1

    def block_count(self, order: LogicalOrder, grid_dim: Dim3) -> int:
        """How many blocks the range touches."""
        return order.index(self.last_block, grid_dim) - order.index(self.first_block, grid_dim) + 1

    def block_pieces(
        self, order: LogicalOrder, grid_dim: Dim3, block_dim: Dim3, start: int = 0, count: int | None = None
    ) -> tuple[ThreadRange, ...]:
        """The range cut at block boundaries, pieces ``start`` .. ``start+count-1``.

        Computed locally (a range has one PC), so a pane can page through the
        blocks of a million-thread range without asking cuda-gdb anything.
        """
        nblocks = self.block_count(order, grid_dim)
        if start < 0:
            raise ValueError("start must be ≥ 0")
        stop = nblocks if count is None else min(nblocks, start + max(0, count))
        b0 = order.index(self.first_block, grid_dim)
        tpb = block_dim.volume
        t_first = order.index(self.first_thread, block_dim)
        t_last = order.index(self.last_thread, block_dim)
        out = []
        for k in range(start, stop):
            bi = b0 + k
            block = order.at(bi, grid_dim)
            lo = t_first if k == 0 else 0
            hi = t_last if k == nblocks - 1 else tpb - 1
            out.append(
                replace(
                    self,
                    first_block=block,
                    last_block=block,
                    first_thread=order.at(lo, block_dim),
                    last_thread=order.at(hi, block_dim),
                    count=hi - lo + 1,
                    current=False,
                    device=None,
                    sm=None,
                    warp=None,
                    lane=None,
                )
            )
        return tuple(out)

    @classmethod
    def from_row(cls, r: Mapping[str, Any]) -> ThreadRange:
        common = dict(
            kernel=_num(r.get("kernel")),
            pc=_num(r.get("virtual_pc", r.get("pc"))),
            filename=str(r.get("filename", "") or ""),
            line=_num(r.get("line")),
            current=_cur(r),
        )
        if "threadIdx" in r and "from_threadIdx" not in r:  # uncoalesced: one thread
            b = _dim(r.get("blockIdx")) or Dim3()
            t = _dim(r.get("threadIdx")) or Dim3()
            return cls(
                first_block=b,
                first_thread=t,
                last_block=b,
                last_thread=t,
                count=1,
                device=_num(r.get("device")),
                sm=_num(r.get("sm")),
                warp=_num(r.get("warp")),
                lane=_num(r.get("lane")),
                **common,
            )
        return cls(
            first_block=_dim(r.get("from_blockIdx")) or Dim3(),
            first_thread=_dim(r.get("from_threadIdx")) or Dim3(),
            last_block=_dim(r.get("to_blockIdx")) or Dim3(),
            last_thread=_dim(r.get("to_threadIdx")) or Dim3(),
            count=_num(r.get("count")) or 0,
            **common,
        )


_UNSET: Any = object()


class ThreadRanges(Sequence[ThreadRange]):
    """The rows of a threads table, converted to ThreadRange only when read.

    A 1M-thread grid can have tens of thousands of ranges; a pane shows a page
    of them, so conversion is lazy and cached per row. ``with_focus`` moves the
    current marker after a focus switch without asking cuda-gdb again. Treat
    instances as immutable.
    """

    def __init__(
        self,
        rows: Sequence[Mapping[str, Any]],
        *,
        coalesced: bool = True,
        kernel: int | None = None,
        grid_dim: Dim3 | None = None,
        block_dim: Dim3 | None = None,
        order: LogicalOrder = LogicalOrder.X_FASTEST,
        table: str = "",
        _current: Any = _UNSET,
        _cache: dict[int, ThreadRange] | None = None,
    ) -> None:
        self._rows = rows
        self.coalesced = coalesced
        self.kernel = kernel
        self.grid_dim = grid_dim
        self.block_dim = block_dim
        self.order = order
        self.table = table
        self._current = _current
        self._cache: dict[int, ThreadRange] = {} if _cache is None else _cache
        self._total: int | None = None
        self._summary: tuple | None = None

    @classmethod
    def from_table(
        cls,
        table: MITable,
        *,
        kernel: int | None = None,
        grid_dim: Dim3 | None = None,
        block_dim: Dim3 | None = None,
        order: LogicalOrder = LogicalOrder.X_FASTEST,
    ) -> ThreadRanges:
        return cls(
            table.rows,
            coalesced=not table.uncoalesced,
            kernel=kernel,
            grid_dim=grid_dim,
            block_dim=block_dim,
            order=order,
            table=table.name,
        )

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, i: int) -> ThreadRange: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[ThreadRange, ...]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[k] for k in range(*i.indices(len(self))))
        n = len(self._rows)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        r = self._cache.get(i)
        if r is None:
            r = ThreadRange.from_row(self._rows[i])
            self._cache[i] = r
        if self._current is not _UNSET:
            want = i == self._current
            if r.current != want:
                r = replace(r, current=want)
        return r

    def __iter__(self) -> Iterator[ThreadRange]:
        for i in range(len(self)):
            yield self[i]

    def page(self, start: int, count: int) -> tuple[ThreadRange, ...]:
        """Rows ``start`` .. ``start+count-1`` (clipped)."""
        start = max(0, start)
        return self[start : start + max(0, count)]

    @property
    def total_threads(self) -> int:
        if self._total is None:
            total = 0
            for r in self._rows:
                total += _num(r.get("count")) or (0 if "from_threadIdx" in r else 1)
            self._total = total
        return self._total

    @property
    def current_index(self) -> int | None:
        """Index of the range holding the focus (the ``*`` row, or where ``with_focus`` put it)."""
        if self._current is _UNSET:
            self._current = next((i for i, r in enumerate(self._rows) if _cur(r)), None)
        return self._current

    @property
    def current(self) -> ThreadRange | None:
        i = self.current_index
        return None if i is None else self[i]

    @property
    def can_locate(self) -> bool:
        return self.grid_dim is not None and self.block_dim is not None and self.grid_dim.volume > 0 and self.block_dim.volume > 0

    def _bounds(self, i: int) -> tuple[int, int]:
        """Logical start and end of row ``i``, parsed straight from its cells (no ThreadRange built)."""
        assert self.grid_dim is not None and self.block_dim is not None
        r = self._rows[i]
        if "from_threadIdx" in r:
            fb, ft, lb, lt = r.get("from_blockIdx"), r.get("from_threadIdx"), r.get("to_blockIdx"), r.get("to_threadIdx")
        else:
            fb = lb = r.get("blockIdx")
            ft = lt = r.get("threadIdx")
        o, g, b = self.order, self.grid_dim, self.block_dim
        start = o.linear(_fast_dim(fb), _fast_dim(ft), g, b)
        end = start if fb == lb and ft == lt else o.linear(_fast_dim(lb), _fast_dim(lt), g, b)
        return start, end

    def locate(self, block: Dim3, thread: Dim3) -> int | None:
        """Index of the row holding thread ``(block, thread)``, or None.

        cuda-gdb lists ranges in logical order, so this is a binary search that
        parses about log2(rows) rows; if the rows turn out not to be sorted it
        falls back to a scan.
        """
        if not self.can_locate or not len(self):
            return None
        assert self.grid_dim is not None and self.block_dim is not None
        target = self.order.linear(block, thread, self.grid_dim, self.block_dim)
        lo, hi = 0, len(self) - 1
        while lo <= hi:
            mid = (lo + hi) // 2
            start, end = self._bounds(mid)
            if target < start:
                hi = mid - 1
            elif target > end:
                lo = mid + 1
            else:
                return mid
        for i in range(len(self)):  # unsorted rows (never seen): scan
            start, end = self._bounds(i)
            if start <= target <= end:
                return i
        return None

    def with_focus(self, focus: CudaFocus | None) -> ThreadRanges:
        """The same rows with the current marker on the range holding ``focus`` (none if elsewhere)."""
        cur: int | None = None
        if focus is not None and focus.has_logical and (self.kernel is None or focus.kernel == self.kernel):
            assert focus.block is not None and focus.thread is not None
            cur = self.locate(focus.block, focus.thread)
        return ThreadRanges(
            self._rows,
            coalesced=self.coalesced,
            kernel=self.kernel,
            grid_dim=self.grid_dim,
            block_dim=self.block_dim,
            order=self.order,
            table=self.table,
            _current=cur,
            _cache=self._cache,
        )

    def summary(self, limit: int | None = None) -> tuple[tuple[int | None, str, int | None, int, int], ...]:
        """Threads per location, most populated first: ``(pc, filename, line, threads, ranges)``."""
        if self._summary is None:
            self._summary = self._make_summary()
        return self._summary if limit is None else self._summary[:limit]

    def _make_summary(self) -> tuple[tuple[int | None, str, int | None, int, int], ...]:
        acc: dict[tuple[Any, Any, Any], list[int]] = {}
        for r in self._rows:
            key = (r.get("virtual_pc", r.get("pc")), r.get("filename", ""), r.get("line"))
            n = _num(r.get("count")) or 1
            slot = acc.get(key)
            if slot is None:
                acc[key] = [n, 1]
            else:
                slot[0] += n
                slot[1] += 1
        out = sorted(
            ((_num(k[0]), str(k[1] or ""), _num(k[2]), v[0], v[1]) for k, v in acc.items()), key=lambda t: (-t[3], t[0] or 0)
        )
        return tuple(out)

    def where(self, predicate) -> ThreadRanges:
        """The rows for which ``predicate(ThreadRange)`` is true (converts every row: for small tables)."""
        keep = [self._rows[i] for i in range(len(self)) if predicate(self[i])]
        return ThreadRanges(
            keep,
            coalesced=self.coalesced,
            kernel=self.kernel,
            grid_dim=self.grid_dim,
            block_dim=self.block_dim,
            order=self.order,
            table=self.table,
        )

    def infer_order(self) -> LogicalOrder:
        """The logical order under which the rows' counts are consistent (checks a sample)."""
        if not self.can_locate or not self.coalesced:
            return self.order
        assert self.grid_dim is not None and self.block_dim is not None
        sample = range(0, len(self), max(1, len(self) // 64))
        for order in (self.order, self.order.other()):
            if all(self[i].span(order, self.grid_dim, self.block_dim) == self[i].count for i in sample):
                return order
        return self.order


def rows(payload: Mapping[str, Any], cls: type, expect: str | None = None) -> tuple:
    """Typed rows of the table in ``payload`` (``cls`` has ``from_row``)."""
    return tuple(cls.from_row(r) for r in parse_table(payload, expect).rows)


# ---------------------------------------------------------------------------------------------
# Exceptions

# signal number → meaning, as cuda-gdb 11.8/12.x name them (CUDA_EXCEPTION_<n>).
EXCEPTION_NAMES: Mapping[int, str] = MappingProxyType(
    {
        0: "Device Unknown Exception",
        1: "Lane Illegal Address",
        2: "Lane User Stack Overflow",
        3: "Device Hardware Stack Overflow",
        4: "Warp Illegal Instruction",
        5: "Warp Out-of-range Address",
        6: "Warp Misaligned Address",
        7: "Warp Invalid Address Space",
        8: "Warp Invalid PC",
        9: "Warp Hardware Stack Overflow",
        10: "Device Illegal Address",
        11: "Lane Misaligned Address",
        12: "Warp Assert",
        13: "Lane Syscall Error",
        14: "Warp Illegal Address",
        15: "Invalid Managed Memory Access",
        18: "Cluster Out-of-range Address",
    }
)

_EXC_RE = re.compile(r"^CUDA_EXCEPTION_(\d+)$")


def exception_scope(name: str) -> str:
    """lane, warp, device or cluster: the first word of cuda-gdb's exception name."""
    first = name.split(" ", 1)[0].lower() if name else ""
    return first if first in ("lane", "warp", "device", "cluster") else "unknown"


@dataclass(frozen=True)
class CudaException:
    """A CUDA exception stop, with what cuda-gdb told about it.

    ``pc``/``filename``/``line`` are where the exception was raised (the stop
    frame may be later: warp errors are imprecise). They come from the
    ``*stopped`` fields when present, else from ``$errorpc``. ``lanes`` are the
    lanes of the focused warp whose ``exception`` column is set.
    """

    signal: str
    code: int | None
    name: str
    scope: str = "unknown"
    pc: int | None = None
    function: str | None = None
    filename: str | None = None
    line: int | None = None
    device: int | None = None
    cluster_block: Dim3 | None = None
    focus: CudaFocus | None = None
    from_stop_fields: bool = False
    lanes: tuple[int, ...] = ()
    errorpc: str | None = None

    @property
    def precise(self) -> bool:
        """Whether the faulting PC is known."""
        return self.pc is not None

    def describe(self) -> str:
        out = f"{self.signal}: {self.name}"
        where = []
        if self.pc is not None:
            where.append(f"pc {self.pc:#x}")
        if self.function:
            where.append(self.function)
        if self.filename and self.line is not None:
            where.append(f"{self.filename}:{self.line}")
        if where:
            out += " at " + " ".join(where)
        elif self.scope in ("warp", "lane"):
            out += " (no error PC: imprecise exception)"
        if self.focus is not None:
            out += f" [{self.focus.label}]"
        return out


def decode_exception(payload: Mapping[str, Any]) -> CudaException | None:
    """A CUDA exception from a ``*stopped`` payload, or None if the stop is not one.

    cuda-gdb writes ``exception_name``, ``pc``, ``function`` (12.x+),
    ``filename``, ``line`` (or ``device`` for device-wide errors) before the
    signal fields; any of them may be missing (imprecise errors, older
    releases), then the name comes from ``signal-meaning`` and the code table.
    """
    sig = str(payload.get("signal-name", "") or "")
    m = _EXC_RE.match(sig)
    if m is None:
        return None
    code = int(m.group(1))
    name = str(payload.get("exception_name") or payload.get("signal-meaning") or EXCEPTION_NAMES.get(code, "CUDA exception"))
    has_fields = any(k in payload for k in ("exception_name", "pc", "function", "filename"))
    return CudaException(
        signal=sig,
        code=code,
        name=name,
        scope=exception_scope(name),
        pc=to_int(payload.get("pc")),
        function=payload.get("function"),
        filename=payload.get("filename"),
        line=to_int(payload.get("line")),
        device=to_int(payload.get("device")),
        cluster_block=_dim(payload.get("blockIdx")),
        focus=CudaFocus.from_mi(payload.get("CudaFocus")),
        from_stop_fields=has_fields,
    )


_ERRORPC_RE = re.compile(r"(0x[0-9a-fA-F]+)(?:\s+<(.*)>)?")


def parse_errorpc(value: str | None) -> tuple[int | None, str | None]:
    """``(void (*)(void)) 0x7fffd727d390 <vecAdd(int const*, int const*, int*, int)+416>`` → (pc, symbol+offset)."""
    if not value:
        return None, None
    # skip a leading "(type) " cast
    s = value.strip()
    if s.startswith("("):
        depth = 0
        for i, ch in enumerate(s):
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    s = s[i + 1 :].strip()
                    break
    m = re.match(r"(0x[0-9a-fA-F]+)\s*(?:<(.*)>)?\s*$", s)
    if m is None:
        m2 = _ERRORPC_RE.search(s)
        if m2 is None:
            return None, None
        return int(m2.group(1), 16), m2.group(2)
    return int(m.group(1), 16), (m.group(2) or None)


# ---------------------------------------------------------------------------------------------
# Stops

STOP_HOST = "host"
STOP_BREAKPOINT = "breakpoint"
STOP_KERNEL_ENTRY = "kernel-entry"
STOP_EXCEPTION = "exception"
STOP_STEP = "step"
STOP_SIGNAL = "signal"
STOP_OTHER = "other"

_STEP_REASONS = ("end-stepping-range", "function-finished", "location-reached")


def classify_stop(payload: Mapping[str, Any], user_breakpoints: Iterable[str] = ()) -> str:
    """What kind of stop a ``*stopped`` payload is, for a CUDA session.

    A stop with ``CudaFocus`` but no reason, or a breakpoint number that is not
    one of the user's, is a kernel entry (``set cuda break_on_launch``): the MI
    reason of that internal breakpoint is not documented.
    """
    if decode_exception(payload) is not None:
        return STOP_EXCEPTION
    if not isinstance(payload.get("CudaFocus"), Mapping):
        return STOP_HOST
    reason = str(payload.get("reason", "") or "")
    if reason in _STEP_REASONS:
        return STOP_STEP
    if reason == "signal-received":
        return STOP_SIGNAL
    if reason in ("", "breakpoint-hit"):
        bk = payload.get("bkptno")
        if bk is not None and str(bk) in set(user_breakpoints):
            return STOP_BREAKPOINT
        return STOP_KERNEL_ENTRY
    return STOP_OTHER


def is_device_frame(frame: Mapping[str, Any] | Any) -> bool:
    """Device frames carry ``arch="m68k"`` (cuda-gdb loads device code with that BFD arch)."""
    arch = frame.get("arch") if isinstance(frame, Mapping) else getattr(frame, "arch", None)
    return arch == "m68k"


# ---------------------------------------------------------------------------------------------
# Breakpoints on kernels


@dataclass(frozen=True)
class KernelBreakpointView:
    """A breakpoint's locations as a CUDA pane shows them.

    cuda-gdb resolves a breakpoint on a kernel (or on a line inside one) to the
    kernel's host stub too, and disables that location; the device location
    arrives when the module loads. ``shown`` hides those stubs; ``pending_on_device``
    says that no device location exists yet.
    """

    number: str
    shown: tuple[Any, ...]
    hidden_stubs: tuple[Any, ...]

    @property
    def pending_on_device(self) -> bool:
        return not self.shown and bool(self.hidden_stubs)

    def source_lines(self) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for loc in self.shown:
            if loc.fullname and loc.line is not None and (loc.fullname, loc.line) not in out:
                out.append((loc.fullname, loc.line))
        return out


def _func_key(func: str | None) -> str:
    return (func or "").split("(", 1)[0]


def kernel_breakpoint_view(bp: Any) -> KernelBreakpointView:
    """Split a breakpoint's locations into shown ones and hidden host stubs.

    A location is taken for a host stub when it is disabled, the breakpoint has
    several locations or ``addr="<MULTIPLE>"``, and either another location is
    in the same function (the device copy) or no location is enabled yet (11.8
    before the module loads). A device location the user disabled by hand while
    the stub is also disabled cannot be told apart from it; it is hidden too.
    """
    locs = tuple(getattr(bp, "locations", ()) or ())
    multi = len(locs) > 1 or getattr(bp, "addr", "") == "<MULTIPLE>"
    if not multi:
        if not locs and getattr(bp, "addr", "") not in ("", "<PENDING>") and not getattr(bp, "pending", None):
            from tuidbg.engine.records import BreakpointLocation

            locs = (
                BreakpointLocation(
                    number=str(bp.number),
                    enabled=bool(bp.enabled),
                    addr=str(bp.addr),
                    func=bp.func,
                    file=bp.file,
                    fullname=bp.fullname,
                    line=bp.line,
                ),
            )
        return KernelBreakpointView(str(getattr(bp, "number", "")), locs, ())
    enabled = [loc for loc in locs if loc.enabled]
    enabled_funcs = {_func_key(loc.func) for loc in enabled}
    shown, hidden = [], []
    for loc in locs:
        if not loc.enabled and (not enabled or _func_key(loc.func) in enabled_funcs):
            hidden.append(loc)
        else:
            shown.append(loc)
    return KernelBreakpointView(str(getattr(bp, "number", "")), tuple(shown), tuple(hidden))


# ---------------------------------------------------------------------------------------------
# Capabilities and settings

# -cuda-* MI commands tuidbg knows, probed with -info-gdb-mi-command at start-up.
CUDA_MI_COMMANDS = (
    "cuda-info-devices",
    "cuda-info-sms",
    "cuda-info-warps",
    "cuda-info-lanes",
    "cuda-info-kernels",
    "cuda-info-blocks",
    "cuda-info-threads",
    "cuda-info-contexts",
    "cuda-info-launch-trace",
    "cuda-info-launch-children",
    "cuda-info-managed",
    "cuda-info-line",
    "cuda-info-barriers",
    "cuda-info-clusters",
    "cuda-focus-switch",
    "cuda-focus-query",
)

# Settings a pane can toggle, with the values cuda-gdb accepts.
OPTION_VALUES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "break_on_launch": ("none", "application", "system", "all"),
        "api_failures": ("ignore", "stop", "hide", "ignore_all", "stop_all"),
        "memcheck": ("on", "off", "auto"),
    }
)


@dataclass(frozen=True)
class CudaCaps:
    """What this cuda-gdb can do, found at start-up."""

    cuda_version: tuple[int, ...] = ()
    gdb_version: tuple[int, ...] = ()
    has_python: bool = False
    commands: frozenset[str] = frozenset()
    options: frozenset[str] = frozenset()
    order: LogicalOrder = LogicalOrder.X_FASTEST
    python_none_broken: bool = False
    workaround_applied: bool = False
    probed: bool = True

    def has(self, command: str) -> bool:
        """Whether ``-<command>`` exists (``command`` without the dash)."""
        return command.lstrip("-") in self.commands

    @property
    def minimal(self) -> bool:
        """cuda-gdb without Python (``cuda-gdb-minimal``, 12.5+): Python-side features fall back."""
        return not self.has_python

    @property
    def version_text(self) -> str:
        return ".".join(str(v) for v in self.cuda_version) or "unknown"


@dataclass(frozen=True)
class CudaSettings:
    """Current values of the toggles (``None``: this cuda-gdb does not have the setting)."""

    values: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def get(self, name: str) -> str | None:
        return self.values.get(name)

    @property
    def available(self) -> tuple[str, ...]:
        return tuple(k for k in OPTION_VALUES if k in self.values)


def check_option(name: str, value: str, available: Iterable[str]) -> str:
    """Validate a toggle before sending it; returns the normalised value."""
    if name not in OPTION_VALUES:
        raise CudaError(f"unknown CUDA setting {name!r} (settable: {', '.join(OPTION_VALUES)})")
    if name not in set(available):
        if name == "memcheck":
            raise CudaError("this cuda-gdb has no memcheck (removed in 12.8; use compute-sanitizer)")
        raise CudaError(f"this cuda-gdb has no 'cuda {name}' setting")
    v = str(value).strip().lower()
    if v not in OPTION_VALUES[name]:
        raise CudaError(f"cuda {name}: {value!r} is not one of {', '.join(OPTION_VALUES[name])}")
    return v


# ---------------------------------------------------------------------------------------------
# Warp watch


@dataclass(frozen=True)
class LaneValue:
    lane: int
    thread: Dim3 | None = None
    state: str = ""
    value: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class WarpWatch:
    """An expression evaluated in every valid lane of the focused warp."""

    expression: str
    focus: CudaFocus
    lanes: tuple[LaneValue, ...]
    restored: bool = True
    frame: int = 0

    def value(self, lane: int) -> LaneValue | None:
        for lv in self.lanes:
            if lv.lane == lane:
                return lv
        return None

    @property
    def distinct_values(self) -> int:
        return len({lv.value for lv in self.lanes if lv.ok})


# ---------------------------------------------------------------------------------------------
# The snapshot the panes read


@dataclass(frozen=True)
class CudaSnapshot:
    """CUDA state at one stop (``state.cuda.snapshot``).

    Filled in two steps: the stop hook sets what ``*stopped`` says (focus, stop
    kind, exception); the refresh stage adds the tables and sets ``loaded``.
    ``focus`` is cuda-gdb's focus now (it follows focus switches; None after a
    host thread was selected), ``stop_focus`` the one the stop reported.
    ``kernel`` is the kernel whose blocks and threads were read (the focused one,
    else the first). ``threads_mode`` is ``"full"`` (all ranges of that kernel in
    ``threads``) or ``"per-block"`` (the kernel's table was too big last time:
    ``threads`` is None and a pane expands blocks one by one).
    """

    generation: int = 0
    caps: CudaCaps = field(default_factory=CudaCaps)
    focus: CudaFocus | None = None
    stop_focus: CudaFocus | None = None
    stop_kind: str = STOP_HOST
    exception: CudaException | None = None
    bkptno: str | None = None
    settings: CudaSettings | None = None
    devices: tuple[CudaDevice, ...] = ()
    kernels: tuple[CudaKernel, ...] = ()
    kernel: int | None = None
    blocks: tuple[BlockRange, ...] = ()
    threads: ThreadRanges | None = None
    threads_mode: str = "full"
    lanes: tuple[CudaLane, ...] = ()
    errors: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    loaded: bool = False

    @property
    def on_device(self) -> bool:
        return self.focus is not None

    @property
    def kernel_entry(self) -> bool:
        return self.stop_kind == STOP_KERNEL_ENTRY

    def kernel_info(self, kernel: int | None = None) -> CudaKernel | None:
        k = self.kernel if kernel is None else kernel
        for x in self.kernels:
            if x.kernel == k:
                return x
        return None

    @property
    def focused_kernel(self) -> CudaKernel | None:
        if self.focus is None or self.focus.kernel is None:
            return None
        return self.kernel_info(self.focus.kernel)

    @property
    def focused_lane(self) -> CudaLane | None:
        for ln in self.lanes:
            if ln.current or (self.focus is not None and ln.lane == self.focus.lane):
                return ln
        return None
