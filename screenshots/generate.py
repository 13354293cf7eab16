"""Regenerate the README's screenshots (SVG) from the app itself, in two themes.

Each scene runs the real TUI headless on a real gdb session (the programs are
built into /tmp/tuidbg-screens so the paths shown are stable) and saves
``screenshots/<scene>-<theme>.svg``.

Usage: .venv/bin/python screenshots/generate.py [--theme NAME ...] [--scene NAME ...]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

OUT = REPO / "screenshots"
WORK = Path("/tmp/tuidbg-screens")


def build() -> dict[str, Path]:
    WORK.mkdir(exist_ok=True)
    shutil.copy(REPO / "tests" / "programs" / "snap.c", WORK / "snap.c")
    subprocess.run(["gcc", "-g", "-O0", "-fno-omit-frame-pointer", "snap.c", "-o", "snap"], cwd=WORK, check=True)
    shutil.copy(REPO / "demo" / "demo.py", WORK / "demo.py")
    shutil.copy(REPO / "demo" / "vecmath.c", WORK / "vecmath.c")
    (WORK / "_build").mkdir(exist_ok=True)
    subprocess.run(["gcc", "-g", "-O0", "-shared", "-fPIC", "vecmath.c", "-o", "_build/libvecmath.so", "-lm"], cwd=WORK, check=True)
    progs = {"snap": WORK / "snap", "demo": WORK / "demo.py"}
    torch_python = REPO / ".venv-torch" / "bin" / "python"
    if torch_python.exists():
        for f in ("torch_custom_op.cpp", "torch_custom_op.py", "torch_op_checks.py"):
            shutil.copy(REPO / "tests" / "programs" / "py" / f, WORK / f)
        env = dict(os.environ, PATH=f"{torch_python.parent}:{os.environ.get('PATH', '')}")  # (ninja)
        subprocess.run([str(torch_python), "torch_custom_op.py", str(WORK / "_torch_build"), "build-only"], cwd=WORK,
                       env=env, check=True, capture_output=True)
        os.environ["PATH"] = env["PATH"]
        os.environ["TUIDBG_OP_BUILD"] = str(WORK / "_torch_build")  # (where torch_op_checks.py loads the op from)
        progs.update(torch=WORK / "torch_op_checks.py", torch_python=torch_python)
    return progs


def python3() -> str:
    from tuidbg.launch import resolve_python

    return resolve_python(None)


async def _save(app, pilot, filename: str, settle: float) -> None:
    """The screen once it has settled (highlighting, the output batch painted), then the session closed."""
    await pilot.pause(settle)
    app._flush_buffers()
    await pilot.pause(0.2)
    app.save_screenshot(filename=filename, path=str(OUT))
    await app.session.close()


async def scene_c(theme: str, size: tuple[int, int], name: str, progs: dict[str, Path]) -> None:
    from ui_helpers import make_app, until, until_stopped

    from helpers import line_of

    src = WORK / "snap.c"
    app = make_app(theme=theme, program=str(progs["snap"]), cwd=str(WORK),
                   ex=["set startup-with-shell off", "unset environment", f"break {src}:{line_of(src, 'dot_return')}", "ignore 1 1"])
    async with app.run_test(size=size) as pilot:
        await until_stopped(pilot)
        await until(pilot, lambda: app.query_one("#source").highlighted, 30, "highlighting")
        await _save(app, pilot, f"{name}-{theme}.svg", settle=0.5)


async def scene_python(theme: str, size: tuple[int, int], name: str, progs: dict[str, Path]) -> None:
    """The demo: Python calling C, stopped in the C library with the Python caller shown."""
    from ui_helpers import make_app, until, until_stopped

    app = make_app(theme=theme, program=python3(), args=["demo.py"], cwd=str(WORK), ex=["break accumulate"])
    async with app.run_test(size=size) as pilot:
        await until_stopped(pilot)  # the SIGTRAP break-in
        await pilot.press("c")
        await until(pilot, lambda: app.state.is_stopped and app.state.frames and app.state.frames[0].func == "accumulate", 30, "accumulate")
        await until_stopped(pilot)
        await until(pilot, lambda: app.query_one("#source").highlighted, 30, "highlighting")
        await _save(app, pilot, f"{name}-{theme}.svg", settle=1.0)


async def scene_torch(theme: str, size: tuple[int, int], name: str, progs: dict[str, Path]) -> None:
    """Stopped inside a custom C++ operator called from a pytest test (``python -m pytest
    torch_op_checks.py -k scale_add``): at::Tensor locals read as tensors, the test's Python frames above
    the op's C++ ones, pytest's own output in the Output tab."""
    from ui_helpers import make_app, until, until_stopped

    from textual.widgets import TabbedContent

    from helpers import line_of
    from tuidbg.ui.panes.variables import LocalsPane

    if "torch" not in progs:
        print("no .venv-torch (scripts/setup.sh builds it): the torch scene is skipped", file=sys.stderr)
        return
    cpp = WORK / "torch_custom_op.cpp"
    app = make_app(theme=theme, program=str(progs["torch_python"]),
                   args=["-m", "pytest", progs["torch"].name, "-k", "scale_add", "-p", "no:cacheprovider"],
                   cwd=str(WORK), agent=True, python_target=True, ex=[f"break {cpp}:{line_of(cpp, 'op_line')}"])
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.state.is_stopped and app.state.frames
                    and app.state.frames[0].func.startswith("scale_add"), 300, "the op's breakpoint")
        await until_stopped(pilot)
        tree = app.query_one(LocalsPane)
        await until(pilot, lambda: any(n.data is not None and n.data.name == "part" for n in tree.root.children),
                    30, "the op's locals")
        await until(pilot, lambda: app.query_one("#source").highlighted, 30, "highlighting")
        # pytest's output (its header, the test under way) rather than gdb's console, whose thread and
        # process numbers differ at every run
        app.query_one("#io-group", TabbedContent).active = "tab-output"
        await _save(app, pilot, f"{name}-{theme}.svg", settle=1.0)


SCENES = {
    "main": (scene_c, (140, 40)),
    "small": (scene_c, (80, 24)),
    "python": (scene_python, (140, 40)),
    "torch": (scene_torch, (140, 40)),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--theme", action="append", help="themes (default: tuidbg-dark and tuidbg-light)")
    ap.add_argument("--scene", action="append", choices=sorted(SCENES))
    args = ap.parse_args()
    themes = args.theme or ["tuidbg-dark", "tuidbg-light"]
    progs = build()
    for scene in args.scene or list(SCENES):
        fn, size = SCENES[scene]
        for theme in themes:
            asyncio.run(fn(theme, size, scene, progs))
            print(f"screenshots/{scene}-{theme}.svg")


if __name__ == "__main__":
    main()
