"""CUDA coordinates: dim3 values, cuda-gdb's focus, the logical order of threads, mask bits.

Special coordinates print as ``invalid``, ``*`` (wildcard) or ``current`` (and
``-`` in some tables); they become ``None`` here.

The "logical order" of threads, which coalesced ranges follow, is x-fastest in
12.x and later (``threadIdx.x`` varies first, then y, then z, and the same for
blocks) and z-fastest in 11.x. For one-dimensional grids both are the same.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any, Mapping

from tuidbg.engine.cuda_model.errors import CudaError
from tuidbg.engine.mi import to_int


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

    def _coords(self, names: tuple[str, ...]) -> list[str]:
        return [f"{n} {getattr(self, n)}" for n in names if getattr(self, n) is not None]

    @property
    def label(self) -> str:
        return ", ".join(self._coords(("kernel", "block", "thread", "device", "sm", "warp", "lane"))) or "no CUDA focus"

    @property
    def logical_label(self) -> str:
        """"kernel 0 block (1,0,0) thread (3,0,0)", or the whole label where no logical position is known."""
        return " ".join(self._coords(("kernel", "block", "thread"))) or self.label


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
