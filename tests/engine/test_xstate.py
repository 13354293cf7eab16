"""When gdb is given the target description without AVX state (tuidbg.engine.xstate): gdb before 14, an
x86-64 machine whose CPU has AMX, a 64-bit program; and that gdb, given it, makes inferior calls that
leave an attached process as it was (on this project's machine, an AMX Xeon, gdb 13.1 without it broke
the thread it called in: tests/faults/test_detach_moments.py and the attach tests failed)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import requires_gdb

from tuidbg.engine import xstate


def test_the_description_is_given_only_where_gdb_needs_it():
    amx = {"fpu", "avx512f", "amx_tile", "amx_int8"}
    py = sys.executable  # (a 64-bit ELF on the machines the tests run on)
    assert xstate.elf64(py) and not xstate.elf64(__file__) and not xstate.elf64("/nonexistent")
    assert xstate.needs_sse_description((13, 1), py, "x86_64", amx)
    assert xstate.needs_sse_description((12, 1), py, "x86_64", amx)  # (cuda-gdb 11.8 is gdb 12.1)
    assert not xstate.needs_sse_description((14, 2), py, "x86_64", amx)
    assert not xstate.needs_sse_description((13, 1), py, "x86_64", {"fpu", "avx512f"})
    assert not xstate.needs_sse_description((13, 1), py, "aarch64", amx)
    assert not xstate.needs_sse_description((13, 1), __file__, "x86_64", amx)  # (not an ELF program)
    assert not xstate.needs_sse_description((), py, "x86_64", amx)


@requires_gdb
async def test_an_inferior_call_in_an_attached_process_leaves_it_running(make_session):
    """A call through gdb (what loading the agent does) on whatever CPU runs the tests: its result comes
    back and the process, asleep in a system call at the attach, goes on sleeping and answering."""
    p = subprocess.Popen([sys.executable, "-c", "import sys, time\nfor line in sys.stdin:\n"
                          "    time.sleep(0.05); print(line.strip(), flush=True)\n"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    s = None
    try:
        p.stdin.write("a\n"); p.stdin.flush()
        assert p.stdout.readline().strip() == "a"
        s = await make_session(mode="attach", pid=p.pid)
        await s.launch()
        r = await s.cmd('-data-evaluate-expression "(int)getpid()"')
        assert int(r.get("value")) == p.pid
        if xstate.needs_sse_description(s.info.version, f"/proc/{p.pid}/exe"):
            names = await s.cmd("-data-list-register-names")
            assert "ymm0" not in names.get("register-names") and "xmm0" in names.get("register-names")
        await s.close()
        s = None
        p.stdin.write("b\n"); p.stdin.flush()
        assert p.stdout.readline().strip() == "b" and p.poll() is None
    finally:
        if s is not None:
            await s.close()
        p.kill()
        p.wait()
