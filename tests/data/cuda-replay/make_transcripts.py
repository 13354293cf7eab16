#!/usr/bin/env python3
"""Synthesizes the cuda-gdb MI transcripts in this folder (run it to rewrite them).

NOTHING here was captured on a GPU: no GPU machine was available. The lines are
built to follow cuda-gdb's own formatting code, read in the NVIDIA/cuda-gdb
sources (11.x snapshot 16f99a4144bf, 12.4 ded8cb029837, 12.5 44f3f9e43fb3,
12.8 afd75cab5504, 13.4 7690d76395b3):

- tables: gdb/cuda/cuda-commands.c (``cuda_info<T>`` table builders, column
  names and headers, ``to_hex`` PCs, dim3 as ``(x,y,z)``, canonical file paths
  in MI, the extra ``kernel`` column of blocks/threads in MI); widths are the
  longest of header and cells, as ui-out computes them; SM masks per
  gdb/cuda/cuda-bitset.c (12.x) and 64 hex digits on 11.8;
- ``CudaFocus``: gdb/cuda/cuda-coords.c (``emit_mi_output``; 11.x
  ``cuda_print_message_focus``), printed first in ``*stopped`` by
  gdb/infrun.c ``normal_stop``; device frames ``arch="m68k"``
  (gdb/cuda/cuda-modules.c);
- focus switch/query replies and their errors: gdb/cuda/cuda-commands.c
  (``cuda_command_switch``/``cuda_command_query``; 11.x bare strings
  "CUDA focus unchanged.", "Focus is not set on any active CUDA kernel.",
  "Invalid coordinates. CUDA focus unchanged.", "Request cannot be satisfied.
  CUDA focus unchanged."; 12.x ``Invalid coordinates requested. CUDA focus
  unchanged.``), gdb/cuda/mi-cuda.c;
- exception fields: gdb/cuda/cuda-exceptions.c (``exception_name``, ``pc``,
  ``function`` 12.x+, ``filename``, ``line``);
- breakpoint ``locno`` (gdb 13 based releases), multi-location kernel
  breakpoints with a disabled host stub (seen on 11.8, see
  ../cuda-gdb-11.8-observed/05_cuda_binary_no_driver.mi.txt).

What was observed on this machine with the real cuda-gdb 11.8 (Debian
nvidia-cuda-gdb 11.8.86~11.8.0-5~deb12u1, no GPU) and copied as seen: the 11.8
banner and ``-list-features``, the ``-info-gdb-mi-command`` answers, the
``-gdb-show cuda ...`` values, the broken-None probe answer ("False"), the
breakpoint reply before ``run``, BFD noise on stdout, the "Focus is not set"
bare string, the "Invalid coordinates" error. The 12.8 banner is the one quoted
in NVIDIA/nsight-vscode-edition#50.

Lines starting with ``-> `` are what tuidbg sends; the transcripts follow the
order in which tuidbg's engine sends its commands (start-up, refresh after a
stop, the operation under test), because the replay transport answers each
command with the next recorded one of the same name.

Usage: python make_transcripts.py [--check]   (--check: exit 1 if a file differs)
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

HERE = Path(__file__).resolve().parent
PROMPT = "(gdb) "

# ---------------------------------------------------------------------------------------------
# MI formatting


class Raw(str):
    """An MI value already formatted."""


def q(s: str) -> str:
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{out}"'


def mi_value(v: Any) -> str:
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, str):
        return q(v)
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}={mi_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(mi_value(x) for x in v) + "]"
    raise TypeError(v)


def results(d: dict) -> str:
    """``k=v,k=v`` (the part after ``^done,`` or ``*stopped,``)."""
    return ",".join(f"{k}={mi_value(v)}" for k, v in d.items())


def console(text: str) -> str:
    return "~" + q(text)


def dim(x: int, y: int = 0, z: int = 0) -> str:
    return f"({x},{y},{z})"


def hex16(v: int) -> str:
    return f"0x{v:016x}"


def hex8(v: int) -> str:
    return f"0x{v:08x}"


def table(name: str, row: str, cols: list[tuple[str, str, str]], rows: list[list[str]]) -> str:
    """``Name={nr_rows=..,nr_cols=..,hdr=[..],body=[Row={..},..]}`` with ui-out widths."""
    hdr = []
    for i, (col, head, align) in enumerate(cols):
        width = max([len(head)] + [len(r[i]) for r in rows])
        hdr.append({"width": str(width), "alignment": align, "col_name": col, "colhdr": head})
    body = ",".join(f"{row}=" + mi_value({c[0]: r[i] for i, c in enumerate(cols)}) for r in rows)
    return f"{name}=" + "{" + f'nr_rows="{len(rows)}",nr_cols="{len(cols)}",hdr={mi_value(hdr)},body=[{body}]' + "}"


# ---------------------------------------------------------------------------------------------
# Versions


@dataclass
class Profile:
    key: str
    cuda: str
    banner: list[str]
    features: list[str]
    commands: set[str]
    gdb_major: int
    hdr: dict[str, str] = field(default_factory=dict)
    locno: bool = False
    kernels_parent: bool = True
    python: bool = True
    none_broken: bool = False
    options: dict[str, str] = field(default_factory=dict)
    mask118: bool = False

    def colhdr(self, col: str, default: str) -> str:
        return self.hdr.get(col, default)

    def sm_mask(self, sms: Iterable[int], nsms: int) -> str:
        m = 0
        for s in sms:
            m |= 1 << s
        if self.mask118:
            return f"0x{m:064x}"
        bits = max(nsms, 32)
        digits = (bits + 7) // 8 * 2
        return f"0x{m:0{digits}x}"


GNU_TAIL_10 = [
    console("GNU gdb (GDB) 10.2\n"),
    console("Copyright (C) 2021 Free Software Foundation, Inc.\n"),
    console(
        "License GPLv3+: GNU GPL version 3 or later <http://gnu.org/licenses/gpl.html>\nThis is free software: you are free to change and redistribute it.\nThere is NO WARRANTY, to the extent permitted by law."
    ),
    console('\nType "show copying" and "show warranty" for details.\n'),
    console('This GDB was configured as "x86_64-linux-gnu".\n'),
    console('Type "show configuration" for configuration details.\n'),
    console("For bug reporting instructions, please see:\n"),
    console("<https://www.gnu.org/software/gdb/bugs/>.\n"),
    console("Find the GDB manual and other documentation resources online at:\n    <http://www.gnu.org/software/gdb/documentation/>."),
    console("\n\n"),
    console('For help, type "help".\n'),
    console('Type "apropos word" to search for commands related to "word".\n'),
]

FEATURES_118 = [
    "frozen-varobjs",
    "pending-breakpoints",
    "thread-info",
    "data-read-memory-bytes",
    "breakpoint-notifications",
    "ada-task-info",
    "language-option",
    "info-gdb-mi-command",
    "undefined-command-error-code",
    "exec-run-start-option",
    "data-disassemble-a-option",
    "python",
]

ALL_COMMANDS = [
    "cuda-info-devices",
    "cuda-info-sms",
    "cuda-info-warps",
    "cuda-info-lanes",
    "cuda-info-kernels",
    "cuda-info-blocks",
    "cuda-info-threads",
    "cuda-info-contexts",
    "cuda-info-launch-trace",
    "cuda-info-launch-children",
    "cuda-info-managed",
    "cuda-info-line",
    "cuda-info-barriers",
    "cuda-info-clusters",
    "cuda-focus-switch",
    "cuda-focus-query",
]

BASE_COMMANDS = {
    "cuda-info-devices",
    "cuda-info-sms",
    "cuda-info-warps",
    "cuda-info-lanes",
    "cuda-info-kernels",
    "cuda-info-blocks",
    "cuda-info-threads",
    "cuda-info-contexts",
    "cuda-info-launch-trace",
    "cuda-focus-switch",
    "cuda-focus-query",
}

P118 = Profile(
    key="118",
    cuda="11.8",
    banner=[
        console("NVIDIA (R) CUDA Debugger\n"),
        console("11.8 release\nPortions Copyright (C) 2007-"),
        console("2022 NVIDIA Corporation\n"),
    ]
    + GNU_TAIL_10,
    features=FEATURES_118,
    commands=set(BASE_COMMANDS),
    gdb_major=10,
    hdr={"virtual_pc": "Virtual PC", "physical_pc": "Physical PC", "active_physical_pc": "Active Physical PC"},
    none_broken=True,
    options={"break_on_launch": "none", "api_failures": "ignore", "memcheck": "auto"},
    mask118=True,
)

P128 = Profile(
    key="128",
    cuda="12.8",
    banner=[
        # The first three lines are quoted in NVIDIA/nsight-vscode-edition#50; the GNU lines
        # after them are what a gdb 13 prints (taken from Debian's gdb 13.1 on this machine).
        console("NVIDIA (R) cuda-gdb 12.8\n"),
        console("Portions Copyright (C) 2007-2024 NVIDIA Corporation\n"),
        console("Based on GNU gdb 13.2\n"),
        console("Copyright (C) 2023 Free Software Foundation, Inc.\n"),
        console(
            "License GPLv3+: GNU GPL version 3 or later <http://gnu.org/licenses/gpl.html>\nThis is free software: you are free to change and redistribute it.\nThere is NO WARRANTY, to the extent permitted by law."
        ),
        console('\nType "show copying" and "show warranty" for details.\n'),
        console('This GDB was configured as "x86_64-pc-linux-gnu".\n'),
        console('Type "show configuration" for configuration details.\n'),
        console("For bug reporting instructions, please see:\n"),
        console("<https://www.gnu.org/software/gdb/bugs/>.\n"),
        console("Find the GDB manual and other documentation resources online at:\n    <"),
        console("http://www.gnu.org/software/gdb/documentation/>.\n\n"),
        console('For help, type "help".\n'),
        console('Type "apropos word" to search for commands related to "word".\n'),
    ],
    features=FEATURES_118,
    commands=set(BASE_COMMANDS) | {"cuda-info-launch-children", "cuda-info-managed", "cuda-info-line"},
    gdb_major=13,
    hdr={"virtual_pc": "PC", "physical_pc": "PC", "active_physical_pc": "Active PC"},
    locno=True,
    options={"break_on_launch": "none", "api_failures": "ignore"},
)

# cuda-gdb-minimal (12.5+ ships it for systems without a matching Python): no "python" feature.
P128_MINIMAL = Profile(
    key="128-minimal",
    cuda="12.8",
    banner=P128.banner,
    features=[f for f in FEATURES_118 if f != "python"],
    commands=P128.commands,
    gdb_major=13,
    hdr=P128.hdr,
    locno=True,
    python=False,
    options=dict(P128.options),
)

# 13.x differs in tables only: no kernels "parent" column, "ThreadIdx" header for to_threadIdx.
P13 = Profile(
    key="13x",
    cuda="13.0",
    banner=P128.banner,
    features=FEATURES_118,
    commands=(set(BASE_COMMANDS) - {"cuda-info-launch-trace"}) | {"cuda-info-managed", "cuda-info-line", "cuda-info-barriers", "cuda-info-clusters"},
    gdb_major=14,
    hdr={"virtual_pc": "PC", "physical_pc": "PC", "active_physical_pc": "Active PC", "to_threadIdx": "ThreadIdx"},
    locno=True,
    kernels_parent=False,
)

# ---------------------------------------------------------------------------------------------
# Tables of a running vecAdd<<<(2,1,1),(64,1,1)>>> on an A100 (108 SMs):
# block 0 on SM 0 (warps 0,1), block 1 on SM 2 (warps 0,1).

SRC = "/home/user/proj/vecadd.cu"
EXE = "/home/user/proj/vecadd"
ARGS = [
    {"name": "a", "value": "0x7fffd1a00000"},
    {"name": "b", "value": "0x7fffd1a00200"},
    {"name": "c", "value": "0x7fffd1a00400"},
    {"name": "n", "value": "128"},
]
INVOCATION = "vecAdd(a=0x7fffd1a00000, b=0x7fffd1a00200, c=0x7fffd1a00400, n=128)"
PC_ENTRY = 0x00007FFFD727D100  # line 7 (kernel entry, before the prologue)
PC_L8 = 0x00007FFFD727D1F0
PC_L9 = 0x00007FFFD727D230
PC_FAULT = 0x00007FFFD727D390
PC_L11 = 0x00007FFFD727D3A0
LINES = {
    7: "{",
    8: "    int i = blockIdx.x * blockDim.x + threadIdx.x;",
    9: "    if (i < n) {",
    11: "        c[i] = twice(s);",
}
BLOCK_SM = {0: 0, 1: 2}


def cols_devices(p: Profile) -> list[tuple[str, str, str]]:
    return [
        ("current", " ", "1"),
        ("device", "Dev", "1"),
        ("pci_bus", "PCI Bus/Dev ID", "1"),
        ("name", "Name", "1"),
        ("description", "Description", "1"),
        ("sm_type", "SM Type", "1"),
        ("num_sms", "SMs", "1"),
        ("num_warps", "Warps/SM", "1"),
        ("num_lanes", "Lanes/Warp", "1"),
        ("num_regs", "Max Regs/Lane", "1"),
        ("active_sms_mask", "Active SMs Mask", "1"),
    ]


def devices(p: Profile, focused: bool, sms: Iterable[int] = (0, 2)) -> str:
    rows = [["*" if focused else " ", "0", "06:00.0", "NVIDIA A100-SXM4-80GB", "GA100GL-A", "sm_80", "108", "64", "32", "256", p.sm_mask(sms, 108)]]
    return table("InfoCudaDevicesTable", "InfoCudaDevicesRow", cols_devices(p), rows)


def kernels(p: Profile, rows_in: list[dict]) -> str:
    cols = [("current", " ", "1"), ("kernel", "Kernel", "1")]
    if p.kernels_parent:
        cols.append(("parent", "Parent", "1"))
    cols += [
        ("device", "Dev", "1"),
        ("grid", "Grid", "1"),
        ("status", "Status", "1"),
        ("sms_mask", "SMs Mask", "1"),
        ("gridDim", "GridDim", "1"),
        ("blockDim", "BlockDim", "1"),
        ("invocation", "Invocation", "-1"),
    ]
    rows = []
    for k in rows_in:
        r = [k["current"], k["kernel"]]
        if p.kernels_parent:
            r.append(k.get("parent", "-"))
        r += [k["device"], k["grid"], k["status"], k["sms_mask"], k["gridDim"], k["blockDim"], k["invocation"]]
        rows.append(r)
    return table("InfoCudaKernelsTable", "InfoCudaKernelsRow", cols, rows)


def vecadd_kernel(p: Profile, focused: bool) -> dict:
    return {
        "current": "*" if focused else " ",
        "kernel": "0",
        "device": "0",
        "grid": "1",
        "status": "Active",
        "sms_mask": p.sm_mask((0, 2), 108),
        "gridDim": dim(2, 1, 1),
        "blockDim": dim(64, 1, 1),
        "invocation": INVOCATION,
    }


def blocks_coalesced(rows_in: list[tuple[str, str, str, str, str]]) -> str:
    cols = [("current", " ", "1"), ("kernel", "Kernel", "1"), ("from", "BlockIdx", "1"), ("to", "To BlockIdx", "1"), ("count", "Count", "1"), ("state", "State", "1")]
    return table("CoalescedInfoCudaBlocksTable", "CoalescedInfoCudaBlocksRow", cols, [list(r) for r in rows_in])


def blocks_uncoalesced(rows_in: list[list[str]]) -> str:
    cols = [("current", " ", "1"), ("kernel", "Kernel", "1"), ("blockIdx", "BlockIdx", "1"), ("state", "State", "1"), ("device", "Dev", "1"), ("sm", "SM", "1")]
    return table("UncoalescedInfoCudaBlocksTable", "UncoalescedInfoCudaBlocksRow", cols, rows_in)


def threads_coalesced(p: Profile, rows_in: list[list[str]]) -> str:
    cols = [
        ("current", " ", "1"),
        ("kernel", "Kernel", "1"),
        ("from_blockIdx", "BlockIdx", "1"),
        ("from_threadIdx", "ThreadIdx", "1"),
        ("to_blockIdx", "To BlockIdx", "1"),
        ("to_threadIdx", p.colhdr("to_threadIdx", "To ThreadIdx"), "1"),
        ("count", "Count", "1"),
        ("virtual_pc", p.colhdr("virtual_pc", "PC"), "1"),
        ("filename", "Filename", "1"),
        ("line", "Line", "1"),
    ]
    return table("CoalescedInfoCudaThreadsTable", "CoalescedInfoCudaThreadsRow", cols, rows_in)


def threads_uncoalesced(p: Profile, rows_in: list[list[str]]) -> str:
    cols = [
        ("current", " ", "1"),
        ("kernel", "Kernel", "1"),
        ("blockIdx", "BlockIdx", "1"),
        ("threadIdx", "ThreadIdx", "1"),
        ("virtual_pc", p.colhdr("virtual_pc", "PC"), "1"),
        ("device", "Dev", "1"),
        ("sm", "SM", "1"),
        ("warp", "Wp", "1"),
        ("lane", "Ln", "1"),
        ("filename", "Filename", "1"),
        ("line", "Line", "1"),
    ]
    return table("UncoalescedInfoCudaThreadsTable", "UncoalescedInfoCudaThreadsRow", cols, rows_in)


def lanes(p: Profile, block: int, warp: int, pc: int, current_lane: int | None, exception: str = "None") -> str:
    cols = [
        ("current", " ", "1"),
        ("lane", "Ln", "1"),
        ("state", "State", "0"),
        ("physical_pc", p.colhdr("physical_pc", "PC"), "0"),
        ("threadIdx", "ThreadIdx", "1"),
        ("exception", "Exception", "0"),
    ]
    rows = []
    for ln in range(32):
        rows.append(["*" if ln == current_lane else " ", str(ln), "active", hex16(pc), dim(warp * 32 + ln), exception])
    return table("InfoCudaLanesTable", "InfoCudaLanesRow", cols, rows)


def thread_pc(step: bool, block: int, t: int) -> tuple[int, int]:
    """PC and line of a thread: after one -exec-next in block 1 warp 0, that warp is at line 9."""
    if step and block == 1 and t < 32:
        return PC_L9, 9
    return PC_L8, 8


def coalesce(p: Profile, cur: tuple[int, int] | None, pcs) -> list[list[str]]:
    """cuda-gdb's coalescing: consecutive threads (logical order) with the same PC form one range."""
    rows: list[list[str]] = []
    prev = None
    for b in range(2):
        for t in range(64):
            pc, line = pcs(b, t)
            if prev is not None and prev["pc"] == pc:
                prev["to"] = (b, t)
                prev["count"] += 1
                prev["cur"] |= cur == (b, t)
                continue
            prev = {"from": (b, t), "to": (b, t), "count": 1, "pc": pc, "line": line, "cur": cur == (b, t)}
            rows.append(prev)  # type: ignore[arg-type]
    out = []
    for r in rows:
        r = dict(r)  # type: ignore[arg-type]
        out.append(
            [
                "*" if r["cur"] else " ",
                "0",
                dim(r["from"][0]),
                dim(r["from"][1]),
                dim(r["to"][0]),
                dim(r["to"][1]),
                str(r["count"]),
                hex16(r["pc"]),
                SRC,
                str(r["line"]),
            ]
        )
    return out


def dframe(addr: int, line: int, *, args: bool = True, level: int | None = None, func: str = "vecAdd") -> dict:
    f: dict[str, Any] = {}
    if level is not None:
        f["level"] = str(level)
    f["addr"] = hex16(addr)
    f["func"] = func
    if args:
        f["args"] = ARGS
    f.update({"file": "vecadd.cu", "fullname": SRC, "line": str(line), "arch": "m68k"})
    return f


def focus_tuple(dev: int, sm: int, warp: int, lane: int, block: int, thread: int, kernel: int = 0, grid: int = 1) -> dict:
    return {
        "device": str(dev),
        "sm": str(sm),
        "warp": str(warp),
        "lane": str(lane),
        "kernel": str(kernel),
        "grid": str(grid),
        "blockIdx": dim(block),
        "threadIdx": dim(thread),
    }


def focus_of(block: int, thread: int) -> dict:
    return focus_tuple(0, BLOCK_SM[block], thread // 32, thread % 32, block, thread)


def focus_text(block: int, thread: int) -> str:
    return f"kernel 0, grid 1, block {dim(block)}, thread {dim(thread)}, device 0, sm {BLOCK_SM[block]}, warp {thread // 32}, lane {thread % 32}"


HOST_T1 = {
    "id": "1",
    "target-id": "Thread 0x7ffff7a4a000 (LWP 4242)",
    "name": "vecadd",
    "frame": {"level": "0", "addr": "0x00007ffff7d1e9d7", "func": "ioctl", "args": [], "from": "/lib/x86_64-linux-gnu/libc.so.6", "arch": "i386:x86-64"},
    "state": "stopped",
    "core": "5",
}
HOST_T2 = {
    "id": "2",
    "target-id": "Thread 0x7ffff4fff000 (LWP 4246)",
    "name": "cuda-EvtHandlr",
    "frame": {"level": "0", "addr": "0x00007ffff7d1dbcf", "func": "poll", "args": [], "from": "/lib/x86_64-linux-gnu/libc.so.6", "arch": "i386:x86-64"},
    "state": "stopped",
    "core": "2",
}


# ---------------------------------------------------------------------------------------------
# Transcript writer


class T:
    def __init__(self, header: list[str]) -> None:
        self.lines = ["# " + h if h else "#" for h in header]
        self.token = 0

    def out(self, *lines: str) -> None:
        self.lines.extend(lines)

    def cmd(self, command: str, *reply: str) -> None:
        self.token += 1
        self.lines.append(f"-> {self.token}{command}")
        tagged = False
        for line in reply:
            if not tagged and line.startswith("^"):
                line = f"{self.token}{line}"
                tagged = True
            self.lines.append(line)
        if PROMPT not in reply:
            self.lines.append(PROMPT)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def done(payload: dict | None = None, raw: str | None = None) -> str:
    if raw is not None:
        return "^done," + raw
    return "^done" + ("," + results(payload) if payload else "")


def error(msg: str) -> str:
    return "^error," + results({"msg": msg})


def startup(t: T, p: Profile, program: str = EXE) -> None:
    t.out('=thread-group-added,id="i1"', PROMPT)
    t.cmd("-gdb-version", *p.banner, done())
    t.cmd("-list-features", done({"features": p.features}))
    for s in ("mi-async on", "pagination off", "confirm off", "height 0", "width 0", "breakpoint pending on"):
        t.cmd(f"-gdb-set {s}", done())
    if p.gdb_major >= 12:
        t.cmd("-gdb-set debuginfod enabled off", done())
    t.cmd("-gdb-set print frame-arguments scalars", done())
    t.cmd("-enable-pretty-printing", done())
    if p.python:
        probe = 'python print(gdb.lookup_global_symbol("tuidbg_no_such_symbol_probe") is None)'
        t.cmd(f"-interpreter-exec console {q(probe)}", console("False\n" if p.none_broken else "True\n"), done())
        if p.none_broken:
            t.cmd('-interpreter-exec console "set python print-stack none"', '=cmd-param-changed,param="python print-stack",value="none"', done())
            t.cmd('-interpreter-exec console "python del gdb._execute_unwinders"', done())
            t.cmd('-interpreter-exec console "python gdb.pretty_printers.clear()"', done())
    t.cmd('-inferior-tty-set "/dev/pts/7"', done())
    t.cmd(f"-file-exec-and-symbols {q(program)}", console(f"Reading symbols from {program}...\n"), done())
    for c in ALL_COMMANDS:
        t.cmd(f"-info-gdb-mi-command {c}", done({"command": {"exists": "true" if c in p.commands else "false"}}))
    for name in ("break_on_launch", "api_failures", "memcheck"):
        if name in p.options:
            t.cmd(f"-gdb-show cuda {name}", done({"value": p.options[name]}))


def bkpt_pre_run(p: Profile) -> dict:
    return {
        "number": "1",
        "type": "breakpoint",
        "disp": "keep",
        "enabled": "y",
        "addr": "<MULTIPLE>",
        "times": "0",
        "original-location": "-function vecAdd",
        "locations": [
            {
                "number": "1.1",
                "enabled": "n",
                "addr": "0x0000000000009019",
                "func": "vecAdd(int const*, int const*, int*, int)",
                "file": SRC,
                "fullname": SRC,
                "line": "7",
                "thread-groups": ["i1"],
            }
        ],
    }


def bkpt_with_device(times: int) -> dict:
    return {
        "number": "1",
        "type": "breakpoint",
        "disp": "keep",
        "enabled": "y",
        "addr": "<MULTIPLE>",
        "times": str(times),
        "original-location": "-function vecAdd",
        "locations": [
            {
                "number": "1.1",
                "enabled": "n",
                "addr": "0x000055555555d019",
                "func": "vecAdd(int const*, int const*, int*, int)",
                "file": SRC,
                "fullname": SRC,
                "line": "7",
                "thread-groups": ["i1"],
            },
            {
                "number": "1.2",
                "enabled": "y",
                "addr": hex16(PC_L8),
                "func": "vecAdd(int const*, int const*, int*, int)",
                "file": SRC,
                "fullname": SRC,
                "line": "8",
                "thread-groups": ["i1"],
            },
        ],
    }


def break_vecadd(t: T, p: Profile) -> None:
    t.cmd('-break-insert -f --function "vecAdd"', done({"bkpt": bkpt_pre_run(p)}))
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
            "body": Raw("[bkpt=" + mi_value(bkpt_pre_run(p)) + "]"),
        }
    }
    t.cmd("-break-list", done(bl))


def library(path: str, lo: str, hi: str) -> str:
    return "=library-loaded," + results(
        {"id": path, "target-name": path, "host-name": path, "symbols-loaded": "0", "thread-group": "i1", "ranges": [{"from": lo, "to": hi}]}
    )


def run_preamble(p: Profile) -> list[str]:
    out = ['=thread-group-started,id="i1",pid="4242"', '=thread-created,id="1",group-id="i1"']
    if p.key == "118":
        out.append("BFD: /lib64/ld-linux-x86-64.so.2: unknown type [0x13] section `.relr.dyn'")
        out.append(
            "&"
            + q("warning: `/lib64/ld-linux-x86-64.so.2': Shared library architecture unknown is not compatible with target architecture i386:x86-64.\n")
        )
    out += [
        library("/lib64/ld-linux-x86-64.so.2", "0x00007ffff7fc5090", "0x00007ffff7fee335"),
        "^running",
        '*running,thread-id="all"',
        PROMPT,
    ]
    if p.key == "118":
        out.append("BFD: /lib/x86_64-linux-gnu/libc.so.6: unknown type [0x13] section `.relr.dyn'")
    out += [
        library("/lib/x86_64-linux-gnu/libc.so.6", "0x00007ffff7a28700", "0x00007ffff7bbd93d"),
        console("[Thread debugging using libthread_db enabled]\n"),
        console('Using host libthread_db library "/lib/x86_64-linux-gnu/libthread_db.so.1".\n'),
        library("/lib/x86_64-linux-gnu/libcuda.so.1", "0x00007ffff5a3e480", "0x00007ffff5d8c1f5"),
        console("[Detaching after fork from child process 4245]\n"),
        '=thread-created,id="2",group-id="i1"',
        console("[New Thread 0x7ffff4fff000 (LWP 4246)]\n"),
        library("/lib/x86_64-linux-gnu/libcudadebugger.so.1", "0x00007ffff3c2a100", "0x00007ffff41f7a85"),
    ]
    return out


def stop_line(p: Profile, payload: dict) -> str:
    return "*stopped," + results(payload)


def host_tail() -> dict:
    return {"thread-id": "1", "stopped-threads": "all", "core": "5"}


def refresh_host(t: T, frames: list[dict], variables: list[dict]) -> None:
    t.cmd("-thread-info", done({"threads": [HOST_T1, HOST_T2], "current-thread-id": "1"}))
    t.cmd("-stack-list-frames 0 64", done({"stack": Raw("[" + ",".join("frame=" + mi_value(f) for f in frames) + "]")}))
    t.cmd("-stack-list-variables --skip-unavailable --simple-values", done({"variables": variables}))


def locals_at(line: int, i_value: str, s_value: str | None = None) -> list[dict]:
    out = [
        {"name": "a", "arg": "1", "type": "const int *", "value": "0x7fffd1a00000"},
        {"name": "b", "arg": "1", "type": "const int *", "value": "0x7fffd1a00200"},
        {"name": "c", "arg": "1", "type": "int *", "value": "0x7fffd1a00400"},
        {"name": "n", "arg": "1", "type": "int", "value": "128"},
        {"name": "i", "type": "int", "value": i_value},
    ]
    if s_value is not None:
        out.append({"name": "s", "type": "int", "value": s_value})
    return out


def refresh_cuda(t: T, p: Profile, *, focus: tuple[int, int] | None, step: bool = False, lanes_reply: str | None = None, sms=(0, 2)) -> None:
    t.cmd("-cuda-info-devices", done(raw=devices(p, focus is not None, sms)))
    t.cmd("-cuda-info-kernels", done(raw=kernels(p, [vecadd_kernel(p, focus is not None)])))
    fb = focus[0] if focus else None
    t.cmd(
        "-cuda-info-blocks kernel 0",
        done(raw=blocks_coalesced([("*" if fb is not None else " ", "0", dim(0), dim(1), "2", "running")])),
    )
    t.cmd("-cuda-info-threads kernel 0", done(raw=threads_coalesced(p, coalesce(p, focus, lambda b, th: thread_pc(step, b, th)))))
    if focus is not None:
        b, th = focus
        t.cmd(f"-cuda-info-lanes device 0 sm {BLOCK_SM[b]} warp {th // 32}", done(raw=lanes_reply or lanes(p, b, th // 32, thread_pc(step, b, th)[0], th % 32)))


def exit_normally(t: T, token_cmd: str = "-exec-continue") -> None:
    t.cmd(
        token_cmd,
        "^running",
        '*running,thread-id="all"',
        PROMPT,
        "c[5]=30",
        console("[Inferior 1 (process 4242) exited normally]\n"),
        '=thread-exited,id="2",group-id="i1"',
        '=thread-exited,id="1",group-id="i1"',
        '=thread-group-exited,id="i1",exit-code="0"',
        '*stopped,reason="exited-normally"',
        PROMPT,
    )


def switch_reply(p: Profile, block: int, thread: int, line: int, pc: int, with_frame: bool = True) -> str:
    payload: dict[str, Any] = {"CudaFocus": focus_of(block, thread)}
    if with_frame:
        payload["frame"] = dframe(pc, line)
    return done(payload)


def header(kind: str, p: Profile, what: list[str]) -> list[str]:
    return [
        f"SYNTHESIZED, not captured: {kind}. Mimics cuda-gdb {p.cuda} ({'gdb ' + str(p.gdb_major) + ' based'}).",
        "No GPU was available; the lines follow cuda-gdb's formatting code (see make_transcripts.py for the",
        "source files read and for what was observed on this machine with the real cuda-gdb 11.8).",
        "Regenerate with: python tests/data/cuda-replay/make_transcripts.py",
        "",
    ] + what + [""]


# ---------------------------------------------------------------------------------------------
# Scenarios


def kernel_bp_128() -> str:
    p = P128
    t = T(
        header(
            "kernel breakpoint, focus switches (12.x reply shapes), blocks/threads coalesced and uncoalesced, host thread visit, warp watch",
            p,
            [
                "vecAdd<<<(2,1,1),(64,1,1)>>> on an A100: block 0 on SM 0, block 1 on SM 2 (warps 0 and 1 each).",
                "Program: the vecadd.cu of shared/research/cuda_gdb_mi.md section 10.",
            ],
        )
    )
    startup(t, p)
    # toggle: api_failures stop, then the values are read back
    t.cmd("-gdb-set cuda api_failures stop", done())
    t.cmd("-gdb-show cuda break_on_launch", done({"value": "none"}))
    t.cmd("-gdb-show cuda api_failures", done({"value": "stop"}))
    break_vecadd(t, p)
    stop = {"CudaFocus": focus_of(0, 0), "reason": "breakpoint-hit", "disp": "keep", "bkptno": "1", "locno": "2", "frame": dframe(PC_L8, 8)}
    stop.update(host_tail())
    t.cmd(
        "-exec-run",
        *run_preamble(p),
        "=breakpoint-modified," + results({"bkpt": bkpt_with_device(0)}),
        "=breakpoint-modified," + results({"bkpt": bkpt_with_device(1)}),
        console("\n"),
        console(f"CUDA thread hit Breakpoint 1.2, vecAdd<<<(2,1,1),(64,1,1)>>> ({INVOCATION[7:-1]}) at vecadd.cu:8\n"),
        console(f"8\t{LINES[8]}\n"),
        stop_line(p, stop),
        PROMPT,
    )
    refresh_host(t, [dframe(PC_L8, 8, args=False, level=0)], locals_at(8, "0"))
    refresh_cuda(t, p, focus=(0, 0))
    # switch to block 1 thread 3: 12.x answers with the focus and the frame
    t.cmd("-cuda-focus-switch block (1,0,0) thread (3,0,0)", switch_reply(p, 1, 3, 8, PC_L8))
    t.cmd("-stack-list-frames 0 64", done({"stack": Raw("[frame=" + mi_value(dframe(PC_L8, 8, args=False, level=0)) + "]")}))
    t.cmd("-stack-list-variables --skip-unavailable --simple-values", done({"variables": locals_at(8, "0")}))
    t.cmd("-cuda-info-lanes device 0 sm 2 warp 0", done(raw=lanes(p, 1, 0, PC_L8, 3)))
    # the same again: 12.x answers with the focus only (unchanged)
    t.cmd("-cuda-focus-switch block (1,0,0) thread (3,0,0)", switch_reply(p, 1, 3, 8, PC_L8, with_frame=False))
    # a block that does not exist
    t.cmd("-cuda-focus-switch block (5,0,0)", error("Invalid coordinates requested. CUDA focus unchanged."))
    t.cmd("-cuda-focus-query device sm warp lane kernel grid block thread", done({"CudaFocus": focus_of(1, 3)}))
    # uncoalesced blocks
    t.cmd("-gdb-show cuda coalescing", done({"value": "auto"}))
    t.cmd("-gdb-set cuda coalescing off", done())
    t.cmd(
        "-cuda-info-blocks kernel 0",
        done(raw=blocks_uncoalesced([[" ", "0", dim(0), "running", "0", "0"], ["*", "0", dim(1), "running", "0", "2"]])),
    )
    t.cmd("-gdb-set cuda coalescing auto", done())
    # one block's threads, uncoalesced
    t.cmd("-gdb-show cuda coalescing", done({"value": "auto"}))
    t.cmd("-gdb-set cuda coalescing off", done())
    rows = [
        ["*" if th == 3 else " ", "0", dim(1), dim(th), hex16(PC_L8), "0", "2", str(th // 32), str(th % 32), SRC, "8"] for th in range(64)
    ]
    t.cmd("-cuda-info-threads kernel 0 block (1,0,0)", done(raw=threads_uncoalesced(p, rows)))
    t.cmd("-gdb-set cuda coalescing auto", done())
    # visit host thread 2 (drops the device focus), then come back
    t.cmd("-thread-select 2", done({"new-thread-id": "2", "frame": HOST_T2["frame"]}))
    t2_frames = [
        {"level": "0", "addr": "0x00007ffff7d1dbcf", "func": "poll", "from": "/lib/x86_64-linux-gnu/libc.so.6", "arch": "i386:x86-64"},
        {"level": "1", "addr": "0x00007ffff5b7a0f4", "func": "??", "from": "/lib/x86_64-linux-gnu/libcuda.so.1", "arch": "i386:x86-64"},
        {"level": "2", "addr": "0x00007ffff7c8f134", "func": "start_thread", "from": "/lib/x86_64-linux-gnu/libc.so.6", "arch": "i386:x86-64"},
    ]
    t.cmd("-stack-list-frames --thread 2 0 64", done({"stack": Raw("[" + ",".join("frame=" + mi_value(f) for f in t2_frames) + "]")}))
    t.cmd("-stack-list-variables --thread 2 --frame 0 --skip-unavailable --simple-values", done({"variables": []}))
    t.cmd("-cuda-focus-switch kernel 0 block (1,0,0) thread (3,0,0)", switch_reply(p, 1, 3, 8, PC_L8))
    t.cmd("-stack-list-frames 0 64", done({"stack": Raw("[frame=" + mi_value(dframe(PC_L8, 8, args=False, level=0)) + "]")}))
    t.cmd("-stack-list-variables --skip-unavailable --simple-values", done({"variables": locals_at(8, "0")}))
    # the launching host thread's frames, keeping the device focus
    t1_frames = [
        {"level": "0", "addr": "0x00007ffff7d1e9d7", "func": "ioctl", "from": "/lib/x86_64-linux-gnu/libc.so.6", "arch": "i386:x86-64"},
        {"level": "1", "addr": "0x00007ffff5c1a2b3", "func": "??", "from": "/lib/x86_64-linux-gnu/libcuda.so.1", "arch": "i386:x86-64"},
        {"level": "2", "addr": "0x000055555555e3a1", "func": "cudaLaunchKernel", "arch": "i386:x86-64"},
        {"level": "3", "addr": "0x000055555555d0b9", "func": "vecAdd", "file": "vecadd.cu", "fullname": SRC, "line": "7", "arch": "i386:x86-64"},
        {"level": "4", "addr": "0x000055555555cd3e", "func": "main", "file": "vecadd.cu", "fullname": SRC, "line": "25", "arch": "i386:x86-64"},
    ]
    t.cmd("-stack-list-frames --thread 1 0 63", done({"stack": Raw("[" + ",".join("frame=" + mi_value(f) for f in t1_frames) + "]")}))
    t.cmd("-cuda-focus-switch kernel 0 block (1,0,0) thread (3,0,0)", switch_reply(p, 1, 3, 8, PC_L8))
    # step the focused warp (block 1, warp 0) to line 9
    stop = {"CudaFocus": focus_of(1, 3), "reason": "end-stepping-range", "frame": dframe(PC_L9, 9)}
    stop.update(host_tail())
    t.cmd("-exec-next", "^running", '*running,thread-id="all"', PROMPT, stop_line(p, stop), PROMPT)
    refresh_host(t, [dframe(PC_L9, 9, args=False, level=0)], locals_at(9, "67"))
    refresh_cuda(t, p, focus=(1, 3), step=True)
    # warp watch of "i": the focused lane first, then each other lane, then back
    t.cmd('-data-evaluate-expression "i"', done({"value": "67"}))
    for ln in range(32):
        if ln == 3:
            continue
        t.cmd(f"-cuda-focus-switch device 0 sm 2 warp 0 lane {ln}", switch_reply(p, 1, ln, 9, PC_L9))
        t.cmd('-data-evaluate-expression "i"', done({"value": str(64 + ln)}))
    t.cmd("-cuda-focus-switch device 0 sm 2 warp 0 lane 3", switch_reply(p, 1, 3, 9, PC_L9))
    exit_normally(t)
    return t.text()


def kernel_bp_118() -> str:
    p = P118
    t = T(
        header(
            "kernel breakpoint and focus switches with cuda-gdb 11.x reply shapes (bare strings)",
            p,
            [
                "Start-up lines up to the breakpoint reply are as the real 11.8 prints them on this machine;",
                "everything from the kernel launch on is synthesized. vecAdd<<<(2,1,1),(64,1,1)>>>, A100.",
            ],
        )
    )
    startup(t, p)
    break_vecadd(t, p)
    stop = {"CudaFocus": focus_of(0, 0), "reason": "breakpoint-hit", "disp": "keep", "bkptno": "1", "frame": dframe(PC_L8, 8)}
    stop.update(host_tail())
    t.cmd(
        "-exec-run",
        *run_preamble(p),
        "=breakpoint-modified," + results({"bkpt": bkpt_with_device(0)}),
        "=breakpoint-modified," + results({"bkpt": bkpt_with_device(1)}),
        console("\n"),
        console(f'Thread 1 "vecadd" hit Breakpoint 1, vecAdd<<<(2,1,1),(64,1,1)>>> ({INVOCATION[7:-1]}) at vecadd.cu:8\n'),
        console(f"8\t{LINES[8]}\n"),
        stop_line(p, stop),
        PROMPT,
    )
    refresh_host(t, [dframe(PC_L8, 8, args=False, level=0)], locals_at(8, "0"))
    refresh_cuda(t, p, focus=(0, 0))
    t.cmd("-cuda-focus-switch kernel 0 block (1,0,0) thread (3,0,0)", switch_reply(p, 1, 3, 8, PC_L8))
    t.cmd("-stack-list-frames 0 64", done({"stack": Raw("[frame=" + mi_value(dframe(PC_L8, 8, args=False, level=0)) + "]")}))
    t.cmd("-stack-list-variables --skip-unavailable --simple-values", done({"variables": locals_at(8, "0")}))
    t.cmd("-cuda-info-lanes device 0 sm 2 warp 0", done(raw=lanes(p, 1, 0, PC_L8, 3)))
    # 11.x: the same focus again is a bare string
    t.cmd("-cuda-focus-switch kernel 0 block (1,0,0) thread (3,0,0)", '^done,"CUDA focus unchanged.\\n"')
    t.cmd("-cuda-focus-query device sm warp lane kernel grid block thread", "^done," + q(focus_text(1, 3) + "\n"))
    # a thread past the block's end: 11.x refuses when the closest thread is not the one asked for
    t.cmd("-cuda-focus-switch block (1,0,0) thread (70,0,0)", error("Request cannot be satisfied. CUDA focus unchanged."))
    t.cmd("-cuda-focus-switch device 0 sm 7", error("Invalid coordinates. CUDA focus unchanged."))
    # host thread 2, the focus query on the host, and back
    t.cmd("-thread-select 2", done({"new-thread-id": "2", "frame": HOST_T2["frame"]}))
    t2_frames = [
        {"level": "0", "addr": "0x00007ffff7d1dbcf", "func": "poll", "from": "/lib/x86_64-linux-gnu/libc.so.6", "arch": "i386:x86-64"},
    ]
    t.cmd("-stack-list-frames --thread 2 0 64", done({"stack": Raw("[" + ",".join("frame=" + mi_value(f) for f in t2_frames) + "]")}))
    t.cmd("-stack-list-variables --thread 2 --frame 0 --skip-unavailable --simple-values", done({"variables": []}))
    t.cmd("-cuda-focus-query device sm warp lane kernel grid block thread", '^done,"Focus is not set on any active CUDA kernel.\\n"')
    t.cmd("-cuda-focus-switch kernel 0 block (1,0,0) thread (3,0,0)", switch_reply(p, 1, 3, 8, PC_L8))
    t.cmd("-stack-list-frames 0 64", done({"stack": Raw("[frame=" + mi_value(dframe(PC_L8, 8, args=False, level=0)) + "]")}))
    t.cmd("-stack-list-variables --skip-unavailable --simple-values", done({"variables": locals_at(8, "0")}))
    exit_normally(t)
    return t.text()


def exception_stop(p: Profile, with_fields: bool) -> str:
    what = (
        "CUDA_EXCEPTION_14 with the exception fields in *stopped (12.x: exception_name, pc, function, filename, line)"
        if with_fields
        else "CUDA_EXCEPTION_14 WITHOUT the exception fields (imprecise error / a build that does not print them): "
        "tuidbg falls back to signal-meaning, the lanes table's exception column and $errorpc"
    )
    t = T(
        header(
            what,
            p,
            [
                "vecadd.cu with line 25 changed to vecAdd<<<2, 64>>>(a, b, nullptr, n); no breakpoint.",
                "Warp 1 of block 1 (SM 2) is reported; every lane of that warp shows the exception.",
            ],
        )
    )
    startup(t, p)
    stop: dict[str, Any] = {}
    if with_fields:
        stop.update(
            {
                "exception_name": "Warp Illegal Address",
                "pc": f"{PC_FAULT:#x}",
                "function": "vecAdd(int const*, int const*, int*, int)",
                "filename": "vecadd.cu",
                "line": "11",
            }
        )
    stop.update({"reason": "signal-received", "signal-name": "CUDA_EXCEPTION_14", "signal-meaning": "Warp Illegal Address"})
    stop["CudaFocus"] = focus_of(1, 32)
    fr = dframe(PC_L11, 11)
    fr["args"] = [dict(a) for a in ARGS]
    fr["args"][2]["value"] = "0x0"
    stop["frame"] = fr
    stop.update({"thread-id": "1", "stopped-threads": "all", "core": "7"})
    t.cmd(
        "-exec-run",
        *run_preamble(p),
        console("\n"),
        console('Thread 1 "vecadd" received signal CUDA_EXCEPTION_14, Warp Illegal Address.\n'),
        console("0x00007fffd727d3a0 in vecAdd<<<(2,1,1),(64,1,1)>>> (a=0x7fffd1a00000, b=0x7fffd1a00200, c=0x0, n=128) at vecadd.cu:11\n"),
        console(f"11\t{LINES[11]}\n"),
        stop_line(p, stop),
        PROMPT,
    )
    refresh_host(t, [dframe(PC_L11, 11, args=False, level=0)], locals_at(11, "32", "96"))
    t.cmd("-cuda-info-devices", done(raw=devices(p, True)))
    t.cmd("-cuda-info-kernels", done(raw=kernels(p, [vecadd_kernel(p, True)])))
    t.cmd("-cuda-info-blocks kernel 0", done(raw=blocks_coalesced([("*", "0", dim(0), dim(1), "2", "running")])))
    rows = [["*", "0", dim(0), dim(0), dim(1), dim(63), "128", hex16(PC_L11), SRC, "11"]]
    t.cmd("-cuda-info-threads kernel 0", done(raw=threads_coalesced(p, rows)))
    t.cmd("-cuda-info-lanes device 0 sm 2 warp 1", done(raw=lanes(p, 1, 1, PC_L11, 0, exception="Warp Illegal Address")))
    if not with_fields:
        t.cmd("-data-evaluate-expression $errorpc", done({"value": "(void (*)(void)) 0x7fffd727d390 <vecAdd(int const*, int const*, int*, int)+656>"}))
    t.cmd(
        "-exec-continue",
        "^running",
        '*running,thread-id="all"',
        PROMPT,
        "vecAdd: an illegal memory access was encountered",
        console("[Inferior 1 (process 4242) exited with code 01]\n"),
        '=thread-exited,id="2",group-id="i1"',
        '=thread-exited,id="1",group-id="i1"',
        '=thread-group-exited,id="i1",exit-code="01"',
        '*stopped,reason="exited",exit-code="01"',
        PROMPT,
    )
    return t.text()


def break_on_launch_128() -> str:
    p = P128
    t = T(
        header(
            "set cuda break_on_launch application, then a stop at the kernel's entry",
            p,
            [
                "The MI reason of cuda-gdb's internal kernel-entry breakpoint is not known (not found in the",
                "source read, no capture): this stop has CudaFocus and a frame but no reason and no bkptno,",
                "which tuidbg takes for a kernel entry. The entry PC maps to line 7 (before the prologue).",
            ],
        )
    )
    startup(t, p)
    t.cmd("-gdb-set cuda break_on_launch application", done())
    t.cmd("-gdb-show cuda break_on_launch", done({"value": "application"}))
    t.cmd("-gdb-show cuda api_failures", done({"value": "ignore"}))
    stop = {"CudaFocus": focus_of(0, 0), "frame": dframe(PC_ENTRY, 7)}
    stop.update(host_tail())
    t.cmd(
        "-exec-run",
        *run_preamble(p),
        console("\n"),
        console(f"CUDA thread hit application kernel entry function breakpoint, vecAdd<<<(2,1,1),(64,1,1)>>> ({INVOCATION[7:-1]}) at vecadd.cu:7\n"),
        console(f"7\t{LINES[7]}\n"),
        stop_line(p, stop),
        PROMPT,
    )
    refresh_host(t, [dframe(PC_ENTRY, 7, args=False, level=0)], locals_at(7, "0"))
    t.cmd("-cuda-info-devices", done(raw=devices(p, True)))
    t.cmd("-cuda-info-kernels", done(raw=kernels(p, [vecadd_kernel(p, True)])))
    t.cmd("-cuda-info-blocks kernel 0", done(raw=blocks_coalesced([("*", "0", dim(0), dim(1), "2", "running")])))
    rows = [["*", "0", dim(0), dim(0), dim(1), dim(63), "128", hex16(PC_ENTRY), SRC, "7"]]
    t.cmd("-cuda-info-threads kernel 0", done(raw=threads_coalesced(p, rows)))
    t.cmd("-cuda-info-lanes device 0 sm 0 warp 0", done(raw=lanes(p, 0, 0, PC_ENTRY, 0)))
    exit_normally(t)
    return t.text()


def minimal_128() -> str:
    p = P128_MINIMAL
    t = T(
        header(
            "cuda-gdb-minimal (no Python: no \"python\" in -list-features), a host program stopping at a breakpoint",
            p,
            [
                "12.5+ installs cuda-gdb-minimal when no matching Python is found; tuidbg must run without its",
                "Python-side parts. Before any kernel runs, the CUDA tables are empty.",
            ],
        )
    )
    hello = "/home/user/proj/hello"
    startup(t, p, program=hello)
    bkpt = {
        "number": "1",
        "type": "breakpoint",
        "disp": "keep",
        "enabled": "y",
        "addr": "0x0000000000001143",
        "func": "add",
        "file": "hello.c",
        "fullname": "/home/user/proj/hello.c",
        "line": "2",
        "thread-groups": ["i1"],
        "times": "0",
        "original-location": "-function add",
    }
    t.cmd('-break-insert -f --function "add"', done({"bkpt": bkpt}))
    t.cmd(
        "-break-list",
        done(
            {
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
                    "body": Raw("[bkpt=" + mi_value(bkpt) + "]"),
                }
            }
        ),
    )
    hframe = {"addr": "0x0000555555555143", "func": "add", "args": [{"name": "a", "value": "1"}, {"name": "b", "value": "2"}], "file": "hello.c", "fullname": "/home/user/proj/hello.c", "line": "2", "arch": "i386:x86-64"}
    stop = {"reason": "breakpoint-hit", "disp": "keep", "bkptno": "1", "locno": "1", "frame": hframe, "thread-id": "1", "stopped-threads": "all", "core": "0"}
    t.cmd(
        "-exec-run",
        '=thread-group-started,id="i1",pid="6303"',
        '=thread-created,id="1",group-id="i1"',
        library("/lib64/ld-linux-x86-64.so.2", "0x00007ffff7fcb060", "0x00007ffff7ff0111"),
        "^running",
        '*running,thread-id="all"',
        PROMPT,
        library("/lib/x86_64-linux-gnu/libc.so.6", "0x00007ffff7dfb380", "0x00007ffff7f4f22d"),
        console("\n"),
        console("Breakpoint 1.1, add (a=1, b=2) at hello.c:2\n"),
        console("2\tint add(int a, int b) { return a + b; }\n"),
        "*stopped," + results(stop),
        PROMPT,
    )
    thread = {"id": "1", "target-id": "process 6303", "name": "hello", "frame": dict(hframe, level="0"), "state": "stopped", "core": "0"}
    t.cmd("-thread-info", done({"threads": [thread], "current-thread-id": "1"}))
    frames = [
        {"level": "0", "addr": "0x0000555555555143", "func": "add", "file": "hello.c", "fullname": "/home/user/proj/hello.c", "line": "2", "arch": "i386:x86-64"},
        {"level": "1", "addr": "0x0000555555555164", "func": "main", "file": "hello.c", "fullname": "/home/user/proj/hello.c", "line": "4", "arch": "i386:x86-64"},
    ]
    t.cmd("-stack-list-frames --thread 1 0 64", done({"stack": Raw("[" + ",".join("frame=" + mi_value(f) for f in frames) + "]")}))
    t.cmd(
        "-stack-list-variables --thread 1 --frame 0 --skip-unavailable --simple-values",
        done({"variables": [{"name": "a", "arg": "1", "type": "int", "value": "1"}, {"name": "b", "arg": "1", "type": "int", "value": "2"}]}),
    )
    empty_dev = table("InfoCudaDevicesTable", "InfoCudaDevicesRow", cols_devices(p), [])
    t.cmd("-cuda-info-devices", done(raw=empty_dev))
    t.cmd("-cuda-info-kernels", done(raw=kernels(p, [])))
    # 12.x: a focus query without device focus is a plain ^done
    t.cmd("-cuda-focus-query device sm warp lane kernel grid block thread", done())
    t.cmd(
        "-exec-continue",
        "^running",
        '*running,thread-id="all"',
        PROMPT,
        "3",
        console("[Inferior 1 (process 6303) exited normally]\n"),
        '=thread-exited,id="1",group-id="i1"',
        '=thread-group-exited,id="i1",exit-code="0"',
        '*stopped,reason="exited-normally"',
        PROMPT,
    )
    return t.text()


TRANSCRIPTS = {
    "kernel_bp_12x.mi.txt": kernel_bp_128,
    "kernel_bp_118.mi.txt": kernel_bp_118,
    "exception_12x.mi.txt": lambda: exception_stop(P128, True),
    "exception_118_fallback.mi.txt": lambda: exception_stop(P118, False),
    "break_on_launch_12x.mi.txt": break_on_launch_128,
    "minimal_no_python_12x.mi.txt": minimal_128,
}


def main(argv: list[str]) -> int:
    check = "--check" in argv
    bad = []
    for name, make in TRANSCRIPTS.items():
        text = make()
        path = HERE / name
        if check:
            if not path.exists() or path.read_text() != text:
                bad.append(name)
        else:
            path.write_text(text)
    if bad:
        print("out of date:", ", ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
