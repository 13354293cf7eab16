"""``elfsyms.DynSymbols`` (one name looked up at a time: the dump's fast path) against ``all_symbols`` (the whole
``.dynsym`` built into a dict, as elfsyms.read did before), on real ELF files: every name of the table, defined or
not, and names that are not there."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from helpers import DEBIAN_PY311, pyenv_python

from tuidbg.gdbext import elfsyms


def _files():
    out = [DEBIAN_PY311, Path("/usr/lib/x86_64-linux-gnu/libc.so.6")]
    for minor in ("3.9", "3.12", "3.13"):
        py = pyenv_python(minor)
        if py is not None:
            libs = sorted(Path(py).resolve().parents[1].glob("lib/libpython3*.so.1.0"))
            out.append(libs[0] if libs else Path(py).resolve())
    return [p for p in out if p.exists()]


def _every_name(path: Path) -> list[str]:
    """Every name the .dynsym's entries point at (imports, locals and versions' names included)."""
    with elfsyms.open_regular(str(path)) as f:
        secs = elfsyms.section_headers(f)
        dyn = next(s for s in secs if s[1] == 11)
        f.seek(dyn[3])
        data = f.read(dyn[4])
        f.seek(secs[dyn[5]][3])
        strs = f.read(secs[dyn[5]][4])
    names = set()
    for (st_name, *_rest) in struct.iter_unpack("<IBBHQQ", data):
        names.add(elfsyms._cstr(strs, st_name))
    return sorted(n for n in names if n)


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name)
def test_lookup_by_name_equals_the_whole_table(path):
    info = elfsyms.read(str(path))
    assert isinstance(info.symbols, elfsyms.DynSymbols)
    whole = elfsyms.all_symbols(str(path))
    assert len(whole) > 500  # (a real table: the interpreter's or libc's exports)
    names = _every_name(path)
    assert set(whole) < set(names)  # (some names are imports: not defined here)
    for name in names:
        assert info.symbols.get(name) == whole.get(name), name
        assert (name in info.symbols) == (name in whole), name
    for absent in ("", "no_such_symbol_here", "_PyRuntime_", "PyRuntime"):
        assert absent not in info.symbols and info.symbols.get(absent, -1) == whole.get(absent, -1)
        with pytest.raises(KeyError):
            info.symbols[absent]


def test_the_interpreters_runtime_is_found():
    info = elfsyms.read(str(DEBIAN_PY311))
    assert info.symbols["_PyRuntime"] == elfsyms.all_symbols(str(DEBIAN_PY311))["_PyRuntime"] > 0
