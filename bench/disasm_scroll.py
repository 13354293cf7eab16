"""The Disassembly view through libtorch's largest function, top to bottom, against gdb's own
``-data-disassemble`` of the same range, same gdb, same run.

The function: the largest in libtorch_cpu.so by symbol size (nm -S; an MKL AVX-512 GEMM kernel of
about 44,000 instructions in torch 2.13's CPU wheel). The scroll goes on past its end into the
code after it until 50,000 instructions have been passed. gdb loads the library as a file (no
process: its addresses are the file's), with tuidbg's session.

Measured in a headless Textual app holding only the view (40 rows):
- first screen: ``show_address`` at the function's start (one window decoded) and 40 rows drawn;
- each page: the page-down action (which waits for a chunk when the cursor runs past the loaded
  rows) and the 40 rows drawn; pages come 33 ms apart (keyboard auto-repeat), the time the view's
  background prefetch has; and again back to back for the first 300 pages (no time to prefetch);
- baseline: gdb's ``-data-disassemble`` (mode 5) of the first window's range, and of the whole
  50,000-instruction range at once (what a view that decodes whole functions would wait for).

Usage: python bench/disasm_scroll.py [path/to/libtorch_cpu.so]
"""

from __future__ import annotations

import asyncio
import glob
import subprocess
import sys
import time
from pathlib import Path

from textual.app import App

from common import REPO, ms, summary

INSNS = 50_000
GAP = 0.033


def largest_function(lib: str) -> tuple[str, int, int]:
    out = subprocess.run(["nm", "-S", "--size-sort", "--defined-only", lib], capture_output=True, text=True).stdout
    for line in reversed(out.splitlines()):
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tT":
            return parts[3], int(parts[0], 16), int(parts[1], 16)
    raise SystemExit(f"{lib}: no function symbols")


class Holder(App):
    def compose(self):
        from tuidbg.ui.panes.disasm import DisasmView

        yield DisasmView(id="asm")

    def get_theme_variable_defaults(self):
        from tuidbg.ui.app import THEME_VARIABLE_DEFAULTS

        return dict(THEME_VARIABLE_DEFAULTS)


def draw(view, rows: int = 40) -> None:
    for y in range(rows):
        view.render_line(y)


async def scroll(app, pilot, session, start: int, pages_max: int | None, gap: float) -> dict:
    from tuidbg.ui.bridge import SessionBridge

    view = app.query_one("#asm")
    view.source = SessionBridge(session)
    view.window = None
    view.display = True
    view.focus()
    await pilot.pause()
    t0 = time.perf_counter()
    await view.show_address(start)
    draw(view)
    first = time.perf_counter() - t0
    pages = []
    passed = 0
    while passed < INSNS and (pages_max is None or len(pages) < pages_max):
        before = view.cursor_instruction.address
        t0 = time.perf_counter()
        await view.action_page(1)
        draw(view)
        pages.append(time.perf_counter() - t0)
        after = view.cursor_instruction.address
        if after == before:
            break
        passed = sum(1 for k, r in view.lines if k == "ins" and start <= r.address <= after) if len(pages) % 200 == 0 else passed
        if gap:
            await asyncio.sleep(gap)
        else:
            await pilot.pause(0)
    passed = sum(1 for k, r in view.lines if k == "ins" and r.address >= start and r.address <= view.cursor_instruction.address)
    return {"first": first, "pages": pages, "passed": passed, "end": view.cursor_instruction.address}


async def main() -> None:
    libs = sys.argv[1:] or glob.glob(str(REPO / ".venv-torch/lib/python3*/site-packages/torch/lib/libtorch_cpu.so"))
    if not libs:
        raise SystemExit("no libtorch_cpu.so: pass its path, or build .venv-torch (scripts/setup.sh)")
    lib = libs[0]
    name, start, size = largest_function(lib)
    from tuidbg.engine import native
    from tuidbg.engine.debugger import new_session
    from tuidbg.engine.session import SessionConfig

    s = new_session(SessionConfig(mode="none", program=lib, nx=True, load_gdbext=False))
    t0 = time.perf_counter()
    await s.start()
    await s.cmd(f"-file-exec-and-symbols {lib}", timeout=600)
    print(f"gdb loaded {Path(lib).name} in {time.perf_counter() - t0:.1f} s; function {name} at {start:#x}, {size} bytes")
    try:
        await native.disassemble(s, start, start + 16)  # demangling set, symbols read
        app = Holder()
        async with app.run_test(size=(120, 40)) as pilot:
            key = await scroll(app, pilot, s, start, None, GAP)
            burst = await scroll(app, pilot, s, start, 300, 0)
        # baselines: gdb alone, the same commands over the same session
        base_first = []
        for _ in range(5):
            t0 = time.perf_counter()
            await s.cmd(f"-data-disassemble -s {start:#x} -e {start + native.CHUNK:#x} -- 5")
            base_first.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        res = await s.cmd(f"-data-disassemble -s {start:#x} -e {key['end']:#x} -- 5", timeout=600)
        whole = time.perf_counter() - t0
        n_whole = len(native.instructions(native.parse_disassembly(res.get("asm_insns"))))
    finally:
        await s.close()
    pk, pb = summary(key["pages"]), summary(burst["pages"])
    print(f"scrolled {key['passed']} instructions in {len(key['pages'])} pages of 38 rows (to {key['end']:#x})")
    print(f"  first screen (one window decoded + 40 rows drawn)     {ms(key['first']):>10s}")
    print(f"  page, 33 ms apart: median {ms(pk['median'])}, p90 {ms(pk['p90'])}, max {ms(max(key['pages']))}")
    print(f"  page, back to back (300): median {ms(pb['median'])}, p90 {ms(pb['p90'])}, max {ms(max(burst['pages']))}")
    print(f"  baseline: gdb -data-disassemble of one window ({native.CHUNK} bytes): median {ms(sorted(base_first)[2])}")
    print(f"  baseline: gdb -data-disassemble of the whole range ({n_whole} instructions) at once: {ms(whole)}")


if __name__ == "__main__":
    asyncio.run(main())
