"""States that come in bursts (a thread's start or end, 500 of them as gdb detaches a process) reach the
listeners once for the lot (``Listeners.set_state_soon``), never out of order with the others."""

from __future__ import annotations

import asyncio

from tuidbg.engine.listeners import Listeners
from tuidbg.engine.state import DebuggerState


class _Session(Listeners):
    def __init__(self) -> None:
        self._state = DebuggerState()
        self._init_listeners()


async def _until(pred, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not pred():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_a_burst_reaches_the_listeners_once_with_its_last_state():
    s = _Session()
    seen: list[DebuggerState] = []
    s.on_state(seen.append)
    states = [DebuggerState(activity=f"thread {i}") for i in range(500)]
    for st in states:
        s.set_state_soon(st, 0.05)
    assert seen == []
    await _until(lambda: seen)
    await asyncio.sleep(0.1)
    assert seen == [states[-1]]


async def test_a_state_set_meanwhile_goes_at_once_with_the_burst_in_it_and_nothing_after():
    s = _Session()
    seen: list[DebuggerState] = []
    s.on_state(seen.append)
    burst, stop = DebuggerState(activity="burst"), DebuggerState(activity="stop")
    s.set_state_soon(burst, 0.05)
    s.set_state(stop)
    assert seen == [stop]
    await asyncio.sleep(0.15)
    assert seen == [stop]
    s.set_state_soon(burst, 0.05)
    s.set_state(burst)  # (the same state, due: it goes now, once)
    assert seen == [stop, burst]
    await asyncio.sleep(0.15)
    assert seen == [stop, burst]
