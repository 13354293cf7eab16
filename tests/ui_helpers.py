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


async def until(pilot, predicate: Callable[[], bool], timeout: float = 30.0, what: str = "condition",
                floor: float | None = None) -> None:
    """Pause until ``predicate()`` holds; fail after ``timeout`` seconds, but never sooner than ``floor``
    (default ``helpers.LOADED_FLOOR``: what takes ms on an idle machine can take seconds on a loaded one)."""
    from helpers import LOADED_FLOOR

    timeout = max(timeout, LOADED_FLOOR if floor is None else floor)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await pilot.pause(0.05)


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

    await until(pilot, done, timeout, "the program to stop")
    await pilot.pause(0.1)


async def press_and_stop(pilot, *keys: str, timeout: float = 30.0) -> None:
    gen = pilot.app.state.generation
    await pilot.press(*keys)
    await until_stopped(pilot, timeout, generation=gen)


def log_text(app, widget_id: str) -> str:
    from tuidbg.ui.panes.textlog import TextLog

    return "\n".join(app.query_one(f"#{widget_id}", TextLog).lines())
