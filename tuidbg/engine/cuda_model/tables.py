"""cuda-gdb's MI tables and their rows: devices, SMs, warps, lanes, kernels, contexts.

A table's name is the single key of the ``^done`` payload
(``InfoCudaKernelsTable``, ``CoalescedInfoCudaThreadsTable``...); cells are read
by ``col_name``, never by header text (headers changed between 11.8 and 12.x)
or by position (13.x dropped the kernels ``parent`` column). Every cell is a
string. The block and thread tables' rows are ranges (``ranges``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from tuidbg.engine.cuda_model.coords import Dim3, _dim, _num, bits
from tuidbg.engine.cuda_model.errors import CudaError
from tuidbg.engine.mi import as_list, to_int

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


def rows(payload: Mapping[str, Any], cls: type, expect: str | None = None) -> tuple:
    """Typed rows of the table in ``payload`` (``cls`` has ``from_row``)."""
    return tuple(cls.from_row(r) for r in parse_table(payload, expect).rows)
