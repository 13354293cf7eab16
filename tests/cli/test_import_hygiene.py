"""The engine never imports Textual (it is a plain asyncio library)."""

import platform
import subprocess
import sys

import pytest

from helpers import REPO


def test_engine_does_not_import_textual():
    code = (
        "import importlib, pkgutil, sys\n"
        "import tuidbg.engine\n"
        "for m in pkgutil.iter_modules(tuidbg.engine.__path__):\n"  # every engine module, present and future
        "    importlib.import_module('tuidbg.engine.' + m.name)\n"
        "import tuidbg.launch, tuidbg.dump, tuidbg.agent.core\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith(('textual.', 'tuidbg.ui')))\n"
        "assert not bad, bad\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def test_package_import_is_lazy():
    res = subprocess.run(
        [sys.executable, "-c", "import sys, tuidbg; print(sorted(m for m in sys.modules if m.startswith('tuidbg')))"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert res.stdout.strip() == "['tuidbg']"


# -- the quick commands and the first screen import only what they need (issue 31) ---------------------------------
# (bench/cold_start.py and bench/dump_fast.py time them against gdb --version and py-spy: an import added on
# one of these paths shows there; these tests say which one)

def _modules_after(args: list[str], env: dict | None = None, code: str | None = None) -> set[str]:
    """The modules loaded once ``tuidbg ARGS`` (or ``code``) has run."""
    import os

    code = code or f"from tuidbg.cli import main; main({args!r})"
    wrapped = ("import atexit, sys\n"  # (nothing else: what the wrapper imports would count)
               "atexit.register(lambda: sys.__stderr__.write('MODULES:' + ' '.join(sorted(sys.modules)) + '\\n'))\n"
               + code)
    res = subprocess.run([sys.executable, "-c", wrapped], cwd=REPO, capture_output=True, text=True,
                         env={**os.environ, **(env or {})}, timeout=120, stdin=subprocess.DEVNULL)
    line = next((ln for ln in res.stderr.splitlines() if ln.startswith("MODULES:")), None)
    assert line is not None, res.stderr
    return set(line[len("MODULES:"):].split())


UI = ("textual", "rich", "tuidbg.ui")


def _loaded(mods: set[str], prefixes) -> list[str]:
    return sorted(m for m in mods if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_version_imports_neither_argparse_nor_the_engine_nor_the_ui(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    _modules_after(["--version"], env)  # (the debuggers asked once: their answers cached)
    mods = _modules_after(["--version"], env)
    assert not _loaded(mods, UI + ("argparse", "asyncio", "subprocess", "shutil", "dataclasses", "tuidbg.engine",
                                   "tuidbg.dump"))
    assert _loaded(mods, ("tuidbg",)) == ["tuidbg", "tuidbg.cli", "tuidbg.gdbversion", "tuidbg.launch",
                                          "tuidbg.procread", "tuidbg.procread.proc"]


def test_completion_imports_neither_the_engine_nor_the_ui():
    mods = _modules_after(["completion", "bash"])
    assert not _loaded(mods, UI + ("asyncio", "tuidbg.engine", "tuidbg.procread.snapshot"))


DUMP_MODULES = {  # what `tuidbg dump PID` may load of tuidbg: the direct reader, the report
    "tuidbg", "tuidbg.cli", "tuidbg.launch", "tuidbg.dump", "tuidbg.dumpframes", "tuidbg.dumpreport",
    "tuidbg.dumpmany", "tuidbg.procread", "tuidbg.procread.proc", "tuidbg.procread.freeze",
    "tuidbg.procread.target", "tuidbg.procread.snapshot", "tuidbg.gdbext", "tuidbg.gdbext.elfsyms",
    "tuidbg.gdbext.cpython_layouts", "tuidbg.gdbext.cpython_mem", "tuidbg.gdbext.cpython_interp",
    "tuidbg.gdbext.cpython_lines", "tuidbg.gdbext.cpython_native", "tuidbg.gdbext.cpython_results",
    "tuidbg.gdbext.cpython_values", "tuidbg.gdbext.cpython_walk", "tuidbg.gdbext.cpython_objects",
    # the asyncio tasks of each process (issue 32): their report section and the object layouts they are read with
    "tuidbg.dumptasks", "tuidbg.gdbext.cpython_objlayouts",
}
# --native adds the unwinder and the merge of Python frames into native ones (not the engine's state, its CUDA model,
# the session or asyncio)
NATIVE_MODULES = DUMP_MODULES | {
    "tuidbg.procread.regs", "tuidbg.procread.unwind", "tuidbg.procread.native", "tuidbg.engine",
    "tuidbg.engine.python", "tuidbg.engine.python.model", "tuidbg.engine.python.merge", "tuidbg.engine.mi",
    "tuidbg.engine.records", "tuidbg.gdbext.cxxnames", "tuidbg.agent", "tuidbg.agent.protocol",
}


@pytest.fixture
def sleeper():
    proc = subprocess.Popen([sys.executable, "-c", "import sys, time; print('ready', flush=True); time.sleep(600)"],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    yield proc.pid
    proc.kill()
    proc.wait()


def test_dump_imports_the_reader_and_nothing_more(sleeper):
    mods = _modules_after(["dump", str(sleeper)])
    assert set(_loaded(mods, ("tuidbg",))) <= DUMP_MODULES, set(_loaded(mods, ("tuidbg",))) - DUMP_MODULES
    assert not _loaded(mods, UI + ("argparse", "asyncio", "dataclasses", "typing", "inspect", "subprocess", "shutil",
                                   "json", "logging", "re", "ctypes", "collections", "functools", "contextlib"))
    assert "_ctypes" in mods  # (ptrace, called through ctypes' C half: tuidbg.procread.freeze._call)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the direct native reader is x86-64's")
def test_dump_native_imports_the_unwinder_and_the_merge_and_nothing_more(sleeper):
    mods = _modules_after(["dump", "--native", str(sleeper)])
    assert set(_loaded(mods, ("tuidbg",))) <= NATIVE_MODULES, set(_loaded(mods, ("tuidbg",))) - NATIVE_MODULES
    assert not _loaded(mods, UI + ("argparse", "asyncio", "subprocess"))


def test_the_first_screens_code_leaves_out_what_it_does_not_show():
    """What ``tuidbg run`` imports for its screen: not the CUDA pane (mounted under cuda-gdb only), nor the dump's
    reader, its report or the saved dump's view."""
    mods = _modules_after([], code="import tuidbg.cli, tuidbg.engine.debugger, tuidbg.ui.app")
    assert "tuidbg.ui.app" in mods
    assert not _loaded(mods, ("tuidbg.ui.panes.cuda", "tuidbg.ui.dumpview", "tuidbg.dumpreport", "tuidbg.dumpmany",
                              "tuidbg.procread.snapshot", "tuidbg.procread.native", "tuidbg.agent.core"))
