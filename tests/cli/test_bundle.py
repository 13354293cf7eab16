"""The offline bundle (scripts/bundle.sh), installed and run with no network at all.

The bundle is built once from this checkout (that step uses the package index, as a user building
it would) and kept in ~/.cache/tuidbg/bundle/<hash of what goes into it>: a later session with the
same sources reuses it. A cold build (empty pex and pip caches) took 26 s on this machine's two
cores, a rebuild with warm caches 20 s, a reuse nothing; the tests after it about 40 s. Everything
after the build runs in ``unshare -n``: a new network namespace whose only interface is a loopback
that is down. The pyz unpacks into one PEX_ROOT for the session (but for the read-only-home test).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, REPO, cpython314, line_of, machine_lock, pyenv_python, wait_asleep
from tmux_term import tmux  # noqa: F401 (fixture)

# (a test's time includes its fixtures': the first builds the bundle, the others wait for it, and on a
# loaded machine that takes longer than the suite's 300 s per test)
pytestmark = [requires_gdb, pytest.mark.slow, pytest.mark.timeout(900)]

SLEEPERS = REPO / "tests" / "programs" / "py" / "sleepers.py"
VERSION = re.search(r'__version__ = "([^"]+)"', (REPO / "tuidbg" / "__init__.py").read_text()).group(1)
PYTHONS = ["3.9", "3.10", "3.11", "3.12", "3.13", "3.14"]
ARCHS = ["x86_64", "aarch64"]
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tuidbg" / "bundle"
needs_debian_py311 = pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="this machine has no /usr/bin/python3.11")


def _bundle_key() -> str:
    """A hash of every file that goes into the bundle (what hatchling packs, and the script)."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "tuidbg", "themes", "keymaps"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout.split()
    h = hashlib.sha256()
    for rel in sorted(files + ["pyproject.toml", "scripts/bundle.sh"]):
        path = REPO / rel
        if path.is_file():
            h.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


@pytest.fixture(scope="session")
def bundle() -> Path:
    """OUTDIR of ``bash scripts/bundle.sh OUTDIR`` for this checkout, built at most once."""
    out = CACHE / _bundle_key()
    with machine_lock("bundle"):  # (the suite's other workers wait for this build, then use it)
        return _build_bundle(out)


def _build_bundle(out: Path) -> Path:
    if (out / "tuidbg.pyz").is_file():
        return out
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="build-", dir=CACHE))
    res = subprocess.run(["bash", str(REPO / "scripts" / "bundle.sh"), str(tmp)], capture_output=True, text=True,
                         timeout=400, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, f"scripts/bundle.sh failed:\n{res.stderr[-4000:]}"
    assert "left out" not in res.stderr, res.stderr  # every default target has its wheels
    try:
        tmp.rename(out)
    except OSError:  # another session built the same bundle meanwhile
        shutil.rmtree(tmp, ignore_errors=True)
    for old in CACHE.iterdir():  # bundles of other sources, a day old: not in use by another session
        if old != out and time.time() - old.stat().st_mtime > 86400:
            shutil.rmtree(old, ignore_errors=True)
    return out


@pytest.fixture(scope="session")
def pex_root(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("pex-root"))


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without anything that would find the checkout, an index or a pex setting."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "PEX_", "PYTHON")) and k not in ("VIRTUAL_ENV",)}
    env.update(extra)
    return env


def _unshare(mount: bool = False) -> list[str]:
    """unshare with a new network namespace (and a new mount namespace with ``mount``)."""
    flags = ["-n"] + (["-m"] if mount else [])
    if os.geteuid() != 0:
        flags.insert(0, "-r")  # a user namespace, where one may make the others
    return ["unshare", *flags]


def offline(*cmd, cwd: Path, env: dict[str, str], mount: bool = False, timeout: float = 120):
    return subprocess.run([*_unshare(mount), *map(str, cmd)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture
def sleepers(tmp_path):
    """Debian's stripped /usr/bin/python3.11 running sleepers.py, asleep in sleeper_a and sleeper_b."""
    ready = tmp_path / "ready.json"
    proc = subprocess.Popen([str(DEBIAN_PY311), str(SLEEPERS), "2", str(ready)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "sleepers.py did not get ready"
        time.sleep(0.05)
    wait_asleep(proc.pid)
    yield proc
    proc.kill()
    proc.wait(10)


def _assert_dump_of_sleepers(res, proc) -> None:
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert f"Process {proc.pid}: {DEBIAN_PY311} {SLEEPERS}" in out and "(Python 3.11" in out, out
    for fn in ("sleeper_a", "sleeper_b", "main", "<module>"):  # the script's own functions, read from memory
        assert re.search(rf"^\s+{re.escape(fn)} \({re.escape(str(SLEEPERS))}:\d+\)$", out, re.M), (fn, out)


def _assert_version(res) -> None:
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == f"tuidbg {VERSION}"
    gdb_first = subprocess.run(["gdb", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    assert f"gdb: {shutil.which('gdb')} ({gdb_first})" in lines


def test_the_namespace_has_no_network(tmp_path):
    """What the other tests run in: no interface but a loopback, and the package index unreachable."""
    index = socket.getaddrinfo("pypi.org", 443, type=socket.SOCK_STREAM)[0][4][0]
    socket.create_connection((index, 443), timeout=10).close()  # (reachable from here: the bundle was built)
    probe = ("import json, socket\n"
             "try:\n"
             f"    socket.create_connection(({index!r}, 443), timeout=10); err = None\n"
             "except OSError as e:\n"
             "    err = str(e)\n"
             "print(json.dumps({'ifs': [n for _, n in socket.if_nameindex()], 'err': err}))\n")
    res = offline("/usr/bin/python3", "-c", probe, cwd=tmp_path, env=_clean_env())
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)
    assert got["ifs"] == ["lo"] and got["err"], got


@needs_debian_py311
def test_wheelhouse_installs_offline_into_a_fresh_venv_and_dumps(bundle, sleepers, tmp_path):
    venv = tmp_path / "venv"
    env = _clean_env()
    res = offline(DEBIAN_PY311, "-m", "venv", venv, cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stderr
    res = offline(venv / "bin" / "python", "-m", "pip", "--isolated", "install", "--no-index", "--find-links",
                  bundle / "wheels", "tuidbg", cwd=tmp_path, env=env, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    res = offline(venv / "bin" / "python", "-m", "pip", "--isolated", "check", cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stdout  # every dependency there, at a version that fits
    res = offline(venv / "bin" / "python", "-c", "import tuidbg; print(tuidbg.__file__)", cwd=tmp_path, env=env)
    assert res.stdout.startswith(str(venv / "lib")), res.stdout  # the installed copy, not the checkout

    _assert_version(offline(venv / "bin" / "tuidbg", "--version", cwd=tmp_path, env=env))
    _assert_dump_of_sleepers(offline(venv / "bin" / "tuidbg", "dump", sleepers.pid, cwd=tmp_path, env=env),
                             sleepers)


@needs_debian_py311
def test_pyz_dumps_offline_with_the_system_python(bundle, pex_root, sleepers, tmp_path):
    env = _clean_env(PEX_ROOT=pex_root)
    _assert_version(offline("/usr/bin/python3", bundle / "tuidbg.pyz", "--version", cwd=tmp_path, env=env))
    res = offline(DEBIAN_PY311, bundle / "tuidbg.pyz", "dump", sleepers.pid, cwd=tmp_path, env=env)
    _assert_dump_of_sleepers(res, sleepers)


@needs_debian_py311
def test_pyz_runs_with_a_read_only_home(bundle, sleepers, tmp_path):
    """No PEX_ROOT and a home that cannot be written (a read-only container): pex unpacks into a
    temporary directory, says so, and removes it afterwards."""
    home = tmp_path / "home"
    home.mkdir()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = _clean_env(HOME=str(home), TMPDIR=str(scratch))
    env.pop("XDG_CACHE_HOME", None)
    script = 'mount --bind -o ro "$HOME" "$HOME" && exec "$@"'
    res = offline("sh", "-c", script, "sh", DEBIAN_PY311, bundle / "tuidbg.pyz", "dump", sleepers.pid,
                  cwd=tmp_path, env=env, mount=True)
    _assert_dump_of_sleepers(res, sleepers)
    assert f"PEX_ROOT is configured as {home}/.cache/pex but that path is un-writeable" in res.stderr, res.stderr
    assert list(scratch.iterdir()) == []  # the temporary PEX_ROOT is gone


@needs_debian_py311
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed on this machine")
def test_pyz_runs_the_debugger_offline_in_a_terminal(bundle, pex_root, tmux, tmp_path):  # noqa: F811 (fixture)
    """``python3 tuidbg.pyz run script.py`` in a terminal: the UI, gdb and the Python agent (loaded into
    the program from where pex unpacked tuidbg) stop at a Python breakpoint, then quit."""
    line = line_of(SLEEPERS, "sleep_a")
    argv = [*_unshare(), "env", f"PEX_ROOT={pex_root}", "TERM=xterm-256color", "/usr/bin/python3",
            str(bundle / "tuidbg.pyz"), "run", "--nx", "--python", str(DEBIAN_PY311), "-ex", f"break {SLEEPERS}:{line}",
            str(SLEEPERS), "2", str(tmp_path / "ready.json")]
    cmd = f"cd {shlex.quote(str(tmp_path))}; env -u PYTHONPATH {shlex.join(argv)}; echo TUIDBG_EXIT=$?; sleep 30"
    tmux.tmux("new-session", "-d", "-s", "e2e", "-x", "100", "-y", "30", cmd)
    # The status line is cut to the terminal's width, and how much of the path fits depends on where
    # the checkout lives: wait for the stop, then check the line in the frames pane and the source gutter.
    screen = tmux.wait_for("stopped: Python breakpoint 1 at", timeout=60)
    assert f"sleeper_a:{line}" in screen  # the Python frames pane
    assert f"●{line}▷" in screen  # the source pane: the breakpoint and the current line
    tmux.keys("q")
    tmux.wait_for("Quit tuidbg?")
    tmux.keys("Enter")  # run mode: kill is the default
    screen = tmux.wait_for("TUIDBG_EXIT=0")
    assert "Traceback" not in screen


def _local_pythons():
    for minor in PYTHONS:
        exe = (cpython314("3.14") or pyenv_python("3.14")) if minor == "3.14" else pyenv_python(minor)
        yield pytest.param(exe, id=minor,
                           marks=pytest.mark.skipif(exe is None, reason=f"no CPython {minor} on this machine"))
    yield pytest.param(DEBIAN_PY311, id="debian-3.11",
                       marks=pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="no /usr/bin/python3.11"))


@pytest.mark.parametrize("python", list(_local_pythons()))
def test_pyz_imports_everything_on_each_python(bundle, pex_root, tmp_path, python):
    """Each supported Python finds every module tuidbg imports in the pyz, the compiled psutil and
    (before 3.11) tomli included, with no network."""
    code = ("import sys, tuidbg.config, tuidbg.ui.app, tuidbg.engine.debugger, psutil, textual; "
            "print(tuple(sys.version_info[:2]), psutil.Process().pid > 0, tuidbg.__file__)")
    env = _clean_env(PEX_ROOT=pex_root, PEX_INTERPRETER="1")
    res = offline(python, bundle / "tuidbg.pyz", "-c", code, cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stderr
    version = subprocess.run([str(python), "-c", "import sys; print(tuple(sys.version_info[:2]))"],
                             capture_output=True, text=True).stdout.strip()
    assert res.stdout.startswith(f"{version} True {pex_root}/"), res.stdout


def test_wheelhouse_resolves_offline_for_every_target(bundle, pex_root, tmp_path):
    """CPython 3.9-3.14 on x86_64 and aarch64 (those that cannot run here too): each target's whole
    dependency set, with its own markers, comes from the wheelhouse alone."""
    pex3 = Path(sys.executable).parent / "pex3"
    assert pex3.exists(), f"pex is not installed in {pex3.parent.parent} (the test extra; bash scripts/setup.sh --test)"
    platforms = [f"--platform=manylinux2014_{a}-cp-{v.replace('.', '')}-cp{v.replace('.', '')}"
                 for v in PYTHONS for a in ARCHS]
    res = offline(pex3, "download", "--no-pypi", "-f", bundle / "wheels", "--resolver-version", "pip-2020-resolver",
                  "--wheel", "--no-build", *platforms, "-d", tmp_path / "got", "tuidbg",
                  cwd=tmp_path, env=_clean_env(PEX_ROOT=pex_root), timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    got = sorted(p.name for p in (tmp_path / "got").iterdir())
    assert got == sorted(p.name for p in (bundle / "wheels").iterdir())  # every wheel there is needed
    names = " ".join(got)
    for needed in ("tomli-", "textual-", "rich-", "pygments-", f"tuidbg-{VERSION}-py3-none-any"):
        assert needed in names, needed
    assert [n for n in got if n.startswith("psutil-")] and all("abi3" in n for n in got if n.startswith("psutil-"))
    for arch in ARCHS:
        assert any(n.startswith("psutil-") and arch in n for n in got), arch

    pex_info = json.loads(zipfile.ZipFile(bundle / "tuidbg.pyz").read("PEX-INFO"))
    assert sorted(pex_info["distributions"]) == got  # the pyz carries the same wheels


def test_bundle_names_a_target_it_leaves_out(tmp_path):
    """A Python with no wheel for some dependency (textual needs 3.9+) gets one line; the rest is built."""
    res = subprocess.run(["bash", str(REPO / "scripts" / "bundle.sh"), "--python", "3.8", "--python", "3.11",
                          "--arch", "x86_64", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    left = [line for line in res.stderr.splitlines() if "left out" in line]
    assert len(left) == 1 and re.fullmatch(r"bundle: CPython 3\.8 on x86_64 left out: no wheel of textual\S+", left[0]), \
        res.stderr
    assert "for CPython 3.11 on x86_64" in res.stderr.splitlines()[-1]
    assert (tmp_path / "out" / "tuidbg.pyz").is_file()
