"""Which keys of a keymap clash: one key given to two binding ids that are in force at the same time.

A binding is in force where its widget, or a widget inside it, has the focus; the app's own (global)
bindings everywhere. Two ids on one key clash only when some focus puts both in force: ``e`` is both
``breakpoints.condition`` (Breakpoints pane) and ``registers.edit`` (Registers pane), which is fine.

Textual checks this too, at every key press and again at every refresh of the bindings
(``App.handle_bindings_clash``), and in textual 8.2 it takes a binding with several keys given fewer
by the keymap (``exec.continue`` = "c,f5" by default, "c" in the vim keymap) for a clash with itself:
the vim and vscode keymaps got a "keys clash" toast at every stop. The app therefore ignores
Textual's report and asks here, once, when it takes a keymap (``TuidbgApp.use_keymap``): a real clash
is named by its key and its two actions, in one notification. The keymaps tuidbg ships have none
(tests/ui/test_keymaps_themes.py checks every file in ``keymaps/``).
"""

from __future__ import annotations

from typing import Callable, Mapping, NamedTuple

# One deliberate exception: in the console's input line tab completes (as in any shell) instead of
# moving the focus; escape leaves the input line there.
INTENDED = {frozenset({"focus.next", "console.complete"})}


class Clash(NamedTuple):
    key: str  # Textual's name of the key ("c", "question_mark", "ctrl+o")
    first: str  # binding id
    second: str  # binding id
    where: str  # the focus in which both are in force ("everywhere" for two global bindings)


def contexts() -> dict[str, list[type]]:
    """What can have the focus, by name, with the classes whose bindings are in force then (besides the
    global ones). A new pane with bindings of its own goes here: the palette takes its commands from
    these (``ui.palette``; tests/ui/test_first_minutes.py checks that every binding id of the default
    keymap is a palette command). (Imported here: the panes are the app's, loaded with it.)"""
    from tuidbg.ui.panes.cuda import CudaInput, CudaPane, CudaRows
    from tuidbg.ui.panes.disasm import DisasmView
    from tuidbg.ui.panes.frames import CppFramesPane
    from tuidbg.ui.panes.io import CommandInput, ProgramInput
    from tuidbg.ui.panes.memory import MemoryView
    from tuidbg.ui.panes.parallel import ParallelPane
    from tuidbg.ui.panes.registers import RegistersPane
    from tuidbg.ui.panes.source import SourceView
    from tuidbg.ui.panes.tables import BreakpointsPane, ThreadsPane
    from tuidbg.ui.panes.tasks import TasksPane
    from tuidbg.ui.panes.variables import LocalsPane, WatchPane

    return {
        "the source pane": [SourceView],
        "the C++ frames": [CppFramesPane],
        "the threads": [ThreadsPane],
        "the breakpoints": [BreakpointsPane],
        "the locals": [LocalsPane],
        "the watches": [WatchPane],
        "the console": [CommandInput],
        "the program's input": [ProgramInput],
        "the CUDA pane": [CudaPane, CudaRows],
        "the CUDA pane's input": [CudaPane, CudaInput],
        "the disassembly": [DisasmView],
        "the registers": [RegistersPane],
        "the memory": [MemoryView],
        "the tasks": [TasksPane],
        "the parallel stacks": [ParallelPane],
    }


def class_bindings(cls: type) -> dict[str, str]:
    """Binding id -> its own keys, of a class and the classes it inherits from."""
    from textual.binding import Binding

    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        for b in klass.__dict__.get("BINDINGS", []):
            if isinstance(b, Binding) and b.id:
                out[b.id] = b.key
    return out


def descriptions() -> dict[str, str]:
    """Binding id -> what it does (the Binding's description), of the app and every pane."""
    from textual.binding import Binding

    from tuidbg.ui import bindings

    out = {bid: desc for bid, _action, desc, _show, _prio in bindings.GLOBAL}
    for classes in contexts().values():
        for cls in classes:
            for klass in cls.__mro__:
                for b in klass.__dict__.get("BINDINGS", []):
                    if isinstance(b, Binding) and b.id:
                        out.setdefault(b.id, b.description)
    return out


def clashes(keymap: Mapping[str, str]) -> list[Clash]:
    """Every key that ``keymap`` (binding id -> "key1,key2"; an id left out keeps its own keys) gives to
    two ids in force at the same time, each pair once."""
    from textual.app import App

    from tuidbg.ui import bindings

    def norm(keys: Mapping[str, str]) -> dict[str, str]:
        return App._normalize_keymap(dict(keys))  # ("?" and "question_mark" are one key)

    km = norm(keymap)
    glob = {bid: km.get(bid) or norm({bid: keys})[bid] for bid, keys in bindings.default_keys().items()}
    found: dict[tuple[str, frozenset[str]], Clash] = {}
    scopes = [("everywhere", [])] + list(contexts().items())
    for where, classes in scopes:
        effective = dict(glob)
        for cls in classes:
            for bid, keys in class_bindings(cls).items():
                effective[bid] = km.get(bid) or norm({bid: keys})[bid]
        owner: dict[str, str] = {}
        for bid, keys in effective.items():
            for key in (k.strip() for k in keys.split(",") if k.strip()):
                other = owner.get(key)
                pair = frozenset({other or "", bid})
                if other is not None and other != bid and pair not in INTENDED and (key, pair) not in found:
                    found[(key, pair)] = Clash(key, *sorted((other, bid)), where)
                owner.setdefault(key, bid)
    return list(found.values())


def describe(found: list[Clash], descriptions: Mapping[str, str], keymap_name: str,
             display: Callable[[str], str] = str) -> str:
    """One notification's text: each clash by its key (as ``display`` shows a key) and its two actions."""

    def action(bid: str) -> str:
        desc = descriptions.get(bid)
        return f"{desc} ({bid})" if desc else bid

    lines = [f"keymap {keymap_name}: keys bound to two actions at once (give one of them another key)"]
    for c in found[:8]:
        where = "" if c.where == "everywhere" else f" in {c.where}"
        lines.append(f"key {display(c.key)}{where}: {action(c.first)} and {action(c.second)}")
    if len(found) > 8:
        lines.append(f"… and {len(found) - 8} more (tuidbg's help, ?, lists the keys)")
    return "\n".join(lines)
