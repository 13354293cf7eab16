"""The UI's side of the remembered state (``tuidbg.engine.remember``): the watches and the layout.

The engine's ``RememberExtension`` keeps the breakpoints itself; the watch expressions and the
layout (the merged stack, the tab chosen in each group) live in the UI, which puts them back at start
(``restore``) and hands them over once a second when they changed (``sync``), to be saved with the
breakpoints.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import TabbedContent

from tuidbg.engine import remember
from tuidbg.ui.panes.variables import WatchPane

GROUPS = ("stack-group", "vars-group", "io-group")


def layout_of(app) -> dict[str, Any]:
    tabs = {}
    for gid in GROUPS:
        try:
            tabs[gid] = app.query_one(f"#{gid}", TabbedContent).active
        except Exception:
            pass
    return {"merged": bool(app.merged), "tabs": tabs}


def restore(app) -> None:
    """Put back the watches and the layout of the last run (nothing under --fresh or the first time)."""
    ext = remember.controller(app.session)
    if ext is None:
        return
    app._remember_warned = None
    if ext.watches:
        app.query_one(WatchPane).expressions = list(ext.watches)
    layout = ext.layout or {}
    if layout.get("merged") and not app.merged:
        app.action_toggle_merged()
    for gid, tab in (layout.get("tabs") or {}).items():
        if gid in GROUPS and isinstance(tab, str) and tab != "tab-cuda":
            try:
                app.query_one(f"#{gid}", TabbedContent).active = tab
            except Exception:
                pass  # (a tab of an older tuidbg)
    warn(app, ext)


def warn(app, ext) -> None:
    """The extension's one line (an unreadable state file, a failed save), shown once."""
    if ext.warning and ext.warning != getattr(app, "_remember_warned", None):
        app._remember_warned = ext.warning
        app.notify(ext.warning, severity="warning", markup=False, timeout=8)


def sync(app) -> None:
    ext = remember.controller(app.session)
    if ext is None:
        return
    ext.set_ui(list(app.query_one(WatchPane).expressions), layout_of(app))
    warn(app, ext)


def pane_extras(session) -> tuple[dict[str, str], list[dict]]:
    """What the Breakpoints pane shows of the remembered breakpoints: notes by row key, and the ones not placed."""
    ext = remember.controller(session)
    if ext is None:
        return {}, []
    return dict(ext.notes), list(ext.gone)


def forget(app, kind: str, index: int) -> None:
    """A row of a remembered breakpoint that could not be placed: delete forgets it; goto shows its file."""
    ext = remember.controller(app.session)
    if ext is None or not 0 <= index < len(ext.gone):
        return
    g = ext.gone[index]
    if kind == "delete":
        ext.forget(index)
        app._apply_state(app.state)
    elif kind == "goto" and g.get("file") and g.get("why") != "file gone":
        app.show_file(g["file"], g.get("line"))
        app.action_pane("source")
    else:
        app.notify(f"not placed ({g.get('why')}); d deletes it from the remembered breakpoints", markup=False)
