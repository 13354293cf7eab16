"""MI parser linearity (issue 9): ``mi.parse_line`` against the parser before issue 9.

For each record kind, one line of 1 KB, 10 KB, 100 KB, 1 MB and 10 MB is timed
through ``tuidbg.engine.mi.parse_line`` (new) and through the parser tuidbg had
before (tests/mi_reference.py: pygdbmi's ``unescape`` and ``parse_response``
behind the old regex pre-check), in the same run. The old parser runs in a child
process with a time cap (``--cap``, 10 s): a quadratic case is reported as
"> cap" and its larger sizes are not run. Where the old parser finishes, the
child also checks that both give the same record.

Goal: time per MB flat from 1 KB to 10 MB for every kind. "growth" is the time
per MB at 10 MB over the smallest time per MB at any size (1.0 = linear; a
fixed per-line cost makes the small sizes dearer per MB, never the large ones).

Then each 10 MB line is parsed as the client does it (in a worker thread, the
event loop running a 1 ms timer): the longest gap between the timer's ticks is
how long the loop stood still. Baseline in the same run: the same timer while
the loop has nothing else to do.

    .venv/bin/python bench/mi_parse.py [--cap SECONDS] [--kinds console,stack]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from tuidbg.engine import mi  # noqa: E402

SIZES = [1_000, 10_000, 100_000, 1_000_000, 10_000_000]


def _fill(unit: str, size: int) -> str:
    """``unit`` repeated to about ``size`` characters (whole units)."""
    return unit * max(1, size // len(unit))


def _hex_text(size: int) -> str:
    # What gdb sends for `output/x big_array` with `print elements unlimited`.
    return "{" + _fill("0x1f, 0x7, 0xe, 0x15, ", size)[:-2] + "}"


def _frames(size: int) -> str:
    one = 'frame={level="%d",addr="0x00005555555551a9",func="recurse",file="deep.c",fullname="/src/deep.c",line="12",arch="i386:x86-64"}'
    n = max(1, size // (len(one % 1000) + 1))
    return ",".join(one % i for i in range(n))


def _args(size: int) -> str:
    one = '{name="a%d",value="0x%08x"}'
    n = max(1, size // (len(one % (1000, 1000)) + 1))
    return ",".join(one % (i, i) for i in range(n))


# kind: (what the line is, how to build a line of about `size` characters)
KINDS = {
    "console": (
        '~"{0x1f, 0x7, ...}" (output/x of a char array: no escape)',
        lambda size: '~"' + _hex_text(size) + '"',
    ),
    "log": (
        '&"..." (a message quoting names: \\" every 40 chars, \\n at the end)',
        lambda size: '&"' + _fill('No symbol \\"counter_value\\" in scope; ', size) + '\\n"',
    ),
    "target": (
        '@"..." (program output: UTF-8 as octal escapes, \\n every 60 chars)',
        lambda size: '@"' + _fill("step 42: caf\\303\\251 loss=0.125 acc=0.5 lr=1e-3 ok\\n", size) + '"',
    ),
    "result-string": (
        '^done,value="0x4010 \\"aaa...\\"" (a char array printed as a string)',
        lambda size: '^done,value="0x4010 <big_string> \\"' + _fill("abcdefghij", size) + '\\""',
    ),
    "result-list": (
        "^done,stack=[frame={...},...] (a deep stack, 7 fields a frame)",
        lambda size: "^done,stack=[" + _frames(size) + "]",
    ),
    "async": (
        '*stopped,...,frame={...,args=[{name,value},...]},... (a frame with many arguments)',
        lambda size: '*stopped,reason="breakpoint-hit",disp="keep",bkptno="1",frame={addr="0x1149",func="f",args=['
        + _args(size)
        + '],file="a.c",fullname="/src/a.c",line="3",arch="i386:x86-64"},thread-id="1",stopped-threads="all",core="0"',
    ),
    "bare-string": (
        '^done,"..." (cuda-gdb 11.8\'s bare string: text without escapes, \\n at the end)',
        lambda size: '^done,"' + _fill("Focus not set on any active CUDA kernel. ", size) + '\\n"',
    ),
}


def _time(fn, line: str, budget: float = 0.3, runs: int = 5) -> float:
    """Median seconds per call over ``runs`` batches (each batch about budget/runs long)."""
    t0 = time.perf_counter()
    fn(line)
    once = time.perf_counter() - t0
    if once > budget / 2:
        samples = [once] + [_timed(fn, line, 1) for _ in range(2)]
        return statistics.median(samples)
    number = max(1, int(budget / runs / max(once, 1e-7)))
    return statistics.median(_timed(fn, line, number) for _ in range(runs))


def _timed(fn, line: str, number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn(line)
    return (time.perf_counter() - t0) / number


def _same(a, b) -> bool:
    return (a is None) == (b is None) and (a is None or (a.kind, a.cls, a.token, a.payload) == (b.kind, b.cls, b.token, b.payload))


def _old_child(kind: str, size: int, conn) -> None:
    from mi_reference import old_parse_line

    line = KINDS[kind][1](size)
    conn.send("built")
    t0 = time.perf_counter()
    rec = old_parse_line(line)
    once = time.perf_counter() - t0
    conn.send(once if once > 0.5 else _time(old_parse_line, line, runs=3))
    conn.send(_same(rec, mi.parse_line(line)))
    conn.close()


def _old(kind: str, size: int, cap: float) -> tuple[float | None, bool | None]:
    """(seconds per call, same record) of the old parser, or (None, None) past the cap."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_old_child, args=(kind, size, child))
    proc.start()
    child.close()
    t_old = same = None
    if parent.poll(120) and parent.recv() == "built" and parent.poll(cap):
        t_old = parent.recv()
        same = parent.recv() if parent.poll(120) else None
    if proc.is_alive():
        proc.kill()
    proc.join()
    return t_old, same


async def _loop_stall(line: str | None) -> tuple[float, float]:
    """(seconds the parse took in a worker thread, longest gap between 1 ms timer ticks)."""
    gaps: list[float] = []
    done = False

    async def ticker() -> None:
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.ensure_future(ticker())
    await asyncio.sleep(0.02)
    t0 = time.perf_counter()
    if line is None:
        await asyncio.sleep(0.5)
    else:
        await asyncio.get_running_loop().run_in_executor(None, mi.parse_line, line)
    took = time.perf_counter() - t0
    done = True
    await task
    return took, max(gaps)


def _fmt_ms(t: float | None, cap: float) -> str:
    return f"> {cap:.0f} s" if t is None else f"{t * 1e3:.3f}" if t < 0.01 else f"{t * 1e3:.1f}"


def _fmt_size(n: int) -> str:
    return f"{n / 1e6:.0f} MB" if n >= 1_000_000 else f"{n / 1e3:.0f} KB"


def _fmt_per_mb(t: float) -> str:
    ms = t * 1e3
    return f"{ms:.3f}" if ms < 1 else f"{ms:.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cap", type=float, default=10.0, help="seconds the old parser may take on one line (default 10)")
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated kinds (default: all)")
    args = ap.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        print(f"mi_parse.py: unknown kind {unknown[0]!r} (known: {', '.join(KINDS)})", file=sys.stderr)
        return 2

    print("| kind | line (about) | new ms | new ms/MB | old ms | old ms/MB | old/new | same record |")
    print("|---|---|---|---|---|---|---|---|")
    summary = []
    for kind in kinds:
        per_mb = {}
        old_over = False
        for size in SIZES:
            line = KINDS[kind][1](size)
            rec = mi.parse_line(line)
            assert rec is not None and rec.kind != mi.TEXT, f"{kind}: {rec.error if rec else 'empty'}"
            mb = len(line) / 1e6
            t_new = _time(mi.parse_line, line)
            per_mb[size] = t_new / mb
            if old_over:
                t_old, same = None, None
            else:
                t_old, same = _old(kind, size, args.cap)
                old_over = t_old is None
            ratio = "" if t_old is None else f"{t_old / t_new:.1f}x"
            same_s = "" if same is None else ("yes" if same else "NO")
            print(
                f"| {kind} | {_fmt_size(size)} | {_fmt_ms(t_new, args.cap)} | {_fmt_per_mb(t_new / mb)} "
                f"| {_fmt_ms(t_old, args.cap)} | {'' if t_old is None else _fmt_per_mb(t_old / mb)} | {ratio} | {same_s} |",
                flush=True,
            )
        growth = per_mb[SIZES[-1]] / min(per_mb.values())
        summary.append((kind, min(per_mb.values()), per_mb[SIZES[-1]], growth))

    print()
    print("| kind | new ms/MB, best size | new ms/MB at 10 MB | growth |")
    print("|---|---|---|---|")
    for kind, best, last, growth in summary:
        print(f"| {kind} | {_fmt_per_mb(best)} | {_fmt_per_mb(last)} | {growth:.2f} |")
    print()
    for kind in kinds:
        print(f"{kind}: {KINDS[kind][0]}")
    print()
    print("| 10 MB line, parsed in the client's worker thread | parse ms | longest event-loop stall ms |")
    print("|---|---|---|")
    _, idle = asyncio.run(_loop_stall(None))
    print(f"| (baseline: idle loop, 0.5 s) | | {idle * 1e3:.1f} |")
    for kind in kinds:
        took, gap = asyncio.run(_loop_stall(KINDS[kind][1](SIZES[-1])))
        print(f"| {kind} | {took * 1e3:.0f} | {gap * 1e3:.1f} |", flush=True)
    print()
    bad = [k for k, _, _, g in summary if g > 2.0]
    print(f"\nlinear (growth <= 2) for every kind: {'yes' if not bad else 'NO: ' + ', '.join(bad)}")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
