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

``--watch control`` reads the screen through a tmux control-mode client (``tmux -C``) instead of a
``tmux capture-pane`` process every 2 ms: the harness learns of each piece of output the tool writes
(``%output``) and asks for the screen then, over the same connection. No process is started per read
and nothing polls, so the harness leaves the two cores to the tools, and the time is the tool's own
to within the control client's round trip (about 0.1-0.3 ms). After each step it waits until the
tool has written nothing for 50 ms: the next tool steps on a quiet machine, as a person's next key
would find it. The polling reads (``--watch poll``,
the default, as in the earlier results) add a few ms to every tool and take a core while they run.

Usage: python bench/step_tmux.py [--steps N] [--baseline DIR]... [--only REGEX] [--watch poll|control]
"""

from __future__ import annotations

import argparse
import os
import re
import select
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

    control: "Control | None" = None

    def start(self, watch: str = "poll", tries: int = 3) -> None:
        """Start the tool, stopped at the loop's line. A start whose marker is not on the screen in 30 s
        is started again, at most ``tries`` times in all (cgdb now and then shows its gdb window with the
        stop but no source window: 2 starts in ~20 on 2026-11-27); each retry is said on stderr."""
        cmd = " ".join(shlex.quote(a) for a in self.argv)
        for attempt in range(1, tries + 1):
            # (window-size manual: a control client, which has no size, must not resize the window)
            self.tmux("new-session", "-d", "-s", "b", "-x", "120", "-y", "40",
                      f"LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=xterm-256color {self.env}{cmd}; sleep 60",
                      ";", "set-option", "-g", "window-size", "manual")
            if watch == "control":
                self.control = Control(self.sock)
            try:
                self.wait_line(lambda n: n is not None, 30)
                return
            except SystemExit:
                if attempt == tries:
                    raise
                print(f"{self.name}: no current-line marker 30 s after its start; starting it again",
                      file=sys.stderr)
                self.stop()
                self.control = None

    def screen(self) -> str:
        if self.control is not None:
            return self.control.command("capture-pane -p -t b")
        return self.tmux("capture-pane", "-p", "-t", "b", check=False)

    def send(self, key: str) -> None:
        if self.control is not None:
            self.control.command(f"send-keys -t b {key}")
        else:
            self.tmux("send-keys", "-t", "b", key)

    def line(self, screen: str) -> int | None:
        m = self.marker.search(screen)
        return int(m.group(1)) if m else None

    def wait_line(self, ok, timeout: float) -> int:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            n = self.line(self.screen())
            if ok(n):
                return n
            if self.control is not None:
                self.control.wait_output(deadline)  # (the screen is read again once the tool wrote more)
            else:
                time.sleep(POLL)
        raise SystemExit(f"{self.name}: the current-line marker did not show/move in {timeout} s:\n{self.screen()}")

    def step(self) -> float:
        before = self.line(self.screen())
        keys = self.key if self.stepped else self.first
        self.stepped = True
        if len(keys) > 1:  # type the command, then time from the key that runs it
            for k in keys[:-1]:
                self.send(k)
            time.sleep(0.3)
        if self.control is not None:
            self.control.wait_output(time.perf_counter() + 0.05)  # (what the tool still had to write)
            self.control.output = False
        t0 = time.perf_counter()
        self.send(keys[-1])
        self.wait_line(lambda n: n is not None and n != before, 30)
        took = time.perf_counter() - t0
        if self.control is not None:
            self.control.settle()  # (the rest of its update: the next tool steps on a quiet machine)
        return took

    def stop(self) -> None:
        if self.control is not None:
            self.control.close()
        self.tmux("kill-server", check=False)


class Control:
    """A tmux control-mode client: commands and their answers over one pipe, and ``%output``
    notifications of what the pane's program wrote (``output`` is set when one came)."""

    def __init__(self, sock: str):
        self.proc = subprocess.Popen(["tmux", "-u", "-L", sock, "-f", "/dev/null", "-C", "attach", "-t", "b"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.fd = self.proc.stdout.fileno()
        self.buf = b""
        self.output = False
        self._block()  # (attach's own answer)

    def _line(self, deadline: float | None) -> bytes | None:
        while b"\n" not in self.buf:
            wait = None if deadline is None else max(0.0, deadline - time.perf_counter())
            if not select.select([self.fd], [], [], wait)[0]:
                return None
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise SystemExit("tmux's control client ended")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        if line.startswith(b"%output"):
            self.output = True
        return line

    def _block(self) -> str:
        out: list[bytes] = []
        inside = False
        while True:
            line = self._line(None)
            if line.startswith(b"%begin"):
                inside, out = True, []
            elif inside and (line.startswith(b"%end") or line.startswith(b"%error")):
                return b"\n".join(out).decode("utf-8", "replace")
            elif inside:
                out.append(line)

    def command(self, cmd: str) -> str:
        self.proc.stdin.write(cmd.encode() + b"\n")
        return self._block()

    def wait_output(self, deadline: float) -> None:
        """Until the pane's program writes something (or the deadline)."""
        while not self.output and time.perf_counter() < deadline:
            if self._line(deadline) is None:
                break
        self.output = False

    def settle(self, quiet: float = 0.05, at_most: float = 3.0) -> None:
        """Until the pane's program has written nothing for ``quiet`` seconds."""
        end = time.perf_counter() + at_most
        while time.perf_counter() < end:
            self.output = False
            deadline = min(end, time.perf_counter() + quiet)
            while not self.output and time.perf_counter() < deadline:
                if self._line(deadline) is None:
                    break
            if not self.output:
                return

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(2)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--baseline", metavar="DIR", action="append", default=[],
                    help="also run the tuidbg package found in DIR (repeatable)")
    ap.add_argument("--only", metavar="REGEX", help="only the tools whose name matches")
    ap.add_argument("--watch", choices=("poll", "control"), default="poll",
                    help="read the screen with a capture-pane process every 2 ms (poll) or through a control client")
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
            t.start(args.watch)
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
