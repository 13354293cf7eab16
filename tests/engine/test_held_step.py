"""gdb's output read by a thread of its own (engine.gdb_output), and held while a step written by
another thread runs (MIClient.write_reserved's ``on_stop``): the step's ``*stopped`` reaches
``on_stop`` in the reader's thread before the loop hears anything of the step, then the loop gets
everything in gdb's order; a hold ends at an error, at gdb's end and after its time; the thread
ends with the transport, even while something else holds gdb's output open."""

from __future__ import annotations

import asyncio
import os
import threading

from conftest import requires_gdb
from helpers import PROGRAMS, line_of, wait_for, wait_stopped

from tuidbg.engine import client as client_module
from tuidbg.engine import mi
from tuidbg.engine import gdb_output
from tuidbg.engine.gdb_output import OutputThread
from tuidbg.engine.state import ProcessState

pytestmark = requires_gdb


async def stopped(make_session, program):
    s = await make_session(mode="run", program=str(program))
    await s.console("break middle")
    await s.launch()
    await wait_stopped(s)
    return s


def watched(client) -> list[tuple]:
    """What the loop hears from gdb, in order, into the list returned (``on_stop`` adds to it too)."""
    events: list[tuple] = []
    dispatch = client._dispatch

    def spy(rec):
        events.append(("loop", rec.kind, rec.cls))
        return dispatch(rec)

    client._dispatch = spy
    return events


async def test_a_held_steps_stop_reaches_on_stop_first_then_the_loop_hears_it_all_in_order(make_session, threads_prog):
    s = await stopped(make_session, threads_prog)
    client = s.client
    fd = client.transport.write_fd()
    events = watched(client)
    gen = s.state.generation

    def on_stop(rec: mi.MIRecord) -> None:
        events.append(("on_stop", threading.current_thread().name, rec.cls, rec.results["frame"]["line"]))

    token, line = client.reserve(s.step_command("next"))
    assert client.write_reserved(token, line, fd, client.writes, on_stop)
    res = await client.take_reserved(token)
    assert res.cls == "running"
    await wait_for(lambda: s.state.is_stopped and s.state.generation > gen, 10, "the step's stop")
    after = str(line_of(PROGRAMS / "threads.c", "middle_after"))
    # nothing of the step reached the loop before on_stop had its stop, in gdb's output thread
    assert events[0] == ("on_stop", "tuidbg-gdb-output", "stopped", after)
    heard = [(kind, cls) for _, kind, cls in events[1:]]
    assert heard.index((mi.EXEC, "running")) < heard.index((mi.EXEC, "stopped"))  # (gdb's order)
    assert s.state.frames[0].line == int(after)

    # held or not, the engine goes on as before
    assert (await s.cmd("-data-evaluate-expression 6*7")).get("value") == "42"


async def test_a_hold_ends_at_the_steps_error(make_session, threads_prog, monkeypatch):
    monkeypatch.setattr(client_module, "HOLD_AT_MOST", 600.0)  # (only the error can end it in time)
    s = await stopped(make_session, threads_prog)
    client = s.client
    called = []
    token, line = client.reserve("-exec-next --thread 999")
    assert client.write_reserved(token, line, client.transport.write_fd(), client.writes, called.append)
    res = await asyncio.wait_for(client.take_reserved(token, check=False), 20)
    assert res.cls == "error" and not called
    assert (await asyncio.wait_for(s.cmd("-data-evaluate-expression 1+1"), 20)).get("value") == "2"


async def test_a_stop_after_the_holds_time_goes_the_usual_way(make_session, threads_prog, monkeypatch):
    monkeypatch.setattr(client_module, "HOLD_AT_MOST", 0.0)
    s = await stopped(make_session, threads_prog)
    client = s.client
    events = watched(client)
    called = []
    gen = s.state.generation
    token, line = client.reserve(s.step_command("next"))
    assert client.write_reserved(token, line, client.transport.write_fd(), client.writes, called.append)
    assert (await client.take_reserved(token)).cls == "running"
    await wait_for(lambda: s.state.is_stopped and s.state.generation > gen, 10, "the step's stop")
    assert not called
    assert (mi.EXEC, "stopped") in [(kind, cls) for _, kind, cls in events]
    assert s.state.frames[0].line == line_of(PROGRAMS / "threads.c", "middle_after")


async def test_gdbs_end_during_a_hold_loses_nothing(make_session, threads_prog, monkeypatch):
    monkeypatch.setattr(client_module, "HOLD_AT_MOST", 600.0)
    s = await stopped(make_session, threads_prog)
    client = s.client
    await s.cmd("-gdb-set confirm off")
    token, line = client.reserve("-gdb-exit")
    assert client.write_reserved(token, line, client.transport.write_fd(), client.writes, lambda rec: None)
    res = await asyncio.wait_for(client.take_reserved(token, check=False), 20)
    assert res.cls == "exit"  # (held until gdb's end, then read)
    await asyncio.wait_for(client.wait_exit(), 20)
    assert s.state.process is ProcessState.GDB_EXITED or client.exited is not None


async def test_the_reader_thread_ends_with_its_transport(make_session, threads_prog):
    s = await stopped(make_session, threads_prog)
    thread = s.client.transport._output.thread
    assert thread.is_alive()
    await s.close()
    await asyncio.to_thread(thread.join, 10)
    assert not thread.is_alive()


async def test_stop_ends_the_thread_while_another_process_holds_the_output_open():
    r, w = os.pipe()
    reader = OutputThread(r)
    reader.start()
    chunks = reader.chunks()
    os.write(w, b"^done\n")
    assert await asyncio.wait_for(chunks.__anext__(), 10) == b"^done\n"
    reader.stop()  # (w is still open: no end of the output would come)
    await asyncio.to_thread(reader.thread.join, 10)
    assert not reader.thread.is_alive()
    assert [c async for c in chunks] == []  # (the end)
    os.close(w)


async def test_the_thread_reads_at_most_its_backlog_ahead_of_the_loop(monkeypatch):
    monkeypatch.setattr(gdb_output, "BACKLOG", 1000)
    r, w = os.pipe()
    os.set_blocking(w, False)
    reader = OutputThread(r)
    reader.start()
    sent = 0
    try:  # (gdb's side: it writes until the pipe is full, as the loop takes nothing)
        for _ in range(10_000):
            sent += os.write(w, b"x" * 4096)
            await asyncio.sleep(0)
    except BlockingIOError:
        pass
    assert reader._ready_bytes <= 1000 + gdb_output.CHUNK  # (the pipe full, the thread waiting)
    got = 0
    chunks = reader.chunks()
    while got < sent:
        got += len(await asyncio.wait_for(chunks.__anext__(), 10))
    assert got == sent  # (nothing lost: the thread read on as the loop took)
    os.close(w)
    assert [c async for c in chunks] == []
    await asyncio.to_thread(reader.thread.join, 10)
