"""Data: expressions, variable objects, memory (``-data-*``, ``-var-*``)."""

from __future__ import annotations

from tuidbg.engine import mi
from tuidbg.engine.commands.base import CommandBase
from tuidbg.engine.records import CHILDREN_PAGE, VarObj


class DataCommands(CommandBase):
    async def evaluate(self, expression: str, thread: str | None = None, frame: int | None = None) -> str:
        st = self._state
        if st.is_stopped:
            opt = self._thread_opt(thread or st.selected_thread, st.selected_frame if frame is None else frame)
        else:
            opt = ""
        res = await self.cmd(f"-data-evaluate-expression {opt}{mi.quote(expression)}")
        return str(res.get("value", ""))

    async def var_create(self, expression: str, thread: str | None = None, frame: int | None = None, floating: bool = False) -> VarObj:
        st = self._state
        opt = ""
        if st.is_stopped and not floating:
            opt = self._thread_opt(thread or st.selected_thread, st.selected_frame if frame is None else frame)
        where = "@" if floating else "*"
        res = await self.cmd(f"-var-create {opt}- {where} {mi.quote(expression)}")
        return VarObj.from_mi(res.payload, expression)

    async def var_children(self, name: str, start: int = 0, count: int = CHILDREN_PAGE) -> tuple[list[VarObj], bool]:
        """Children start..start+count-1 of a var object, and whether there are more."""
        res = await self.cmd(f"-var-list-children --all-values {name} {int(start)} {int(start + count)}")
        kids = [VarObj.from_mi(c) for c in mi.as_list(res.get("children")) if isinstance(c, dict)]
        more = res.get("has_more") == "1"
        numchild = mi.to_int(res.get("numchild"), 0) or 0
        if not more and numchild > start + count:
            more = True
        return kids, more

    async def var_update(self, name: str = "*") -> list[dict]:
        res = await self.cmd(f"-var-update --all-values {name}", check=False)
        return [c for c in mi.as_list(res.get("changelist")) if isinstance(c, dict)]

    async def var_delete(self, name: str) -> None:
        await self.cmd(f"-var-delete {name}", check=False)

    async def read_memory(self, address: int, count: int) -> bytes:
        res = await self.cmd(f"-data-read-memory-bytes {address:#x} {int(count)}")
        out = bytearray()
        for block in mi.as_list(res.get("memory")):
            out += bytes.fromhex(str(block.get("contents", "")))
        return bytes(out)
