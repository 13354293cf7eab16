from __future__ import annotations

import gc
import glob
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers import PROGRAMS, REPO, compile_c  # noqa: E402
from timing_report import (  # noqa: E402,F401 (hooks: where the suite's time went, printed at its end)
    pytest_runtest_makereport,
    pytest_runtest_protocol,
    pytest_terminal_summary,
)

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# No user gdbinit, no debuginfod, no colour surprises in tests.
os.environ.pop("DEBUGINFOD_URLS", None)
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

requires_gdb = pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed on this machine")


@pytest.fixture(autouse=True)
def _own_state_home(tmp_path, monkeypatch):
    """Each test remembers breakpoints (tuidbg.engine.remember) in a folder of its own: one test's
    breakpoints must not come back in the next test's run of the same program (or another worker's).
    Its configuration folder is its own too, empty: the machine's user's themes, keymaps and config
    (~/.config/tuidbg) are not the tests'."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))


# The machine's temporary folder: each test gets a short folder of its own under it (an AF_UNIX
# socket's path must stay under 108 bytes, so not under pytest's long tmp_path).
_MACHINE_TMP = tempfile.gettempdir()


@pytest.fixture(autouse=True)
def _own_tmpdir(monkeypatch):
    """Each test has a temporary folder of its own (TMPDIR, for the test and every process it starts),
    and nothing left behind in it: the Python agent's socket folders (tuidbg.engine.pyagent.link) that
    the test's sessions and tuidbg processes made are gone once they have ended (a tuidbg process the
    test ended may take a moment). Another tuidbg on the machine, or another test run beside this one,
    uses folders of its own, never looked at here. (Before _no_app_left_behind: checked after an app
    the test left is abandoned.)"""
    own = tempfile.mkdtemp(prefix="tt-", dir=_MACHINE_TMP)
    monkeypatch.setenv("TMPDIR", own)
    monkeypatch.setattr(tempfile, "tempdir", own)
    agent_dirs = os.path.join(own, "tuidbg-agent-*")
    yield own
    deadline = time.monotonic() + 5
    while (left := glob.glob(agent_dirs)) and time.monotonic() < deadline:
        time.sleep(0.05)
    shutil.rmtree(own, ignore_errors=True)
    assert not left, f"the agent's folders were left behind: {sorted(left)}"


@pytest.fixture(autouse=True)
def _no_app_left_behind():
    yield
    import ui_helpers

    ui_helpers.abandon_leftovers()
    # Finalizers of what a test left (an asyncio transport of a closed loop) run now, not in the
    # middle of a later import: on CPython 3.11.7 an error raised there during pytest's assertion
    # rewrite shows as "SystemError: AST constructor recursion depth mismatch" (CPython gh-106905).
    # What survives is moved out of the collector's sight (gc.freeze): the next test's collections,
    # this one's included, scan only what came since (a full collection of a worker's whole heap took
    # 0.1-0.3 s of CPU after every test, and grew with the run).
    gc.collect()
    gc.freeze()


@pytest.fixture
def cleanup():
    """A list to put started child processes in: each is killed (if still running) and reaped after the test."""
    procs = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(10)


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("build")


@pytest.fixture(scope="session")
def threads_prog(build_dir) -> Path:
    return compile_c(PROGRAMS / "threads.c", build_dir / "threads", "-pthread")


@pytest.fixture(scope="session")
def deep_prog(build_dir) -> Path:
    return compile_c(PROGRAMS / "deep.c", build_dir / "deep")


@pytest.fixture(scope="session")
def libfoo(build_dir) -> Path:
    return compile_c(PROGRAMS / "libfoo.c", build_dir / "libfoo.so", shared=True)


@pytest.fixture
async def make_session():
    """Factory for started DebugSessions (gdb with -nx); all are closed at the end of the test."""
    from tuidbg.engine.debugger import new_session
    from tuidbg.engine.session import DebugSession, SessionConfig

    sessions = []

    async def factory(start: bool = True, transport=None, **kw) -> DebugSession:
        kw.setdefault("nx", True)
        s = new_session(SessionConfig(**kw), transport)
        sessions.append(s)
        if start:
            await s.start()
        return s

    yield factory
    for s in sessions:
        try:
            await s.close()
        except Exception:
            pass
