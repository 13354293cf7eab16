"""Close the session while requests the screen made at a Python breakpoint are under way or queued (the
locals, the watches and the console each ask at a stop): the program must come out as it went in, and the
agent be told of the detach (it then takes its SIGTRAP shield out, and says nothing on the program's stderr).

Before the fix (``PyAgent._quiesce``), a request queued behind the agent's lock went on during the detach:
it found the stop function's breakpoint already gone, took the native path, overwrote the agent's detach
in its mailbox and started an inferior call as gdb let go; and the detach answered the stop the screen
showed rather than the request's own answer stop, which the agent waited at. The agent was never told,
and kept its SIGTRAP shield for the life of the program."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time

import pytest
from conftest import requires_gdb
from helpers import LOADED_FLOOR, line_of, wait_for

from faults.test_detach_moments import INTERPRETERS, STEADY, _assert_as_before, _attached, _start

pytestmark = [requires_gdb, pytest.mark.slow]

ROUNDS = 6  # of the randomized test, per interpreter


def _catches_sigtrap(pid: int) -> bool:
    with open(f"/proc/{pid}/status") as f:
        caught = next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt:"))
    return bool(caught & (1 << 4))


@contextlib.contextmanager
def _steady(python):
    """The steady program and what it was before the attach; killed at the end, whatever happened."""
    p, before = _start(python)
    try:
        yield p, before
    finally:
        p.kill()
        p.wait()


async def _at_breakpoint(make_session, p):
    s, ctl = await _attached(make_session, p)
    await ctl.add_breakpoint(str(STEADY), line_of(STEADY, "work"))
    await s.cont()
    st = await ctl.wait_stop(60)
    assert st.python.stop is not None
    return s, ctl, st


async def _settle(requests) -> list:
    """Each request's answer or error (a request the close cut short fails with EngineError)."""
    out = []
    for q in requests:
        try:
            out.append(await asyncio.wait_for(q, 30))
        except Exception as exc:  # noqa: BLE001  (what became of it is not the point: the program is)
            out.append(exc)
    return out


def _unharmed(p, before) -> None:
    """As before, untraced and running; the agent was told (its shield is out); nothing of tuidbg's said."""
    _assert_as_before(p, before)
    deadline = time.monotonic() + LOADED_FLOOR  # (the agent takes it out a moment after gdb has let go)
    while _catches_sigtrap(p.pid):
        assert time.monotonic() < deadline, "the agent kept its SIGTRAP shield: it was not told of the detach"
        time.sleep(0.05)
    p.kill()
    p.wait()
    err = p.stderr.read().decode(errors="replace")
    assert "tuidbg" not in err, err


@pytest.mark.parametrize("python", INTERPRETERS)
async def test_close_as_a_request_is_answered(python, make_session):
    """The close starts at a request's own answer stop, with two more requests queued behind it."""
    with _steady(python) as (p, before):
        s, ctl, st = await _at_breakpoint(make_session, p)
        gen = st.last_generation
        closing: list[asyncio.Future] = []

        def on_state(cur) -> None:
            if not closing and cur.is_stopped and cur.python.transient and cur.last_generation > gen:
                closing.append(asyncio.ensure_future(s.close("detach")))

        s.on_state(on_state)
        requests = [asyncio.ensure_future(ctl.evaluate("n + 1")), asyncio.ensure_future(ctl.evaluate("n + 2")),
                    asyncio.ensure_future(ctl.python_locals(0))]
        await wait_for(lambda: bool(closing), 30, "the close, at the first request's answer")
        await closing[0]
        await _settle(requests)
        _unharmed(p, before)


@pytest.mark.parametrize("python", INTERPRETERS[:2])
async def test_close_during_a_slow_request(python, make_session, tmp_path):
    """The close comes while the agent runs a slow expression, with another request queued."""
    mark = tmp_path / "started"
    with _steady(python) as (p, before):
        s, ctl, _ = await _at_breakpoint(make_session, p)
        requests = [asyncio.ensure_future(ctl.evaluate(f"(open({str(mark)!r}, 'w').close(), __import__('time').sleep(1.5))")),
                    asyncio.ensure_future(ctl.python_locals(0))]
        await wait_for(lambda: mark.exists(), 30, "the slow expression to run")
        await s.close("detach")
        await _settle(requests)
        _unharmed(p, before)


@pytest.mark.parametrize("python", INTERPRETERS[:2])
async def test_close_at_random_moments_of_requests(python, make_session):
    """Bounded randomized rounds: three requests, the close after 0-50 ms (the seed names the failing round)."""
    seed = int(os.environ.get("TUIDBG_CLOSE_SEED", "29"))
    rng = random.Random(seed)
    for r in range(ROUNDS):
        with _steady(python) as (p, before):
            s, ctl, _ = await _at_breakpoint(make_session, p)
            requests = [asyncio.ensure_future(ctl.python_locals(0)), asyncio.ensure_future(ctl.evaluate("n + 1")),
                        asyncio.ensure_future(ctl.python_locals(1))]
            delay = rng.choice([0, 0, 0.001, 0.003, 0.005, 0.01, 0.02, 0.05])
            if delay:
                await asyncio.sleep(delay)
            await s.close("detach")
            await _settle(requests)
            try:
                _unharmed(p, before)
            except AssertionError as exc:
                raise AssertionError(f"round {r} (seed {seed}, close after {delay}s): {exc}") from exc
