"""What this cuda-gdb can do, the settings, the warp watch, and the snapshot of CUDA state the panes read."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Iterable, Mapping

from tuidbg.engine.cuda_model.coords import CudaFocus, Dim3, LogicalOrder
from tuidbg.engine.cuda_model.errors import CudaError
from tuidbg.engine.cuda_model.ranges import BlockRange, ThreadRanges
from tuidbg.engine.cuda_model.stops import STOP_HOST, STOP_KERNEL_ENTRY, CudaException
from tuidbg.engine.cuda_model.tables import CudaDevice, CudaKernel, CudaLane

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
