"""The keys in force now, for the help dialog (``?``) of ``tuidbg`` and of ``tuidbg view``: every binding
with an id of the focused widget, of the widgets around it and of the app, with the keys the keymap
gives it. Made from the bindings themselves, so that a new pane's or a new action's keys are listed
without anything written here."""

from __future__ import annotations

from typing import Any, Mapping

from textual.binding import Binding


def rows(app: Any, keymap: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(keys as shown, description, binding id), the focused widget's first, the app's last."""
    chain: list[Any] = []
    node = app.focused
    while node is not None:
        chain.append(node)
        node = node.parent
    if not chain or chain[-1] is not app:
        chain.append(app)
    found: dict[str, tuple[str, str]] = {}
    for node in chain:
        for klass in type(node).__mro__:
            for b in klass.__dict__.get("BINDINGS", []):
                if isinstance(b, Binding) and b.id and b.id not in found:
                    found[b.id] = (keymap.get(b.id, b.key), b.description)
    return [(keys_shown(app, keys), desc, bid) for bid, (keys, desc) in found.items()]


def keys_shown(app: Any, keys: str) -> str:
    """"c,f5" as the footer shows keys: "c, f5"."""
    return ", ".join(app.get_key_display(Binding(k.strip(), "")) for k in keys.split(",") if k.strip())


def show(app: Any, keymap_name: str, keymap: Mapping[str, str]) -> Any:
    """Push the help dialog; returns it (``HelpScreen``)."""
    from tuidbg.ui.screens.modals import HelpScreen

    screen = HelpScreen(rows(app, keymap), keymap_name)
    app.push_screen(screen)
    return screen
