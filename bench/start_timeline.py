#!/usr/bin/env python3
"""Where ``tuidbg run``'s start goes: a timeline from the process's start to its first screen writes (issue 31).

Runs ``tuidbg ARGS`` in tmux (120x40) from this checkout, with hooks (this file, run as the tuidbg process)
that note the time since the process started (wall) and the process's CPU time at: the imports of asyncio,
the session, Textual and the screen's code (begin, end); gdb's spawn; each MI command of the session's start
and its answer; the app's __init__, compose and on_mount; and the screen's first writes to the terminal.
Nothing of tuidbg is changed (the hooks wrap its functions from outside); the hooks cost a little time.

Usage: .venv/bin/python bench/start_timeline.py [--wait 5] -- run -- /bin/true
       (prints the timeline; ``--raw`` writes every hooked moment, not only the main ones)
"""

from __future__ import annotations

import os
import sys
import time

MAIN_MOMENTS = ("cli imported", "import begin asyncio", "import end tuidbg.engine.debugger", "gdb spawn",
                "< -gdb-version", "start_session done", "import begin textual", "import end tuidbg.ui.app",
                "App init", "compose", "on_mount start", "on_mount end", "first write", "< -exec-run")


def _hooked() -> int:
    """In the tuidbg process: set the hooks, run tuidbg's main, write the moments to TIMELINE_OUT at exit."""
    import atexit
    import importlib.abc
    import importlib.machinery
    import threading

    with open("/proc/self/stat") as f:
        st = f.read()
    started = int(st[st.rindex(")") + 2:].split()[19]) / os.sysconf("SC_CLK_TCK")
    base = time.perf_counter() - (time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    events: list[tuple[float, float, str, str]] = []

    def dump():
        with open(os.environ["TIMELINE_OUT"] + ".tmp", "w") as f:
            for wall, cpu, thread, what in events:
                f.write(f"{wall:.1f}\t{cpu:.1f}\t{thread}\t{what}\n")
        os.replace(os.environ["TIMELINE_OUT"] + ".tmp", os.environ["TIMELINE_OUT"])

    painted = []

    def mark(what: str) -> None:
        events.append(((time.perf_counter() - base) * 1000, time.process_time() * 1000,
                       threading.current_thread().name[:10], what))
        if painted:
            dump()  # (kept as it goes once the screen is up: a hang-up ends tuidbg without its atexit handlers)

    watched = ("asyncio", "tuidbg.engine.debugger", "tuidbg.engine.session", "textual", "textual.app", "tuidbg.ui.app")
    patches = {}

    class Hook(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name not in watched and name not in patches:
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is None or spec.loader is None:
                return spec
            run = spec.loader.exec_module

            def exec_module(mod, run=run, name=name):
                mark("import begin " + name)
                run(mod)
                mark("import end " + name)
                if name in patches:
                    patches[name](mod)

            spec.loader.exec_module = exec_module
            return spec

    def transport(m):
        start = m.SubprocessTransport.start

        async def hooked(self):
            mark("gdb spawn")
            await start(self)

        m.SubprocessTransport.start = hooked

    def session(m):
        cmd = m.DebugSession.cmd

        async def hooked(self, c, *a, **k):
            mark("> " + c[:60])
            r = await cmd(self, c, *a, **k)
            mark("< " + c.split(" ", 1)[0] if c.startswith("-exec") or c.startswith("-gdb-version") else "< " + c[:40])
            return r

        m.DebugSession.cmd = hooked

    def app(m):
        cls = m.TuidbgApp
        init, compose, on_mount = cls.__init__, cls.compose, cls.on_mount

        def h_init(self, *a, **k):
            mark("App init")
            init(self, *a, **k)

        def h_compose(self):
            mark("compose")
            yield from compose(self)

        def h_on_mount(self):
            mark("on_mount start")
            on_mount(self)
            mark("on_mount end")
            drv = self._driver
            write = drv.write
            n = [0]

            def w(data):
                n[0] += 1
                if n[0] <= 6:
                    painted.append(True)
                    mark("first write" if n[0] == 1 else f"write {n[0]}")
                return write(data)

            drv.write = w

        cls.__init__, cls.compose, cls.on_mount = h_init, h_compose, h_on_mount

    patches.update({"tuidbg.engine.transport": transport, "tuidbg.engine.session": session, "tuidbg.ui.app": app})
    sys.meta_path.insert(0, Hook())
    import tuidbg.cli as cli

    mark("cli imported")
    start_session = cli.start_session

    async def h_start_session(cfg):
        s = await start_session(cfg)
        mark("start_session done")
        return s

    cli.start_session = h_start_session

    atexit.register(dump)
    sys.argv[0] = "tuidbg"
    return cli.main(sys.argv[1:])


def main() -> int:
    import argparse
    import shlex
    import subprocess
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wait", type=float, default=5.0,
                    help="seconds before the terminal goes away (the start must be over by then)")
    ap.add_argument("--raw", action="store_true")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    work = tempfile.mkdtemp(prefix="bench-timeline-")
    out = os.path.join(work, "timeline.tsv")
    sock = f"bench-timeline-{os.getpid()}"
    env = f"LANG=C.UTF-8 TERM=xterm-256color TIMELINE_OUT={out} PYTHONPATH={shlex.quote(repo)} " \
          f"XDG_STATE_HOME={work}/state XDG_CACHE_HOME={work}/cache"
    cmd = f"{env} {shlex.quote(sys.executable)} -P {shlex.quote(os.path.abspath(__file__))} --hooked " + \
          " ".join(shlex.quote(x) for x in args)
    tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-s", "b", "-x", "120", "-y", "40", "-c", work, cmd], check=True)
    try:
        time.sleep(a.wait)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)  # (tuidbg quits on the hang-up, as on q)
    deadline = time.monotonic() + 30
    while not os.path.exists(out) and time.monotonic() < deadline:
        time.sleep(0.1)
    with open("/proc/loadavg") as f:
        print(f"load average {' '.join(f.read().split()[:3])}")
    print(f"{'wall ms':>8} {'CPU ms':>8}  {'thread':10} moment")
    with open(out) as f:
        for line in f:
            wall, cpu, thread, what = line.rstrip("\n").split("\t")
            if a.raw or any(what.startswith(m) for m in MAIN_MOMENTS):
                print(f"{float(wall):8.1f} {float(cpu):8.1f}  {thread:10} {what}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--hooked"]:
        del sys.argv[1]
        sys.exit(_hooked())
    sys.exit(main())
