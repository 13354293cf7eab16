"""The launch profiles of ``.tuidbg.toml`` in the command palette: "Profile NAME" restarts with it.

Choosing one, under ``tuidbg run``, starts a new gdb with the profile's configuration (the app's
``restart_session``, as after gdb died), made by the command line's own code (``UIOptions.profile_config``,
so that a profile means the same here as in ``tuidbg run --profile NAME``). Anywhere else (attach, a
core, or a profile that does not load) the palette says what to type instead, or what is wrong.
"""

from __future__ import annotations

from typing import Any, Iterable

from tuidbg import profiles
from tuidbg.launch import UsageError


def commands(app) -> Iterable[tuple[str, str, Any]]:
    """(title, help, callback) for each profile of the project's .tuidbg.toml (none when there is no file)."""
    path = profiles.find_file()
    if path is None:
        return
    try:
        found = profiles.load_all(path)
    except UsageError as exc:
        msg = str(exc)
        yield ("Profiles: .tuidbg.toml has an error", msg, lambda: app.notify(msg, severity="error", markup=False))
        return
    for name, prof in sorted(found.items()):
        yield (f"Profile {name}", f"restart with {prof.summary()} ({path})", lambda name=name: restart_with(app, name))


def restart_with(app, name: str) -> None:
    make = getattr(app.ui_options, "profile_config", None)
    if app.session.config.mode != "run" or make is None:
        app.notify(f"restarting with a profile needs tuidbg run; quit, then: tuidbg run --profile {name}", markup=False)
        return
    try:
        config = make(name)
    except UsageError as exc:
        app.notify(str(exc), severity="error", markup=False, timeout=8)
        return
    app.notify(f"restarting with profile {name}", markup=False, timeout=3)
    app.restart_session(config)
