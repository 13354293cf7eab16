"""Launch profiles (.tuidbg.toml, tuidbg run --profile NAME): the real command line for bad ones
(one line naming the file, line and key, exit 2), and a real run of a good one under gdb and the
Python agent (its script, arguments, environment, working directory and breakpoint)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, REPO, line_of, pyenv_python
from ui_helpers import make_app, until, until_palette_searched

from tuidbg import cli, profiles
from tuidbg.engine import pyagent
from tuidbg.engine.state import ProcessState

PYTHON = DEBIAN_PY311 if DEBIAN_PY311.exists() else pyenv_python("3.12")
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def tuidbg_in(folder, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tuidbg", *args], capture_output=True, text=True, env=ENV,
                          cwd=folder, timeout=60, stdin=subprocess.DEVNULL)


BAD = [
    ("[profiles.a]\nscript = 'x.py'\nargs = 'not a list'\n", 3, "key 'args': must be a list of strings"),
    ("# c\n[profiles.a]\nscript = 'x.py'\n\nchildren = 'follow'\n", 5, "key 'children': not supported yet"),
    ("[profiles.a]\nscript = 'x.py'\nenvv = {A = '1'}\n", 3, "key 'envv': unknown key (known: program, script"),
    ("[profiles.a]\nscript = 'x.py'\nenv = {A = 1}\n", 3, "key 'env': must be a table of NAME = \"value\""),
    ("[profiles.a]\nscript = 'x.py'\nmodule = 'm'\n", 3, "key 'module': a profile runs one of program, script or module"),
    ("[profiles.b]\nscript = 'x.py'\n\n[profiles.a]\nscript = 'x.py'\ncwd = 'nowhere'\n", 6, "key 'cwd':"),
    ("[profiles.a]\nscript = 'x.py'\nargs = [1,\n", 3, "not valid TOML"),
    ("[profiles.a]\nscript = 'x.py'\nargs = ['1'] x\n\n", 3, "not valid TOML"),
    ("[profiles.a]\nbreak_on_failure = 'yes'\n", 2, "key 'break_on_failure': must be true or false"),
    ("[other]\nx = 1\n", 1, "unknown key 'other'"),
]


@pytest.mark.parametrize("text,line,what", BAD, ids=[b[2].split(":")[0][:30] for b in BAD])
def test_a_bad_profile_is_one_line_naming_file_line_and_key(tmp_path, text, line, what):
    (tmp_path / ".tuidbg.toml").write_text(text)
    res = tuidbg_in(tmp_path, "run", "--profile", "a")
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.startswith(f"tuidbg: {tmp_path / '.tuidbg.toml'}:{line}"), res.stderr
    assert what in res.stderr, res.stderr


def test_a_missing_profile_or_file_says_which(tmp_path):
    (tmp_path / "sub").mkdir()
    res = tuidbg_in(tmp_path / "sub", "run", "--profile", "a")
    assert res.returncode == 2 and f"no .tuidbg.toml in {tmp_path / 'sub'} or a folder above it" in res.stderr
    (tmp_path / ".tuidbg.toml").write_text("[profiles.train]\nscript = 'x.py'\n[profiles.eval]\nmodule = 'm'\n")
    res = tuidbg_in(tmp_path / "sub", "run", "--profile", "a")  # found in the folder above
    assert res.returncode == 2 and "has no profile 'a' (its profiles: eval, train)" in res.stderr, res.stderr


SCRIPT = textwrap.dedent('''\
    import os
    import sys


    def main():
        seen = (os.environ.get("CUDA_LAUNCH_BLOCKING"), os.environ.get("TORCH_SHOW_CPP_STACKTRACES"), sys.argv[1:], os.getcwd())
        return seen  # MARK:stop


    main()
''')


def test_the_command_line_wins_over_the_profile(tmp_path, monkeypatch):
    (tmp_path / "t.py").write_text(SCRIPT)
    (tmp_path / ".tuidbg.toml").write_text(f"[profiles.p]\nscript = 't.py'\nargs = ['a']\nex = ['set pagination off']\n"
                                           f"python = '{PYTHON}'\nbreak_on_exception = true\n")
    monkeypatch.chdir(tmp_path)
    args = cli.run_args(["--profile", "p", "-ex", "set width 0", "t.py", "b"])
    cfg = cli.run_config(args)
    assert cfg.args == ["t.py", "b"]  # the command line's program and arguments, not the profile's
    assert cfg.ex == ["set pagination off", "set width 0"]  # the profile's commands first
    assert cfg.break_on_exception and cfg.cwd == str(tmp_path)


@requires_gdb
@pytest.mark.slow
@pytest.mark.skipif(PYTHON is None, reason="no /usr/bin/python3.11 and no pyenv 3.12 on this machine")
async def test_a_profile_runs_its_script_with_args_env_cwd_and_breakpoint(tmp_path, monkeypatch):
    proj = tmp_path / "proj"
    (proj / "work").mkdir(parents=True)
    (proj / "t.py").write_text(SCRIPT)
    stop = line_of(proj / "t.py", "stop")
    (proj / ".tuidbg.toml").write_text(textwrap.dedent(f'''\
        [profiles.debug]
        script = "t.py"
        args = ["--epochs", "1"]
        cwd = "work"
        python = "{PYTHON}"
        env = {{ CUDA_LAUNCH_BLOCKING = "1", TORCH_SHOW_CPP_STACKTRACES = "1" }}
        breakpoints = ["t.py:{stop}"]
    '''))
    monkeypatch.chdir(proj / "work")  # (a folder below the file's: found there too)
    cfg = cli.run_config(cli.run_args(["--profile", "debug"]))
    cfg.nx = True
    assert cfg.cwd == str(proj / "work") and cfg.program_env["CUDA_LAUNCH_BLOCKING"] == "1"
    app = make_app(**dataclasses.asdict(cfg))
    async with app.run_test(size=(160, 48)) as pilot:
        def stopped() -> bool:
            st = app.state
            return st.process is ProcessState.STOPPED and getattr(st.python.stop, "line", None) == stop

        await until(pilot, stopped, 60, "the profile's breakpoint")
        seen = await pyagent.controller(app.session).evaluate("seen")
        assert seen == repr(("1", "1", ["--epochs", "1"], str(proj / "work"))), seen
        await app.session.close()


def test_profiles_listing(tmp_path):
    (tmp_path / ".tuidbg.toml").write_text("[profiles.train]\nmodule = 'train'\nargs = ['-x']\n[profiles.eval]\nscript = 'e.py'\n")
    got = profiles.load_all(str(tmp_path / ".tuidbg.toml"))
    assert {n: p.summary() for n, p in got.items()} == {"train": "-m train -x", "eval": "e.py"}


@requires_gdb
@pytest.mark.slow
@pytest.mark.skipif(PYTHON is None, reason="no /usr/bin/python3.11 and no pyenv 3.12 on this machine")
async def test_the_command_palette_lists_profiles_and_restarts_with_one(tmp_path, monkeypatch):
    (tmp_path / "t.py").write_text(SCRIPT)
    stop = line_of(tmp_path / "t.py", "stop")
    (tmp_path / ".tuidbg.toml").write_text(textwrap.dedent(f'''\
        [profiles.plain]
        script = "t.py"
        python = "{PYTHON}"
        stop_at_entry = false

        [profiles.stopping]
        script = "t.py"
        args = ["second"]
        python = "{PYTHON}"
        env = {{ CUDA_LAUNCH_BLOCKING = "1" }}
        breakpoints = ["t.py:{stop}"]
    '''))
    monkeypatch.chdir(tmp_path)
    args = cli.run_args(["--profile", "plain", "--nx"])
    cfg = cli.run_config(args)
    ui = cli.run_ui_options(args, cfg)
    from tuidbg import config as tconfig
    from tuidbg.engine.debugger import new_session
    from tuidbg.ui.app import TuidbgApp

    app = TuidbgApp(new_session(cfg), keymap=tconfig.load_keymap(None), ui_options=ui)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.state.process is ProcessState.EXITED, 60, "the plain profile's run to end")
        await pilot.press("ctrl+p")
        await pilot.press(*"Profile stop")
        await until_palette_searched(pilot)
        await pilot.press("enter")

        def stopped() -> bool:
            st = app.state
            return st.process is ProcessState.STOPPED and getattr(st.python.stop, "line", None) == stop

        await until(pilot, stopped, 60, "the stopping profile's breakpoint, after the restart")
        assert app.session.config.nx  # (kept from the command line)
        seen = await pyagent.controller(app.session).evaluate("seen")
        assert seen == repr(("1", None, ["second"], str(tmp_path))), seen
        await app.session.close()
