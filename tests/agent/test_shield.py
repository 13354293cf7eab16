"""The agent's SIGTRAP shield (``tuidbg.agent._shield``), in real Python processes that no debugger traces:
each trap a vanished debugger can leave behind is survived, and what the program had is put back.

The processes run the machine code itself (no mock): the stop functions' own ``int3``, gdb's ``int3`` left
on the plain stop function, a SIGTRAP sent, an ``int3`` left in the middle of a function whose byte is put
back a moment later (the pc must go back onto it, and the function return what it computes), and the trap
flag left on. The fault tests (tests/faults/test_tree_faults.py) kill tuidbg and gdb for real."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
import textwrap

import pytest
from helpers import DEBIAN_PY311, REPO

from tuidbg.agent import _stub

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="the shield is x86-64 machine code")

PYTHONS = [p for p in (sys.executable, str(DEBIAN_PY311)) if shutil.which(p)]

PRELUDE = f"""
import ctypes, os, signal, sys, threading, time
sys.path.insert(0, {str(REPO)!r})
from tuidbg.agent import _shield, _stub
"""


def _run(python: str, body: str) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-c", PRELUDE + textwrap.dedent(body)], capture_output=True, text=True, timeout=60)


def test_the_page_is_its_assembly_source(tmp_path):
    """The bytes in _stub are what GNU as makes of PAGE_ASM (the source is the documentation)."""
    if shutil.which("as") is None or shutil.which("ld") is None:
        pytest.fail("binutils (as, ld) are needed to check the shield's machine code")
    (tmp_path / "page.s").write_text(_stub.PAGE_ASM)
    subprocess.run(["as", "--64", "-o", str(tmp_path / "page.o"), str(tmp_path / "page.s")], check=True)
    subprocess.run(["ld", "-e", "0", "-Ttext=0", "--oformat", "binary", "-o", str(tmp_path / "page.bin"),
                    str(tmp_path / "page.o")], check=True)
    assert (tmp_path / "page.bin").read_bytes() == _stub._X86_PAGE


@pytest.mark.parametrize("python", PYTHONS)
def test_every_trap_a_vanished_debugger_leaves_is_survived(python):
    r = _run(python, """
        assert _shield.arm() and _shield.armed()
        mem = os.open("/proc/self/mem", os.O_RDWR)
        addr, trap = _stub.make_stub(trap=True)
        trap(1, 0)
        print("the stop function's own int3: survived")
        addr, plain = _stub.make_stub(trap=False)
        os.pwrite(mem, b"\\xcc", addr)  # gdb's breakpoint, left there by a gdb that was killed
        plain(1, 0)
        print("gdb's int3 left on the plain stop function: survived")
        os.kill(os.getpid(), signal.SIGTRAP)
        print("a SIGTRAP sent: survived")
        # int3 left on 'mov eax, 42' (gdb killed with its breakpoint in); tuidbg puts the byte back 0.2 s later
        page = _stub.map_code(b"\\xb8\\x2a\\x00\\x00\\x00\\xc3")
        os.pwrite(mem, b"\\xcc", page)
        put_back = threading.Timer(0.2, lambda: os.pwrite(mem, b"\\xb8", page))
        put_back.start()
        print("a left int3, put back: returned", ctypes.CFUNCTYPE(ctypes.c_int)(page)())
        # the trap flag left on (a tracer killed while it single-stepped): pushf; or [rsp], TF; popf; mov eax, 7; ret
        page = _stub.map_code(b"\\x9c\\x48\\x81\\x0c\\x24\\x00\\x01\\x00\\x00\\x9d\\xb8\\x07\\x00\\x00\\x00\\xc3")
        print("the trap flag left on: returned", ctypes.CFUNCTYPE(ctypes.c_int)(page)())
        _shield.disarm()
        print("after disarm:", _shield.current(), _shield.armed())
    """)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert r.stdout.splitlines() == [
        "the stop function's own int3: survived",
        "gdb's int3 left on the plain stop function: survived",
        "a SIGTRAP sent: survived",
        "a left int3, put back: returned 42",
        "the trap flag left on: returned 7",
        "after disarm: 0 False",
    ], r.stderr


def test_without_the_shield_the_same_trap_ends_the_process():
    """(what the shield is for: the stop function's int3 in a process nobody traces)"""
    r = _run(sys.executable, """
        addr, trap = _stub.make_stub(trap=True)
        trap(1, 0)
        print("survived")
    """)
    assert r.returncode == -5 and "survived" not in r.stdout, (r.returncode, r.stdout)


def test_a_program_s_own_sigtrap_handler_is_left_alone():
    r = _run(sys.executable, """
        seen = []
        signal.signal(signal.SIGTRAP, lambda *a: seen.append(1))
        before = _shield.current()
        print(_shield.arm(), _shield.current() == before)
        _shield.disarm()
        print(_shield.current() == before)
        signal.signal(signal.SIGTRAP, signal.SIG_IGN)  # ignored: the shield goes in, and ignored it is again after
        print(_shield.arm(), _shield.armed())
        _shield.disarm()
        print(_shield.current())
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True", "True", "True", "True", "1"], r.stdout


def test_a_fork_no_debugger_keeps_gets_its_disposition_back():
    """A child forked by a shielded process, that no debugger keeps, has SIGTRAP as before at once."""
    r = _run(sys.executable, """
        assert _shield.arm()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w, b"%d" % _shield.current())
            os._exit(0)
        os.waitpid(pid, 0)
        print("child:", os.read(r, 100).decode(), "parent armed:", _shield.armed())
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "child: 0 parent armed: True", (r.stdout, r.stderr)
