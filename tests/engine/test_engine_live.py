"""The engine against real gdb on C programs the tests compile."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, line_of, wait_for, wait_released, wait_stopped

from tuidbg.engine.errors import EngineError, GdbExited, MIError, Timeout
from tuidbg.engine.state import ProcessState

pytestmark = requires_gdb

SRC = PROGRAMS / "threads.c"


async def test_break_run_step_next_finish_stack_locals_threads(make_session, threads_prog):
    out = bytearray()
    s = await make_session(mode="run", program=str(threads_prog))
    s.on_program_output(out.extend)
    bp = await s.break_insert(file=str(SRC), line=line_of(SRC, "main_call"))
    assert bp.line == line_of(SRC, "main_call") and bp.fullname == str(SRC)
    await s.launch()
    st = await wait_stopped(s)
    assert st.process is ProcessState.STOPPED
    assert st.stop.reason == "breakpoint-hit" and st.stop.bkptno == bp.number
    assert st.frames[0].func == "main" and st.frames[0].line == line_of(SRC, "main_call")
    # program output went to its own terminal, not to MI
    await wait_for(lambda: b"hello from main" in out, 5, "program output")
    # three threads: main and two workers
    assert len(st.threads) == 3
    assert {t.state for t in st.threads} == {"stopped"}
    names = {v.name for v in st.locals}
    assert {"pt", "numbers", "mode", "result"} <= names
    assert st.breakpoint(bp.number).times == 1

    await s.step()  # into middle()
    st = await wait_stopped(s)
    assert st.stop.reason == "end-stepping-range"
    assert st.frames[0].func == "middle" and st.frames[0].line == line_of(SRC, "middle_call")
    assert [f.func for f in st.frames[:2]] == ["middle", "main"]
    assert {v.name for v in st.locals} >= {"v", "r"}
    assert next(v for v in st.locals if v.name == "v").value == "3"

    await s.step()  # into leaf()
    st = await wait_stopped(s)
    assert st.frames[0].func == "leaf" and st.frames[0].line == line_of(SRC, "leaf_body")

    await s.finish()  # back to middle, with the return value
    st = await wait_stopped(s)
    assert st.stop.reason == "function-finished"
    assert st.frames[0].func == "middle"
    assert st.stop.payload.get("return-value") == "8"

    await s.next()
    st = await wait_stopped(s)
    assert st.frames[0].func == "middle" and st.frames[0].line == line_of(SRC, "middle_after")

    # select the caller frame: locals follow
    await s.select_frame(1)
    st = s.state
    assert st.selected_frame == 1
    assert {"pt", "numbers"} <= {v.name for v in st.locals}

    # var objects with bounded children
    var = await s.var_create("pt", frame=1)
    assert var.numchild == 3
    kids, more = await s.var_children(var.name, 0, 2)
    assert [k.expression for k in kids] == ["x", "y"] and more
    kids, more = await s.var_children(var.name, 2, 2)
    assert [k.expression for k in kids] == ["label"] and not more
    assert '"origin"' in kids[0].value
    arr = await s.var_create("numbers", frame=1)
    kids, _ = await s.var_children(arr.name, 0, 5)
    assert [k.value for k in kids] == ["1", "2", "3", "4", "5"]
    assert await s.evaluate("pt.x + pt.y", frame=1) == "7"

    # another thread: its own frames
    worker = next(t for t in st.threads if t.id != st.current_thread)
    await s.select_thread(worker.id)
    st = s.state
    assert st.selected_thread == worker.id
    assert any(f.func == "worker" for f in st.frames)

    await s.break_delete(bp.number)
    assert s.state.breakpoint(bp.number) is None
    await s.cont()
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 20, "exit")
    assert s.state.exit_code == 7
    assert b"result=9 sum=6" in out


async def test_interrupt_busy_loop(make_session, threads_prog):
    s = await make_session(mode="run", program=str(threads_prog), args=["busy"])
    out = bytearray()
    s.on_program_output(out.extend)
    await s.launch()
    await wait_for(lambda: b"busy" in out, 30, "the program in its busy loop")
    await s.interrupt()
    st = await wait_stopped(s)
    assert st.process is ProcessState.STOPPED
    assert st.stop.reason == "signal-received" and st.stop.signal_name in ("SIGINT", "0")
    assert any(f.func == "busy" for f in st.frames)
    # and it runs on after the interrupt
    await s.cont()
    await wait_for(lambda: s.state.process is ProcessState.RUNNING, 10, "running again")


async def test_sigsegv_stop_with_reason(make_session, threads_prog):
    s = await make_session(mode="run", program=str(threads_prog), args=["segv"])
    await s.launch()
    st = await wait_stopped(s)
    assert st.stop.reason == "signal-received"
    assert st.stop.signal_name == "SIGSEGV"
    assert "Segmentation fault" in st.stop.describe()
    assert st.frames[0].func == "main" and st.frames[0].line == line_of(SRC, "segv")


async def test_breakpoint_condition_enable_disable(make_session, deep_prog):
    s = await make_session(mode="run", program=str(deep_prog), args=["10"])
    bp = await s.break_insert(function="recurse", condition="n == 4")
    assert s.state.breakpoint(bp.number).condition == "n == 4"
    await s.launch()
    st = await wait_stopped(s)
    assert await s.evaluate("n") == "4"
    await s.break_enable(bp.number, False)
    assert s.state.breakpoint(bp.number).enabled is False
    stop_bp = await s.break_insert(function="stop_here")
    await s.cont()
    st = await wait_stopped(s)
    assert st.stop.bkptno == stop_bp.number  # the disabled one did not stop us
    await s.break_condition(bp.number, None)
    await s.break_enable(bp.number, True)
    assert s.state.breakpoint(bp.number).condition is None
    await s.cont()
    st = await wait_stopped(s)
    assert st.stop.bkptno == bp.number
    # breakpoint by address
    addr = st.frames[0].addr
    abp = await s.break_insert(address=addr)
    assert abp.addr.lower() == addr.lower()


async def test_deep_stack_is_fetched_in_pages(make_session, deep_prog):
    s = await make_session(mode="run", program=str(deep_prog), args=["150"])
    await s.break_insert(function="stop_here")
    await s.launch()
    st = await wait_stopped(s)
    assert len(st.frames) == 64 and st.more_frames
    await s.load_more_frames()
    st = s.state
    assert len(st.frames) == 128 and st.more_frames
    assert [f.level for f in st.frames] == list(range(128))
    await s.load_more_frames()
    await s.load_more_frames()
    st = s.state
    assert not st.more_frames and st.frames[-1].func == "main"


async def test_stale_refresh_is_dropped(make_session, deep_prog):
    """Two stops in quick succession: the state ends with the second stop's frames."""
    s = await make_session(mode="run", program=str(deep_prog), args=["5"])
    await s.break_insert(function="stop_here")
    await s.launch()
    await wait_stopped(s)
    gen = s.state.generation
    await s.cont()  # next iteration of the loop in main hits stop_here again
    st = await wait_stopped(s)
    assert st.generation == gen + 1
    assert st.frames[0].func == "stop_here" and len(st.frames) == 8
    from tuidbg.engine.state import apply_refresh

    stale = apply_refresh(st, gen, frames=())
    assert stale is st  # a reply stamped with the old generation changes nothing


async def test_pending_breakpoint_and_console(make_session, threads_prog):
    s = await make_session(mode="run", program=str(threads_prog))
    bp = await s.break_insert(function="no_such_function_yet")
    assert bp.is_pending
    res = await s.console("info breakpoints")
    assert "no_such_function_yet" in res.console_text()
    with pytest.raises(MIError):
        await s.console("frobnicate")
    matches = await s.complete("info br")
    assert "info breakpoints" in matches


async def test_gdb_killed_mid_command_fails_pending_within_a_second(make_session):
    s = await make_session(mode="none")
    task = asyncio.ensure_future(s.cmd('-interpreter-exec console "python import time; time.sleep(30)"', timeout=60))
    await wait_for(lambda: any("time.sleep(30)" in c for c in s.client.pending_commands), 10, "the command sent")
    os.kill(s.client.transport.pid, signal.SIGKILL)
    with pytest.raises(GdbExited) as ei:  # (not the command's own Timeout 60 s later: gdb's death fails it)
        await task
    assert "SIGKILL" in str(ei.value)
    assert s.state.process is ProcessState.GDB_EXITED
    assert "SIGKILL" in s.state.gdb_exit
    with pytest.raises(GdbExited):
        await s.cmd("-gdb-version")


async def test_command_timeout(make_session):
    s = await make_session(mode="none")
    with pytest.raises(Timeout):
        await s.cmd('-interpreter-exec console "python import time; time.sleep(2)"', timeout=0.3)
    # the late answer is dropped, the next command works
    await wait_for(lambda: s.client.late_answers == 1, 10, "the late answer")
    res = await s.cmd("-gdb-version")
    assert "GNU gdb" in res.console_text()


async def test_operations_refused_in_wrong_state(make_session, threads_prog):
    s = await make_session(mode="run", program=str(threads_prog), args=["busy"])
    with pytest.raises(EngineError, match="not running"):
        await s.next()
    await s.launch()
    await wait_for(lambda: s.state.process is ProcessState.RUNNING, 10, "running")
    with pytest.raises(EngineError, match="running"):
        await s.step()


async def test_huge_value_over_the_line_limit_fails_cleanly(make_session, threads_prog):
    from tuidbg.engine.transport import SubprocessTransport, gdb_env

    argv = (await make_session(start=False, mode="run", program=str(threads_prog))).gdb_argv()
    s = await make_session(mode="run", program=str(threads_prog),
                           transport=SubprocessTransport(argv, env=gdb_env(False), max_line=4096))
    await s.break_insert(file=str(SRC), line=line_of(SRC, "main_call"))
    await s.launch()
    await wait_stopped(s)
    await s.cmd("-gdb-set print elements unlimited")
    with pytest.raises(MIError, match="over tuidbg's limit"):
        await s.evaluate("*(char (*)[20000])main")
    assert await s.evaluate("1+1") == "2"  # still in sync afterwards


async def test_multi_megabyte_reply_is_read(make_session, threads_prog):
    s = await make_session(mode="run", program=str(threads_prog))
    await s.break_insert(file=str(SRC), line=line_of(SRC, "main_call"))
    await s.launch()
    await wait_stopped(s)
    await s.cmd("-gdb-set print elements unlimited")
    await s.cmd("-gdb-set print repeats unlimited")
    await s.cmd("-gdb-set max-value-size unlimited")
    value = await s.evaluate("big_buffer")
    assert len(value) > 1_000_000


async def test_attach_read_stack_detach_leaves_process_running(make_session, threads_prog):
    proc = subprocess.Popen([str(threads_prog), "sleep"], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().startswith(b"sleeping")
        s = await make_session(mode="attach", pid=proc.pid)
        await s.launch()
        st = await wait_stopped(s)
        assert st.process is ProcessState.STOPPED
        funcs = [f.func for f in st.frames]
        assert "main" in funcs
        with open(f"/proc/{proc.pid}/status") as f:
            assert f"TracerPid:\t0" not in f.read()
        await s.close()  # attach mode: close detaches
        wait_released(proc.pid)
        assert proc.poll() is None
        with open(f"/proc/{proc.pid}/status") as f:
            status = f.read()
        assert "TracerPid:\t0" in status
        assert "State:\tS" in status or "State:\tR" in status
    finally:
        proc.kill()
        proc.wait()


async def test_program_with_spaces_and_quotes_in_its_path_and_args(make_session, threads_prog, tmp_path):
    d = tmp_path / "dir with 'quotes' and \"spaces\""
    d.mkdir()
    exe = d / "my prog"
    exe.write_bytes(threads_prog.read_bytes())
    exe.chmod(0o755)
    out = bytearray()
    s = await make_session(mode="run", program=str(exe), args=["output", "3"])
    s.on_program_output(out.extend)
    await s.launch()
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 20, "exit")
    assert s.state.exit_code == 0
    assert b"line 2 of program output" in out


async def test_launch_before_anyone_listens_keeps_what_the_program_printed_for_the_screen(make_session, threads_prog):
    """tuidbg run starts the program before the screen is up (cli.run_ui): what it prints, and gdb's
    console meanwhile, reach the first listener when it comes; launch() runs once however often called."""
    s = await make_session(mode="run", program=str(threads_prog), args=["output", "3"])
    await asyncio.gather(s.launch(), s.launch())  # (the CLI's and the screen's callers: one run)
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 20, "exit")
    await s.launch()  # the screen coming late: the launch is done, nothing runs again
    assert s.state.process is ProcessState.EXITED and s.state.exit_code == 0
    out, engine_own, screen, later = bytearray(), [], [], []
    s.on_console(engine_own.append, replay=False)  # (a listener of the engine's own does not take the backlog)
    s.on_program_output(out.extend)
    s.on_console(screen.append)
    s.on_console(later.append)
    assert out == b"".join(b"line %d of program output\r\n" % i for i in range(3))
    text = "".join(r.text for r in screen)
    assert "exited normally" in text and text.count("exited normally") == 1
    assert engine_own == [] and later == []
    await s.console("echo after\\n")
    assert [r.text for r in later if "after" in r.text] == ["after\n"]
    assert any("after" in r.text for r in engine_own)


async def test_program_input_reaches_the_program(make_session, tmp_path):
    src = tmp_path / "echo.c"
    src.write_text('#include <stdio.h>\nint main(void){char b[64]; if(fgets(b,64,stdin)) printf("got:%s", b); return 0;}\n')
    exe = tmp_path / "echo"
    subprocess.run(["gcc", "-g", str(src), "-o", str(exe)], check=True)
    out = bytearray()
    s = await make_session(mode="run", program=str(exe))
    s.on_program_output(out.extend)
    await s.launch()
    await wait_for(lambda: s.state.process is ProcessState.RUNNING, 10, "running")
    s.write_program_input(b"hello there\n")
    await wait_for(lambda: s.state.process is ProcessState.EXITED, 20, "exit")
    assert b"got:hello there" in out


async def test_ex_commands_run_before_the_program(make_session, threads_prog):
    s = await make_session(
        mode="run", program=str(threads_prog), ex=["break leaf", "set $tuidbg_test = 41"]
    )
    assert await s.evaluate("$tuidbg_test + 1") == "42"
    await s.refresh_breakpoints()
    assert any(b.func == "leaf" for b in s.state.breakpoints)
    await s.launch()
    st = await wait_stopped(s)
    assert st.frames[0].func == "leaf"


async def test_debuginfod_off_by_default(make_session):
    s = await make_session(mode="none")
    res = await s.console("show debuginfod enabled")
    assert "off" in res.console_text()


async def test_step_now_writes_the_step_before_it_returns(make_session, threads_prog):
    s = await make_session(mode="run", program=str(threads_prog))
    await s.break_insert(function="middle")
    with pytest.raises(EngineError, match="cannot step over"):
        s.step_now("next")  # (not started: at once, nothing sent)
    await s.launch()
    st = await wait_stopped(s)
    line = st.frames[0].line
    answer = s.step_now("next")
    assert any(c.startswith("-exec-next") for c in s.client.pending_commands)  # written, not yet answered
    await answer
    st = await wait_stopped(s)
    assert st.stop.reason == "end-stepping-range" and st.frames[0].line != line


async def test_until_the_next_line_and_until_a_location(make_session, threads_prog):
    s = await make_session(mode="run", program=str(threads_prog))
    await s.break_insert(function="middle")
    await s.launch()
    st = await wait_stopped(s)
    assert st.frames[0].line == line_of(SRC, "middle_call")
    await s.until()  # (the next line: step_now's)
    st = await wait_stopped(s)
    assert st.frames[0].func == "middle" and st.frames[0].line == line_of(SRC, "middle_after")
    where = f"threads.c:{line_of(SRC, 'main_return')}"
    await s.until(where)  # (gdb's until also stops where middle returns to)
    st = await wait_stopped(s)
    assert st.frames[0].func == "main" and st.frames[0].line == line_of(SRC, "main_call")
    await s.until(where)
    st = await wait_stopped(s)
    assert st.frames[0].func == "main" and st.frames[0].line == line_of(SRC, "main_return")
