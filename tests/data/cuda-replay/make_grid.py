#!/usr/bin/env python3
"""Synthesizes a cuda-gdb 12.8 MI transcript of a 1M-thread grid (written to memory, or to a file).

SYNTHESIZED, NOT CAPTURED: no GPU was available. The lines follow cuda-gdb's
formatting rules as read in its source (gdb/cuda/cuda-commands.c,
cuda-coords.c, cuda-bitset.c, infrun.c; see make_transcripts.py, whose
formatting helpers this script uses), and its coalescing rule: threads taken in
logical order (x fastest, 12.x), a new range whenever the next thread is not the
logical successor or its PC differs.

The program: ``scale<<<(4096,1,1),(256,1,1)>>>`` (1,048,576 threads) on an
H100 SXM (132 SMs). As on a real GPU only resident blocks are reported: by
default blocks 2048..3103 (8 blocks of 256 threads per SM, 132 SMs = 1,056
blocks, 270,336 threads), the earlier blocks having finished. Block ``b`` runs
on SM ``(b-2048) % 132``, warps ``8*slot .. 8*slot+7``. The warps are spread
over several PCs so that the coalesced threads table has thousands of ranges:

- blocks with b % 5 == 0 wait at ``__syncthreads()`` (line 18);
- blocks with b % 5 == 1 are past it, at the breakpoint line 19;
- the others are before the barrier, two warps each at line 14 (loop head),
  line 12 (load), line 18 (barrier), and two divergent warps whose lanes 0-15
  are in ``slow()`` (line 4) and lanes 16-31 at line 16 (the order rotates with
  the block).

``--resident 4096`` makes a STRESS variant with every block resident, which no
GPU can hold (its SM/warp numbers are not realistic); the benchmark uses it to
show how the engine scales, never as real data.

The session: start-up, a breakpoint at scale.cu:19, run, the stop and the
refresh, a focus switch to block (3000,0,0) thread (77,0,0), one block's
threads uncoalesced, then (``second_stop``) a second breakpoint hit in another
block, and exit.

Usage: python make_grid.py [--resident N] [--second-stop] OUT
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from make_transcripts import (  # noqa: E402
    P128,
    PROMPT,
    Raw,
    T,
    blocks_coalesced,
    console,
    dim,
    done,
    exit_normally,
    hex16,
    library,
    mi_value,
    results,
    startup,
    table,
    threads_coalesced,
    threads_uncoalesced,
)

GRID = 4096
BLOCK = 256
NSMS = 132
SRC = "/home/user/proj/scale.cu"
EXE = "/home/user/proj/scale"
PC = {
    4: 0x00007FFFCF2590F0,  # slow()
    12: 0x00007FFFCF259230,
    14: 0x00007FFFCF2592B0,
    16: 0x00007FFFCF259370,
    18: 0x00007FFFCF2593F0,
    19: 0x00007FFFCF259430,
}
ARGS = [{"name": "x", "value": "0x7fff80000000"}, {"name": "n", "value": "1048576"}, {"name": "iters", "value": "64"}]
INVOCATION = "scale(x=0x7fff80000000, n=1048576, iters=64)"


class Grid:
    def __init__(self, resident: int = 1056) -> None:
        self.first = GRID - resident if resident >= GRID else 2048
        self.resident = min(resident, GRID - self.first)
        self.blocks = range(self.first, self.first + self.resident)

    def place(self, b: int, t: int) -> tuple[int, int, int, int]:
        """(sm, warp, lane, slot) of thread t of block b."""
        k = b - self.first
        sm = k % NSMS
        slot = k // NSMS
        return sm, (slot * 8 + t // 32) % 64, t % 32, slot

    def line(self, b: int, t: int) -> int:
        if b % 5 == 0:
            return 18
        if b % 5 == 1:
            return 19
        w = t // 32
        kinds = ["loop", "div", "load", "sync"]
        rot = b % 4
        kind = kinds[((w // 2) + rot) % 4]
        if kind == "loop":
            return 14
        if kind == "load":
            return 12
        if kind == "sync":
            return 18
        return 4 if t % 32 < 16 else 16

    def ranges(self, focus: tuple[int, int] | None, only_block: int | None = None) -> list[list[str]]:
        rows: list[list[str]] = []
        cur = None
        for b in self.blocks if only_block is None else (only_block,):
            for t in range(BLOCK):
                ln = self.line(b, t)
                if cur is not None and cur[4] == ln:
                    cur[2], cur[3] = b, t
                    cur[5] += 1
                    cur[6] = cur[6] or focus == (b, t)
                    continue
                cur = [b, t, b, t, ln, 1, focus == (b, t)]
                rows.append(cur)  # type: ignore[arg-type]
        out = []
        for fb, ft, lb, lt, ln, n, c in rows:  # type: ignore[misc]
            fname = SRC
            out.append(["*" if c else " ", "0", dim(fb), dim(ft), dim(lb), dim(lt), str(n), hex16(PC[ln]), fname, str(ln)])
        return out

    def total(self) -> int:
        return self.resident * BLOCK


def focus_of(g: Grid, b: int, t: int) -> dict:
    sm, warp, lane, _ = g.place(b, t)
    return {
        "device": "0",
        "sm": str(sm),
        "warp": str(warp),
        "lane": str(lane),
        "kernel": "0",
        "grid": "1",
        "blockIdx": dim(b),
        "threadIdx": dim(t),
    }


def frame(line: int, level: int | None = None, args: bool = True) -> dict:
    f: dict = {}
    if level is not None:
        f["level"] = str(level)
    f["addr"] = hex16(PC[line])
    f["func"] = "scale" if line != 4 else "slow"
    if args:
        f["args"] = ARGS
    f.update({"file": "scale.cu", "fullname": SRC, "line": str(line), "arch": "m68k"})
    return f


def h100_devices() -> str:
    from make_transcripts import cols_devices

    mask = P128.sm_mask(range(NSMS), NSMS)
    rows = [["*", "0", "1b:00.0", "NVIDIA H100 80GB HBM3", "GH100", "sm_90", str(NSMS), "64", "32", "255", mask]]
    return table("InfoCudaDevicesTable", "InfoCudaDevicesRow", cols_devices(P128), rows)


def kernel_table() -> str:
    from make_transcripts import kernels

    return kernels(
        P128,
        [
            {
                "current": "*",
                "kernel": "0",
                "device": "0",
                "grid": "1",
                "status": "Active",
                "sms_mask": P128.sm_mask(range(NSMS), NSMS),
                "gridDim": dim(GRID, 1, 1),
                "blockDim": dim(BLOCK, 1, 1),
                "invocation": INVOCATION,
            }
        ],
    )


def lanes_of(g: Grid, b: int, t: int) -> str:
    cols = [
        ("current", " ", "1"),
        ("lane", "Ln", "1"),
        ("state", "State", "0"),
        ("physical_pc", "PC", "0"),
        ("threadIdx", "ThreadIdx", "1"),
        ("exception", "Exception", "0"),
    ]
    base = (t // 32) * 32
    lines = {g.line(b, base + ln) for ln in range(32)}
    rows = []
    for ln in range(32):
        th = base + ln
        state = "divergent" if len(lines) > 1 and g.line(b, th) != g.line(b, t) else "active"
        rows.append(["*" if th == t else " ", str(ln), state, hex16(PC[g.line(b, th)]), dim(th), "None"])
    return table("InfoCudaLanesTable", "InfoCudaLanesRow", cols, rows)


def bkpt(times: int, device: bool) -> dict:
    locs = [
        {
            "number": "1.1",
            "enabled": "n",
            "addr": "0x0000000000009130" if not device else "0x000055555555d130",
            "func": "scale(float*, int, int)",
            "file": SRC,
            "fullname": SRC,
            "line": "20",
            "thread-groups": ["i1"],
        }
    ]
    if device:
        locs.append(
            {
                "number": "1.2",
                "enabled": "y",
                "addr": hex16(PC[19]),
                "func": "scale(float*, int, int)",
                "file": SRC,
                "fullname": SRC,
                "line": "19",
                "thread-groups": ["i1"],
            }
        )
    return {
        "number": "1",
        "type": "breakpoint",
        "disp": "keep",
        "enabled": "y",
        "addr": "<MULTIPLE>",
        "times": str(times),
        "original-location": f"-source {SRC} -line 19",
        "locations": locs,
    }


def stop_at(g: Grid, b: int, t: int) -> str:
    payload = {"CudaFocus": focus_of(g, b, t), "reason": "breakpoint-hit", "disp": "keep", "bkptno": "1", "locno": "2", "frame": frame(19)}
    payload.update({"thread-id": "1", "stopped-threads": "all", "core": "11"})
    return "*stopped," + results(payload)


LOCALS = [
    {"name": "x", "arg": "1", "type": "float *", "value": "0x7fff80000000"},
    {"name": "n", "arg": "1", "type": "int", "value": "1048576"},
    {"name": "iters", "arg": "1", "type": "int", "value": "64"},
    {"name": "i", "type": "int", "value": "525056"},
    {"name": "v", "type": "float", "value": "0.75"},
]

THREADS = [
    {
        "id": "1",
        "target-id": "Thread 0x7ffff7a4a000 (LWP 5151)",
        "name": "scale",
        "frame": {"level": "0", "addr": "0x00007ffff7d1e9d7", "func": "ioctl", "args": [], "from": "/lib/x86_64-linux-gnu/libc.so.6", "arch": "i386:x86-64"},
        "state": "stopped",
        "core": "11",
    },
    {
        "id": "2",
        "target-id": "Thread 0x7ffff4fff000 (LWP 5155)",
        "name": "cuda-EvtHandlr",
        "frame": {"level": "0", "addr": "0x00007ffff7d1dbcf", "func": "poll", "args": [], "from": "/lib/x86_64-linux-gnu/libc.so.6", "arch": "i386:x86-64"},
        "state": "stopped",
        "core": "3",
    },
]


def refresh(t: T, g: Grid, b: int, th: int, with_threads: bool = True) -> None:
    t.cmd("-thread-info", done({"threads": THREADS, "current-thread-id": "1"}))
    t.cmd("-stack-list-frames 0 64", done({"stack": Raw("[frame=" + mi_value(frame(g.line(b, th), level=0, args=False)) + "]")}))
    t.cmd("-stack-list-variables --skip-unavailable --simple-values", done({"variables": LOCALS}))
    t.cmd("-cuda-info-devices", done(raw=h100_devices()))
    t.cmd("-cuda-info-kernels", done(raw=kernel_table()))
    t.cmd(
        "-cuda-info-blocks kernel 0",
        done(raw=blocks_coalesced([("*", "0", dim(g.first), dim(g.first + g.resident - 1), str(g.resident), "running")])),
    )
    if with_threads:
        t.cmd("-cuda-info-threads kernel 0", done(raw=threads_coalesced(P128, g.ranges((b, th)))))
    sm, warp, _, _ = g.place(b, th)
    t.cmd(f"-cuda-info-lanes device 0 sm {sm} warp {warp}", done(raw=lanes_of(g, b, th)))


FIRST_STOP = (2051, 0)  # the first resident block past the barrier (2051 % 5 == 1)
SWITCH_TO = (3000, 77)
SECOND_STOP = (2056, 0)


def generate(resident: int = 1056, second_stop: bool = False) -> str:
    g = Grid(resident)
    stress = resident >= GRID
    what = [
        f"SYNTHESIZED, not captured: a 1M-thread grid, scale<<<({GRID},1,1),({BLOCK},1,1)>>>, mimicking cuda-gdb 12.8 (gdb 13 based).",
        "Made by tests/data/cuda-replay/make_grid.py following cuda-gdb's formatting and coalescing rules",
        "(gdb/cuda/cuda-commands.c, cuda-coords.c, cuda-bitset.c); see that script for the scenario.",
        f"Resident blocks {g.first}..{g.first + g.resident - 1} ({g.total():,} threads).",
    ]
    if stress:
        what.append("STRESS VARIANT: every block resident, which no GPU holds; SM/warp numbers are not realistic.")
    t = T(what + [""])
    startup(t, P128, program=EXE)
    t.cmd(f'-break-insert -f --source "{SRC}" --line 19', done({"bkpt": bkpt(0, False)}))
    bl = {
        "BreakpointTable": {
            "nr_rows": "1",
            "nr_cols": "6",
            "hdr": [
                {"width": "7", "alignment": "-1", "col_name": "number", "colhdr": "Num"},
                {"width": "14", "alignment": "-1", "col_name": "type", "colhdr": "Type"},
                {"width": "4", "alignment": "-1", "col_name": "disp", "colhdr": "Disp"},
                {"width": "3", "alignment": "-1", "col_name": "enabled", "colhdr": "Enb"},
                {"width": "18", "alignment": "-1", "col_name": "addr", "colhdr": "Address"},
                {"width": "40", "alignment": "2", "col_name": "what", "colhdr": "What"},
            ],
            "body": Raw("[bkpt=" + mi_value(bkpt(0, False)) + "]"),
        }
    }
    t.cmd("-break-list", done(bl))
    b0, t0 = FIRST_STOP
    t.cmd(
        "-exec-run",
        '=thread-group-started,id="i1",pid="5151"',
        '=thread-created,id="1",group-id="i1"',
        library("/lib64/ld-linux-x86-64.so.2", "0x00007ffff7fc5090", "0x00007ffff7fee335"),
        "^running",
        '*running,thread-id="all"',
        PROMPT,
        library("/lib/x86_64-linux-gnu/libcuda.so.1", "0x00007ffff5a3e480", "0x00007ffff5d8c1f5"),
        '=thread-created,id="2",group-id="i1"',
        console("[New Thread 0x7ffff4fff000 (LWP 5155)]\n"),
        "=breakpoint-modified," + results({"bkpt": bkpt(0, True)}),
        "=breakpoint-modified," + results({"bkpt": bkpt(1, True)}),
        console("\n"),
        console(f"CUDA thread hit Breakpoint 1.2, scale<<<({GRID},1,1),({BLOCK},1,1)>>> ({INVOCATION[6:-1]}) at scale.cu:19\n"),
        console("19\t    x[i] = v;\n"),
        stop_at(g, b0, t0),
        PROMPT,
    )
    refresh(t, g, b0, t0)
    sb, st = SWITCH_TO
    t.cmd(
        f"-cuda-focus-switch block ({sb},0,0) thread ({st},0,0)",
        done({"CudaFocus": focus_of(g, sb, st), "frame": frame(g.line(sb, st))}),
    )
    t.cmd("-stack-list-frames 0 64", done({"stack": Raw("[frame=" + mi_value(frame(g.line(sb, st), level=0, args=False)) + "]")}))
    t.cmd("-stack-list-variables --skip-unavailable --simple-values", done({"variables": LOCALS}))
    sm, warp, _, _ = g.place(sb, st)
    t.cmd(f"-cuda-info-lanes device 0 sm {sm} warp {warp}", done(raw=lanes_of(g, sb, st)))
    # one block's threads, uncoalesced
    t.cmd("-gdb-show cuda coalescing", done({"value": "auto"}))
    t.cmd("-gdb-set cuda coalescing off", done())
    rows = []
    for th in range(BLOCK):
        s_, w_, l_, _ = g.place(sb, th)
        ln = g.line(sb, th)
        rows.append(["*" if th == st else " ", "0", dim(sb), dim(th), hex16(PC[ln]), "0", str(s_), str(w_), str(l_), SRC, str(ln)])
    t.cmd(f"-cuda-info-threads kernel 0 block ({sb},0,0)", done(raw=threads_uncoalesced(P128, rows)))
    t.cmd("-gdb-set cuda coalescing auto", done())
    if second_stop:
        b2, t2 = SECOND_STOP
        t.cmd(
            "-exec-continue",
            "^running",
            '*running,thread-id="all"',
            PROMPT,
            "=breakpoint-modified," + results({"bkpt": bkpt(2, True)}),
            console("\n"),
            console(f"CUDA thread hit Breakpoint 1.2, scale<<<({GRID},1,1),({BLOCK},1,1)>>> ({INVOCATION[6:-1]}) at scale.cu:19\n"),
            console("19\t    x[i] = v;\n"),
            stop_at(g, b2, t2),
            PROMPT,
        )
        refresh(t, g, b2, t2, with_threads=False)
        # per-block mode: the pane lists a block's ranges on demand (coalesced, at most 256 threads)
        rows2 = g.ranges((b2, t2), only_block=b2)
        t.cmd(f"-cuda-info-threads kernel 0 block ({b2},0,0)", done(raw=threads_coalesced(P128, rows2)))
    exit_normally(t)
    return t.text()


def main(argv: list[str]) -> int:
    resident = 1056
    second = False
    out = None
    it = iter(argv)
    for a in it:
        if a == "--resident":
            resident = int(next(it))
        elif a == "--second-stop":
            second = True
        else:
            out = a
    text = generate(resident, second)
    if out is None:
        sys.stdout.write(text)
    else:
        Path(out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
