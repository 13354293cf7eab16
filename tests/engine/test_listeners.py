"""engine.listeners.Channel: what comes before the first listener is kept for it, the newest within its bound."""

from __future__ import annotations

from tuidbg.engine.listeners import Channel


def test_the_first_replaying_listener_gets_the_newest_items_within_the_bound_and_the_rest_get_what_follows():
    ch: Channel[bytes] = Channel("output", keep=10, size=len)
    own, first, second = [], [], []
    ch.listen(own.append, replay=False)  # (an engine listener: from now on, the backlog stays)
    for chunk in (b"aaaa", b"bbbb", b"cccc", b"dddd"):
        ch.emit(chunk)
    ch.listen(first.append)
    ch.listen(second.append)
    assert first == [b"cccc", b"dddd"]  # 16 bytes kept as the last 8: the oldest go first
    assert own == [b"aaaa", b"bbbb", b"cccc", b"dddd"] and second == []
    ch.emit(b"eeee")
    assert first[-1] == second[-1] == own[-1] == b"eeee"


def test_a_listener_that_fails_does_not_stop_the_others():
    ch: Channel[str] = Channel("note", keep=5)

    def broken(item: str) -> None:
        raise ValueError(item)

    got = []
    ch.listen(broken)
    ch.listen(got.append)
    ch.emit("x")
    assert got == ["x"]


def test_without_keep_nothing_is_kept():
    ch: Channel[int] = Channel("state")
    ch.emit(1)
    got = []
    ch.listen(got.append)
    assert got == []
