#!/usr/bin/env python3
"""Benchmark: tuidbg's cold start against gdb -tui and pudb, wall and CPU time (issue 31).

Cases (each tool started afresh in every round, the tools taking turns, the order rotated each round):

- ``true``: ``tuidbg run -- /bin/true`` against ``gdb -q -tui -ex run /bin/true``, in tmux (120x40).
  Two moments: "paint", the tool's first frame on screen (tuidbg: its pane titles; gdb -tui: its source
  box), and "exited", the program's exit on screen ("exited normally": what the user acts on; the
  headline "first screen" figure).
  Beside them, the floor of any Textual app: ``bench/programs/bare_textual.py`` (this venv's Python and
  Textual, one line painted, nothing else), whose one line counts as both moments.
- ``python``: a 5-line script stopped at its first line, on screen: ``tuidbg run --python PY -ex "break
  small.py:1" small.py`` against ``PY -m pudb small.py`` (pudb stops at the first line by itself; its
  welcome dialog is marked seen in a private config). PY is the peers' venv Python (pudb is installed
  there: bench/_build/peers-venv, from bench/requirements-peers.txt; never a tuidbg dependency). When
  this tree's ``tuidbg run`` has a stop at the program's entry (``--stop-at-entry`` in its help), a third
  tool, "tuidbg (entry)", stops there without the breakpoint.
- ``version``: ``tuidbg --version`` (which finds gdb and cuda-gdb; their answers to ``--version`` are cached
  per binary after the first run: tuidbg.gdbversion) against ``gdb --version``; beside them, for reference,
  ``tuidbg --version`` with no cache (both debuggers asked every time), ``tuidbg completion bash`` and
  ``cuda-gdb --version``. No terminal: start to exit.

Time: from the key that starts the tool (each pane's shell waits on ``read``, then ``exec``s the tool;
the harness presses Enter through a tmux control client) to the first screen read that shows the
moment's marker (the control client hears of each piece of output the tool writes and reads the screen
then: no polling process takes a core). CPU: the user and system time of the tool's whole process tree
at that moment (tuidbg, gdb and the program; reaped children included), from /proc.

tuidbg runs as a user runs it: this checkout's ``.venv/bin/tuidbg`` (bytecode compiled first:
this machine sets PYTHONDONTWRITEBYTECODE). ``--baseline DIR`` (repeatable) adds the tuidbg package of
another tree (``git archive main tuidbg keymaps themes | tar -x -C /tmp/main``), run from DIR with
PYTHONPATH, in the same rounds.

Every tool gets the same fresh, private XDG_CONFIG_HOME, XDG_STATE_HOME and XDG_CACHE_HOME (no
remembered breakpoints, no cached answers from an earlier round: a cold start every time) and the same
TERM; gdb reads ~/.gdbinit in both (neither passes -nx).

Usage: .venv/bin/python bench/cold_start.py [--rounds 11] [--case true|python|version ...]
       [--baseline DIR]... [--only REGEX]
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO
from step_tmux import Control

PEERS = REPO / "bench" / "_build" / "peers-venv"
TUIDBG = REPO / ".venv" / "bin" / "tuidbg"
CLK = os.sysconf("SC_CLK_TCK")
SMALL = "import sys\ntotal = 0\nfor i in range(3):\n    total += i\nprint(total)\n"
PUDB_CFG = "[pudb]\nseen_welcome = e999\nline_numbers = True\nprompt_on_quit = False\n"


def peers_python() -> Path:
    py = PEERS / "bin" / "python"
    if not (PEERS / "bin" / "pudb").exists():
        print(f"installing the peers into {PEERS} ...", file=sys.stderr, flush=True)
        if not py.exists():
            subprocess.run([sys.executable, "-m", "venv", str(PEERS)], check=True)
        res = subprocess.run([str(PEERS / "bin" / "pip"), "install", "-q", "-r",
                              str(REPO / "bench" / "requirements-peers.txt")], capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(f"cannot install the peers: {res.stderr.strip()[-500:]}")
    return py


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of ``root`` and its descendants, reaped children included."""
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        pid = int(name)
        parent[pid] = int(fields[1])
        ticks[pid] = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    total = 0
    for pid in ticks:
        p = pid
        while p > 1 and p != root:
            p = parent.get(p, 0)
        if p == root:
            total += ticks[pid]
    return total / CLK


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


class Tool:
    def __init__(self, name: str, argv: list[str], marks: dict[str, str], env: dict[str, str] | None = None):
        self.name = name
        self.argv = argv
        self.marks = {k: re.compile(v, re.M) for k, v in marks.items()}
        self.env = env or {}
        self.samples: dict[str, list[tuple[float, float]]] = {k: [] for k in marks}

    def once(self, cwd: str, xdg: str, timeout: float = 60) -> dict[str, tuple[float, float]]:
        sock = f"bench-cold-{os.getpid()}"
        tmux = ["tmux", "-u", "-L", sock, "-f", "/dev/null"]
        env = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "xterm-256color",
               "XDG_CONFIG_HOME": f"{xdg}/config", "XDG_STATE_HOME": f"{xdg}/state", "XDG_CACHE_HOME": f"{xdg}/cache",
               **self.env}
        cmd = "read _ && exec env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + \
              " ".join(shlex.quote(a) for a in self.argv)
        subprocess.run([*tmux, "new-session", "-d", "-s", "b", "-x", "120", "-y", "40", "-c", cwd, cmd,
                        ";", "set-option", "-g", "window-size", "manual"], check=True)
        ctl = Control(sock)
        pane = int(ctl.command("display-message -p -t b '#{pane_pid}'").strip())
        seen: dict[str, tuple[float, float]] = {}
        try:
            t0 = time.perf_counter()
            ctl.command("send-keys -t b Enter")
            deadline = t0 + timeout
            while len(seen) < len(self.marks):
                screen = ctl.command("capture-pane -p -t b")
                now = time.perf_counter()
                new = [k for k, rx in self.marks.items() if k not in seen and rx.search(screen)]
                if new:
                    cpu = tree_cpu(pane)
                    for k in new:
                        seen[k] = (now - t0, cpu)
                    continue
                if now > deadline:
                    raise SystemExit(f"{self.name}: {sorted(set(self.marks) - set(seen))} not on screen in "
                                     f"{timeout} s:\n{screen}")
                ctl.output = False
                ctl.wait_output(deadline)
        finally:
            ctl.close()
            subprocess.run([*tmux, "kill-server"], capture_output=True)
            end = time.monotonic() + 30  # the tool ends on the hang-up (tuidbg kills its program, gdb ends)
            while alive(pane) and time.monotonic() < end:
                time.sleep(0.02)
        if alive(pane):
            raise SystemExit(f"{self.name}: still running 30 s after its terminal went away")
        return seen


def run_cmd(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one command, start to exit (its children included)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr.read().decode()[-300:]}")
    proc.stderr.close()
    return wall, ru.ru_utime + ru.ru_stime


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def tuidbg_cmds(baselines: list[str]) -> list[tuple[str, list[str], dict[str, str]]]:
    out = [("tuidbg", [str(TUIDBG)], {})]
    for d in baselines:
        d = os.path.abspath(d)
        out.append((f"tuidbg ({os.path.basename(d)})",
                    [str(REPO / ".venv" / "bin" / "python"), "-P", "-c",
                     "import sys; from tuidbg.cli import main; sys.exit(main())"], {"PYTHONPATH": d}))
    return out


def compile_trees(trees: list[str]) -> None:
    for t in trees:
        subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(t, "tuidbg")], check=True,
                       stdout=subprocess.DEVNULL)


def has_entry_stop(argv: list[str], env: dict[str, str]) -> bool:
    res = subprocess.run([*argv, "run", "--help"], capture_output=True, text=True, env={**os.environ, **env})
    return "--stop-at-entry" in res.stdout


def case_tools(case: str, baselines: list[str], work: str) -> list[Tool]:
    tools: list[Tool] = []
    if case == "true":
        tools.append(Tool("gdb -tui", ["gdb", "-q", "-tui", "-ex", "run", "/bin/true"],
                          {"paint": r"No Source Available|No process In:", "exited": r"exited normally"}))
        # the floor of a Textual app's start: the design card's UI library painting one line, nothing else
        tools.append(Tool("bare Textual app", [str(REPO / ".venv" / "bin" / "python"),
                                                str(REPO / "bench" / "programs" / "bare_textual.py")],
                          {"paint": r"bare Textual app", "exited": r"exited normally"}))
        for name, argv, env in tuidbg_cmds(baselines):
            # (as gdb -tui -ex run: no stop at main, where this tree's run has one)
            entry = ["--no-stop-at-entry"] if has_entry_stop(argv, env) else []
            tools.append(Tool(name, [*argv, "run", *entry, "--", "/bin/true"],
                              {"paint": r"Console .*Output|C\+\+ frames", "exited": r"exited normally"}, env))
    elif case == "python":
        py = str(peers_python())
        tools.append(Tool("pudb", [py, "-m", "pudb", "small.py"], {"stop": r"^> +1 import sys"}))
        for name, argv, env in tuidbg_cmds(baselines):
            tools.append(Tool(name, [*argv, "run", "--python", py, "-ex", "break small.py:1", "small.py"],
                              {"stop": r"^.?\s*1[▶▷] import sys"}, env))
            if has_entry_stop(argv, env):
                tools.append(Tool(name + " (entry)", [*argv, "run", "--python", py, "small.py"],
                                  {"stop": r"^.?\s*1[▶▷] import sys"}, env))
    return tools


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--case", action="append", choices=("true", "python", "version"))
    ap.add_argument("--baseline", metavar="DIR", action="append", default=[])
    ap.add_argument("--only", metavar="REGEX", help="only the tools whose name matches")
    args = ap.parse_args()
    cases = args.case or ["true", "python", "version"]
    compile_trees([str(REPO)] + args.baseline)
    work = tempfile.mkdtemp(prefix="bench-cold-")
    Path(work, "small.py").write_text(SMALL)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {loadavg()}; "
          f"{args.rounds} rounds", flush=True)
    try:
        for case in cases:
            if case == "version":
                version_case(args, work)
                continue
            tools = case_tools(case, args.baseline, work)
            if args.only:
                tools = [t for t in tools if re.search(args.only, t.name)]
            for r in range(args.rounds):
                order = tools[r % len(tools):] + tools[:r % len(tools)]
                for t in order:
                    xdg = tempfile.mkdtemp(dir=work)
                    os.makedirs(f"{xdg}/config/pudb")
                    Path(f"{xdg}/config/pudb/pudb.cfg").write_text(PUDB_CFG)
                    got = t.once(work, xdg)
                    for k, v in got.items():
                        t.samples[k].append(v)
                    shutil.rmtree(xdg, ignore_errors=True)
                print(f"{case} round {r + 1}: " + ", ".join(
                    f"{t.name} " + "/".join(f"{t.samples[k][-1][0] * 1000:.0f}" for k in t.marks) for t in tools),
                    file=sys.stderr, flush=True)
            report(case, tools)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average after: {loadavg()}")
    return 0


def report(case: str, tools: list[Tool]) -> None:
    peer = tools[0]
    print(f"\n## {case} (medians; ratio: against {peer.name}, same moment)")
    print(f"| tool | moment | wall ms | min | max | CPU s | wall vs {peer.name} | CPU vs {peer.name} |")
    print("|---|---|---|---|---|---|---|---|")
    for t in tools:
        for k in t.marks:
            walls = [w for w, _ in t.samples[k]]
            cpus = [c for _, c in t.samples[k]]
            pk = k if k in peer.samples else next(iter(peer.samples))
            pw = statistics.median(w for w, _ in peer.samples[pk])
            pc = statistics.median(c for _, c in peer.samples[pk])
            w, c = statistics.median(walls), statistics.median(cpus)
            print(f"| {t.name} | {k} | {w * 1000:,.0f} | {min(walls) * 1000:,.0f} | {max(walls) * 1000:,.0f} | "
                  f"{c:.2f} | {w / pw:.2f}x | {(c / pc if pc else float('nan')):.2f}x |")
    sys.stdout.flush()


def version_case(args, work: str) -> None:
    xdg = tempfile.mkdtemp(dir=work)
    env = {**os.environ, "XDG_CONFIG_HOME": f"{xdg}/config", "XDG_STATE_HOME": f"{xdg}/state",
           "XDG_CACHE_HOME": f"{xdg}/cache"}
    cmds: list[tuple[str, list[str], dict[str, str]]] = [("gdb --version", ["gdb", "--version"], env)]
    for name, argv, extra in tuidbg_cmds(args.baseline):
        cmds.append((f"{name} --version", [*argv, "--version"], {**env, **extra}))
        # (nothing cached, nothing can be: gdb and cuda-gdb asked every time)
        cmds.append((f"{name} --version, uncached", [*argv, "--version"],
                     {**env, **extra, "XDG_CACHE_HOME": "/dev/null/cache"}))
        cmds.append((f"{name} completion bash", [*argv, "completion", "bash"], {**env, **extra}))
    if shutil.which("cuda-gdb"):
        cmds.append(("cuda-gdb --version", ["cuda-gdb", "--version"], env))
    if args.only:
        cmds = [c for c in cmds if re.search(args.only, c[0])]
    rounds = max(args.rounds, 21)
    samples: dict[str, list[tuple[float, float]]] = {c[0]: [] for c in cmds}
    for r in range(rounds):
        for name, argv, e in cmds[r % len(cmds):] + cmds[:r % len(cmds)]:
            samples[name].append(run_cmd(argv, e))
    peer = statistics.median(w for w, _ in samples[cmds[0][0]])
    print(f"\n## version ({rounds} rounds, start to exit; ratio against {cmds[0][0]})")
    print("| command | wall ms | min | max | CPU ms | wall vs gdb --version |")
    print("|---|---|---|---|---|---|")
    for name, _, _ in cmds:
        walls = [w for w, _ in samples[name]]
        cpu = statistics.median(c for _, c in samples[name])
        w = statistics.median(walls)
        print(f"| `{name}` | {w * 1000:.1f} | {min(walls) * 1000:.1f} | {max(walls) * 1000:.1f} | {cpu * 1000:.0f} | "
              f"{w / peer:.2f}x |")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
