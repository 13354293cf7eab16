"""The asyncio task reader's tables (tuidbg/gdbext/cpython_tasks.py, cpython_objlayouts.py) against each
interpreter's DWARF, 3.14's ``_AsyncioDebug`` read as the reader reads it, and the page cache's pointer
fast path against a plain read."""

from __future__ import annotations

import json
import struct
import subprocess

import pytest
from conftest import requires_gdb
from helpers import cpython314, cpython314_missing, has_dwarf, pyenv_python

from tuidbg.engine.gdbext_loader import boot_code
from tuidbg.gdbext import cpython_tasks as T
from tuidbg.gdbext.cpython_mem import Memory, ReadError, Target
from tuidbg.gdbext.elfsyms import read as read_elf, section_headers

CHECK = r"""
import json, sys
G = sys.modules["tuidbg_gdbext.gdb_target"]
T = sys.modules["tuidbg_gdbext.cpython_tasks"]
import gdb
out = {}
for key, alts in T.TASK_DWARF_FIELDS.items():
    for tname, path in alts:
        try:
            t = gdb.lookup_type(path) if tname == "sizeof" else gdb.lookup_type(tname)
        except gdb.error:
            continue
        out[key] = t.sizeof if tname == "sizeof" else G._field_offset(t, path)
        break
print("@@" + json.dumps(out))
"""


def _asyncio_so(exe):
    found = sorted(exe.parent.parent.glob("lib/python3*/lib-dynload/_asyncio*.so"))
    return found[0] if found else None


def _dwarf(so, tmp_path) -> dict:
    script = tmp_path / "check.py"
    script.write_text(CHECK)
    boot = tmp_path / "boot.py"
    boot.write_text(boot_code())
    res = subprocess.run(["gdb", "-nx", "-q", "-batch", "-ex", f"source {boot}", "-ex", f"source {script}", str(so)],
                         capture_output=True, text=True, timeout=120)
    line = next((l for l in res.stdout.splitlines() if l.startswith("@@")), None)
    assert line, res.stdout + res.stderr
    return {k: v for k, v in json.loads(line[2:]).items() if v is not None}


@requires_gdb
@pytest.mark.parametrize("minor", [9, 10, 11, 12, 13, "14", "14t"])
def test_task_layout_matches_dwarf(tmp_path, minor):
    if isinstance(minor, str):
        exe = cpython314(f"3.{minor}")
        if exe is None:
            pytest.skip(cpython314_missing(f"3.{minor}"))
    else:
        exe = pyenv_python(f"3.{minor}")
        if exe is None:
            pytest.skip(f"pyenv has no CPython 3.{minor} on this machine")
    so = _asyncio_so(exe)
    if so is None or not has_dwarf(so):
        pytest.skip(f"{exe}'s _asyncio module has no debug info")
    dwarf = _dwarf(so, tmp_path)
    if isinstance(minor, int):
        table = T.TASK_TABLES[minor]
        assert {k: table[k] for k in table} == {k: dwarf[k] for k in table}
        return
    # 3.14: what the reader takes from _AsyncioDebug (the .AsyncioDebug section of the file, as loaded),
    # and what it places relative to it, agree with DWARF, free-threaded too
    elf = read_elf(str(so))
    addr, size = elf.sections[".AsyncioDebug"]
    with open(so, "rb") as f:
        off = next(s[3] for s in section_headers(f) if s[0] == ".AsyncioDebug")
        f.seek(off)
        raw = f.read(size)
    header = 32 if minor == "14t" else 16
    got = T._layout_from_debug(raw, header)
    assert got is not None
    keys = [k for k in T.TASK_DWARF_FIELDS if k in dwarf]
    assert len(keys) == len(T.TASK_DWARF_FIELDS)
    assert {k: got[k] for k in keys} == {k: dwarf[k] for k in keys}


def test_layout_from_debug_refuses_nonsense():
    good = struct.pack("<13Q", 168, 136, 96, 108, 109, 128, 152, 10900, 10880, 900, 864, 872, 880)
    assert T._layout_from_debug(good, 16)["task.fut_waiter"] == 120
    assert T._layout_from_debug(struct.pack("<13Q", *range(13)), 16) is None
    assert T._layout_from_debug(b"\xff" * 104, 16) is None


class _Bytes(Target):
    def __init__(self, base, data):
        self.base, self.data = base, data

    def read(self, addr, size):
        lo = addr - self.base
        if lo < 0 or lo + size > len(self.data):
            raise ReadError(addr, size)
        return self.data[lo:lo + size]


def test_pointer_fast_path_is_a_plain_read():
    """Memory.ptr straight from a cached page equals unpacking Memory.read, at every offset around the
    edges of pages (across them, at the end of the mapping, past it)."""
    base = 0x10000
    data = bytes((i * 7 + 3) % 256 for i in range(3 * 4096))
    mem = Memory(_Bytes(base, data))
    plain = Memory(_Bytes(base, data))
    for a in list(range(base, base + 40)) + list(range(base + 4096 - 16, base + 4096 + 16)) + \
            list(range(base + 3 * 4096 - 16, base + 3 * 4096 + 8)):
        try:
            want = struct.unpack("<Q", plain.read(a, 8))[0]
        except ReadError:
            with pytest.raises(ReadError):
                mem.ptr(a)
            continue
        assert mem.ptr(a) == want, hex(a)
