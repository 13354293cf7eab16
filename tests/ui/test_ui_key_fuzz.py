"""Random key sequences against the real app (hypothesis): no sequence may crash it (issue 29, item 9).

The app attaches to a real Python program (tests/programs/py/busy_tree.py, one process running into one
line without pause) with the agent, under Textual's Pilot, on a real gdb. Hypothesis makes short sequences of
keys from the ones that open and close dialogs, type into the console, run and stop the program (the issue's
``:pybreak FILE:LINE`` Enter Escape ``c`` among them); each step of a sequence is either pressed (Pilot waits
until the app is idle) or sent in a burst, as a terminal delivers what is typed quickly (all the keys in the
app's queue at once). A burst is what found the issue's crash: the goto-line prompt (ctrl+g) took the typed
line, its Enter dismissed it, and the Escape after it, handled by the same prompt before it was gone,
dismissed again: Textual popped the main screen (ScreenStackError in modals.py, the app ended). After each
sequence the dialogs are closed and the program is stopped again, so that the next one starts at a stop,
as the issue's did.

Four sessions (each attaches anew: the first sequences of each come right after the attach) share the
sequences: 4 x 15 by default (about 35 s a session on a loaded 2-core machine); ``TUIDBG_KEY_FUZZ=N`` runs N
per session (125: the issue's 500). Each session's hypothesis has a seed of its own and keeps no database:
different sequences in each session, the same in every run (the 500, TUIDBG_KEY_FUZZ=125, ran once on
2026-11-28: no crash and no internal error, 22 min with 2 workers at load 14-19); no shrinking (a crashed app cannot play smaller ones: the sequence that crashed it is reported).
The app runs in a thread of its own (its own event loop) so that hypothesis's test function can be a plain one.
An internal error the app survives but reports (logged with its traceback) fails a sequence too: it found a
Python breakpoint enabled while a pydelete took it away (KeyError in the engine).
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import subprocess
import threading
import traceback

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, PROGRAMS, line_of
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from textual import events
from ui_helpers import close_left_session, make_app, screen_rows, until

from faults.procs import wait_until
from tuidbg.engine.state import ProcessState

pytestmark = [requires_gdb, pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="needs Debian's python3.11")]

PROG = PROGRAMS / "py" / "busy_tree.py"
LINE = line_of(PROG, "busy tick")
SESSIONS = 4
EXAMPLES = int(os.environ.get("TUIDBG_KEY_FUZZ", "15"))

# What a step types: single keys (no quit, restart or kill: the session must go on) and whole commands.
KEYS = [":", "escape", "enter", "tab", "c", "n", "ctrl+c", "question_mark", "f1", "ctrl+o", "w", "B",
        "slash", "ctrl+g", "X", "b", "z", "a", "g", "P", "1", "2", "5", "7", "8", "9", "less_than_sign",
        "greater_than_sign", "m", "space", "down", "up", "x", "v", "e", "d", "shift+tab", "ctrl+l"]
TEXTS = [f"pybreak {PROG.name}:{LINE}", "pydelete", "pyinfo", "info threads", "p 1+1"]  # (the cwd: PROG's folder)
ISSUE = [":", *f"pybreak {PROG.name}:{LINE}", "enter", "escape", "c"]
keys = st.tuples(st.lists(st.sampled_from(KEYS), min_size=1, max_size=3), st.booleans())  # pressed, or a burst
step = st.one_of(
    keys, keys, keys, keys,  # (most steps: a run to a stop is what costs time)
    st.tuples(st.sampled_from(TEXTS).map(list), st.just(True)),  # typed (a burst: one key per character)
    st.just((ISSUE, True)),  # the issue's
)
sequences = st.lists(step, min_size=1, max_size=4)


class InternalErrors(logging.Handler):
    """tuidbg's own failures the app survived but reported ("internal error in ...": a bug logged with its
    traceback): a sequence that makes one fails as a crash does."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[str] = []
        logging.getLogger("tuidbg").addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.seen.append(self.format(record) + "\n" + "".join(traceback.format_exception(*record.exc_info)))

    def take(self) -> str | None:
        seen, self.seen = self.seen, []
        return "\n".join(seen) or None

    def remove(self) -> None:
        logging.getLogger("tuidbg").removeHandler(self)


class AppThread:
    """The app under Pilot in a thread with its own event loop; ``run(sequence)`` plays one sequence there
    and returns None, or what went wrong (the app's crash, with its traceback; every call after it too)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.crash: str | None = None
        self.played = 0
        self.internal = InternalErrors()
        self.requests: queue.Queue = queue.Queue()
        self.replies: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)
        self.thread.start()
        ready = self.replies.get(timeout=180)
        if ready is not None:
            raise AssertionError(f"the app did not start: {ready}")

    def run(self, sequence) -> str | None:
        if self.crash is None:
            self.requests.put(sequence)
            self.crash = self.replies.get(timeout=300) or self.internal.take()
            self.played += 1
        return self.crash

    def close(self) -> None:
        self.requests.put(None)
        self.thread.join(120)
        self.internal.remove()

    async def _main(self) -> None:
        app = make_app(mode="attach", pid=self.pid, agent=True, python_target=True)
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                await until(pilot, lambda: app.state.is_stopped and app.state.python.agent is not None, 120,
                            "the attach's stop")
                self.replies.put(None)
                while True:
                    sequence = await asyncio.get_running_loop().run_in_executor(None, self.requests.get)
                    if sequence is None:
                        return
                    await self._play(pilot, sequence)
                    if not app.is_running:
                        break
                    self.replies.put(None)
        except BaseException:  # (the app's crash comes out of run_test)
            self.replies.put(traceback.format_exc())
            return
        finally:
            await close_left_session(app)  # (a crashed app leaves its gdb, and the program traced)
        self.replies.put(f"the app ended (code {app.return_code})")

    async def _play(self, pilot, sequence) -> None:
        app = pilot.app
        for keys, burst in sequence:
            if not app.is_running:
                return
            if burst:
                self._burst(app, keys)
                await pilot.pause(0.05)
            else:
                await pilot.press(*keys)
        # back to a stop with no dialog on top, for the next sequence, in one loop: a dialog a burst opened may
        # come up late under load (after Escapes sent first, or while the program is being stopped), and while
        # one is up ctrl+c is its input's, not the debugger's; a step typed in the sequence may begin only now
        # (a run after the stop): interrupted whenever it runs. Done once the app, idle, is at a stop with no
        # dialog.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 90
        while True:
            await pilot.pause()  # (the keys queued before are handled)
            if not app.is_running:
                return
            dialog = len(app.screen_stack) > 1 or getattr(app.focused, "id", None) in ("console-input",
                                                                                      "output-input")
            if not dialog and app.state.is_stopped:
                return
            assert loop.time() < deadline, (
                f"timed out after 90s bringing the app back to a stop with no dialog: {app.state.process.name}, "
                f"python {app.state.python.transient=} {app.state.python.stop_pending=}; gdb: "
                f"{app.session.health().describe() or 'answering'}; focused {app.focused!r}, screens "
                f"{app.screen_stack!r}; the screen's rows: {[r for r in screen_rows(app) if r.strip()]}")
            if dialog:
                self._burst(app, ["escape", "escape"])
                await pilot.pause(0.2)
                continue
            if app.state.process is ProcessState.RUNNING:
                await pilot.press("ctrl+c")
            pause_end = loop.time() + 2
            while app.is_running and not app.state.is_stopped and len(app.screen_stack) == 1 \
                    and loop.time() < pause_end:
                await pilot.pause(0.05)

    @staticmethod
    def _burst(app, keys) -> None:
        """The keys in the app's queue at once, as a terminal delivers what is typed quickly."""
        for key in keys:
            char = key if len(key) == 1 else {"space": " ", "slash": "/", "question_mark": "?",
                                                "less_than_sign": "<", "greater_than_sign": ">"}.get(key)
            name = {":": "colon", "/": "slash", "?": "question_mark", "<": "less_than_sign", ">": "greater_than_sign",
                    " ": "space", "+": "plus", ".": "full_stop", "_": "underscore", "-": "minus"}.get(key, key)
            event = events.Key(name, char)
            event.set_sender(app)
            app.post_message(event)


@pytest.fixture
def busy(tmp_path):
    d = tmp_path / "busy"
    d.mkdir()
    p = subprocess.Popen([str(DEBIAN_PY311), str(PROG), str(d), "0"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    wait_until(lambda: (d / "ready").exists() or p.poll() is not None, 60, "the program to start")
    yield p
    p.kill()
    p.wait()


@pytest.mark.timeout(120 + 10 * EXAMPLES)
@pytest.mark.parametrize("session", range(SESSIONS))
def test_random_keys_never_crash_the_app(busy, monkeypatch, tmp_path, session):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(PROG.parent)  # (pybreak busy_tree.py:LINE: short to type)
    app = AppThread(busy.pid)
    played = []

    @seed(session)  # (each session its own sequences, the same in every run)
    @settings(max_examples=EXAMPLES, database=None, deadline=None, print_blob=False,
              phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck))
    @given(sequences)
    def play(sequence):
        played.append(sequence)
        crash = app.run(sequence)
        assert crash is None, f"after {sequence}:\n{crash}"

    try:
        play()
    finally:
        app.close()
    assert len(played) >= EXAMPLES
