"""Shell completion (``tuidbg completion bash|zsh``, made by shtab) and ``pipx install .`` offline.

The bash test sources the real generated script in a real bash and calls the function that
``complete -p tuidbg`` names, with COMP_WORDS as bash's completion would set them. The pipx test
downloads a wheelhouse once (tuidbg's dependencies, the build backend, pip for pipx's shared venv;
that step uses the package index, as a user preparing an air-gapped install would), then runs
``pipx install .`` inside ``unshare -n`` (a network namespace with no interface up) and runs the
installed ``tuidbg``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from helpers import REPO

ENV = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def tuidbg(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tuidbg", *args], capture_output=True, text=True, env=ENV,
                          timeout=60, stdin=subprocess.DEVNULL)


def bash_complete(script: str, words: list[str], cwd=None, env=None) -> list[str]:
    """What bash's completion of the last word of ``words`` offers, with ``script`` sourced (in ``cwd``,
    with only ``env`` in the environment when given)."""
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    prog = (
        f"source {script}\n"
        "fn=$(complete -p tuidbg); fn=${fn##*-F }; fn=${fn%% *}\n"  # (no sed: the shell may find no program)
        f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}\n"
        'COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}\n'
        '"$fn" tuidbg "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"\n'
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    res = subprocess.run(["/usr/bin/bash" if env is not None else "bash", "--norc", "--noprofile", "-c", prog],
                         capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL, cwd=cwd, env=env)
    assert res.returncode == 0, res.stderr
    return [w for w in res.stdout.splitlines() if w]


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory) -> str:
    res = tuidbg("completion", "bash")
    assert res.returncode == 0, res.stderr
    path = tmp_path_factory.mktemp("completion") / "tuidbg.bash"
    path.write_text(res.stdout)
    return str(path)


def test_bash_completes_subcommands_and_options(bash_script, tmp_path):
    assert bash_complete(bash_script, ["tuidbg", "ru"]) == ["run"]
    assert set(bash_complete(bash_script, ["tuidbg", ""])) >= {"run", "attach", "core", "dump", "completion"}
    assert bash_complete(bash_script, ["tuidbg", "run", "--cw"]) == ["--cwd"]
    assert "--profile" in bash_complete(bash_script, ["tuidbg", "run", "--pro"])
    assert bash_complete(bash_script, ["tuidbg", "attach", "--fr"]) == ["--fresh"]
    assert bash_complete(bash_script, ["tuidbg", "completion", ""]) == ["bash", "zsh"]


def test_bash_completes_file_names_for_file_options(bash_script, tmp_path):
    (tmp_path / "cmds.gdb").write_text("")
    os.mkdir(tmp_path / "subdir")
    got = bash_complete(bash_script, ["tuidbg", "run", "-x", str(tmp_path / "cm")])
    assert got == [str(tmp_path / "cmds.gdb")]
    got = bash_complete(bash_script, ["tuidbg", "run", "--cwd", str(tmp_path) + "/"])
    assert got == [str(tmp_path / "subdir") + "/"] or got == [str(tmp_path / "subdir")]


def test_zsh_script(tmp_path):
    res = tuidbg("completion", "zsh")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("#compdef tuidbg")
    if not shutil.which("zsh"):
        pytest.skip("zsh is not installed on this machine (apt-get install zsh)")
    (tmp_path / "_tuidbg").write_text(res.stdout)
    # Installed as the README says (a file _tuidbg in a folder on $fpath), compinit makes it tuidbg's.
    prog = f"fpath=({tmp_path} $fpath); autoload -U compinit; compinit -u -D; print -r -- comp=${{_comps[tuidbg]}}"
    out = subprocess.run(["zsh", "-f", "-c", prog], capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert "comp=_tuidbg" in out.stdout.splitlines(), out.stdout + out.stderr
    # What it offers: its functions, run with _describe (zsh's completion builtin) printing instead.
    prog = (f"autoload -U compinit; compinit -u -D; source {tmp_path / '_tuidbg'} 2>/dev/null; "
            "_describe() { print -rl -- ${(P)2}; }; _shtab_tuidbg_commands; print -rl -- $_shtab_tuidbg_run_options")
    out = subprocess.run(["zsh", "-f", "-c", prog], capture_output=True, text=True, timeout=30, cwd=tmp_path)
    commands = {ln.split(":", 1)[0] for ln in out.stdout.splitlines() if ":" in ln and not ln.startswith(("-", "("))}
    assert commands >= {"run", "attach", "core", "dump", "completion"}, out.stdout
    for opt in ("--cwd", "--profile", "--fresh", "-ex"):
        assert opt in out.stdout, out.stdout


def _no_programs(tmp_path) -> dict[str, str]:
    """An environment in which the shell can start no program at all (PATH is an empty folder): what
    completes there, completes with the shell's builtins (no Python, no tuidbg at Tab)."""
    empty = tmp_path / "no-programs"
    empty.mkdir(exist_ok=True)
    return {"PATH": str(empty), "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config")}


def test_bash_completes_the_program_to_run_and_its_arguments(bash_script, tmp_path):
    (tmp_path / "aio.py").write_text("")
    (tmp_path / "data.bin").write_text("")
    assert bash_complete(bash_script, ["tuidbg", "run", "ai"], cwd=tmp_path) == ["aio.py"]
    assert bash_complete(bash_script, ["tuidbg", "run", "--nx", "ai"], cwd=tmp_path) == ["aio.py"]
    assert bash_complete(bash_script, ["tuidbg", "run", "aio.py", "da"], cwd=tmp_path) == ["data.bin"]
    assert bash_complete(bash_script, ["tuidbg", "run", "--", "ai"], cwd=tmp_path) == ["aio.py"]


def test_bash_completes_theme_keymap_and_profile_names_from_where_tuidbg_reads_them(tmp_path):
    env = _no_programs(tmp_path)
    (tmp_path / "config" / "tuidbg" / "themes").mkdir(parents=True)
    (tmp_path / "config" / "tuidbg" / "themes" / "mine.toml").write_text('name = "my-night"\nprimary = "#123456"\n')
    (tmp_path / "config" / "tuidbg" / "keymaps").mkdir(parents=True)
    (tmp_path / "config" / "tuidbg" / "keymaps" / "emacsish.toml").write_text('[keys]\n')
    res = tuidbg("completion", "bash")
    script = tmp_path / "tuidbg.bash"
    script.write_text(res.stdout)
    got = bash_complete(str(script), ["tuidbg", "run", "--theme", ""], env=env)
    assert set(got) == {"tuidbg-dark", "tuidbg-light", "tuidbg-high-contrast", "tuidbg-ansi", "my-night"}, got
    assert bash_complete(str(script), ["tuidbg", "attach", "--theme", "tuidbg-l"], env=env) == ["tuidbg-light"]
    assert set(bash_complete(str(script), ["tuidbg", "run", "--keymap", ""], env=env)) == {"default", "vim", "vscode",
                                                                                         "emacsish"}
    assert bash_complete(str(script), ["tuidbg", "core", "--keymap", "vs"], env=env) == ["vscode"]
    # profiles: the .tuidbg.toml of the folder above
    (tmp_path / "proj" / "deep").mkdir(parents=True)
    (tmp_path / "proj" / ".tuidbg.toml").write_text('[profiles.train]\nscript = "t.py"\n\n[profiles."eval-x"]\n'
                                                     'module = "m"\n[ profiles.native ]\nprogram = "./a"\n')
    got = bash_complete(str(script), ["tuidbg", "run", "--profile", ""], cwd=tmp_path / "proj" / "deep", env=env)
    assert got == ["train", "eval-x", "native"], got
    assert bash_complete(str(script), ["tuidbg", "run", "--profile", "ev"], cwd=tmp_path / "proj", env=env) == ["eval-x"]
    assert bash_complete(str(script), ["tuidbg", "run", "--profile", ""], cwd=tmp_path, env=env) == []


def _sleeper(marker: str, cleanup) -> tuple[subprocess.Popen, str]:
    """A process of ours with ``marker`` in its command line, and that command line (once it runs: until
    then /proc shows the test's own)."""
    import time

    p = subprocess.Popen(["sh", "-c", "sleep 300; :", marker], stdin=subprocess.DEVNULL)
    cleanup.append(p)
    deadline = time.monotonic() + 30
    while True:
        with open(f"/proc/{p.pid}/cmdline", "rb") as f:
            args = [a.decode() for a in f.read().split(b"\0") if a]
        if marker in args or time.monotonic() > deadline:
            return p, " ".join(args)
        time.sleep(0.01)


def test_bash_completes_pids_with_their_command_lines(bash_script, tmp_path, cleanup):
    env = _no_programs(tmp_path)
    p, command = _sleeper("tuidbg-completion-marker", cleanup)
    p2, command2 = _sleeper("tuidbg-completion-other", cleanup)
    pid = str(p.pid)
    prefix = os.path.commonprefix([pid, str(p2.pid)])  # (what both PIDs begin with: several surely match it)
    for sub in ("attach", "dump"):
        assert bash_complete(bash_script, ["tuidbg", sub, pid], env=env) == [pid]  # one left: the PID alone
        several = bash_complete(bash_script, ["tuidbg", sub, prefix], env=env)
        assert f"{pid}  {command}"[:72] in several and f"{p2.pid}  {command2}"[:72] in several, several
        assert all(w.split()[0].startswith(prefix) for w in several)  # several: with their commands
    everyone = bash_complete(bash_script, ["tuidbg", "attach", ""], env=env)
    assert all(os.stat(f"/proc/{w.split()[0]}").st_uid == os.getuid() for w in everyone if os.path.exists(f"/proc/{w.split()[0]}"))


def test_zsh_completes_names_and_pids(tmp_path, cleanup):
    if not shutil.which("zsh"):
        pytest.skip("zsh is not installed on this machine (apt-get install zsh)")
    res = tuidbg("completion", "zsh")
    (tmp_path / "_tuidbg").write_text(res.stdout)
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / ".tuidbg.toml").write_text('[profiles.train]\nscript = "t.py"\n[profiles."eval-x"]\nmodule = "m"\n')
    p, command = _sleeper("tuidbg-zsh-marker", cleanup)
    # compadd and _describe (zsh's completion builtins) print what they are given
    prog = (f"autoload -U compinit; compinit -u -D; source {tmp_path / '_tuidbg'} 2>/dev/null; "
            "compadd() { [[ $1 == -a ]] && print -rl -- ${(P)2}; }; _describe() { print -rl -- ${(P)4}; }; "
            "PREFIX=''; print -- '== themes'; _tuidbg_themes; print -- '== keymaps'; _tuidbg_keymaps; "
            "print -- '== profiles'; _tuidbg_profiles; print -- '== pids'; _tuidbg_pids")
    out = subprocess.run(["zsh", "-f", "-c", prog], capture_output=True, text=True, timeout=30, cwd=tmp_path / "proj",
                         env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}).stdout
    parts = {}
    for block in out.split("== ")[1:]:
        name, *lines = block.splitlines()
        parts[name] = lines
    assert {"tuidbg-dark", "tuidbg-light"} <= set(parts["themes"]), out
    assert {"default", "vim", "vscode"} <= set(parts["keymaps"]), out
    assert parts["profiles"] == ["train", "eval-x"], out
    assert f"{p.pid}:" + command.replace(":", "\\:") in parts["pids"], out  # (_describe's PID:DESCRIPTION)


def test_unknown_shell_is_one_line():
    res = tuidbg("completion", "fish")
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "fish" in res.stderr and "bash" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.slow
def test_pipx_install_dot_offline(tmp_path):
    if not shutil.which("unshare"):
        pytest.skip("needs unshare(1) for a network namespace")
    wheels = tmp_path / "wheels"
    dl = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--dest", str(wheels), str(REPO),
                         "hatchling", "pip"], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert dl.returncode == 0, dl.stderr[-3000:]
    home = tmp_path / "pipx"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON", "PIPX_"))}
    env.update(PIPX_HOME=str(home / "home"), PIPX_BIN_DIR=str(home / "bin"), PIPX_MAN_DIR=str(home / "man"))
    import pipx  # (in the test extra: pip install -e .[test])

    pipx_dir = os.path.dirname(os.path.dirname(pipx.__file__))
    env["PYTHONPATH"] = pipx_dir  # (pipx itself, from wherever the test's Python has it)
    flags = ["-n"] if os.geteuid() == 0 else ["-r", "-n"]
    res = subprocess.run(["unshare", *flags, sys.executable, "-m", "pipx", "install", "--python", sys.executable,
                          "--pip-args", f"--no-index --find-links {wheels}", str(REPO)],
                         capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    exe = home / "bin" / "tuidbg"
    env.pop("PYTHONPATH")
    out = subprocess.run(["unshare", *flags, str(exe), "--version"], capture_output=True, text=True, timeout=60,
                         env=env, stdin=subprocess.DEVNULL)
    assert out.returncode == 0 and out.stdout.startswith("tuidbg "), out.stderr
    comp = subprocess.run([str(exe), "completion", "bash"], capture_output=True, text=True, timeout=60, env=env)
    assert comp.returncode == 0 and "_shtab_tuidbg" in comp.stdout, comp.stderr
