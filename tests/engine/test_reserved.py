"""A command whose line another thread writes to gdb (MIClient.reserve, ui.keyplan): its answer is
the caller's whether it comes before or after the loop hears that the line was written; a token not
written is given back; gdb gone is an error, not a wait."""

from __future__ import annotations

import asyncio
import os

import pytest
from conftest import requires_gdb
from helpers import stopped_in_middle, wait_for

from tuidbg.engine.errors import GdbExited

pytestmark = requires_gdb


async def test_a_reserved_command_is_answered_however_its_answer_and_its_taking_meet(make_session, threads_prog):
    s = await stopped_in_middle(make_session, threads_prog)
    client = s.client
    fd = s.client.transport.write_fd()
    assert fd is not None

    # the answer first, then the loop told that the line was written
    token, line = client.reserve("-data-evaluate-expression 6*7")
    assert line == f"{token}-data-evaluate-expression 6*7\n".encode()
    assert client.oldest_pending() is None  # (reserved, not written: nothing in flight)
    assert not client.write_reserved(token, line, fd, client.writes - 1)  # (a command written since: not now)
    assert client.write_reserved(token, line, fd, client.writes)
    assert client.oldest_pending()[0] == token  # (in flight: a hung gdb would show)
    await wait_for(lambda: token in client.tokens_held()["answered"], 10, "the answer")
    res = await client.take_reserved(token)
    assert res.cls == "done" and res.get("value") == "42"

    # the loop told (as the input thread's call usually comes) before the answer is read
    token, line = client.reserve("-data-evaluate-expression 6*8")
    assert client.write_reserved(token, line, fd, client.writes)
    answer = client.take_reserved(token)
    assert client.oldest_pending()[0] == token and token in client.tokens_held()["pending"]
    res = await answer
    assert res.cls == "done" and res.get("value") == "48"

    # not written: given back, nothing left waiting
    token, _line = client.reserve("-data-evaluate-expression 1")
    writes = client.writes
    client.release(token)
    assert token not in client.tokens_held()["reserved"] and client.oldest_pending() is None
    assert client.writes == writes  # (reserving is not writing: a plan made before stays good)
    await s.cmd("-data-evaluate-expression 2")
    assert client.writes == writes + 1
    assert not client.tokens_held()["answered"]


async def test_a_reserved_command_taken_after_gdb_is_gone_fails_at_once(make_session, threads_prog):
    s = await stopped_in_middle(make_session, threads_prog)
    client = s.client
    token, _line = client.reserve("-exec-next")
    os.kill(client.transport.pid, 9)
    await wait_for(lambda: not client.alive, 10, "gdb gone")
    with pytest.raises(GdbExited):
        await asyncio.wait_for(client.take_reserved(token), 5)
