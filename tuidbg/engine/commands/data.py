"""Data: expressions, variable objects, memory (``-data-*``, ``-var-*``).

A var object's value is what gdb's console would print, with what var objects leave out put back: a
character array's text (``"node2\\000…"``, where a var object says ``[16]``; it still expands to its
characters), and the reason a value cannot be read (``cannot read memory at 0x10``, where a var object
says nothing, or ``{...}`` for a struct behind a bad pointer). A watch gdb cannot make a var object of
says why (``not in scope here``, a syntax error), not ``-var-create: unable to create variable object``.
"""

from __future__ import annotations

import re
from dataclasses import replace

from tuidbg.engine import mi
from tuidbg.engine.commands.base import CommandBase
from tuidbg.engine.errors import MIError
from tuidbg.engine.records import CHILDREN_PAGE, VarObj

_CHAR_ARRAY = re.compile(
    r"^(?:(?:const|volatile) )*(?:(?:un)?signed )?(?:char|wchar_t|char8_t|char16_t|char32_t)(?: const| volatile)* \[\d+\]$")
_AGGREGATE_VALUE = re.compile(r"^(?:\{\.\.\.\}|\[\d+\])$")
_NO_ACCESS = re.compile(r"Cannot access memory at address (0x[0-9a-fA-F]+)")
_NO_SYMBOL = re.compile(r'^No symbol ".*" in current context\.?$')


def is_char_array(type_: str | None) -> bool:
    """Whether gdb prints a value of this type as a string (``char name[16]``)."""
    return bool(type_) and _CHAR_ARRAY.match(str(type_).strip()) is not None


def read_error(message: str) -> str:
    """gdb's reason a value cannot be read, said plainly."""
    m = _NO_ACCESS.search(message)
    if m:
        return f"cannot read memory at {m.group(1)}"
    if _NO_SYMBOL.match(message.strip()):
        return "not in scope here"
    return message.strip()


class DataCommands(CommandBase):
    async def evaluate(self, expression: str, thread: str | None = None, frame: int | None = None) -> str:
        st = self._state
        if st.is_stopped:
            opt = self._thread_opt(thread or st.selected_thread, st.selected_frame if frame is None else frame)
        else:
            opt = ""
        res = await self.cmd(f"-data-evaluate-expression {opt}{mi.quote(expression)}")
        return str(res.get("value", ""))

    def _frame_opt(self, thread: str | None, frame: int | None, floating: bool = False) -> str:
        st = self._state
        if not st.is_stopped or floating:
            return ""
        return self._thread_opt(thread or st.selected_thread, st.selected_frame if frame is None else frame)

    async def var_create(self, expression: str, thread: str | None = None, frame: int | None = None, floating: bool = False) -> VarObj:
        opt = self._frame_opt(thread, frame, floating)
        where = "@" if floating else "*"
        try:
            res = await self.cmd(f"-var-create {opt}- {where} {mi.quote(expression)}")
        except MIError as exc:
            if "unable to create variable object" not in exc.message:
                raise
            # (gdb's var objects hide the reason: the expression itself says it)
            why = await self.cmd(f"-data-evaluate-expression {opt}{mi.quote(expression)}", check=False)
            reason = str(why.get("msg") or "") if why.cls == "error" else ""
            raise MIError(read_error(reason) if reason else "gdb cannot show this expression here", exc.command) from exc
        obj = VarObj.from_mi(res.payload, expression)
        return (await self._values_put_back([obj], opt, top=True))[0]

    async def var_children(self, name: str, start: int = 0, count: int = CHILDREN_PAGE,
                           thread: str | None = None, frame: int | None = None) -> tuple[list[VarObj], bool]:
        """Children start..start+count-1 of a var object, and whether there are more. ``thread`` and
        ``frame``: where the var object was made (its children's text and errors are read there)."""
        res = await self.cmd(f"-var-list-children --all-values {name} {int(start)} {int(start + count)}")
        kids = [VarObj.from_mi(c) for c in mi.as_list(res.get("children")) if isinstance(c, dict)]
        more = res.get("has_more") == "1"
        numchild = mi.to_int(res.get("numchild"), 0) or 0
        if not more and numchild > start + count:
            more = True
        if any(_incomplete(k) for k in kids):
            parent = await self.cmd(f"-var-info-type {name}", check=False)
            behind_pointer = str(parent.get("type") or "").rstrip().endswith("*")
            kids = await self._values_put_back(kids, self._frame_opt(thread, frame), behind_pointer=behind_pointer)
        return kids, more

    async def _values_put_back(self, objs: list[VarObj], opt: str, top: bool = False,
                               behind_pointer: bool = False) -> list[VarObj]:
        """The values gdb's var objects leave out (see the module's docstring). An aggregate is read
        (one byte of it) where it may be unreadable: made from an expression (``top``), or the target
        of a pointer (``behind_pointer``); within a readable aggregate its members are readable."""
        out = []
        for o in objs:
            probe = None
            if o.value == "":
                probe = "(%s)"
            elif is_char_array(o.type) and o.value is not None and _AGGREGATE_VALUE.match(o.value):
                probe = "(%s)"
            elif o.value is not None and _AGGREGATE_VALUE.match(o.value) and (top or behind_pointer):
                probe = "*(const char *)&(%s)"
            if probe is None:
                out.append(o)
                continue
            path = o.expression if top else await self._path_expression(o.name)
            if path is None:
                out.append(o)
                continue
            res = await self.cmd(f"-data-evaluate-expression {opt}{mi.quote(probe % path)}", check=False)
            msg = str(res.get("msg") or "") if res.cls == "error" else ""
            if res.cls == "error" and (probe == "(%s)" or _NO_ACCESS.search(msg)):
                out.append(replace(o, value=None, error=read_error(msg or "cannot be read")))
            elif probe == "(%s)" and res.get("value") is not None:
                out.append(replace(o, value=str(res.get("value"))))
            else:
                out.append(o)  # (readable; or an aggregate with no address: a value returned by a call)
        return out

    async def _path_expression(self, name: str) -> str | None:
        res = await self.cmd(f"-var-info-path-expression {name}", check=False)
        path = res.get("path_expr") if res.cls == "done" else None
        return str(path) if path else None

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


def _incomplete(o: VarObj) -> bool:
    """Whether gdb's var object leaves its value out (unreadable, a character array, an aggregate)."""
    return o.value == "" or (o.value is not None and _AGGREGATE_VALUE.match(o.value) is not None)

