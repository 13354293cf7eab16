"""First stop in PyTorch: `break at::native::randn`, run, the stop on screen (issue 11, item 2).

Measured side by side, the tools taking turns in each round on the same program
(tests/programs/py/torch_randn.py under .venv-torch's Python, torch 2.13 CPU):

- ``python``: the program alone, start to exit (the moonshot's yardstick: tuidbg ≤ 2x this);
- ``gdb -batch``: bare gdb, start to its backtrace printed at the breakpoint (break, run, bt, kill);
- ``tuidbg``: ``tuidbg run`` in a real terminal (tmux, 160x48), start to the screen showing the
  stop: the C++ frames pane lists ``at::native::randn(c10…`` and the status line says stopped.

``--gdb-demangles`` adds "tuidbg --gdb-demangles": gdb demangling every C++ name as it reads a
library's symbols, as gdb -batch does (tuidbg's default leaves that to tuidbg: ``tuidbg.gdbext.cxxnames``).

``--baseline DIR`` (repeatable) adds "tuidbg (DIR's name)": the same run with the tuidbg package of
another tree (e.g. ``git archive HEAD~1 tuidbg keymaps themes | tar -x -C /tmp/before``), taking turns
with the others; every tuidbg then runs as ``python -P -m tuidbg`` with PYTHONPATH set to its tree.

Every tool starts from a fresh process each round; the page cache is warm for all of them (the
first, unmeasured round reads the libraries from disk). Goal: tuidbg ≤ 1.0x gdb -batch.

Usage: python bench/torch_first_stop.py [--rounds N] [--gdb-demangles] [--baseline DIR]...
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time

from common import REPO, ms, summary

TORCH_PY = REPO / ".venv-torch" / "bin" / "python"
PROG = REPO / "tests" / "programs" / "py" / "torch_randn.py"
TUIDBG = REPO / ".venv" / "bin" / "tuidbg"
BREAK = "at::native::randn"
# The screen is read every 20 ms: each read is a tmux process, and reading faster takes CPU from gdb
# (2 cores here); the figure is late by at most this much.
POLL = 0.02


def time_python() -> float:
    t0 = time.perf_counter()
    subprocess.run([str(TORCH_PY), str(PROG)], check=True, capture_output=True)
    return time.perf_counter() - t0


def time_gdb_batch() -> float:
    argv = ["gdb", "-nx", "-batch", "-ex", "set debuginfod enabled off", "-ex", "set breakpoint pending on",
            "-ex", f"break {BREAK}", "-ex", "run", "-ex", "bt", "-ex", "kill", "--args", str(TORCH_PY), str(PROG)]
    t0 = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL).stdout
    t = time.perf_counter() - t0
    if "#0 " not in out or "randn" not in out:
        raise SystemExit(f"gdb -batch did not stop in {BREAK}:\n{out[-2000:]}")
    return t


def time_tuidbg(sock: str, tree: str | None = None, extra: tuple[str, ...] = ()) -> float:
    def tmux(*args: str, check: bool = True) -> str:
        return subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", *args], capture_output=True, text=True,
                              check=check).stdout

    start = [str(TUIDBG)] if tree is None else [sys.executable, "-P", "-m", "tuidbg"]
    env = "" if tree is None else f"PYTHONPATH={shlex.quote(tree)} "
    cmd = env + " ".join(shlex.quote(a) for a in [
        *start, "run", "--nx", "--fresh", *extra, "--python", str(TORCH_PY), "-ex", f"break {BREAK}", str(PROG)])
    t0 = time.perf_counter()
    tmux("new-session", "-d", "-s", "fs", "-x", "160", "-y", "48", f"TERM=xterm-256color {cmd}")
    deadline = t0 + 120
    try:
        while time.perf_counter() < deadline:
            screen = tmux("capture-pane", "-p", "-t", "fs", check=False)
            if "randn(c10" in screen and "stopped: breakpoint" in screen:
                return time.perf_counter() - t0
            time.sleep(POLL)
        raise SystemExit(f"tuidbg did not show the stop in 120 s:\n{screen}")
    finally:
        tmux("kill-server", check=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--baseline", metavar="DIR", action="append", default=[],
                    help="another tree's tuidbg package, measured in the same rounds")
    ap.add_argument("--gdb-demangles", action="store_true",
                    help="also measure tuidbg --gdb-demangles (gdb demangling every name as it reads symbols)")
    args = ap.parse_args()
    trees = {"tuidbg": None if not args.baseline else str(REPO)}
    if args.gdb_demangles:
        trees["tuidbg --gdb-demangles"] = trees["tuidbg"]
    trees.update({f"tuidbg ({os.path.basename(os.path.abspath(d))})": os.path.abspath(d) for d in args.baseline})
    if not TORCH_PY.exists():
        raise SystemExit(f"no {TORCH_PY}: run scripts/setup.sh (it installs torch 2.13.0, CPU, there)")
    sock = f"bench-first-stop-{os.getpid()}"
    samples: dict[str, list[float]] = {"python": [], "gdb -batch": [], **{name: [] for name in trees}}
    time_python(), time_gdb_batch(), time_tuidbg(sock)  # warm the page cache for everyone
    for r in range(args.rounds):
        samples["python"].append(time_python())
        samples["gdb -batch"].append(time_gdb_batch())
        for i, (name, tree) in enumerate(trees.items()):  # (a tmux server of its own each)
            extra = ("--gdb-demangles",) if name.endswith("--gdb-demangles") else ()
            samples[name].append(time_tuidbg(f"{sock}-{i}", tree, extra))
        print(f"round {r + 1}: " + ", ".join(f"{k} {ms(v[-1])}" for k, v in samples.items()), file=sys.stderr)
    med = {k: summary(v)["median"] for k, v in samples.items()}
    for k, v in samples.items():
        s = summary(v)
        print(f"{k:12s} median {ms(s['median'])}  min {ms(s['min'])}  max {ms(max(v))}")
    for name in trees:
        print(f"{name} / gdb -batch: {med[name] / med['gdb -batch']:.2f}x;"
              f" {name} / python alone: {med[name] / med['python']:.2f}x")


if __name__ == "__main__":
    main()
