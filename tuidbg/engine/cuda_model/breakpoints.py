"""Breakpoints on kernels: which locations a CUDA pane shows, and which are cuda-gdb's host stubs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tuidbg.engine.records import BreakpointLocation


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
