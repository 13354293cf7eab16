"""``tuidbg attach`` to a program whose main thread is blocked in C while another thread runs Python, on
the interpreters where neither a pending call nor PEP 768 reaches that thread (issue 30 item 13): before
3.12 a pending call runs in the main thread only, and a free-threaded build's PEP 768 request in the one
thread state it is written into. gdb makes the program start a thread of its own that boots the agent
(``tuidbg.engine.pyagent.boot_thread``): the worker's breakpoint fires at once, and the program runs on
unharmed to its end once tuidbg detaches. Real gdb, real interpreters."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import pytest
from conftest import requires_gdb
from helpers import BlockedMain, cpython314_param, debian_py311_param, line_of, PROGRAMS, pyenv_params
from test_agent import _stop, requires_attach

from tuidbg.agent import protocol as P
from tuidbg.engine import pyagent
from tuidbg.engine.pyagent import boot_thread
from tuidbg.engine.records import Frame

pytestmark = [requires_gdb, pytest.mark.slow, requires_attach]

BLOCKED = PROGRAMS / "py" / "blocked_main.py"
PYTHONS = [*pyenv_params(("3.9", "3.10", "3.11")), debian_py311_param(), cpython314_param("3.14t")]


def _ran_on_unharmed(proc) -> None:
    """The program answers a line as it would have without tuidbg, and ends with 0."""
    assert proc.poll() is None
    proc.stdin.write(b"bye\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == b"got bye"
    assert proc.wait(30) == 0


@pytest.mark.parametrize("mode", [("worker",), ("worker", "join"), ("worker", "lock")], ids=["read", "join", "lock"])
@pytest.mark.parametrize("python", PYTHONS)
async def test_a_thread_of_its_own_loads_the_agent_while_main_is_blocked_in_c(make_session, python, mode):
    with BlockedMain(python, *mode) as proc:
        s = await make_session(mode="attach", pid=proc.pid, agent=True, python_target=True)
        ctl = pyagent.controller(s)
        await s.launch()
        assert ctl.info.inject == "pending-call+thread", ctl.info.inject_note
        assert "in a thread of its own" in ctl.info.message
        body = line_of(BLOCKED, "work_body")
        bp = await ctl.add_breakpoint(str(BLOCKED), body)
        await s.cont()
        stop = await _stop(ctl)  # (the pending call of before waited for the main thread's next line: forever)
        assert ctl.info.connected
        assert (stop.reason, stop.bp_id, stop.func, stop.line) == (P.R_BREAKPOINT, bp.id, "work", body)
        assert int(await ctl.evaluate("n")) == 1000
        await s.close()  # (detaches)
        _ran_on_unharmed(proc)


def _tasks(pid: int) -> set[str]:
    return {p.name for p in Path(f"/proc/{pid}/task").iterdir()}


@pytest.mark.parametrize("python", PYTHONS)
async def test_detached_before_it_ran_the_thread_ends_without_python(make_session, python):
    # tuidbg lets go at the attach stop, before the program ran on: the thread it made ends at its gate
    # (no Python run, no agent, nothing on stderr) and the program goes on as before.
    with BlockedMain(python, "worker", stderr=subprocess.PIPE) as proc:
        before = _tasks(proc.pid)
        s = await make_session(mode="attach", pid=proc.pid, agent=True, python_target=True)
        ctl = pyagent.controller(s)
        await s.launch()
        assert ctl.info.inject == "pending-call+thread", ctl.info.inject_note
        assert len(_tasks(proc.pid)) == len(before) + 1  # (waiting at its gate)
        await s.close()  # (detaches: the gate says cancelled)
        deadline = time.monotonic() + 30
        while _tasks(proc.pid) != before:  # (the thread sleeps 10 ms between two looks at its gate)
            assert time.monotonic() < deadline, f"the booting thread did not end: {_tasks(proc.pid) - before}"
            await asyncio.sleep(0.05)
        _ran_on_unharmed(proc)
        assert proc.stderr.read() == b""


@pytest.mark.parametrize("python", [debian_py311_param()])
async def test_a_thread_in_code_that_holds_a_lock_pthread_create_takes_leaves_it_to_the_pending_call(
        make_session, python):
    # A thread reads stdin inside dl_iterate_phdr (the loader's lock held) while main joins it. Only the
    # calling thread runs during gdb's call of pthread_create, so a lock that a stopped thread holds would
    # never be released: no thread of its own is made, the main thread's pending call loads the agent at its
    # next line (as before 3.12 without the booting thread), and says why.
    with BlockedMain(python, "worker", "join", "phdr") as proc:
        before = _tasks(proc.pid)
        s = await make_session(mode="attach", pid=proc.pid, agent=True, python_target=True)
        ctl = pyagent.controller(s)
        await s.launch()
        assert ctl.info.inject == "pending-call"
        assert "dl_iterate_phdr" in ctl.info.inject_note and "no thread of its own" in ctl.info.inject_note
        assert _tasks(proc.pid) == before  # (no thread made)
        after = line_of(BLOCKED, "after_read")
        bp = await ctl.add_breakpoint(str(BLOCKED), after)
        await s.cont()
        proc.stdin.write(b"x\n")
        proc.stdin.flush()
        stop = await _stop(ctl)
        assert (stop.reason, stop.bp_id, stop.func, stop.line) == (P.R_BREAKPOINT, bp.id, "main", after)
        await s.close()
        # (inside the block, which kills it at its end: let go, the program goes on to its end by itself)
        assert proc.wait(30) == 0, proc.crashed()
        assert proc.stdout.readline().strip() == b"got x"


def test_the_frames_where_pthread_create_is_not_called_by_their_names_in_gdbs_stacks():
    # names as gdb 13 shows them on this machine's glibc 2.36 (with and without its debug symbols): glibc's
    # aliases (__GI___dl_iterate_phdr, __libc_malloc, _int_free) are the same functions as their plain names
    unsafe = ["__GI___dl_iterate_phdr", "dl_iterate_phdr", "__libc_malloc", "malloc", "_int_free", "_int_malloc",
              "__lll_lock_wait_private", "_dl_open", "__libc_dlopen_mode", "__libc_fork", "_Fork",
              "__pthread_create_2_1", "allocate_stack", "malloc_consolidate", "tcache_init", "<signal handler called>"]
    safe = ["__libc_start_call_main", "__libc_start_main_impl", "start_thread", "clone3", "__GI___libc_read",
            "lock_PyThread_acquire_lock", "PyThread_acquire_lock_timed", "__futex_abstimed_wait_common64",
            "__new_sem_wait_slow64", "_PyEval_EvalFrameDefault", "ffi_call", "select", "epoll_wait"]
    frame = lambda i, name: Frame(level=i, addr="0x0", func=name)  # noqa: E731
    for name in unsafe:
        assert boot_thread.unsafe_frame([frame(0, "main"), frame(1, name)]) == f"{name} (frame 1)"
    assert boot_thread.unsafe_frame([frame(i, name) for i, name in enumerate(safe)]) is None
