"""What a ``*stopped`` record says for CUDA: the exception it reports, the kind of stop, device frames."""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from tuidbg.engine.cuda_model.coords import CudaFocus, Dim3, _dim
from tuidbg.engine.mi import to_int

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
