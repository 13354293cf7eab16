"""Engine overhead per stop: bare gdb over pipes vs the same MI sequence through tuidbg's engine.

Both drive the same gdb on a loop at the bottom of a 50-frame stack. One cycle is
``-exec-next`` -> ``*stopped`` -> ``-stack-list-frames`` (all 50 frames).

  bare      asyncio pipes, lines matched by string prefix, nothing parsed
  engine    DebugSession: pygdbmi parsing, token futures, reducer, state listeners
            (its automatic refresh after the stop is switched off, so both do the same work)
  engine+   the engine's real stop cycle: next, then its own refresh (threads, frames, locals)
  bare+     bare pipes sending the same commands as that refresh

Usage: python bench/mi_roundtrip.py [--cycles N]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from common import REPO, build, line_of, ms, summary

PROG = REPO / "bench" / "programs" / "loop50.c"


class Bare:
    """gdb over pipes with the least possible work: write a command, read lines until its answer."""

    def __init__(self) -> None:
        self.token = 0

    async def start(self, exe: str) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            "gdb", "--interpreter=mi3", "-q", "-nx", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, limit=64 * 1024 * 1024,
        )
        for cmd in ("-gdb-set mi-async on", "-gdb-set pagination off", "-gdb-set confirm off",
                    f"-file-exec-and-symbols {exe}", f"-break-insert {PROG}:{line_of(PROG, 'loop_a')}"):
            await self.cmd(cmd)
        await self.cmd("-exec-run")
        await self.until(lambda l: l.startswith("*stopped"))
        await self.cmd("-break-delete 1")

    async def until(self, pred) -> str:
        while True:
            line = (await self.proc.stdout.readline()).decode()
            if not line:
                raise RuntimeError("gdb exited")
            if pred(line):
                return line

    async def cmd(self, command: str) -> str:
        self.token += 1
        tok = str(self.token)
        self.proc.stdin.write(f"{tok}{command}\n".encode())
        await self.proc.stdin.drain()
        return await self.until(lambda l: l.startswith(tok + "^"))

    async def cycle(self, extra: list[str]) -> None:
        await self.cmd("-exec-next")
        await self.until(lambda l: l.startswith("*stopped"))
        for c in extra:
            await self.cmd(c)

    async def close(self) -> None:
        self.proc.stdin.write(b"-gdb-exit\n")
        await self.proc.stdin.drain()
        try:
            await asyncio.wait_for(self.proc.wait(), 5)
        except asyncio.TimeoutError:
            self.proc.kill()


async def engine_session(exe: str, auto_refresh: bool):
    from tuidbg.engine.debugger import new_session
    from tuidbg.engine.session import SessionConfig

    s = new_session(SessionConfig(mode="run", program=exe, nx=True, load_gdbext=False))
    s.extensions = []
    if not auto_refresh:
        s._start_refresh = lambda generation: None  # measure the engine's dispatch, not its refresh
    await s.start()
    await s.break_insert(file=str(PROG), line=line_of(PROG, "loop_a"))
    await s.launch()
    while not s.state.is_stopped:
        await asyncio.sleep(0.01)
    await s.wait_refreshed()
    await s.break_delete(s.state.breakpoints[0].number)
    return s


async def engine_cycle(s, full: bool) -> None:
    gen = s.state.generation
    await s.cmd("-exec-next")
    while not (s.state.is_stopped and s.state.generation > gen):
        await asyncio.sleep(0)
    if full:
        await s.wait_refreshed()
    else:
        await s.cmd("-stack-list-frames")


async def measure(cycles: int) -> None:
    exe = str(build("loop50"))
    refresh_cmds = ["-thread-info", "-stack-list-frames --thread 1 0 64",
                    "-stack-list-variables --thread 1 --frame 0 --skip-unavailable --simple-values"]
    results = {}
    for name in ("bare", "engine", "bare+", "engine+"):
        if name.startswith("bare"):
            b = Bare()
            await b.start(exe)
            extra = ["-stack-list-frames"] if name == "bare" else refresh_cmds
            for _ in range(5):
                await b.cycle(extra)
            samples = []
            for _ in range(cycles):
                t0 = time.perf_counter()
                await b.cycle(extra)
                samples.append(time.perf_counter() - t0)
            await b.close()
        else:
            full = name == "engine+"
            s = await engine_session(exe, auto_refresh=full)
            for _ in range(5):
                await engine_cycle(s, full)
            samples = []
            for _ in range(cycles):
                t0 = time.perf_counter()
                await engine_cycle(s, full)
                samples.append(time.perf_counter() - t0)
            assert len(s.state.frames) >= 50 or not full, len(s.state.frames)
            await s.close()
        results[name] = summary(samples)
    print(f"MI round trip, {cycles} cycles each, 50-frame stack (median / p90)")
    for name, r in results.items():
        print(f"  {name:8s} {ms(r['median']):>10s} {ms(r['p90']):>10s}")
    print(f"  engine / bare   = {results['engine']['median'] / results['bare']['median']:.2f}x "
          f"(+{ms(results['engine']['median'] - results['bare']['median'])} per stop)")
    print(f"  engine+ / bare+ = {results['engine+']['median'] / results['bare+']['median']:.2f}x "
          f"(+{ms(results['engine+']['median'] - results['bare+']['median'])} per stop, full refresh)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=200)
    args = ap.parse_args()
    asyncio.run(measure(args.cycles))


if __name__ == "__main__":
    main()
