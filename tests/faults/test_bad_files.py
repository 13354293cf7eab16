"""Files that are not what they seem (tuidbg.engine.files, remember's and dumpreport's schemas): a FIFO,
/dev/zero, a directory and a 1 GB sparse file, named as a source file, a dump or a state file; dumps
and state files nested 100,000 deep or with values of the wrong types. Each is one line (the source
view's message and a notice, a CLI error with exit code 2, a notice and a clean start), at once: never
a hang, never a traceback, and the UI answers (q quits) all along."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, LOADED_FLOOR, check_error, run_tuidbg
from tmux_term import tmux  # noqa: F401 (fixture)
from ui_helpers import make_app, until

from faults.procs import assert_clean, descendants, proc, wait_until

from tuidbg import dumpreport as R
from tuidbg.engine import files, remember
from tuidbg.engine.state import ProcessState
from tuidbg.ui.dumpview import ViewApp
from tuidbg.ui.panes.source import SourceView
from tuidbg.ui.screens.modals import OpenFileScreen
from textual.widgets import Input

GiB = 1 << 30
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed on this machine")


@pytest.fixture
def odd(tmp_path) -> dict[str, Path]:
    """Why each is refused -> the file: a FIFO with no writer (opening it to read would wait forever),
    /dev/zero (reading it never ends), a directory, a sparse file of 1 GB."""
    d = tmp_path / "odd"
    d.mkdir()
    fifo = d / "fifo.py"
    os.mkfifo(fifo)
    zero = d / "zero.py"
    zero.symlink_to("/dev/zero")
    folder = d / "folder.py"
    folder.mkdir()
    sparse = d / "sparse.py"
    with open(sparse, "wb") as f:
        f.truncate(GiB)
    return {"a FIFO (named pipe), not a regular file": fifo, "a character device, not a regular file": zero,
            "a directory, not a regular file": folder, "(1024 MB)": sparse}


# -- the reader --------------------------------------------------------------------------------------


def test_only_regular_files_under_the_cap_are_read(odd, tmp_path):
    for why, path in odd.items():
        start = time.monotonic()
        with pytest.raises(files.Unreadable) as info:
            files.read_bytes(str(path), files.SOURCE_CAP, timeout=30)
        assert why in str(info.value) and str(info.value).startswith(f"{path}: "), str(info.value)
        assert time.monotonic() - start < 30  # (refused, not timed out: the message says which)
        if path.name != "sparse.py":
            with pytest.raises(files.Unreadable, match="not a regular file"):
                files.read_head(str(path), 4)
    with pytest.raises(files.Unreadable, match="larger than 64 MB"):
        files.read_bytes(str(odd["(1024 MB)"]), files.SOURCE_CAP)
    with pytest.raises(files.Unreadable, match="No such file") as info:
        files.read_bytes(str(tmp_path / "none"), 10)
    assert info.value.errno == 2
    ok = tmp_path / "ok.py"
    ok.write_bytes(b"x = 1\n" * 1000)
    assert files.read_bytes(str(ok), 6000) == b"x = 1\n" * 1000
    with pytest.raises(files.Unreadable, match=r"larger than 5 KB \(5 KB\)"):
        files.read_bytes(str(ok), 5 * 1024)
    assert files.read_head(str(odd["(1024 MB)"]), 4) == b"\0\0\0\0"


def test_a_read_that_does_not_end_is_left_to_its_thread(tmp_path, monkeypatch):
    """A file system that does not answer (here: a read held on an event): the caller gets one line after
    its timeout; the same file asked again waits on the same thread; at most MAX_PENDING are left."""
    release = threading.Event()
    calls: list[str] = []
    real = files.read_now

    def held(path: str, cap: int) -> bytes:
        calls.append(path)
        release.wait(60)
        return real(path, cap)

    monkeypatch.setattr(files, "read_now", held)
    ok = tmp_path / "slow.py"
    ok.write_text("x = 1\n")
    with pytest.raises(files.Unreadable, match=r"not read within 0.2 s") as info:
        files.read_bytes(str(ok), 100, timeout=0.2)
    first = info.value.pending
    assert first is not None and not first.done()
    with pytest.raises(files.Unreadable) as again:
        files.read_bytes(str(ok), 100, timeout=0.2)
    assert again.value.pending is first and calls == [str(ok)]

    async def awaited() -> None:
        with pytest.raises(files.Unreadable, match="not read within"):
            await files.read_bytes_async(str(ok), 100, timeout=0.2)

    asyncio.run(awaited())
    others = [tmp_path / f"hung{i}" for i in range(files.MAX_PENDING - 1)]
    for p in others:
        with pytest.raises(files.Unreadable, match="not read within"):
            files.read_bytes(str(p), 100, timeout=0.01)
    with pytest.raises(files.Unreadable, match="reads are still waiting"):
        files.read_bytes(str(tmp_path / "one more"), 100, timeout=5)
    release.set()
    assert first.result(10) == b"x = 1\n"
    wait_until(lambda: files.pending() == 0, 10, "the held reads to end")
    assert files.read_bytes(str(ok), 100) == b"x = 1\n"


def test_the_agent_in_the_program_does_not_open_them_either(odd):
    """The agent resolves a Python breakpoint's line from its file, in the program: a FIFO there would
    hold its thread in open() for good."""
    from tuidbg.agent import _lines

    for path in odd.values():
        assert _lines.file_lines(str(path)) is None
        assert _lines.resolve_line(str(path), 3)[0] is None


# -- the source view, :e ---------------------------------------------------------------------------------


@requires_gdb
async def test_the_source_view_says_why_and_the_ui_answers(odd, deep_prog, tmp_path):
    app = make_app(program=str(deep_prog))
    notes: list[str] = []
    orig = app.notify
    app.notify = lambda message, *a, **k: (notes.append(str(message)), orig(message, *a, **k))[1]
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 60, "the program to end")
        src = app.query_one(SourceView)
        for why, path in odd.items():
            assert app.show_file(str(path)) is False
            assert src.message and why in src.message[0] and str(path) in src.message[0], src.message
            assert notes and why in notes[-1], notes
        # the same through the file picker (ctrl+o, a path typed, Enter)
        notes.clear()
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, OpenFileScreen) and bool(app.screen.query(Input)), 20,
                    "the file picker, composed")
        app.screen.query_one(Input).value = str(odd["a FIFO (named pipe), not a regular file"])
        await pilot.press("enter")
        await until(pilot, lambda: any("a FIFO (named pipe)" in n for n in notes), 20, "the picked FIFO refused")
        assert not isinstance(app.screen, OpenFileScreen)
        good = tmp_path / "good.py"
        good.write_text("a = 1\nb = 2\n")
        assert app.show_file(str(good), 2) and src.lines == ["a = 1", "b = 2"]
        await pilot.press("q")  # (no process: quits at once)
        await until(pilot, lambda: app.return_value is not None, 20, "tuidbg to quit")


@requires_gdb
@needs_tmux
@pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="needs Debian's python3.11")
def test_a_program_stopped_in_a_fifo_named_as_its_source(tmux, tmp_path):
    """``mkfifo fifo.py; tuidbg run fifo.py``, whose code (written into the FIFO) calls breakpoint(): the
    stop shows, the source area says why the file is not shown, q quits; nothing is left behind."""
    fifo = Path(tempfile.gettempdir()) / "fifo.py"  # (a short path: the screen shows all of the line)
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "w") as f:  # (waits for Python to open it)
            f.write("import time\nbreakpoint()\nprint('after')\ntime.sleep(600)\n")

    threading.Thread(target=feed, daemon=True).start()
    tmux.start([sys.executable, "-m", "tuidbg", "run", "--nx", "--no-stop-at-entry", "--python", str(DEBIAN_PY311), str(fifo)],
               width=120, height=30)
    tmux.wait_for("fifo.py:3", 60)  # (breakpoint() stops at the next line, as pdb does)
    screen = tmux.wait_for("a FIFO (named pipe)", LOADED_FLOOR)
    assert f"Cannot show {fifo}" in screen and "stopped:" in screen, screen
    shell = tmux.pane_pid()
    ours = descendants(shell)
    tmux.keys("q")
    tmux.wait_for("Quit tuidbg?", LOADED_FLOOR)
    tmux.keys("k")
    screen = tmux.wait_for("TUIDBG_EXIT=", LOADED_FLOOR)
    assert "TUIDBG_EXIT=0" in screen and "Traceback" not in screen
    assert_clean({p for p in ours if (x := proc(p)) is not None and x.comm != "sleep"})


# -- tuidbg view ---------------------------------------------------------------------------------------


def _dump_naming(paths: list[Path]) -> dict:
    procs = []
    for i, p in enumerate(paths):
        frames = [{"kind": "python", "function": f"f{i}", "qualname": f"f{i}", "file": str(p), "line": 3}]
        procs.append({"pid": 100 + i, "host": "h", "cmdline": ["python", "x.py"],
                      "threads": [{"id": "1", "tid": 100 + i, "main": True, "frames": frames}]})
    return R.document(procs, [])


async def test_view_of_a_dump_naming_odd_files(odd, tmp_path):
    paths = list(odd.values())
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(_dump_naming(paths)))
    app = ViewApp(R.load(str(path)), [str(path)])
    async with app.run_test(size=(80, 24)) as pilot:
        seen = {}
        for i in range(len(paths)):
            await until(pilot, lambda: not app.query_one("#source").render().plain.startswith("reading "), 20,
                        "the source read")
            seen[app.shown_frame["file"]] = app.query_one("#source").render().plain
            if i + 1 < len(paths):
                await pilot.press("down")
                await pilot.pause()
        for why, p in odd.items():
            assert why in seen[str(p)] and seen[str(p)].startswith(str(p)), seen
        await pilot.press("ctrl+q")
    assert app.return_value == 0


@needs_tmux
def test_view_in_a_terminal_over_dev_zero_quits_at_once(tmux, tmp_path):
    """The issue's case: a frame naming /dev/zero grew tuidbg view to 1.8 GB and ctrl+q did nothing."""
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(_dump_naming([Path("/dev/zero")])))
    tmux.start([sys.executable, "-m", "tuidbg", "view", str(path)])
    tmux.wait_for("a character device, not a regular file", LOADED_FLOOR)
    tmux.keys("C-q")
    screen = tmux.wait_for("TUIDBG_EXIT=", LOADED_FLOOR)
    assert "TUIDBG_EXIT=0" in screen and "Traceback" not in screen


# -- dumps ---------------------------------------------------------------------------------------------


def test_odd_files_as_dumps_are_one_line(odd):
    for why, path in odd.items():
        for cmd in (["view"], ["dump", "--merge"]):
            line = check_error(run_tuidbg(*cmd, str(path), timeout=60), f"{path}: cannot read it (")
            assert why.replace("(1024 MB)", "larger than 256 MB (1024 MB)") in line, line


GOOD_FRAME = {"kind": "python", "function": "f", "qualname": "f", "file": "/x.py", "line": 3}


def _dump(**process) -> str:
    p = {"pid": 1, "threads": [{"id": "1", "tid": 1, "frames": [dict(GOOD_FRAME)]}], **process}
    return json.dumps(R.document([p], []))


CRAFTED_DUMPS = [
    ('{"format": "tuidbg-dump", "version": 1, "processes": [], "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "not a tuidbg dump (nested too deeply)"),
    ('{"format": "tuidbg-dump", "version": 1, "processes": [], "x": ' + "[" * 100 + "]" * 100 + "}",
     "nested more than 64 levels deep"),
    (_dump(threads=[{"frames": [dict(GOOD_FRAME, qualname=["a", "list"])]}]),
     "process 1 of the dump, thread 1, frame 1 has 'qualname' of the wrong type (list, not text or null)"),
    (_dump(threads=[{"frames": [dict(GOOD_FRAME, line="3")]}]), "frame 1 has 'line' of the wrong type (str"),
    (_dump(threads=[{"frames": [dict(GOOD_FRAME, level={"a": 1})]}]), "frame 1 has 'level' of the wrong type (dict"),
    (_dump(env={"RANK": 3}), "process 1 of the dump has environment values that are not all text"),
    (_dump(cmdline=["python", 7]), "process 1 of the dump has arguments that are not all text"),
    (_dump(pid=True), "process 1 of the dump has 'pid' of the wrong type (bool, not a whole number)"),
    (_dump(host=["h"]), "'host' of the wrong type (list"),
    (_dump(threads=[{"frames": [], "name": 5}]), "thread 1 has 'name' of the wrong type (int"),
    (json.dumps({"format": "tuidbg-dump", "version": 1, "processes": [], "errors": [1]}),
     "error 1 of the dump is not an object"),
    (json.dumps({"format": "tuidbg-dump", "version": 1, "processes": [], "exited": {"pid": 1}}),
     "its exited processes are not a list of objects"),
    (json.dumps({"format": "tuidbg-dump", "version": 1, "processes": [], "exited": [{"pid": [1]}]}),
     "exited process 1 of the dump has 'pid' of the wrong type (list"),
    (json.dumps({"format": "tuidbg-dump", "version": 1, "processes": {"1": {}}}),
     "a tuidbg dump without its list of processes"),
]


@pytest.mark.parametrize("text,why", CRAFTED_DUMPS, ids=range(len(CRAFTED_DUMPS)))
def test_crafted_dumps_are_one_line(tmp_path, text, why):
    path = tmp_path / "crafted.json"
    path.write_text(text)
    for cmd in (["view"], ["dump", "--merge"], ["dump", "--json", "--merge"]):
        check_error(run_tuidbg(*cmd, str(path)), f"{path}: ", why)


# -- state files -------------------------------------------------------------------------------------------


def _bp(**kw) -> dict:
    return {"kind": "python", "file": "/src/x.py", "line": 3, "text": "x = 1", "condition": None, "ignore": 0,
            "enabled": True, **kw}


def _state(**kw) -> str:
    return json.dumps({"version": remember.VERSION, "project": "/src", "program": "python /src/x.py",
                       "breakpoints": [_bp()], "watches": ["a"], "layout": {"merged": True, "tabs": {}}, **kw})


CRAFTED_STATES = [
    ('{"version": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ('{"version": 1, "x": ' + "[" * 100 + "]" * 100 + "}", "nested more than 16 levels deep"),
    (_state(layout={"tabs": "tab-locals"}), "layout: 'tabs' is str, not an object"),
    (_state(layout={"tabs": {"vars-group": 3}}), "layout: the tab of 'vars-group' is int, not text"),
    (_state(layout=["merged"]), "'layout' is list, not an object"),
    (_state(watches=[{"x": 1}]), "watch 1 is dict, not text"),
    (_state(breakpoints=[_bp(line="3")]), "breakpoint 1: 'line' is str, not a whole number"),
    (_state(breakpoints=[_bp(file=["x.py"])]), "breakpoint 1: 'file' is list, not text"),
    (_state(breakpoints=[_bp(enabled="yes")]), "breakpoint 1: 'enabled' is str, not true or false"),
    (_state(breakpoints=[_bp(), _bp(kind="watch")]), "breakpoint 2: its kind is 'watch', not python or native"),
    (_state(breakpoints=[_bp(line=0)]), "breakpoint 1: it names a file without a line number"),
    (_state(breakpoints=[_bp(ignore=True)]), "breakpoint 1: 'ignore' is bool, not a whole number"),
    (_state(breakpoints=[7]), "breakpoint 1 is not an object"),
    (_state(watches="a"), "'watches' is str, not a list"),
]


@pytest.mark.parametrize("text,why", CRAFTED_STATES, ids=range(len(CRAFTED_STATES)))
def test_crafted_state_files_are_ignored_with_one_line(tmp_path, text, why):
    path = tmp_path / "state.json"
    path.write_text(text)
    data, line = remember.load(str(path))
    assert data is None and line is not None and "\n" not in line, line
    assert line.startswith(f"the remembered breakpoints in {path} were ignored (") and why in line, line
    assert line.endswith("; starting without them")


def test_odd_files_as_state_files_are_ignored_with_one_line(odd):
    for why, path in odd.items():
        data, line = remember.load(str(path))
        assert data is None and why.replace("(1024 MB)", "larger than 4 MB (1024 MB)") in line, line
        assert str(path) in line and "starting without them" in line, line


@requires_gdb
@pytest.mark.parametrize("case", ["fifo", "deep", "types"])
async def test_a_bad_state_file_gives_a_clean_start_and_one_notice(tmp_path, deep_prog, case):
    """The TUI starts (the program runs to its end), one notice says the file was ignored and why."""
    state = tmp_path / "state.json"
    if case == "fifo":
        os.mkfifo(state)
        why = "a FIFO (named pipe), not a regular file"
    elif case == "deep":
        state.write_text(CRAFTED_STATES[0][0])
        why = "nested too deeply"
    else:
        state.write_text(_state(layout={"merged": True, "tabs": "tab-locals"}))
        why = "layout: 'tabs' is str, not an object"
    app = make_app(program=str(deep_prog), remember=str(state))
    notes: list[str] = []
    orig = app.notify
    app.notify = lambda message, *a, **k: (notes.append(str(message)), orig(message, *a, **k))[1]
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 60, "the program to end")
        ignored = [n for n in notes if "were ignored" in n]
        assert len(ignored) == 1 and why in ignored[0] and str(state) in ignored[0], notes
        assert not app.merged  # (nothing of the file came back)
        await pilot.press("q")
        await until(pilot, lambda: app.return_value is not None, 20, "tuidbg to quit")
