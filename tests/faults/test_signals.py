"""Signals to tuidbg in a real terminal (tmux): it restores the terminal, does what quit does for its
mode (run: the program is killed; attach: detached, running, untraced), and leaves nothing behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest
from conftest import requires_gdb
from tmux_term import tmux  # noqa: F401 (fixture)

from faults.procs import answers, assert_clean, descendants, proc, wait_until

from tuidbg.ui.terminal import DEADLINE

pytestmark = [requires_gdb, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed on this machine")]

SIGNALS = [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGINT]


def _tuidbg_pid(tmux) -> int:
    """The tuidbg process: the child of the pane's shell running python -m tuidbg."""
    shell = tmux.pane_pid()

    def find() -> int | None:
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            p = proc(int(name))
            if p is None or p.ppid != shell:
                continue
            try:
                cmd = open(f"/proc/{name}/cmdline", "rb").read()
            except OSError:
                continue
            if b"tuidbg" in cmd:
                return p.pid
        return None

    found: list[int] = []
    wait_until(lambda: bool(found.append(find() or 0) or found[-1]), 10, "tuidbg's process")
    return found[-1]


def _terminal_is_back(tmux) -> None:
    screen = tmux.wait_for("STTY ", 20)
    modes = tmux.terminal_modes()
    assert modes["alternate_on"] == "0", modes
    assert modes["mouse_any_flag"] == modes["mouse_button_flag"] == modes["mouse_standard_flag"] == "0", modes
    assert modes["mouse_sgr_flag"] == "0", modes
    assert modes["cursor_flag"] == "1", modes
    stty = screen[screen.index("STTY ") :]
    words = stty.replace("\n", " ").split()
    assert "icanon" in words and "echo" in words and "-icanon" not in words and "-echo" not in words, stty
    assert "Traceback" not in screen


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_signal_in_run_mode_kills_the_program_and_restores_the_terminal(tmux, victim_prog, sig):
    tmux.start([sys.executable, "-m", "tuidbg", "run", "--nx", "-ex", "break cold", "--", str(victim_prog)],
               after="echo STTY $(stty -a)")
    tmux.wait_for("running")
    pid = _tuidbg_pid(tmux)
    ours = descendants(pid) | {pid}
    assert any(proc(p) is not None and proc(p).comm == "victim" for p in ours)
    os.kill(pid, sig)
    screen = tmux.wait_for("TUIDBG_EXIT=", 30)
    assert f"TUIDBG_EXIT={128 + sig}" in screen
    _terminal_is_back(tmux)
    assert_clean(ours)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_signal_in_attach_mode_detaches_and_the_target_runs_on(tmux, victim_prog, sig):
    victim = subprocess.Popen([str(victim_prog)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        assert victim.stdout.readline().startswith(b"ready")
        tmux.start([sys.executable, "-m", "tuidbg", "attach", "--nx", "-ex", "break cold", str(victim.pid)],
                   after="echo STTY $(stty -a)")
        tmux.wait_for("attached to process")
        tmux.keys("c")  # running, with the breakpoint's int3 in cold()
        tmux.wait_for("running")
        pid = _tuidbg_pid(tmux)
        ours = descendants(pid) | {pid}
        os.kill(pid, sig)
        screen = tmux.wait_for("TUIDBG_EXIT=", 30)
        assert f"TUIDBG_EXIT={128 + sig}" in screen
        _terminal_is_back(tmux)
        assert_clean(ours, (victim.pid,))
        assert answers(victim, "cold 1"), f"the target did not survive (exit {victim.poll()})"
    finally:
        victim.kill()
        victim.wait()


def test_terminal_gone_in_attach_mode_detaches(tmux, victim_prog):
    """The terminal goes away (ssh dropped: tmux's pane is killed, SIGHUP): nothing to restore, but the
    attached process runs on and nothing is left behind."""
    victim = subprocess.Popen([str(victim_prog)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        assert victim.stdout.readline().startswith(b"ready")
        tmux.start([sys.executable, "-m", "tuidbg", "attach", "--nx", "-ex", "break cold", str(victim.pid)])
        tmux.wait_for("attached to process")
        pid = _tuidbg_pid(tmux)
        ours = descendants(pid) | {pid}
        tmux.kill()
        # well before the guard's deadline, which would end it the hard way (Textual's last writes to
        # the gone terminal block until then)
        wait_until(lambda: proc(pid) is None, DEADLINE - 5, "tuidbg to exit once the session is closed")
        assert_clean(ours, (victim.pid,))
        assert answers(victim, "cold 1")
    finally:
        victim.kill()
        victim.wait()


def test_terminal_gone_in_run_mode_ends_the_program_and_leaves(tmux, victim_prog):
    """The same under tuidbg run, the program running: it is killed, tuidbg leaves once
    the session is closed, nothing is left behind."""
    tmux.start([sys.executable, "-m", "tuidbg", "run", "--nx", "--fresh", "-ex", "break cold", "--", str(victim_prog)])
    tmux.wait_for("running")
    pid = _tuidbg_pid(tmux)
    ours = descendants(pid) | {pid}
    tmux.kill()
    wait_until(lambda: proc(pid) is None, DEADLINE - 5, "tuidbg to exit once the session is closed")
    assert_clean(ours, ())
