"""gdb's memory when tuidbg attaches, against plain ``gdb -p`` in the same run (issue 11, item 4).

The target: Debian's stripped /usr/bin/python3.11 sleeping in a loop (libc6-dbg installed, as the
setup script does). Each tool attaches to a fresh one and gdb's resident memory (VmRSS) is read
once the stop is shown:

- plain gdb: ``gdb -nx -p PID -ex "thread apply all bt"``, read 2 s after the backtrace;
- tuidbg attach: the TUI, headless (Textual's test driver, same code), attached with the Python
  agent, read once the attach stop's panes show the Python frames and 1 s has passed (the user's
  Python frame is selected, its locals shown; libc's frame 0 is not, and its locals are not read);
- tuidbg run with a Python breakpoint: the TUI stopped by the agent at the breakpoint, read 1 s
  after the Python frame's locals are shown (native frame 0 is the agent's stop function, which
  has no debug info).

What the difference was (bisected over the MI commands tuidbg sends): ``-stack-list-variables
--simple-values`` on libc's ``clock_nanosleep`` frame at the attach stop. Printing the type of its
argument ``req`` (``const struct timespec *``) makes gdb expand libc6-dbg's debug info: plain gdb's
``whatis req`` costs the same 28 MiB, ``info locals`` (values, no types) nothing.

Usage: python bench/gdb_memory.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
PY = "/usr/bin/python3.11"


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def sleeper() -> subprocess.Popen:
    p = subprocess.Popen([PY, "-c", "import time\ndef wait():\n    while True: time.sleep(0.2)\nwait()"])
    time.sleep(0.5)
    return p


def plain_gdb() -> float:
    target = sleeper()
    try:
        g = subprocess.Popen(["gdb", "-nx", "-q", "-p", str(target.pid), "-ex", "thread apply all bt",
                              "-ex", "python import time; time.sleep(4)", "-ex", "detach", "-ex", "quit"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(3.0)
        r = rss_mib(g.pid)
        g.wait(30)
        return r
    finally:
        target.kill()
        target.wait()


async def tuidbg_gdb() -> float:
    from tuidbg.engine.debugger import new_session
    from tuidbg.engine.session import SessionConfig
    from tuidbg.ui.app import TuidbgApp

    target = sleeper()
    try:
        s = new_session(SessionConfig(mode="attach", pid=target.pid, nx=True, python_target=True, agent=True))
        app = TuidbgApp(s)
        async with app.run_test(size=(160, 48)) as pilot:
            deadline = time.monotonic() + 60
            while not (app.state.is_stopped and app.state.python.stack is not None):
                if time.monotonic() > deadline:
                    raise RuntimeError("no stop with Python frames")
                await pilot.pause(0.05)
            await pilot.pause(1.0)
            r = rss_mib(s._gdb_pid())
            await s.close()
        return r
    finally:
        target.kill()
        target.wait()


async def tuidbg_run_breakpoint() -> float:
    from tuidbg.engine.debugger import new_session
    from tuidbg.engine.session import SessionConfig
    from tuidbg.ui.app import TuidbgApp

    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "prog.py"
        script.write_text("import time\n\ndef work(n):\n    total = n * 2\n    return total\n\n"
                          "time.sleep(0.2)\nwork(21)\n")
        s = new_session(SessionConfig(mode="run", program=PY, args=[str(script)], nx=True, python_target=True,
                                      agent=True, ex=[f"break {script}:4"]))
        app = TuidbgApp(s)
        async with app.run_test(size=(160, 48)) as pilot:
            deadline = time.monotonic() + 60
            while not (app.state.is_stopped and app.state.python.stop is not None and app.py_sel is not None):
                if time.monotonic() > deadline:
                    raise RuntimeError("no stop at the Python breakpoint")
                await pilot.pause(0.05)
            await pilot.pause(1.0)
            r = rss_mib(s._gdb_pid())
            await s.close()
        return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    plain, ours, run = [], [], []
    for _ in range(args.runs):  # interleaved
        plain.append(plain_gdb())
        ours.append(asyncio.run(tuidbg_gdb()))
        run.append(asyncio.run(tuidbg_run_breakpoint()))
    p = statistics.median(plain)
    print(f"plain gdb -p + bt                    median {p:6.1f} MiB  {[round(x, 1) for x in plain]}")
    for label, xs in (("tuidbg attach, the attach stop shown", ours), ("tuidbg run, at a Python breakpoint", run)):
        o = statistics.median(xs)
        print(f"{label:<36} median {o:6.1f} MiB  {[round(x, 1) for x in xs]}  {o - p:+.1f} MiB ({o / p:.2f}x)")


if __name__ == "__main__":
    main()
