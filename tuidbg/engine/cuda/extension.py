"""``CudaExtension``: plugs cuda-gdb support into a session (its hooks); the parts it is made of
are mixins in this package."""

from __future__ import annotations

import asyncio
import logging
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

from tuidbg.engine.cuda_model import (
    CUDA_MI_COMMANDS,
    OPTION_VALUES,
    STOP_HOST,
    CudaCaps,
    CudaFocus,
    CudaSettings,
    CudaSnapshot,
    LogicalOrder,
    classify_stop,
    decode_exception,
)
from tuidbg.engine.state import DebuggerState, ProcessState
from tuidbg.engine.cuda.base import AUTO_ROWS_LIMIT, CudaBase
from tuidbg.engine.cuda.focusing import CudaFocusing
from tuidbg.engine.cuda.refresh import CudaRefresh
from tuidbg.engine.cuda.tables import CudaTables
from tuidbg.engine.cuda.watch import CudaSettingsWatch
from tuidbg.engine.cuda.workaround import configure

if TYPE_CHECKING:
    from tuidbg.engine.session import DebugSession, SessionConfig

log = logging.getLogger("tuidbg.engine")

def get(session: "DebugSession") -> CudaExtension | None:
    """The session's CUDA extension (None if the session was built without it)."""
    for ext in getattr(session, "extensions", ()):
        if isinstance(ext, CudaExtension):
            return ext
    return None


class CudaExtension(CudaRefresh, CudaTables, CudaFocusing, CudaSettingsWatch, CudaBase):
    """Plugs cuda-gdb support into a DebugSession (inert under plain gdb)."""

    def __init__(self, config: "SessionConfig | None" = None, auto_rows_limit: int = AUTO_ROWS_LIMIT) -> None:
        self.config = config
        self.session: DebugSession | None = None
        self.caps: CudaCaps | None = None
        self.settings: CudaSettings | None = None
        self.python_none_broken: bool | None = None
        self.auto_rows_limit = auto_rows_limit
        self.per_block_kernels: set[int] = set()
        self.last_device_focus: CudaFocus | None = None
        self._cache: dict[tuple, Any] = {}
        self._cache_gen = -1
        self._lock_obj: asyncio.Lock | None = None

    # -- hooks ------------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self.caps is not None

    async def on_gdb_ready(self, session: "DebugSession") -> None:
        if session.info.is_cuda:
            self.python_none_broken = await configure(session)

    async def on_configure(self, session: "DebugSession") -> None:
        self.session = session
        if not session.info.is_cuda:
            if self.config is not None and getattr(self.config, "cuda", False):
                session.startup_messages.append(
                    f"--cuda: {session.config.gdb} does not report itself as cuda-gdb; the CUDA views are off"
                )
            return
        self.caps = await self._probe_caps(session)
        self.settings = await self._read_settings(session)
        session.stop_hooks.append(self._stop_hook)
        session.refresh_stages.append(self._refresh_stage)
        session.set_state(session.state.with_cuda(snapshot=CudaSnapshot(caps=self.caps, settings=self.settings)))

    async def _probe_caps(self, session: "DebugSession") -> CudaCaps:
        info = session.info
        commands: set[str] = set()
        probed = "info-gdb-mi-command" in info.features
        if probed:
            for name in CUDA_MI_COMMANDS:
                res = await session.cmd(f"-info-gdb-mi-command {name}", check=False)
                cmd = res.get("command")
                if isinstance(cmd, Mapping) and cmd.get("exists") == "true":
                    commands.add(name)
        else:
            # No probing: the commands every cuda-gdb since 11.x has.
            commands = {c for c in CUDA_MI_COMMANDS if c not in ("cuda-info-launch-children", "cuda-info-managed", "cuda-info-line", "cuda-info-barriers", "cuda-info-clusters")}
        options = {name for name in OPTION_VALUES if not (name == "memcheck" and info.cuda_version >= (12, 8))}
        return CudaCaps(
            cuda_version=info.cuda_version,
            gdb_version=info.version,
            has_python=info.has_python,
            commands=frozenset(commands),
            options=frozenset(options),
            order=LogicalOrder.for_version(info.cuda_version),
            python_none_broken=bool(self.python_none_broken),
            workaround_applied=bool(getattr(session, "cuda_workaround_applied", False)),
            probed=probed,
        )

    async def _read_settings(self, session: "DebugSession") -> CudaSettings:
        values: dict[str, str] = {}
        for name in OPTION_VALUES:
            if self.caps is not None and name not in self.caps.options:
                continue
            res = await session.cmd(f"-gdb-show cuda {name}", check=False)
            if res.cls == "done" and isinstance(res.get("value"), str):
                values[name] = res.get("value")
        return CudaSettings(MappingProxyType(values))

    def _stop_hook(self, st: DebuggerState) -> DebuggerState:
        if self.caps is None:
            return st
        p = st.stop.payload if st.stop is not None else {}
        stopped = st.process is ProcessState.STOPPED
        f = CudaFocus.from_mi(p.get("CudaFocus")) if stopped else None
        user_bps = {b.number.split(".")[0] for b in st.breakpoints if not b.internal}
        kind = classify_stop(p, user_bps) if stopped else STOP_HOST
        bk = p.get("bkptno")
        if bk is not None and p.get("locno") is not None:
            bk = f"{bk}.{p.get('locno')}"
        snap = CudaSnapshot(
            generation=st.generation,
            caps=self.caps,
            focus=f,
            stop_focus=f,
            stop_kind=kind,
            exception=decode_exception(p) if stopped else None,
            bkptno=str(bk) if bk is not None else None,
            settings=self.settings,
            loaded=not stopped,
        )
        if f is not None:
            self.last_device_focus = f
        self._cache.clear()
        self._cache_gen = st.generation
        return st.with_cuda(snapshot=snap, focus=f, focus_known=True)
