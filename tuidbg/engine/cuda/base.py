"""What the parts of ``CudaExtension`` share: reading the CUDA view of a state, constants, the
extension's attributes (made in ``CudaExtension.__init__``) and its state helpers."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tuidbg.engine.cuda_model import (
    CudaCaps,
    CudaError,
    CudaFocus,
    CudaSettings,
    CudaSnapshot,
    MITable,
    parse_table,
)
from tuidbg.engine.errors import MIError
from tuidbg.engine.extensions import Extension
from tuidbg.engine.state import DebuggerState, ProcessState

if TYPE_CHECKING:
    from tuidbg.engine.session import DebugSession, SessionConfig

log = logging.getLogger("tuidbg.engine")

AUTO_ROWS_LIMIT = 5000  # a kernel whose thread table had more ranges is listed per block afterwards
BIG_TABLE_TIMEOUT = 180.0

def focus(state: DebuggerState) -> CudaFocus | None:
    """cuda-gdb's focus when it is on a device thread, else None."""
    return state.device_focus


def device_focus(state: DebuggerState) -> bool:
    return focus(state) is not None


def snapshot(state: DebuggerState) -> CudaSnapshot | None:
    """The CUDA snapshot of this state (None when the session is not cuda-gdb)."""
    return state.cuda.snapshot


class CudaBase(Extension):
    """The CUDA extension's shared attributes and helpers."""

    config: "SessionConfig | None"
    session: DebugSession | None
    caps: CudaCaps | None
    settings: CudaSettings | None
    python_none_broken: bool | None
    auto_rows_limit: int
    per_block_kernels: set[int]
    last_device_focus: CudaFocus | None
    _cache: dict[tuple, Any]
    _cache_gen: int
    _lock_obj: asyncio.Lock | None

    @property
    def _lock(self) -> asyncio.Lock:
        """Serializes focus-changing operations (created in the running loop, for Python 3.9)."""
        if self._lock_obj is None:
            self._lock_obj = asyncio.Lock()
        return self._lock_obj


    def _session(self) -> "DebugSession":
        if self.session is None or self.caps is None:
            raise CudaError("this session is not running cuda-gdb")
        return self.session

    def _require_stopped(self, what: str) -> "DebugSession":
        s = self._session()
        if s.state.process is not ProcessState.STOPPED:
            raise CudaError(f"cannot {what}: {s.process_description()}")
        return s

    def _update(self, generation: int, **changes: Any) -> CudaSnapshot | None:
        """Replace fields of the current snapshot, unless a newer stop came in between."""
        s = self._session()
        st = s.state
        snap = snapshot(st)
        if snap is None or st.generation != generation or snap.generation != generation:
            return None
        new = replace(snap, **changes)
        s.set_state(st.with_cuda(snapshot=new))
        return new

    async def _table(self, command: str, expect: str | None = None, timeout: float | None = None) -> MITable:
        s = self._session()
        try:
            res = await s.cmd(command, timeout=timeout or 30.0)
        except MIError as exc:
            raise CudaError(exc.message) from exc
        return parse_table(res.payload, expect)

    async def _cached(self, key: tuple, make) -> Any:
        s = self._session()
        gen = s.state.generation
        if self._cache_gen != gen:
            self._cache.clear()
            self._cache_gen = gen
        if key in self._cache:
            return self._cache[key]
        val = await make()
        if s.state.generation == gen:
            self._cache[key] = val
        return val

    def _cmd_name(self, command: str) -> None:
        caps = self.caps
        if caps is not None and caps.commands and not caps.has(command):
            raise CudaError(f"this cuda-gdb ({caps.version_text}) has no -{command}")
