"""The step's fast paths (``tuidbg.ui.fastpath``: keys written to gdb by the input thread, rows written
by gdb's output thread, actions run past Textual's bubbling, the stop's line from gdb's record, rows
written to the terminal at once) against Textual's own way: a differential test (issue 28, item 4).

Two tuidbg processes debug the same program in two real terminals (tmux), one with the fast paths
(the default) and its twin with them switched off (``TUIDBG_FAST_PATHS=0``). Hypothesis makes sequences
of step keys, continues and finishes, focus changes, maximize and restore, a key that shows a
notification, breakpoint toggles and terminal resizes; each key goes to both, and once both screens
have settled they must be the same, colours and styles included (tmux's ``capture-pane -e``), the only
difference allowed being the processes' own numbers (PIDs and LWPs). Two CPU hogs run beside them all
the while (``hogs``): the fast paths race the app's loop, and a loaded machine is where a race shows.

Sequences are derandomized (the same in every run, as CI needs); ``TUIDBG_DIFFERENTIAL_EXAMPLES=N``
runs N of them (more, or random ones with ``TUIDBG_DIFFERENTIAL_RANDOM=1``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import requires_gdb
from faults.procs import descendants
from helpers import PROGRAMS, compile_c
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from tmux_term import Tmux

pytestmark = [requires_gdb, pytest.mark.skipif(shutil.which("tmux") is None,
                                               reason="tmux is not installed on this machine")]

SRC = PROGRAMS / "stepper.c"
EXAMPLES = int(os.environ.get("TUIDBG_DIFFERENTIAL_EXAMPLES", "6"))
SIZES = [(80, 24), (120, 40), (160, 48), (100, 30)]

# (name, what it does): keys as tmux's send-keys names them; "resize WxH" resizes both terminals
ACTIONS = [
    "n", "n", "n", "s", "s", "u", "f", "c",  # steps weigh most: they are what the fast paths serve
    "Tab", "BTab", "1", "3", "5",  # focus changes
    "z",  # maximize the focused pane, and restore it
    "S",  # step into native in a native program: a notification ("needs tuidbg's Python agent")
    "b",  # a breakpoint toggled at the source pane's cursor (a mark, a notification)
    *(f"resize {w}x{h}" for w, h in SIZES),
]


@pytest.fixture(scope="module")
def stepper(tmp_path_factory) -> Path:
    build = tmp_path_factory.mktemp("stepper")
    return compile_c(SRC, build / "stepper", str(PROGRAMS / "stepper_lib.c"))


@pytest.fixture(scope="module")
def hogs():
    """Two CPU hogs for as long as the module's tests run. In the suite they run at nice 10 (the suite's
    other workers load the machine too, and hogs at full priority would take the cores from them);
    scripts/test-under-load.sh runs the whole suite beside two hogs at full priority, and
    ``TUIDBG_DIFFERENTIAL_HOG_NICE=0`` gives these full priority too."""
    nice = int(os.environ.get("TUIDBG_DIFFERENTIAL_HOG_NICE", "10"))
    procs = [subprocess.Popen(["nice", "-n", str(nice), "sh", "-c", "while :; do :; done"]) for _ in range(2)]
    yield
    for p in procs:
        p.kill()
        p.wait()


class Twin:
    """One tuidbg in a terminal of its own."""

    def __init__(self, folder: Path, program: Path, fast: bool, size: tuple[int, int]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.term = Tmux(folder)
        self.fast = fast
        env = {"TUIDBG_FAST_PATHS": "1" if fast else "0", "XDG_STATE_HOME": str(folder / "state"),
               "XDG_CONFIG_HOME": str(folder / "config"), "TMPDIR": str(folder)}
        exports = " ".join(f"{k}={v}" for k, v in env.items())
        argv = [sys.executable, "-m", "tuidbg", "run", "--nx", "-ex", "break accumulate", "--", str(program)]
        self.term.start(["env", *exports.split(), *argv], width=size[0], height=size[1])

    def numbers(self) -> set[str]:
        """This twin's processes and threads, as numbers that may show on its screen."""
        found = set()
        for pid in descendants(self.term.pane_pid()):
            found.add(str(pid))
            try:
                found.update(os.listdir(f"/proc/{pid}/task"))
            except OSError:
                pass
        return found

    def screen(self, numbers: set[str]) -> str:
        text = self.term.tmux("capture-pane", "-e", "-p", "-t", "e2e", check=False).stdout
        if numbers:
            text = re.sub(r"\b(\d{2,})\b", lambda m: "#" * len(m.group(1)) if m.group(1) in numbers else m.group(1),
                          text)
        return text

    def send(self, action: str) -> None:
        if action.startswith("resize "):
            w, h = action.split()[1].split("x")
            self.term.tmux("resize-window", "-t", "e2e", "-x", w, "-y", h)
        else:
            self.term.keys(action)

    def close(self) -> None:
        self.term.kill()


def _settled_pair(fast: Twin, plain: Twin, timeout: float = 20.0) -> tuple[str, str]:
    """Both screens once they are the same and stay so for a moment; on timeout, the last pair."""
    numbers = fast.numbers() | plain.numbers()
    deadline = time.monotonic() + timeout
    a = b = ""
    same_since = None
    while time.monotonic() < deadline:
        a, b = fast.screen(numbers), plain.screen(numbers)
        if a == b:
            if same_since is None:
                same_since = time.monotonic()
            elif time.monotonic() - same_since >= 0.3:
                return a, b
        else:
            same_since = None
        time.sleep(0.05)
    return a, b


def _diff(a: str, b: str) -> str:
    rows = []
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines())):
        if x != y:
            rows.append(f"row {i}:\n  fast:  {x!r}\n  plain: {y!r}")
    return "\n".join(rows[:12]) or f"(line counts differ: {len(a.splitlines())} / {len(b.splitlines())})"


def _run(folder: Path, program: Path, actions: list[str]) -> None:
    size = SIZES[0]
    # (folders named alike in length: the environment's size moves the program's stack addresses)
    fast = Twin(folder / "fast", program, True, size)
    plain = Twin(folder / "slow", program, False, size)
    try:
        for t in (fast, plain):
            t.term.wait_for("stopped: breakpoint", 60)
        a, b = _settled_pair(fast, plain)
        assert a == b, f"the first stop differs:\n{_diff(a, b)}"
        done: list[str] = []
        for action in actions:
            fast.send(action)
            plain.send(action)
            done.append(action)
            a, b = _settled_pair(fast, plain)
            assert a == b, f"after {done}, the screens differ (fast paths on / off):\n{_diff(a, b)}"
    finally:
        fast.close()
        plain.close()


_examples = 0


# (no shrinking: an example takes tens of seconds, and a failing sequence is ten keys at most)
@settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
          derandomize=os.environ.get("TUIDBG_DIFFERENTIAL_RANDOM") != "1",
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(actions=st.lists(st.sampled_from(ACTIONS), min_size=4, max_size=10))
def test_differential_fast_paths_show_what_textual_shows(stepper, hogs, tmp_path, actions):
    global _examples
    _examples += 1
    _run(tmp_path / f"example-{_examples}", stepper, actions)


def test_differential_a_plain_run_of_steps(stepper, hogs, tmp_path):
    """The sequence every user runs first: steps, into the other file and back, at 80x24 (a case
    Hypothesis may not draw)."""
    _run(tmp_path, stepper, ["n", "s", "n", "n", "f", "n", "n", "c", "s", "s"])
