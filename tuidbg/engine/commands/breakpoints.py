"""Native breakpoints: insert, delete, enable, condition, toggle at a line (``-break-*``)."""

from __future__ import annotations

from tuidbg.engine import mi
from tuidbg.engine.commands.base import CommandBase
from tuidbg.engine.errors import MIError
from tuidbg.engine.state import Breakpoint, set_breakpoints


class BreakpointCommands(CommandBase):
    async def break_insert(
        self,
        location: str | None = None,
        *,
        file: str | None = None,
        line: int | None = None,
        function: str | None = None,
        address: str | int | None = None,
        condition: str | None = None,
        temporary: bool = False,
        pending: bool = True,
        enabled: bool = True,
        thread: str | None = None,
        ignore_count: int = 0,
    ) -> Breakpoint:
        """Insert a breakpoint at file:line, a function, an address, or a gdb location string.

        Pending (on a library not loaded yet) unless pending=False.
        """
        parts = ["-break-insert"]
        if temporary:
            parts.append("-t")
        if pending:
            parts.append("-f")
        if not enabled:
            parts.append("-d")
        if condition:
            parts += ["-c", mi.quote(condition)]
        if ignore_count:
            parts += ["-i", str(int(ignore_count))]
        if thread:
            parts += ["-p", str(thread)]
        if file is not None and line is not None:
            parts += ["--source", mi.quote(file), "--line", str(int(line))]
        elif function is not None:
            parts += ["--function", mi.quote(function)]
        elif address is not None:
            addr = hex(address) if isinstance(address, int) else str(address)
            parts.append(mi.quote("*" + addr.lstrip("*")))
        elif location:
            parts.append(mi.quote(location))
        else:
            raise ValueError("break_insert needs a location")
        res = await self.cmd(" ".join(parts))
        bkpt = res.get("bkpt")
        bp = Breakpoint.from_mi(bkpt) if isinstance(bkpt, dict) else None
        await self.refresh_breakpoints()
        if bp is None:
            raise MIError("gdb did not return the breakpoint", " ".join(parts))
        return self._state.breakpoint(bp.number) or bp

    async def refresh_breakpoints(self) -> None:
        res = await self.cmd("-break-list")
        table = res.get("BreakpointTable") or {}
        body = mi.as_list(table.get("body")) if isinstance(table, dict) else []
        bps = [Breakpoint.from_mi(b) for b in body if isinstance(b, dict)]
        self.set_state(set_breakpoints(self._state, bps))

    async def break_delete(self, number: str) -> None:
        await self.cmd(f"-break-delete {number}")
        await self.refresh_breakpoints()

    async def break_enable(self, number: str, enabled: bool = True) -> None:
        await self.cmd(f"-break-{'enable' if enabled else 'disable'} {number}")
        await self.refresh_breakpoints()

    async def break_condition(self, number: str, condition: str | None) -> None:
        if condition:
            await self.cmd(f"-break-condition {number} {condition}")
        else:
            await self.cmd(f"-break-condition {number}")
        await self.refresh_breakpoints()

    async def toggle_breakpoint_at(self, fullname: str, line: int) -> Breakpoint | None:
        """Delete the breakpoints on a source line, or insert one there. Returns the new one."""
        existing = [
            b for b in self._state.breakpoints if not b.internal and (fullname, line) in b.source_lines()
        ]
        if existing:
            for b in existing:
                await self.cmd(f"-break-delete {b.number.split('.')[0]}", check=False)
            await self.refresh_breakpoints()
            return None
        return await self.break_insert(file=fullname, line=line)
