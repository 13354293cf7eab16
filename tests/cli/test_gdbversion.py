"""``tuidbg --version``: the debuggers' answers kept per binary (tuidbg.gdbversion) are the asked ones."""

import os
import shutil
import stat
import subprocess

import pytest

from helpers import run_tuidbg

from tuidbg import gdbversion


def _version(cache_home, path=None):
    env = {"XDG_CACHE_HOME": str(cache_home)}
    if path is not None:
        env["PATH"] = path
    res = run_tuidbg("--version", env=env)
    assert res.returncode == 0, res.stderr
    return res.stdout


@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed on this machine")
def test_the_cached_answer_is_the_asked_one(tmp_path):
    asked = _version(tmp_path / "cache")  # nothing cached: gdb (and cuda-gdb) asked
    cache = tmp_path / "cache" / "tuidbg" / gdbversion.CACHE_NAME
    assert cache.is_file() and stat.S_IMODE(cache.stat().st_mode) == 0o600
    cached = _version(tmp_path / "cache")
    assert cached == asked
    assert cached == _version(tmp_path / "elsewhere")  # (and the same again asked afresh)
    gdb_first = subprocess.run(["gdb", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    assert f"gdb: {shutil.which('gdb')} ({gdb_first})" in cached.splitlines()


def _fake_gdb(folder, program):
    """A copy of coreutils' ``program`` as ``gdb`` (an ELF file that answers ``--version``)."""
    folder.mkdir(exist_ok=True)
    fake = folder / "gdb"
    tmp = folder / "gdb.new"
    shutil.copy(shutil.which(program), tmp)
    os.replace(tmp, fake)  # (a new file: another inode, as a reinstall gives)
    return fake


def test_a_changed_debugger_is_asked_again(tmp_path):
    bin_dir = tmp_path / "bin"
    fake = _fake_gdb(bin_dir, "true")
    path = f"{bin_dir}:/nonexistent"
    first = _version(tmp_path / "cache", path)
    assert f"gdb: {fake} (true (GNU coreutils)" in first
    assert _version(tmp_path / "cache", path) == first
    _fake_gdb(bin_dir, "echo")
    assert f"gdb: {fake} (echo (GNU coreutils)" in _version(tmp_path / "cache", path)


def test_a_cached_answer_is_not_asked_again(tmp_path, monkeypatch):
    fake = _fake_gdb(tmp_path / "bin", "true")
    cache = str(tmp_path / "c" / "versions.json")
    first = gdbversion.first_lines([str(fake)], cache)
    assert first[str(fake)][0].startswith("true (GNU coreutils)")

    def no_asking(paths):
        raise AssertionError(f"asked {paths} again")

    monkeypatch.setattr(gdbversion, "ask", no_asking)
    assert gdbversion.first_lines([str(fake)], cache) == first


def test_a_cache_that_is_not_ours_or_not_sane_is_ignored(tmp_path):
    fake = _fake_gdb(tmp_path / "bin", "true")
    folder = tmp_path / "c"
    folder.mkdir()
    cache = folder / "versions.json"
    bad = tmp_path / "elsewhere.json"
    key = next(iter(__import__("json").loads(_seeded(fake, str(cache)))))
    bad.write_text('{"%s": ["forged"]}' % key)
    cache.unlink()
    cache.symlink_to(bad)  # a link: not followed
    assert gdbversion.first_lines([str(fake)], str(cache))[str(fake)][0].startswith("true (GNU coreutils)")
    for text in ("not json", "[1, 2]", '{"%s": [3]}' % key, "x" * (gdbversion.MAX_CACHE + 10)):
        cache.unlink()
        cache.write_text(text)
        assert gdbversion.first_lines([str(fake)], str(cache))[str(fake)][0].startswith("true (GNU coreutils)")


def _seeded(fake, cache):
    gdbversion.first_lines([str(fake)], cache)
    with open(cache) as f:
        return f.read()


def test_a_script_is_asked_every_time(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "gdb"
    script.write_text("#!/bin/sh\necho \"GNU gdb (wrapper) $(cat %s)\"\n" % (tmp_path / "v"))
    script.chmod(0o755)
    (tmp_path / "v").write_text("1")
    cache = str(tmp_path / "c" / "versions.json")
    assert gdbversion.first_lines([str(script)], cache)[str(script)] == ["GNU gdb (wrapper) 1"]
    (tmp_path / "v").write_text("2")
    assert gdbversion.first_lines([str(script)], cache)[str(script)] == ["GNU gdb (wrapper) 2"]
