"""A real terminal for the tests: tmux runs tuidbg at a given size, keys go in with send-keys, the screen
and the terminal's modes come back with capture-pane and tmux's format variables."""

from __future__ import annotations

import os
import shlex
import subprocess
import time

import pytest
from helpers import REPO


class Tmux:
    def __init__(self, tmp_path) -> None:
        self.socket = f"tuidbg-test-{os.getpid()}-{time.monotonic_ns()}"
        self.tmp = tmp_path

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args], capture_output=True, text=True, check=check)

    def start(self, argv: list[str], width: int = 80, height: int = 24, after: str = "") -> None:
        """Run argv in a new session; then print its exit status and run ``after`` (a shell command)."""
        env = f"PYTHONPATH={shlex.quote(str(REPO))} TERM=xterm-256color"
        then = f"; {after}" if after else ""
        cmd = f"{env} {' '.join(shlex.quote(a) for a in argv)}; echo TUIDBG_EXIT=$?{then}; sleep 30"
        self.tmux("new-session", "-d", "-s", "e2e", "-x", str(width), "-y", str(height), cmd)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "e2e", check=False).stdout

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "e2e", *keys)

    def wait_for(self, text: str, timeout: float = 40.0) -> str:
        return self.wait_until(lambda screen: text in screen, f"{text!r} never appeared", timeout)

    def wait_until(self, ready, what: str, timeout: float = 40.0) -> str:
        """The screen, once ``ready(screen)``; raises with ``what`` and the last screen if it never is."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if ready(screen):
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{what}; the screen was:\n{screen}")

    def title(self) -> str:
        return self.tmux("display-message", "-p", "-t", "e2e", "#{pane_title}", check=False).stdout.strip()

    def fmt(self, variable: str) -> str:
        """A tmux format variable of the pane (alternate_on, mouse_any_flag, cursor_flag, pane_pid, ...)."""
        return self.tmux("display-message", "-p", "-t", "e2e", "#{%s}" % variable, check=False).stdout.strip()

    def terminal_modes(self) -> dict[str, str]:
        """The modes a program can leave the terminal in, as tmux sees them."""
        names = ("alternate_on", "mouse_any_flag", "mouse_button_flag", "mouse_standard_flag", "mouse_sgr_flag",
                 "cursor_flag", "keypad_flag", "keypad_cursor_flag")
        return {n: self.fmt(n) for n in names}

    def pane_pid(self) -> int:
        return int(self.fmt("pane_pid"))

    def kill(self) -> None:
        self.tmux("kill-server", check=False)


@pytest.fixture
def tmux(tmp_path):
    t = Tmux(tmp_path)
    yield t
    t.kill()
