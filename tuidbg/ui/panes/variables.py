"""Locals and watch expressions: trees of gdb var objects with lazy, bounded children.

Aggregates are expanded on demand: expanding a node creates (or reuses) its var
object and fetches at most one page of children, with a "load more" node after
them. Values that changed since the last stop are highlighted; long values are
cut and can be shown whole. Expanded paths are remembered across stops.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol

from rich.text import Text
from textual import work
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from tuidbg.engine.errors import EngineError
from tuidbg.engine.records import CHILDREN_PAGE, VarObj
from tuidbg.ui.text import truncate, visible


class VarSource(Protocol):
    """What the variable panes read on demand (``tuidbg.ui.bridge.SessionBridge`` provides it)."""

    async def var_create(self, expression: str, thread: str | None = None, frame: int | None = None,
                         floating: bool = False) -> VarObj: ...

    async def var_children(self, name: str, start: int = 0, count: int = CHILDREN_PAGE, thread: str | None = None,
                           frame: int | None = None) -> tuple[list[VarObj], bool]: ...

    async def var_delete(self, name: str) -> None: ...


@dataclass(frozen=True)
class PythonFrameRef:
    """A Python frame of a stop of tuidbg's agent: which stop (its generation) and the frame's number
    as the agent counts (its own frames left out)."""

    stop: int
    thread: str | None
    frame: int

VALUE_LIMIT = 160


@dataclass
class VarNode:
    path: str  # stable path: "local:pt", "local:pt.x", "watch:3:[2]"
    name: str
    type: str | None = None
    value: str | None = None
    changed: bool = False
    varobj: str | None = None  # gdb var object name once created
    expression: str | None = None  # expression to create it from (top level)
    loaded: int = 0  # children loaded so far
    more: bool = False
    error: str | None = None
    is_more_row: bool = False
    parent_path: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # False for values that have no children to fetch (Python locals read from memory).
    expandable: bool = True


def python_extra(frame: int, expr: str, path: list[str]) -> dict[str, Any]:
    """VarNode.extra of a Python value the agent expands (frame as the agent counts, expression, path)."""
    return {"py": {"frame": frame, "expr": expr, "path": path}, "numchild": 1}


# (expression, path of child names, agent frame, device_data) -> [(name, type, value, expandable)]
PythonChildren = Callable[[str, list[str], int, bool], Awaitable[list[tuple[str, str, str, bool]]]]


def looks_aggregate(type_: str | None, value: str | None) -> bool:
    if value is None:
        return True
    if value.startswith("{") or value.startswith("["):
        return True
    if type_ and type_.rstrip().endswith("]"):
        return True  # an array shown whole (a character array's text): it expands to its elements
    if type_ and type_.rstrip().endswith("*") and not type_.startswith(("char", "const char", "unsigned char", "void")):
        return value not in ("0x0", "(nil)") and not value.endswith(" 0x0")
    return False


# Python values read from memory that have no children (the agent expands the others: containers, objects)
_PY_LEAF_TYPES = frozenset("int float complex bool str bytes bytearray NoneType function builtin_function_or_method "
                           "method method-wrapper type range slice code frame generator coroutine cell ellipsis "
                           "NotImplementedType property classmethod staticmethod decimal.Decimal datetime.datetime "
                           "datetime.date datetime.time datetime.timedelta datetime.timezone".split())
_PY_EMPTY = frozenset(("[]", "()", "{}", "set()", "frozenset()"))


def python_may_expand(type_: str | None, value: str | None) -> bool:
    """Whether the agent may have children for a Python value read from memory (type name and text):
    a non-empty container, an object (that may have attributes); not a scalar, function or class."""
    return value is not None and type_ not in _PY_LEAF_TYPES and value not in _PY_EMPTY


def node_label(v: VarNode) -> Text:
    if v.is_more_row:
        if v.value:  # a Python container's: how many are left ("900 more"), and the page (name)
            return Text(f"… {visible(v.value)} (Enter loads {visible(v.name)})", style="italic")
        return Text(f"… load {CHILDREN_PAGE} more", style="italic")
    t = Text(no_wrap=True)
    t.append(visible(v.name), style="bold")
    if v.type:
        t.append(f" ({visible(v.type)})", style="dim")
    if v.error:
        t.append(" ! ", style="bold red")
        t.append(visible(v.error), style="red")
        return t
    if v.value is not None:
        shown, cut = truncate(visible(v.value), VALUE_LIMIT)
        t.append(" = ")
        t.append(shown, style="bold yellow" if v.changed else "")
        if cut:
            t.append(f"  [{len(v.value)} chars: v shows all]", style="dim italic")
    return t


class VariablesTree(Tree[VarNode]):
    """Base for the Locals and Watch panes."""

    DEFAULT_CSS = """
    VariablesTree { height: 1fr; background: $surface; padding: 0; }
    """
    BINDINGS = [
        Binding("v", "show_value", "Whole value", id="variables.show_value"),
        Binding("x", "show_memory", "Memory at", id="variables.memory"),
        Binding("Y", "device_data", "Read device values", id="variables.device_data"),
    ]

    class ShowMemory(Message):
        """Open the Memory pane at this value (a pointer's target, an array's first element, where a
        struct is; for another value the app asks first)."""

        def __init__(self, value: str | None, varobj: str | None, expression: str | None,
                     type_: str | None = None, name: str = "") -> None:
            super().__init__()
            self.value = value
            self.varobj = varobj
            self.expression = expression
            self.type = type_
            self.name = name

    class ShowValue(Message):
        def __init__(self, title: str, value: str, varobj: str | None = None, expression: str | None = None) -> None:
            super().__init__()
            self.title = title
            self.value = value
            # to read the value again without gdb's length limit: its var object, or the expression
            # of a top-level local in the selected frame
            self.varobj = varobj
            self.expression = expression

    def __init__(self, label: str, **kw) -> None:
        super().__init__(label, **kw)
        self.show_root = False
        self.guide_depth = 2
        self.source: VarSource | None = None  # set by the app (a SessionBridge)
        self.python_children: PythonChildren | None = None  # set by the app: children from tuidbg's agent
        self.expanded_paths: set[str] = set()
        self.prev_values: dict[str, str] = {}
        self._epoch = 0  # bumps when the tree is rebuilt; stale loads are dropped

    def process_label(self, label) -> Text:
        if isinstance(label, str):
            return Text(visible(label))
        return label

    def add_var(self, parent: TreeNode[VarNode], v: VarNode) -> TreeNode[VarNode]:
        if v.value is not None and v.path in self.prev_values and self.prev_values[v.path] != v.value:
            v.changed = True
        expandable = (
            v.expandable
            and v.error is None
            and not v.is_more_row
            and ((v.varobj is None and looks_aggregate(v.type, v.value)) or v.extra.get("numchild", 0) > 0)
        )
        node = parent.add(node_label(v), data=v, allow_expand=bool(expandable))
        if expandable and v.path in self.expanded_paths:
            node.expand()
        return node

    def update_in_place(self, nodes: list[VarNode]) -> bool:
        """Relabel the top-level rows when only values changed and nothing is expanded.

        A rebuild would re-lay the tree out; relabelling repaints only the rows.
        """
        kids = list(self.root.children)
        if len(kids) != len(nodes) or not nodes:
            return False
        for node, v in zip(kids, nodes):
            d = node.data
            if d is None or d.name != v.name or d.type != v.type or node.children or node.is_expanded or d.varobj:
                return False
        for node, v in zip(kids, nodes):
            old = node.data
            v.changed = v.changed or (old is not None and old.value is not None and v.value is not None and old.value != v.value)
            node.data = v
            node.set_label(node_label(v))
        return True

    def release_varobjs(self) -> None:
        """Delete the var objects this tree created (children go with their parents)."""
        names = [n.data.varobj for n in self.root.children if n.data is not None and n.data.varobj and not n.data.parent_path]
        if names and self.source is not None:
            source = self.source

            async def delete() -> None:
                for name in names:
                    await source.var_delete(name)

            self.run_worker(delete(), group="varobj-cleanup", exit_on_error=False)

    def remember_values(self) -> None:
        vals: dict[str, str] = {}

        def walk(node: TreeNode[VarNode]) -> None:
            for child in node.children:
                if child.data is not None and child.data.value is not None:
                    vals[child.data.path] = child.data.value
                walk(child)

        walk(self.root)
        self.prev_values = vals

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[VarNode]) -> None:
        event.stop()
        node = event.node
        if node.data is None:
            return
        self.expanded_paths.add(node.data.path)
        if not node.children:
            self._load_children(node, self._epoch)

    def on_tree_node_collapsed(self, event: Tree.NodeCollapsed[VarNode]) -> None:
        event.stop()
        if event.node.data is not None:
            self.expanded_paths.discard(event.node.data.path)

    def on_tree_node_selected(self, event: Tree.NodeSelected[VarNode]) -> None:
        node = event.node
        if node.data is not None and node.data.is_more_row and node.parent is not None:
            event.stop()
            parent = node.parent
            node.remove()
            self._load_children(parent, self._epoch)

    async def ensure_varobj(self, v: VarNode) -> VarObj | None:
        """Create the var object of a top-level node (children already have theirs).

        The panes below bind expressions to a frame; the base class has none.
        """
        return None

    @work(group="variables", exit_on_error=False)
    async def _load_children(self, node: TreeNode[VarNode], epoch: int) -> None:
        v = node.data
        if v is not None and "py" in v.extra:
            await self._load_python_children(node, v, epoch)
            return
        if v is None or self.source is None:
            return
        try:
            if v.varobj is None:
                obj = await self.ensure_varobj(v)
                if obj is None or epoch != self._epoch:
                    return
                v.varobj = obj.name
            where = self.frame_key or (None, None)
            kids, more = await self.source.var_children(v.varobj, v.loaded, CHILDREN_PAGE, *where)
        except EngineError as exc:
            self._cannot_expand(node, epoch, exc)
            return
        if epoch != self._epoch:
            return
        for k in kids:
            child = VarNode(
                path=f"{v.path}.{k.expression}",
                name=k.expression,
                type=k.type,
                value=k.value,
                error=k.error,
                varobj=k.name,
                parent_path=v.path,
                extra={"numchild": k.numchild or (1 if k.dynamic and k.has_more else 0)},
            )
            self.add_var(node, child)
        v.loaded += len(kids)
        v.more = more
        if more:
            node.add(node_label(VarNode(path=v.path + ".more", name="", is_more_row=True)), data=VarNode(path=v.path + ".more", name="", is_more_row=True), allow_expand=False)

    def _cannot_expand(self, node: TreeNode[VarNode], epoch: int, exc: EngineError) -> None:
        if epoch == self._epoch:  # (not for a node of an earlier stop)
            node.add_leaf(Text(f"cannot expand: {visible(str(exc))}", style="red"))

    async def _load_python_children(self, node: TreeNode[VarNode], v: VarNode, epoch: int) -> None:
        """Children of a Python value (a torch tensor, module, optimizer; a container, an object) from
        tuidbg's agent; a container's a page at a time (the agent's last child "@N" says more follow)."""
        py = v.extra["py"]
        if self.python_children is None:
            return
        path = list(py["path"]) + ([f"@{v.loaded}"] if v.loaded else [])
        try:
            kids = await self.python_children(py["expr"], path, py["frame"], bool(py.get("device_data")))
        except EngineError as exc:
            self._cannot_expand(node, epoch, exc)
            return
        if epoch != self._epoch:
            return
        for name, type_, value, expandable in kids:
            if name.startswith("@"):  # more follow: a row that loads them
                words = value.split()
                left = int(words[0]) if words and words[0].isdigit() else len(kids) - 1
                page = str(min(len(kids) - 1, left))
                more = VarNode(path=f"{v.path}.more", name=page, value=value, is_more_row=True)
                node.add(node_label(more), data=more, allow_expand=False)
                continue
            child = VarNode(path=f"{v.path}.{name}", name=name, type=type_ or None, value=value, parent_path=v.path,
                            expandable=expandable)
            if expandable:
                child.extra = python_extra(py["frame"], py["expr"], [*py["path"], name])
            self.add_var(node, child)
        v.loaded += sum(1 for k in kids if not k[0].startswith("@"))
        if not kids and not v.loaded:
            node.add_leaf(Text("no items or attributes", style="dim italic"))

    def action_device_data(self) -> None:
        """Expand the Python tensor under the cursor again with a preview of its values read from the
        GPU (bounded, and it synchronizes the device); tensors are never read there otherwise."""
        node = self.cursor_node
        v = node.data if node is not None else None
        if node is None or v is None or "py" not in v.extra:
            self.notify("Y reads a Python tensor's values from its device: put the cursor on one", markup=False)
            return
        v.extra["py"] = {**v.extra["py"], "device_data": True}
        v.loaded = 0
        node.remove_children()
        self._epoch += 1
        if node.is_expanded:
            self._load_children(node, self._epoch)
        else:
            node.expand()

    def action_show_value(self) -> None:
        node = self.cursor_node
        if node is None or node.data is None or node.data.is_more_row:
            return
        d = node.data
        expr = d.expression if d.expression else (d.name if d.path.startswith("local:") and d.parent_path is None else None)
        if d.value is None and (d.error is not None or (expr is None and d.varobj is None)):
            return  # (nothing to show, or nothing to read it from: a struct local read again by its name is)
        self.post_message(self.ShowValue(d.path.split(":", 1)[-1], d.value or "", d.varobj, expr))

    def action_show_memory(self) -> None:
        node = self.cursor_node
        if node is None or node.data is None or node.data.is_more_row:
            return
        d = node.data
        expr = d.expression if d.expression else (d.name if d.path.startswith("local:") and d.parent_path is None else None)
        self.post_message(self.ShowMemory(d.value, d.varobj, expr, d.type, d.name))


class LocalsPane(VariablesTree):
    """Locals and arguments of the selected frame."""

    def __init__(self, **kw) -> None:
        super().__init__("locals", **kw)
        self._key: tuple | None = None
        self.frame_key: tuple[str, int] | None = None
        self.python_provider: Callable[[], list[VarNode] | None] | None = None

    def update_state(self, state, python_vars: list[VarNode] | None = None, python_key: Any = None) -> None:
        if python_vars is not None:
            # A Python frame's locals, read once per stop and frame: an agent request (the children of
            # an expanded tensor) makes new states of this stop, which must not rebuild the tree.
            key: tuple = ("py", python_key, id(python_vars))
        else:
            key = (state.generation, state.locals_key, state.locals, python_key)
        if key == self._key:
            return
        self._key = key
        same_frame = state.locals_key == self.frame_key and state.locals_key is not None
        self.frame_key = state.locals_key
        if python_vars is None and same_frame and state.is_stopped and state.locals:
            ordered = sorted(state.locals, key=lambda v: not v.is_arg)
            nodes = []
            for var in ordered:
                v = VarNode(path=f"local:{var.name}", name=var.name, type=var.type, value=var.value, expression=var.name)
                v.changed = var.changed
                nodes.append(v)
            if self.update_in_place(nodes):
                return
        self.remember_values()
        self.release_varobjs()
        self._epoch += 1
        self.clear()
        if python_vars is not None:
            for v in python_vars:
                self.add_var(self.root, v)
            if not python_vars:
                self.root.add_leaf(Text("no local variables", style="dim italic"))
            return
        if not state.is_stopped:
            self.root.add_leaf(Text(f"(the program is {state.process.value})", style="dim italic"))
            return
        if state.locals_key is None:
            return
        if not state.locals:
            self.root.add_leaf(Text("no local variables (or no debug info for this frame)", style="dim italic"))
            return
        ordered = sorted(state.locals, key=lambda v: not v.is_arg)
        for var in ordered:
            v = VarNode(path=f"local:{var.name}", name=var.name, type=var.type, value=var.value, expression=var.name)
            v.changed = var.changed
            self.add_var(self.root, v)

    async def ensure_varobj(self, v: VarNode) -> VarObj | None:
        if self.source is None or self.frame_key is None or v.expression is None:
            return None
        tid, level = self.frame_key
        return await self.source.var_create(v.expression, thread=tid, frame=level)


class WatchPane(VariablesTree):
    """Watch expressions, evaluated in the selected frame after every stop: by gdb in a native
    frame, as Python by tuidbg's agent when a Python frame of an agent stop is selected."""

    BINDINGS = [
        Binding("delete,d", "delete_item", "Remove watch", id="item.delete"),
        Binding("A", "across", "This watch in every process", id="watch.all_processes"),
    ]

    class AcrossAsked(Message):
        """A on a watch: its expression in every process of the session (pyall / printall)."""

        def __init__(self, expression: str) -> None:
            super().__init__()
            self.expression = expression

    def action_across(self) -> None:
        node = self.cursor_node
        while node is not None and node.parent is not None and node.parent is not self.root:
            node = node.parent  # (a child of a watch: the watch itself)
        data = getattr(node, "data", None) if node is not None else None
        expr = getattr(data, "expression", None) or getattr(data, "name", None)
        if expr and expr in self.expressions:
            self.post_message(self.AcrossAsked(expr))

    def __init__(self, **kw) -> None:
        super().__init__("watch", **kw)
        self.expressions: list[str] = []
        self._key: tuple | None = None
        self.frame_key: tuple[str, int] | None = None
        self._last_state = None
        self._last_python: PythonFrameRef | None = None
        # set by the app: evaluates Python expressions in a frame of the agent's stop
        self.python_eval: Callable[[list[str], int], Awaitable[list[tuple[str | None, str | None, str | None, bool]]]] | None = None

    def update_state(self, state, force: bool = False, python: "PythonFrameRef | None" = None) -> None:
        """``python``: the selected Python frame of an agent stop (the watches are Python there)."""
        self._last_state = state
        self._last_python = python
        if not self.expressions:
            key: tuple = ("empty",)
        elif python is not None:
            key = ("py", python, tuple(self.expressions), state.process)
        else:
            key = (state.generation, state.selected_thread, state.selected_frame, tuple(self.expressions), state.process)
        if key == self._key and not force:
            return
        self._key = key
        self.frame_key = (state.selected_thread, state.selected_frame) if state.selected_thread else None
        self.remember_values()
        self.release_varobjs()
        self._epoch += 1
        self.clear()
        if not self.expressions:
            self.root.add_leaf(Text("no watch expressions (w adds one)", style="dim italic"))
            return
        if python is not None and self.python_eval is not None and state.is_stopped:
            self._evaluate_python(self._epoch, python.frame)
            return
        self._evaluate_all(self._epoch, state.is_stopped)

    @work(group="watch", exclusive=True, exit_on_error=False)
    async def _evaluate_python(self, epoch: int, frame: int) -> None:
        exprs = list(self.expressions)
        assert self.python_eval is not None
        try:
            answers = await self.python_eval(exprs, frame)
        except EngineError as exc:
            answers = [(None, None, str(exc), False)] * len(exprs)
        if epoch != self._epoch:
            return
        for i, (expr, (value, type_, error, expandable)) in enumerate(zip(exprs, answers)):
            v = VarNode(path=f"pywatch:{i}:{expr}", name=expr, type=type_, value=value, error=error,
                        expression=expr, expandable=expandable)
            if expandable:  # a torch value: the agent gives its children
                v.extra = python_extra(frame, expr, [])
            self.add_var(self.root, v)

    @work(group="watch", exclusive=True, exit_on_error=False)
    async def _evaluate_all(self, epoch: int, stopped: bool) -> None:
        for i, expr in enumerate(list(self.expressions)):
            v = VarNode(path=f"watch:{i}:{expr}", name=expr, expression=expr)
            if not stopped or self.source is None:
                v.error = "the program is not stopped"
            else:
                try:
                    obj = await self._create(expr)
                    v.varobj, v.type, v.value, v.error = obj.name, obj.type, obj.value, obj.error
                    v.extra["numchild"] = obj.numchild or (1 if obj.dynamic and obj.has_more else 0)
                except EngineError as exc:
                    v.error = str(exc)
            if epoch != self._epoch:
                return
            self.add_var(self.root, v)

    async def _create(self, expr: str) -> VarObj:
        assert self.source is not None
        if self.frame_key is None:
            return await self.source.var_create(expr, floating=True)
        tid, level = self.frame_key
        return await self.source.var_create(expr, thread=tid, frame=level)

    async def ensure_varobj(self, v: VarNode) -> VarObj | None:
        return await self._create(v.expression or v.name)

    def add_expression(self, expr: str) -> None:
        expr = expr.strip()
        if expr and expr not in self.expressions:
            self.expressions.append(expr)
            if self._last_state is not None:
                self.update_state(self._last_state, force=True, python=self._last_python)

    def action_delete_item(self) -> None:
        node = self.cursor_node
        while node is not None and node.parent is not None and node.parent is not self.root:
            node = node.parent
        if node is None or node.data is None:
            return
        expr = node.data.expression
        if expr in self.expressions:
            self.expressions.remove(expr)
            if self._last_state is not None:
                self.update_state(self._last_state, force=True, python=self._last_python)
