"""Bad input: one clear line on stderr, exit code 2, never a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from conftest import requires_gdb
from helpers import REPO, check_error, run_tuidbg


def test_pid_not_a_number():
    check_error(run_tuidbg("attach", "abc"), "'abc' is not a process ID")


def test_pid_zero():
    check_error(run_tuidbg("attach", "0"), "not a process ID")


def test_pid_that_does_not_exist():
    pid = 4_000_000  # above pid_max on Linux
    check_error(run_tuidbg("attach", str(pid)), f"no process with ID {pid}")


def test_program_not_found():
    check_error(run_tuidbg("run", "--", "/nonexistent/prog"), "/nonexistent/prog: no such file")
    check_error(run_tuidbg("run", "--", "tuidbg_no_such_program_xyz"), "program not found")


def test_program_not_executable(tmp_path):
    f = tmp_path / "data.bin"
    f.write_bytes(b"\x7fELF....")
    check_error(run_tuidbg("run", "--", str(f)), "not executable")
    check_error(run_tuidbg("run", "--", str(tmp_path)), "is a directory")


def test_shell_script_is_explained(tmp_path):
    f = tmp_path / "s.sh"
    f.write_text("#!/bin/sh\necho hi\n")
    f.chmod(0o755)
    check_error(run_tuidbg("run", "--", str(f)), "is a script for /bin/sh", "tuidbg run -- /bin/sh")


def test_missing_script_and_empty_run(tmp_path):
    check_error(run_tuidbg("run", str(tmp_path / "missing.py")), "missing.py: no such file")
    check_error(run_tuidbg("run"), "nothing to run")
    check_error(run_tuidbg("run", "-m"), "-m needs a module name")
    check_error(run_tuidbg("run", "--frobnicate", "x.py"), "unknown option --frobnicate")


def test_file_names_with_spaces_and_quotes_in_errors(tmp_path):
    name = tmp_path / "it's a \"file\".py"
    res = run_tuidbg("run", str(name))
    check_error(res, "it's a \"file\".py: no such file")


def test_gdb_not_installed(tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    res = run_tuidbg("run", "--", "/bin/true", env={"PATH": str(empty)})
    check_error(res, "gdb is not installed", "apt-get install gdb")


def test_gdb_path_missing():
    check_error(run_tuidbg("--help") if False else run_tuidbg("run", "--gdb", "/nonexistent/gdb", "--", "/bin/true"), "--gdb /nonexistent/gdb: no such program")


def test_cuda_gdb_missing(tmp_path):
    if any(os.access(p, os.X_OK) for p in ("/usr/local/cuda/bin/cuda-gdb", "/opt/cuda/bin/cuda-gdb")):
        pytest.skip("this machine has cuda-gdb in a standard CUDA folder, so it cannot be missing")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    (empty / "gdb").symlink_to(shutil.which("gdb") or "/bin/false")
    res = run_tuidbg("run", "--cuda", "--", "/bin/true", env={"PATH": str(empty)})
    check_error(res, "cuda-gdb not found", "nvidia-cuda-gdb")


def test_gdb_exits_during_startup(tmp_path):
    fake = tmp_path / "fake-gdb"
    fake.write_text("#!/bin/sh\necho 'gdb: error while loading shared libraries: libpython3.11.so.1.0' >&2\nexit 127\n")
    fake.chmod(0o755)
    res = run_tuidbg("run", "--gdb", str(fake), "--", "/bin/true")
    check_error(res, "exited during start-up", "exited with code 127", "libpython3.11.so.1.0")


def test_gdb_killed_during_startup(tmp_path):
    fake = tmp_path / "crashy-gdb"
    fake.write_text("#!/bin/sh\necho 'Fatal signal: Segmentation fault' >&2\nkill -SEGV $$\n")
    fake.chmod(0o755)
    res = run_tuidbg("run", "--gdb", str(fake), "--", "/bin/true")
    check_error(res, "exited during start-up", "SIGSEGV", "Fatal signal")


def test_core_errors(tmp_path):
    check_error(run_tuidbg("core", "/nonexistent/exe", "/nonexistent/core"), "no such file (executable)")
    notcore = tmp_path / "notcore"
    notcore.write_bytes(b"hello")
    check_error(run_tuidbg("core", "/bin/true", str(notcore)), "not an ELF core file")


def test_missing_command_file():
    check_error(run_tuidbg("run", "-x", "/nonexistent/cmds.gdb", "--", "/bin/true"), "-x /nonexistent/cmds.gdb: no such file")


def test_unknown_theme_and_keymap(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    check_error(run_tuidbg("run", "--theme", "nope", "--", "/bin/true", env=env), "unknown theme 'nope'", "tuidbg-dark")
    check_error(run_tuidbg("run", "--keymap", "nope", "--", "/bin/true", env=env), "unknown keymap 'nope'", "vscode")


def test_bad_config_file(tmp_path):
    cfg = tmp_path / "tuidbg"
    cfg.mkdir()
    (cfg / "config.toml").write_text("theme = [unclosed\n")
    check_error(run_tuidbg("run", "--", "/bin/true", env={"XDG_CONFIG_HOME": str(tmp_path)}), "not valid TOML")


@requires_gdb
def test_ptrace_refused_is_explained(tmp_path):
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("this machine has no setpriv to drop CAP_SYS_PTRACE")
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        env = dict(os.environ, PYTHONPATH=str(REPO))
        res = subprocess.run(
            [setpriv, "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace", sys.executable, "-m", "tuidbg", "attach", str(sleeper.pid)],
            capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL,
        )
        line = check_error(res, f"cannot attach to process {sleeper.pid}", "ptrace", "kernel.yama.ptrace_scope", "CAP_SYS_PTRACE")
        scope = "/proc/sys/kernel/yama/ptrace_scope"
        if os.path.exists(scope):
            assert f"ptrace_scope is {open(scope).read().strip()}" in line
        assert sleeper.poll() is None  # the target is untouched
    finally:
        sleeper.kill()
        sleeper.wait()


def test_every_subcommand_has_help():
    for sub in ("run", "attach", "core"):
        res = run_tuidbg(sub, "--help")
        assert res.returncode == 0, res.stderr
        assert "usage: tuidbg" in res.stdout
    res = run_tuidbg("--help")
    assert res.returncode == 0 and "run" in res.stdout and "attach" in res.stdout


def test_python_m_tuidbg_and_version():
    res = run_tuidbg("--version")
    assert res.returncode == 0 and res.stdout.startswith("tuidbg ")


def test_attach_without_pid_and_without_a_terminal():
    check_error(run_tuidbg("attach"), "attach needs a PID when not run in a terminal")


def test_attach_list_shows_python_processes_first():
    py = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        res = run_tuidbg("attach", "--list")
        assert res.returncode == 0
        rows = res.stdout.splitlines()
        assert rows[0].split()[:2] == ["PID", "USER"]
        mine = [r for r in rows if r.split()[0] == str(py.pid)]
        assert mine and "time.sleep(60)" in mine[0]
        kinds = [r.split()[3] in ("python", "py+cuda") for r in rows[1:]]
        assert kinds == sorted(kinds, reverse=True)  # every Python process before every other
    finally:
        py.kill()
        py.wait()


@requires_gdb
def test_no_terminal_is_explained(threads_prog):
    # gdb starts and the program loads, then the screen needs a terminal: one line, exit 2.
    check_error(run_tuidbg("run", "--nx", "--", str(threads_prog)), "needs a terminal", "tuidbg dump PID")


def test_attach_loads_the_agent_into_python_unless_told_not_to(monkeypatch):
    from tuidbg import cli

    seen = []
    monkeypatch.setattr(cli, "run_ui", lambda cfg, ui: seen.append(cfg) or 0)
    py = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert cli.main(["attach", str(py.pid)]) == 0
        assert cli.main(["attach", "--no-agent", str(py.pid)]) == 0
    finally:
        py.kill()
        py.wait()
    assert [(c.pid, c.python_target, c.agent) for c in seen] == [(py.pid, True, True), (py.pid, True, False)]
