"""A program that cannot start, or a start-up command that fails, is named in the status line (not left at
"starting…"), in the console, and for ``tuidbg run`` in one line on stderr at exit (``start_problems``, which
the command line prints; the tmux test at the end checks it in a real terminal); a program that exits at
once with a non-zero code has its last lines of output in the console and its last line in the status.
Real gdb, real programs."""

from __future__ import annotations

import shutil
import sys

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, wait_for
from tmux_term import tmux  # noqa: F401 (fixture)
from ui_helpers import log_text, make_app, process_said, screen_rows, until, until_stopped

from tuidbg import cli
from tuidbg.engine.debugger import new_session
from tuidbg.engine.errors import EngineError
from tuidbg.engine.state import ProcessState

pytestmark = requires_gdb


def _status(app) -> str:
    return app.query_one("#status").render().plain


def _run_app(monkeypatch, tmp_path, *argv: str):
    """The app of ``tuidbg run ARGV`` (the command line's configuration, the screen under Pilot)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    cfg = cli.run_config(cli.run_args(["--nx", *argv]))
    return make_app(session=new_session(cfg))


@pytest.fixture
def no_loader(tmp_path):
    """/bin/true asking for a dynamic loader that is not there: the kernel refuses to run it."""
    data = open("/bin/true", "rb").read()
    assert b"/lib64/ld-linux-x86-64.so.2" in data
    path = tmp_path / "noloader"
    path.write_bytes(data.replace(b"/lib64/ld-linux-x86-64.so.2", b"/lib64/ld-linux-x86-64.so.9"))
    path.chmod(0o755)
    return path


async def test_a_program_that_cannot_start_is_named_in_the_status_line(monkeypatch, tmp_path, no_loader):
    app = _run_app(monkeypatch, tmp_path, "--", str(no_loader))
    async with app.run_test(size=(160, 40)) as pilot:
        await until(pilot, lambda: "could not start" in _status(app), 60, "the status to name the failure")
        status = _status(app)
        assert f"cannot start {no_loader}" in status and "No such file or directory" in status, status
        assert app.state.process is ProcessState.NOT_STARTED
        problems = app.start_problems()
        assert len(problems) == 1 and "No such file or directory" in problems[0], problems
        assert "No such file or directory" in log_text(app, "console-log")


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_a_program_that_exits_at_once_shows_its_last_lines(monkeypatch, tmp_path, size):
    """Issue 30 item 8 as well: on the screen, at 80x24 and at 160x48, without the Output tab."""
    python = DEBIAN_PY311 if DEBIAN_PY311.exists() else sys.executable
    app = _run_app(monkeypatch, tmp_path, "--python", str(python), "-m", "no_module_of_this_name")
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 60, "the program to exit")
        await until(pilot, lambda: "No module named no_module_of_this_name" in _status(app), 10,
                    "the status line to name the program's last line")
        assert "exited with code 1" in _status(app)
        console = log_text(app, "console-log")
        assert "the program exited with code 1 within" in console, console
        assert "No module named no_module_of_this_name" in console.split("the program exited with code 1")[-1]
        assert app.start_problems() == []  # (it started: its own failure, not tuidbg's)
        # on the screen: the console in view (on a narrow one in place of the stacks) with the program's last
        # line, and the status line naming it (cut to the width at 80 columns)
        await until(pilot, lambda: any("│ /usr/bin/python3.11: No module named no_module_of_this_name" in r
                                       or f"│ {python}: No module named no_module_of_this_name" in r
                                       for r in screen_rows(app)), 10, "the console's line on the screen")
        rows = screen_rows(app)
        assert any("exited with code 1 within" in r for r in rows), "\n".join(rows)
        assert any(r.strip().startswith("program exited with code 1: ") and "No module named" in r for r in rows), \
            "\n".join(rows)


async def test_a_failed_ex_command_is_in_the_status_line_until_the_first_stop(monkeypatch, tmp_path, threads_prog):
    """The program runs until ctrl+c stops it: it sleeps, and tuidbg does not stop it at its entry (a program
    that stops by itself at main may do so before the test ever sees it running)."""
    app = _run_app(monkeypatch, tmp_path, "-ex", "frobnicate", "--no-stop-at-entry", "--", str(threads_prog), "sleep")
    async with app.run_test(size=(160, 40)) as pilot:
        await until(pilot, lambda: "sleeping " in log_text(app, "output-log"), 60,
                    lambda: f"the program to run and say so (the app has it {process_said(app)})")
        await until(pilot, lambda: app.state.process is ProcessState.RUNNING, 10,
                    lambda: f"the app to have it running (it has it {process_said(app)})")
        await until(pilot, lambda: "⚠ frobnicate: Undefined command" in _status(app), 10, "the -ex error")
        assert app.start_problems() == ['frobnicate: Undefined command: "frobnicate".  Try "help".']
        await pilot.press("ctrl+c")
        await until_stopped(pilot)
        await until(pilot, lambda: "frobnicate" not in _status(app), 10, "the warning to leave at the first stop")


async def test_an_800_kb_argument_list_starts_without_a_shell(monkeypatch, tmp_path):
    """gdb's start-up shell takes the whole command as one string, of at most 128 KB; without blanks in the
    arguments tuidbg has gdb start the program itself."""
    words = [f"w{i}-" + "x" * 200 for i in range(4000)]
    app = _run_app(monkeypatch, tmp_path, "--", shutil.which("echo") or "/bin/echo", *words)
    async with app.run_test(size=(160, 40)) as pilot:
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 60, "the program to exit")
        assert app.state.exit_code == 0, _status(app)
        await until(pilot, lambda: words[-1] in log_text(app, "output-log"), 10, "its last argument echoed")
        assert app.start_problems() == []


async def test_a_command_that_reads_more_lines_is_refused(make_session, threads_prog):
    """``if``, ``define``, a bare ``python``: gdb would take the next MI commands for their lines."""
    s = await make_session(mode="run", program=str(threads_prog))
    for command in ("if 1", "define foo", "python", "pi", "commands 1", "shell"):
        with pytest.raises(EngineError, match="reads"):
            await s.console(command)
    res = await s.console("python print(6 * 7)")  # (one line: fine)
    assert res.cls == "done"


@pytest.mark.parametrize("argv, expect", [
    (["-ex", "if 1", "--", "/bin/true"], "-ex 'if 1' reads the lines of a block"),
    (["--", "ARM"], "is an executable for aarch64; this machine (x86_64) cannot run it"),
])
def test_bad_start_up_input_is_one_line_and_exit_2(tmp_path, capsys, argv, expect):
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("the foreign executable here is made for an x86-64 host")
    arm = tmp_path / "armprog"
    data = bytearray(open("/bin/true", "rb").read())
    data[18:20] = (183).to_bytes(2, "little")  # e_machine: EM_AARCH64
    arm.write_bytes(bytes(data))
    arm.chmod(0o755)
    code = cli.main(["run", *[str(arm) if a == "ARM" else a for a in argv]])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and expect in err, (code, err)


def test_run_names_the_start_failure_on_stderr_at_exit(tmux, no_loader):  # noqa: F811
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed on this machine")
    tmux.start([sys.executable, "-m", "tuidbg", "run", "--nx", "--fresh", "--", str(no_loader)], width=250, height=40)
    tmux.wait_for("could not start", 60)
    tmux.keys("q")
    screen = tmux.wait_for("TUIDBG_EXIT=", 30)
    said = "".join(screen.splitlines())  # (the line wraps at the terminal's width)
    said = said[said.index("tuidbg: "):said.index("TUIDBG_EXIT=")]
    assert said.count("tuidbg: ") == 1 and "cannot start" in said and "No such file or directory" in said, screen
    assert "TUIDBG_EXIT=2" in screen


@pytest.mark.parametrize("extra, shell", [([], False), (["a b", ""], True)])
async def test_arguments_reach_the_program_as_given_with_or_without_a_shell(make_session, tmp_path, extra, shell):
    """Without blanks or empty ones gdb starts the program itself; with them, through its shell, each quoted:
    either way every argument arrives as it was given (nothing expanded, split or redirected)."""
    import json

    from tuidbg.engine.session_config import program_arguments

    script = tmp_path / "argv.py"
    script.write_text("import json, sys\nprint('ARGV=' + json.dumps(sys.argv[1:]))\n")
    args = ["$HOME", "*", "it's", 'say"hi"', "a;b", ">out", "~", "`id`", "\\n", *extra]
    assert program_arguments(args)[0] is shell
    python = DEBIAN_PY311 if DEBIAN_PY311.exists() else sys.executable
    s = await make_session(mode="run", program=str(python), args=[str(script), *args], cwd=str(tmp_path))
    out = bytearray()
    s.on_program_output(out.extend)
    await s.launch()
    await wait_for(lambda: s.state.process is ProcessState.EXITED and b"ARGV=" in out, 60, "the program's exit")
    assert s.state.exit_code in (0, None), s.state.exit_description
    line = next(ln for ln in out.decode().splitlines() if ln.startswith("ARGV="))
    assert json.loads(line[len("ARGV="):]) == args
    assert not (tmp_path / "out").exists()


async def test_a_script_that_is_not_python_is_named_in_the_status_line(monkeypatch, tmp_path):
    """``tuidbg run x.py`` where x.py is not Python (a shell script here): Python's SyntaxError, its last
    words, in the status line and the console, not only in the Output tab."""
    script = tmp_path / "x.py"
    script.write_text("#!/bin/sh\necho hello world && ls -l /\n")
    app = _run_app(monkeypatch, tmp_path, str(script))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 60, "the program to exit")
        await until(pilot, lambda: "SyntaxError" in _status(app), 10, "the status line to name the SyntaxError")
        # (the console brought into view in place of the stacks: on the screen from its next layout, which may
        # come after the status line's repaint)
        await until(pilot, lambda: any("│ SyntaxError: invalid syntax" in r for r in screen_rows(app)), 10,
                    lambda: "the console's last lines on the screen:\n" + "\n".join(screen_rows(app)))


async def test_unbalanced_ex_commands_are_start_up_errors_and_the_session_goes_on(make_session, threads_prog):
    """An unbalanced -ex (a quote left open, an ``end`` with no block, a ``python`` line that does not parse)
    is a start-up error each, named for the status line and stderr; gdb still answers after them."""
    ex = ['print "abc', "end", "python print((1", "frobnicate"]
    s = await make_session(mode="run", program=str(threads_prog), ex=ex)
    assert [e.split(":")[0] for e in s.startup_errors] == ex, s.startup_errors
    assert (await s.console("print 6 * 7")).cls == "done"
