"""The rows of cuda-gdb's device, SM, warp, lane, kernel and context tables, as frozen values.

Each row type says which column each field comes from (``CELLS``; the rules
are in ``mitable``). The blocks and threads tables' rows are ranges (``ranges``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tuidbg.engine.cuda_model.coords import Dim3, bits
from tuidbg.engine.cuda_model.mitable import TableRow, cells, dim, index, mask, number, star, text, word


def lane_exception(value: Any) -> str | None:
    """A lane's ``exception`` cell: cuda-gdb prints ``None`` when there is none."""
    s = str(value or "").strip()
    return None if s in ("", "None") else s


@dataclass(frozen=True)
class CudaDevice(TableRow):
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

    CELLS = cells(
        device=index,
        current=star,
        name=text,
        description=text,
        sm_type=text,
        num_sms=index,
        num_warps=index,
        num_lanes=index,
        num_regs=index,
        pci_bus=text,
        active_sms_mask=mask,
    )

    @property
    def active_sms(self) -> tuple[int, ...]:
        return bits(self.active_sms_mask)


@dataclass(frozen=True)
class CudaSM(TableRow):
    sm: int
    current: bool = False
    active_warps_mask: int = 0

    CELLS = cells(sm=index, current=star, active_warps_mask=mask)

    @property
    def active_warps(self) -> tuple[int, ...]:
        return bits(self.active_warps_mask)


@dataclass(frozen=True)
class CudaWarp(TableRow):
    warp: int
    current: bool = False
    active_lanes_mask: int = 0
    divergent_lanes_mask: int = 0
    pc: int | None = None
    kernel: int | None = None
    block: Dim3 | None = None
    first_thread: Dim3 | None = None

    CELLS = cells(
        warp=index,
        current=star,
        active_lanes_mask=mask,
        divergent_lanes_mask=mask,
        # 11.8 and 12.x name the PC column the same; only the header changed.
        pc=(("active_physical_pc", "active_pc"), number),
        kernel=number,
        block=("blockIdx", dim),
        first_thread=("threadIdx", dim),
    )

    @property
    def active_lanes(self) -> tuple[int, ...]:
        return bits(self.active_lanes_mask)

    @property
    def divergent_lanes(self) -> tuple[int, ...]:
        return bits(self.divergent_lanes_mask)


@dataclass(frozen=True)
class CudaLane(TableRow):
    lane: int
    current: bool = False
    state: str = ""
    pc: int | None = None
    thread: Dim3 | None = None
    exception: str | None = None

    CELLS = cells(
        lane=index,
        current=star,
        state=word,
        pc=(("physical_pc", "pc"), number),
        thread=("threadIdx", dim),
        exception=lane_exception,
    )

    @property
    def active(self) -> bool:
        return self.state == "active"


@dataclass(frozen=True)
class CudaKernel(TableRow):
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

    CELLS = cells(
        kernel=index,
        current=star,
        parent=number,  # "-" or absent (13.x) → None
        device=number,
        grid=number,
        status=word,
        sms_mask=mask,
        grid_dim=("gridDim", dim),
        block_dim=("blockDim", dim),
        invocation=text,
    )

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


@dataclass(frozen=True)
class CudaContext(TableRow):
    context: int
    current: bool = False
    device: int | None = None
    state: str = ""

    CELLS = cells(context=index, current=star, device=number, state=text)
