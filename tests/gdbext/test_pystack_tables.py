"""The built-in offset tables and the _Py_DebugOffsets reader, checked against each interpreter's DWARF."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, cpython314, cpython314_missing, has_dwarf, pyenv_python

from tuidbg.engine.gdbext_loader import boot_code
from tuidbg.gdbext import cpython_layouts as L

pytestmark = requires_gdb

CHECK = r"""
import json, sys
W = sys.modules["tuidbg_gdbext.cpython_walk"]
G = sys.modules["tuidbg_gdbext.gdb_target"]
t = G.GdbTarget()
dwarf = t.dwarf_offsets(sys.modules["tuidbg_gdbext.cpython_layouts"].DWARF_FIELDS, t.symbol("_PyEval_EvalFrameDefault"))
out = {"dwarf": dwarf}
if t.read(t.symbol("_PyRuntime"), 8) == b"xdebugpy":
    class NoDwarf(G.GdbTarget):
        def dwarf_offsets(self, fields, near):
            return None
    ip = W.Interpreter(NoDwarf())
    out["debug_offsets"] = ip.off
    out["source"] = ip.offsets_source
print("@@" + json.dumps(out))
"""


def _gdb_check(lib, tmp_path) -> dict:
    script = tmp_path / "check.py"
    script.write_text(CHECK)
    boot = tmp_path / "boot.py"
    boot.write_text(boot_code())
    res = subprocess.run(["gdb", "-nx", "-q", "-batch", "-ex", f"source {boot}", "-ex", f"source {script}", str(lib)],
                         capture_output=True, text=True, timeout=120)
    line = next((l for l in res.stdout.splitlines() if l.startswith("@@")), None)
    assert line, res.stdout + res.stderr
    return json.loads(line[2:])


@pytest.mark.parametrize("minor", [9, 10, 11, 12, 13, "14", "14t"])
def test_table_matches_dwarf(tmp_path, minor):
    if isinstance(minor, str):  # scripts/build-cpython314.sh's builds (3.14 also pyenv's)
        exe = cpython314(f"3.{minor}") or (pyenv_python("3.14") if minor == "14" else None)
        if exe is None:
            pytest.skip(cpython314_missing(f"3.{minor}"))
    else:
        exe = pyenv_python(f"3.{minor}")
        if exe is None:
            pytest.skip(f"pyenv has no CPython 3.{minor} on this machine")
    lib = exe.parent.parent / "lib" / f"libpython3.{minor}.so.1.0"
    if not lib.exists() or not has_dwarf(lib):
        pytest.skip(f"CPython 3.{minor} at {exe} has no shared libpython with debug info")
    got = _gdb_check(lib, tmp_path)
    dwarf = got["dwarf"]
    if isinstance(minor, str):
        # 3.14 has no table of its own: what the walker uses without DWARF (_Py_DebugOffsets, the
        # fields derived from it, the 3.13 table for the rest) agrees with DWARF, free-threaded too
        assert got["source"] == "debug_offsets"
        do = got["debug_offsets"]
        common = sorted(set(do) & set(dwarf))
        assert len(common) >= 40
        assert {k: do[k] for k in common} == {k: dwarf[k] for k in common}
        return
    table = L.TABLES[minor]
    common = sorted(set(table) & set(dwarf))
    assert len(common) >= 40
    assert {k: table[k] for k in common} == {k: dwarf[k] for k in common}
    # what a walk needs must be in the table on its own (stripped builds have no DWARF)
    required = L.REQUIRED_OBJECT if minor <= 10 else L.REQUIRED_INTERP
    assert all(k in table for k in required)
    if minor >= 13:
        # _Py_DebugOffsets read from libpython's static image, without DWARF, agrees with DWARF
        do = got["debug_offsets"]
        assert got["source"] == "debug_offsets"
        from_do = [k for k in L.DEBUG_OFFSETS_KEYS.values() if k in dwarf]
        assert len(from_do) >= 30
        assert {k: do[k] for k in from_do} == {k: dwarf[k] for k in from_do}


def test_debug_offsets_layouts_are_consistent():
    """Each minor's _Py_DebugOffsets description: word indices unique, in order, every group sized."""
    for minor, layout in L.DEBUG_OFFSETS_LAYOUTS.items():
        words = sorted(v for k, v in layout.items() if k != "_words")
        assert len(words) == len(set(words)), minor
        assert words[0] == 3 and words[-1] < layout["_words"]
        for key in L.DEBUG_OFFSETS_KEYS:
            if (key.split(".")[0] in ("set", "gen") or key == "iframe.stackpointer") and minor < 14:
                continue  # (new in 3.14's table)
            assert key in layout, (minor, key)
        for name in L.DEBUG_OFFSETS_EXPECT:
            assert name in layout
    # 3.14 inserted threads_main after threads_head and tlbc fields: later groups moved
    assert L.DEBUG_OFFSETS_LAYOUTS[14]["tstate.next"] == L.DEBUG_OFFSETS_LAYOUTS[13]["tstate.next"] + 3


SMOKE_36 = r"""
import importlib.util, sys
d = sys.argv[1]
spec = importlib.util.spec_from_file_location("tuidbg_gdbext", d + "/__init__.py", submodule_search_locations=[d])
m = importlib.util.module_from_spec(spec); sys.modules["tuidbg_gdbext"] = m; spec.loader.exec_module(m)
import tuidbg_gdbext.cpython_walk as W, tuidbg_gdbext.elfsyms as E
r = W.line_ranges("locations", bytearray([0x80 | (13 << 3) | 1, 4, 0x80 | (15 << 3)]), 10)
assert W.line_at(r, 0) == 12 and W.line_at(r, 4) is None, r
r = W.line_ranges("pep626", bytearray([4, 1, 6, 2]), 1)
assert W.line_at(r, 2) == 2 and W.line_at(r, 7) == 4, r
r = W.line_ranges("lnotab", bytearray([6, 1, 8, 2]), 5)
assert W.line_at(r, 0) == 5 and W.line_at(r, 6) == 6 and W.line_at(r, 20) == 8, r
e = E.read(sys.executable)
assert e is not None and e.sections.get(".text"), e
print("ok")
"""


def test_gdb_side_code_runs_on_python_36(tmp_path):
    """gdb's embedded Python can be as old as 3.6 (RHEL 8): the walker's pure parts run there."""
    py36 = pyenv_python("3.6")
    if py36 is None:
        pytest.skip("pyenv has no CPython 3.6 on this machine")
    import tuidbg.gdbext as pkg
    from pathlib import Path

    script = tmp_path / "smoke.py"
    script.write_text(SMOKE_36)
    res = subprocess.run([str(py36), str(script), str(Path(pkg.__file__).parent)], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr


SANITY = r"""
import json, sys
W = sys.modules["tuidbg_gdbext.cpython_walk"]
G = sys.modules["tuidbg_gdbext.gdb_target"]
ip = W.Interpreter(G.GdbTarget())
out = {"source": ip.offsets_source, "good": len(W.Walker(ip).thread_states())}
ip.off["ts.interp"] += 8  # a table that does not fit this build
try:
    W.Walker(ip).thread_states()
    out["bad"] = "no error"
except W.WalkError as exc:
    out["bad"] = str(exc)
print("@@" + json.dumps(out))
"""


@pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="this machine has no /usr/bin/python3.11")
def test_a_table_that_does_not_fit_is_refused(tmp_path):
    # Debian's stripped 3.11 is read with the built-in table; the same walk with one offset wrong
    # must say the offsets do not match instead of showing garbage.
    proc = subprocess.Popen([str(DEBIAN_PY311), "-c", "import time; print('ready', flush=True); time.sleep(60)"],
                            stdout=subprocess.PIPE)
    try:
        proc.stdout.readline()
        script = tmp_path / "sanity.py"
        script.write_text(SANITY)
        boot = tmp_path / "boot.py"
        boot.write_text(boot_code())
        res = subprocess.run(["gdb", "-nx", "-q", "-batch", "-p", str(proc.pid), "-ex", f"source {boot}",
                              "-ex", f"source {script}"], capture_output=True, text=True, timeout=120)
        line = next((l for l in res.stdout.splitlines() if l.startswith("@@")), None)
        assert line, res.stdout + res.stderr
        out = json.loads(line[2:])
        assert out["source"] == "table" and out["good"] == 1
        assert "does not point back to its interpreter" in out["bad"] and "do not match" in out["bad"]
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
