"""gdb's output held while a step written by another thread runs (MIClient.write_reserved's
``on_stop``, engine.gdb_output): the step's ``*stopped`` reaches ``on_stop`` in the thread that reads
gdb's output meanwhile, before the loop hears of it, then the loop gets everything in gdb's order and
reads gdb's output itself again; a hold ends at an error, at gdb's end and after its time; the
thread ends with the transport."""

from __future__ import annotations

import asyncio
import threading

from conftest import requires_gdb
from helpers import PROGRAMS, compile_c, line_of, stopped_in_middle, wait_for, wait_stopped

from tuidbg.engine import client as client_module
from tuidbg.engine import mi
from tuidbg.engine.state import ProcessState

pytestmark = requires_gdb


def lent(s):
    """How many holds gdb's output thread has read for since this call (a function to ask it)."""
    held = s.client.transport.held
    before = held.holds_read
    return lambda: held.holds_read - before


async def held_step(s, on_stop) -> None:
    """A `next` written as the input thread writes it, with gdb's output held (``on_stop``), until its stop."""
    client = s.client
    gen = s.state.generation
    token, line = client.reserve(s.step_command("next"))
    assert client.write_reserved(token, line, client.transport.write_fd(), client.writes, on_stop)
    assert (await client.take_reserved(token)).cls == "running"
    await wait_for(lambda: s.state.is_stopped and s.state.generation > gen, 10, "the step's stop")


def watched(client) -> list[tuple]:
    """What the loop hears from gdb, in order, into the list returned (``on_stop`` adds to it too)."""
    events: list[tuple] = []
    listener = client.listener

    def spy(rec, quiet):
        events.append(("loop", rec.kind, rec.cls))
        return listener(rec, quiet)

    client.set_listener(spy)
    return events


async def test_a_held_steps_stop_reaches_on_stop_first_then_the_loop_hears_it_all_in_order(make_session, threads_prog,
                                                                                           monkeypatch):
    monkeypatch.setattr(client_module, "HOLD_AT_MOST", 600.0)  # (a loaded machine's step: still held)
    s = await stopped_in_middle(make_session, threads_prog)
    events = watched(s.client)

    def on_stop(rec: mi.MIRecord) -> None:
        events.append(("on_stop", threading.current_thread().name, rec.cls, rec.results["frame"]["line"]))

    await held_step(s, on_stop)
    after = str(line_of(PROGRAMS / "threads.c", "middle_after"))
    # the stop reached on_stop, in gdb's output thread, before the loop heard of it
    first = events.index(("on_stop", "tuidbg-gdb-output", "stopped", after))
    heard = [(kind, cls) for _, kind, cls in events[first + 1:]]
    assert (mi.EXEC, "stopped") in heard and (mi.EXEC, "stopped") not in [e[1:] for e in events[:first]]
    assert heard.index((mi.EXEC, "running")) < heard.index((mi.EXEC, "stopped"))  # (gdb's order)
    assert s.state.frames[0].line == int(after)

    # gdb's output is the loop's again: the engine goes on as before
    assert (await s.cmd("-data-evaluate-expression 6*7")).get("value") == "42"
    assert not s.client.transport.held.lent


async def test_a_hold_ends_at_the_steps_error(make_session, threads_prog, monkeypatch):
    monkeypatch.setattr(client_module, "HOLD_AT_MOST", 600.0)  # (only the error can end it in time)
    s = await stopped_in_middle(make_session, threads_prog)
    client = s.client
    called, reads = [], lent(s)
    token, line = client.reserve("-exec-next --thread 999")
    assert client.write_reserved(token, line, client.transport.write_fd(), client.writes, called.append)
    res = await asyncio.wait_for(client.take_reserved(token, check=False), 20)
    assert res.cls == "error" and not called and reads() == 1  # (held, and given back at the error)
    assert (await asyncio.wait_for(s.cmd("-data-evaluate-expression 1+1"), 20)).get("value") == "2"


async def test_a_hold_over_before_the_loops_turn_lends_nothing(make_session, threads_prog, monkeypatch):
    monkeypatch.setattr(client_module, "HOLD_AT_MOST", 0.0)
    s = await stopped_in_middle(make_session, threads_prog)
    events, reads = watched(s.client), lent(s)
    called: list = []
    await held_step(s, called.append)
    assert not called and not reads()
    assert (mi.EXEC, "stopped") in [(kind, cls) for _, kind, cls in events]
    assert s.state.frames[0].line == line_of(PROGRAMS / "threads.c", "middle_after")


async def test_a_step_longer_than_its_hold_goes_on_the_loops_way(make_session, build_dir, monkeypatch):
    monkeypatch.setattr(client_module, "HOLD_AT_MOST", 0.005)
    src = PROGRAMS / "victim.c"
    sleeps = next(i for i, text in enumerate(src.read_text().splitlines(), 1) if "usleep(20000)" in text)
    s = await make_session(mode="run", program=str(compile_c(src, build_dir / "victim")))
    await s.console(f"break victim.c:{sleeps}")
    await s.launch()
    await wait_stopped(s)
    events, reads = watched(s.client), lent(s)
    called: list = []
    # A `next` over 20 ms of sleep: gdb's output lent to the output thread, and given back at the hold's
    # time with the step's start; its stop the loop's own. (A loop busy when the step is written lends
    # nothing, test_no_hold_once_the_loop_has_read_the_steps_stop: on a loaded machine the step is taken
    # again, from the same line, until one was lent.)
    for _ in range(20):
        events.clear()
        await held_step(s, called.append)
        assert reads() <= 1 and not called
        heard = [(kind, cls) for _, kind, cls in events]
        assert heard.index((mi.EXEC, "running")) < heard.index((mi.EXEC, "stopped"))
        assert s.state.frames[0].line != sleeps
        if reads():
            break
        gen = s.state.generation
        await s.cont()  # (round the loop to the breakpoint on the sleep again)
        await wait_for(lambda: s.state.is_stopped and s.state.generation > gen, 10, "the breakpoint again")
    assert reads() == 1


async def test_no_hold_once_the_loop_has_read_the_steps_stop(make_session, threads_prog, monkeypatch):
    # (the loop was busy when the step was written: it lends gdb's output only after the stop came)
    monkeypatch.setattr(client_module, "HOLD_AT_MOST", 600.0)
    s = await stopped_in_middle(make_session, threads_prog)
    held = s.client.transport.held
    reads, lends = lent(s), []
    lend = held.lend
    held.lend = lambda: lends.append(lend)  # (its turn comes later, by hand)
    called: list = []
    await held_step(s, called.append)
    lends.pop()()  # (the loop's turn, late)
    assert not reads() and not called and not held.lent  # (nothing lent: nothing held for 20 ms)
    assert (await asyncio.wait_for(s.cmd("-data-evaluate-expression 2+3"), 20)).get("value") == "5"


async def test_gdbs_end_during_a_hold_loses_nothing(make_session, threads_prog, monkeypatch):
    monkeypatch.setattr(client_module, "HOLD_AT_MOST", 600.0)
    s = await stopped_in_middle(make_session, threads_prog)
    client = s.client
    reads = lent(s)
    await s.cmd("-gdb-set confirm off")
    token, line = client.reserve("-gdb-exit")
    assert client.write_reserved(token, line, client.transport.write_fd(), client.writes, lambda rec: None)
    res = await asyncio.wait_for(client.take_reserved(token, check=False), 20)
    assert res.cls == "exit" and reads() == 1  # (held until gdb's end, then read)
    await asyncio.wait_for(client.wait_exit(), 20)
    assert s.state.process is ProcessState.GDB_EXITED or client.exited is not None


async def test_the_reader_thread_ends_with_its_transport(make_session, threads_prog):
    s = await stopped_in_middle(make_session, threads_prog)
    thread = s.client.transport.held.thread
    assert thread.is_alive()
    await s.close()
    await asyncio.to_thread(thread.join, 10)
    assert not thread.is_alive()
