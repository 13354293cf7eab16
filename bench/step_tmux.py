"""One `next`, key to screen, in a real terminal: tuidbg against gdb -tui and cgdb (issue 11, item 3).

Each tool runs in its own tmux server (120x40) on the same program (bench/programs/loop50.c: a
loop at the bottom of a 50-frame stack), stopped at the loop's first line. For every step the
harness reads the screen, sends the tool's step key (gdb -tui: Enter, which repeats the `next`
typed once before; cgdb: F8, its next key, in its source window; tuidbg: `n`), and reads the screen every 2 ms
until the current-line marker of the source view has moved to another line: `>` in gdb's TUI
gutter, cgdb's `├──>` arrow (or their ACS forms, `x` and `tqq>`, where
curses draws lines with the terminal's line-drawing set), tuidbg's `▶` after the line number
(`▷` for a Python line whose frame is not the one selected in the C++ pane). The time is from just before
send-keys to the first screen read that shows the marker moved (each read is a tmux process, a
few ms; the same for every tool). The tools take turns, one step each, so that they see the same
machine; medians over the steps.

The last, "tuidbg Python", is a Python `next` (the agent steps a line of bench/programs/pysteps.py
under Debian's stripped python3.11); gdb -tui and cgdb have no Python stepping to compare with.

tuidbg runs from this checkout (``python -P -m tuidbg`` with PYTHONPATH set to it, under the
Python that runs the harness: the repository's .venv; -P: not the package of the current folder). ``--baseline DIR`` (repeatable) adds "tuidbg
(DIR's name)" and "tuidbg Python (DIR's name)": the same steps with the tuidbg package of another
tree (e.g. ``git archive main tuidbg keymaps themes | tar -x -C /tmp/main``), in the same run, taking turns with
the others.

``--only REGEX`` keeps the tools whose name it finds (fewer at a time: less noise on a small machine).

Usage: python bench/step_tmux.py [--steps N] [--baseline DIR]... [--only REGEX]
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import time

from common import REPO, build, line_of

PROG_SRC = REPO / "bench" / "programs" / "loop50.c"
POLL = 0.002
PY = "/usr/bin/python3.11"
PY_PROG = REPO / "bench" / "programs" / "pysteps.py"


class Tool:
    def __init__(self, name: str, argv: list[str], marker: str, key: list[str], first: list[str] | None = None,
                 env: str = ""):
        self.name = name
        self.argv = argv
        self.env = env
        self.marker = re.compile(marker, re.M)
        self.key = key
        self.first = first or key  # the first step's keys (gdb -tui: type the command once)
        self.sock = f"bench-step-{name.replace(' ', '')}-{os.getpid()}"
        self.samples: list[float] = []
        self.stepped = False

    def tmux(self, *args: str, check: bool = True) -> str:
        return subprocess.run(["tmux", "-u", "-L", self.sock, "-f", "/dev/null", *args], capture_output=True, text=True,
                              check=check).stdout

    def start(self) -> None:
        cmd = " ".join(shlex.quote(a) for a in self.argv)
        self.tmux("new-session", "-d", "-s", "b", "-x", "120", "-y", "40", f"LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=xterm-256color {self.env}{cmd}; sleep 60")
        self.wait_line(lambda n: n is not None, 60)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "b", check=False)

    def line(self, screen: str) -> int | None:
        m = self.marker.search(screen)
        return int(m.group(1)) if m else None

    def wait_line(self, ok, timeout: float) -> int:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            n = self.line(self.screen())
            if ok(n):
                return n
            time.sleep(POLL)
        raise SystemExit(f"{self.name}: the current-line marker did not show/move in {timeout} s:\n{self.screen()}")

    def step(self) -> float:
        before = self.line(self.screen())
        keys = self.key if self.stepped else self.first
        self.stepped = True
        if len(keys) > 1:  # type the command, then time from the key that runs it
            self.tmux("send-keys", "-t", "b", *keys[:-1])
            time.sleep(0.3)
        t0 = time.perf_counter()
        self.tmux("send-keys", "-t", "b", keys[-1])
        self.wait_line(lambda n: n is not None and n != before, 30)
        return time.perf_counter() - t0

    def stop(self) -> None:
        self.tmux("kill-server", check=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--baseline", metavar="DIR", action="append", default=[],
                    help="also run the tuidbg package found in DIR (repeatable)")
    ap.add_argument("--only", metavar="REGEX", help="only the tools whose name matches")
    args = ap.parse_args()
    exe = str(build("loop50"))
    bp = f"loop50.c:{line_of(PROG_SRC, 'loop_a')}"
    tools = [
        Tool("gdb -tui", ["gdb", "-nx", "-q", "-tui", "-ex", f"tbreak {bp}", "-ex", "run", exe],
             r"^[│x].{0,3}>\s+(\d+)\s", ["Enter"], ["next", "Enter"]),
        Tool("cgdb", ["cgdb", "-q", "-ex", f"tbreak {bp}", "-ex", "run", exe],
             r"^\s*(\d+)[├t][─q]*>", ["F8"], ["Escape", "F8"]),
    ]
    trees = [("", REPO)] + [(f" ({os.path.basename(os.path.abspath(d))})", os.path.abspath(d)) for d in args.baseline]
    for suffix, tree in trees:
        env = f"PYTHONPATH={shlex.quote(str(tree))} "
        tools.append(Tool("tuidbg" + suffix, [sys.executable, "-P", "-m", "tuidbg", "run", "--nx", "--fresh", "-ex", f"tbreak {bp}", "--", exe],
                          r"^.?\s*(\d+)▶", ["n"], env=env))
    for suffix, tree in trees:
        # a Python `next` (the agent steps one line) on Debian's stripped python3.11: no peer steps Python
        if os.path.exists(PY):
            env = f"PYTHONPATH={shlex.quote(str(tree))} "
            tools.append(Tool("tuidbg Python" + suffix, [sys.executable, "-P", "-m", "tuidbg", "run", "--nx", "--fresh",
                                                         "--python", PY, "-ex",
                                                         f"break {PY_PROG}:{line_of(PY_PROG, 'loop_call')}", str(PY_PROG)],
                              r"^.?\s*(\d+)[▶▷]", ["n"], env=env))
    if args.only:
        tools = [t for t in tools if re.search(args.only, t.name)]
    try:
        for t in tools:
            t.start()
        for t in tools:  # one step each, not timed: every tool's first step (gdb's typed command)
            t.step()
        for i in range(args.steps):
            for t in tools:
                t.samples.append(t.step())
            print(f"step {i + 1}: " + ", ".join(f"{t.name} {t.samples[-1] * 1000:.1f} ms" for t in tools),
                  file=sys.stderr)
    finally:
        for t in tools:
            t.stop()
    for t in tools:
        s = sorted(t.samples)
        print(f"{t.name:28s} median {statistics.median(s) * 1000:6.1f} ms  min {s[0] * 1000:6.1f}  "
              f"p90 {s[int(len(s) * 0.9) - 1] * 1000:6.1f}  (n={len(s)})")


if __name__ == "__main__":
    main()
