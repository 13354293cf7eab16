"""Helpers for driving TuidbgApp with Pilot against real gdb sessions."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Callable

from tuidbg.engine.debugger import new_session
from tuidbg.engine.session import SessionConfig
from tuidbg.engine.state import ProcessState


def make_app(theme: str | None = None, keymap: str | None = None, session=None, **cfg):
    """An app on an unstarted session: the app starts gdb and the program itself (or on ``session``,
    as ``tuidbg run`` hands over one whose program it started: ``launched_session``)."""
    from tuidbg import config as tconfig
    from tuidbg.ui.app import TuidbgApp

    if session is None:
        cfg.setdefault("nx", True)
        cfg.setdefault("mode", "run")
        session = new_session(SessionConfig(**cfg))
    app = TuidbgApp(session, theme=theme, keymap=tconfig.load_keymap(keymap))
    _made.append(app)
    run_test = app.run_test

    @contextlib.asynccontextmanager
    async def run_test_then_close(*args, **kw):
        async with run_test(*args, **kw) as pilot:
            yield pilot
        await close_left_session(app)

    app.run_test = run_test_then_close
    run_async = app.run_async

    async def run_async_then_close(*args, **kw):  # (how pytest-textual-snapshot runs the app: app.run)
        try:
            return await run_async(*args, **kw)
        finally:
            await close_left_session(app)

    app.run_async = run_async_then_close
    return app


async def launched_session(**cfg):
    """A session as ``tuidbg run`` makes it before the screen: gdb started, the program launched."""
    cfg.setdefault("nx", True)
    cfg.setdefault("mode", "run")
    session = new_session(SessionConfig(**cfg))
    _early.append(session)
    await session.start()
    session.begin_launch()
    return session


_early: list = []  # (launched_session's, for abandon_leftovers)


async def close_left_session(app) -> None:
    """A test that ends without quitting leaves the app's gdb running: close its session while the
    test's event loop still runs (afterwards only ``abandon_leftovers`` can, and asyncio then finds
    gdb's pipes open in a closed loop)."""
    s = app.session
    if s.client is not None and s.client.alive and not s.closing:
        try:
            await asyncio.wait_for(s.close(polite=3), 15)
        except asyncio.TimeoutError:
            pass


_made: list = []


def abandon_leftovers() -> None:
    """After a test: an app's gdb still there (the test failed, or ended without quitting) is killed and
    its program released, as tuidbg's own exit does, so that no fixture waits on a process it traces."""
    sessions = [app.session for app in _made] + _early
    _made.clear()
    _early.clear()
    for session in sessions:
        if session.client is not None and session.client.alive and not session.closing:
            session.abandon()


async def until(pilot, predicate: Callable[[], bool], timeout: float = 30.0, what: str | Callable[[], str] = "condition",
                floor: float | None = None) -> None:
    """Pause until ``predicate()`` holds; fail after ``timeout`` seconds, but never sooner than ``floor``
    (default ``helpers.LOADED_FLOOR``: what takes ms on an idle machine can take seconds on a loaded one).
    ``what`` names the condition in the failure; a callable is asked then (to say what was there instead)."""
    from helpers import LOADED_FLOOR

    timeout = max(timeout, LOADED_FLOOR if floor is None else floor)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what() if callable(what) else what}")
        await pilot.pause(0.05)


def process_said(app) -> str:
    """The program's state as the app has it, for a failure's message: "stopped (entry) in main", "running"."""
    st = app.state
    said = st.process.name.lower().replace("_", " ")
    if st.is_stopped and st.stop is not None:
        frame = st.stop.frame
        said += f" ({st.stop.reason})" + (f" in {frame.func}" if frame is not None and frame.func else "")
    return said


async def until_stopped(pilot, timeout: float = 30.0, generation: int | None = None) -> None:
    """The program stopped (a newer stop than ``generation``) and the panes show it."""
    app = pilot.app

    def done() -> bool:
        st = app.state
        if st.process is not ProcessState.STOPPED:
            return False
        if generation is not None and st.generation <= generation:
            return False
        return not app.session.refreshing and app.session.state is st

    await until(pilot, done, timeout, lambda: f"the program to stop (the app has it {process_said(app)})")
    await until_shown(pilot)


async def until_shown(pilot, timeout: float = 30.0) -> None:
    """The app took in the last state posted to it (``state_queued``), and the messages that queued for the
    screen meanwhile are handled: the panes show that state."""
    app = pilot.app
    await until(pilot, lambda: app.state_queued is None, timeout, "the app to take in its state")
    await pilot.pause()


def console_busy(app) -> bool:
    """A command typed into the console still runs (each runs in a worker of the group "console")."""
    return any(w.group == "console" and not w.is_finished for w in app.workers)


async def until_palette_searched(pilot, timeout: float = 30.0) -> None:
    """The command palette (the screen now) shows every hit of what was typed: none of its searches
    (Textual's palette gathers its hits in a worker, in batches) is still running."""
    app = pilot.app
    palette = app.screen
    await until(pilot, lambda: not any(w.node is palette and not w.is_finished for w in app.workers), timeout,
                "the palette's search")
    await pilot.pause()


async def press_and_stop(pilot, *keys: str, timeout: float = 30.0) -> None:
    gen = pilot.app.state.generation
    await pilot.press(*keys)
    await until_stopped(pilot, timeout, generation=gen)


def log_text(app, widget_id: str) -> str:
    from tuidbg.ui.panes.textlog import TextLog

    return "\n".join(app.query_one(f"#{widget_id}", TextLog).lines())


def screen_rows(app) -> list[str]:
    """What the terminal shows, row by row, a character per cell (from the app's screenshot, whose text
    runs stand at x = column * 12.2, y = 20 + row * 24.4, with the blank cells left out)."""
    import html
    import re

    rows: dict[int, dict[int, str]] = {}
    for m in re.finditer(r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', app.export_screenshot(), re.S):
        text = html.unescape(m.group(3)).replace("\xa0", " ")
        cells = rows.setdefault(round((float(m.group(2)) - 20) / 24.4), {})
        if text == "\n":
            continue
        col = round(float(m.group(1)) / 12.2)
        for i, ch in enumerate(text):
            cells[col + i] = ch
    out = []
    for y in range(max(rows) + 1 if rows else 0):
        cells = rows.get(y, {})
        out.append("".join(cells.get(i, " ") for i in range(max(cells) + 1 if cells else 0)))
    return out


def region_text(app, region) -> list[str]:
    """The rows of the screen inside ``region`` (a widget's ``region``), each cut to its columns."""
    rows = screen_rows(app)
    return [rows[y][region.x:region.right] if y < len(rows) else "" for y in range(region.y, region.bottom)]


def toasts_text(app) -> str:
    """The notifications on the screen, as shown (each toast's rows joined with spaces)."""
    from textual.widgets._toast import Toast

    out = []
    for toast in app.screen.query(Toast):
        rows = [r for r in region_text(app, toast.region) if r.startswith("▌")]  # (its rows not under another widget)
        out.append(" ".join(" ".join(r[1:] for r in rows).split()))
    return "\n".join(out)
