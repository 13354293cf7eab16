"""The front end's model of agent stops, without gdb: the Python stack of an exception stop, and
which stop the user sees across the agent's own short stops."""

from __future__ import annotations

from tuidbg.agent import protocol as P
from tuidbg.engine.python import merge as M
from tuidbg.engine.python import model as PM
from tuidbg.engine.python import view as pyview
from tuidbg.engine.python.model import AgentStop, PyFrame, PyFrameInfo, PyThread
from tuidbg.engine.state import DebuggerState

TEST = "/src/tests/test_x.py"
PYT = "/site/_pytest/python.py"
HOOK = "/site/_pytest/runner.py"
AGENT = PM.AGENT_DIR + "/core.py"


def stop(reason, frames):
    return AgentStop(reason=reason, seq=3, thread_id="1", native_id=100, python_thread=7, thread_name="MainThread",
                     file=frames[0].file, line=frames[0].line, func=frames[0].func, frames=tuple(frames))


def test_failure_stop_shows_the_traceback_and_ties_the_running_callers_to_their_native_frames():
    # the agent's frames: the failed test and pytest's caller (both returned), then the callers
    # that still run; the stack in memory has the agent's own frames on top, then those callers
    agent_frames = [
        PyFrameInfo(TEST, 15, "test_fails"),
        PyFrameInfo(PYT, 157, "pytest_pyfunc_call"),
        PyFrameInfo(HOOK, 260, "call_and_report"),
        PyFrameInfo(HOOK, 117, "pytest_runtest_protocol"),
    ]
    live = PyThread(tid="1", lwp=100, frames=(
        PyFrame(index=0, function="stop", file=AGENT, line=10, native_level=4),
        PyFrame(index=1, function="pytest_exception_interact", file=AGENT, line=30, native_level=4),
        PyFrame(index=2, function="call_and_report", qualname="call_and_report", file=HOOK, line=260, native_level=9),
        PyFrame(index=3, function="pytest_runtest_protocol", file=HOOK, line=117, native_level=12),
    ), truncated=True, error="x")
    t = M.traceback_thread(stop(P.R_FAILURE, agent_frames), live)
    assert [(f.index, f.function, f.line, f.native_level) for f in t.frames] == [
        (0, "test_fails", 15, None),
        (1, "pytest_pyfunc_call", 157, None),
        (2, "call_and_report", 260, 9),
        (3, "pytest_runtest_protocol", 117, 12),
    ]
    assert t.tid == "1" and t.lwp == 100 and not t.truncated and t.error is None
    # qualified names: the pane shows the qualname, matching uses the function's own name
    q = M.traceback_thread(stop(P.R_UNCAUGHT, [PyFrameInfo(TEST, 3, "Suite.test_a"), PyFrameInfo(HOOK, 117, "pytest_runtest_protocol")]), live)
    assert [(f.name, f.function, f.native_level) for f in q.frames] == [("Suite.test_a", "test_a", None), ("pytest_runtest_protocol", "pytest_runtest_protocol", 12)]
    # without a stack from memory (an interpreter the walker cannot read) the frames are still there
    bare = M.traceback_thread(stop(P.R_UNCAUGHT, agent_frames), None)
    assert [f.function for f in bare.frames] == ["test_fails", "pytest_pyfunc_call", "call_and_report", "pytest_runtest_protocol"]
    assert all(f.native_level is None for f in bare.frames) and bare.tid == "1" and bare.lwp == 100
    # the agent's list cut short at its outer end (it sends 256 frames at most): matched from the
    # innermost frame that still runs
    cut = M.traceback_thread(stop(P.R_FAILURE, agent_frames[:3]), live)
    assert [(f.function, f.native_level) for f in cut.frames] == [
        ("test_fails", None), ("pytest_pyfunc_call", None), ("call_and_report", 9)]
    # other stops keep the stack in memory, an exception stop where it is raised too (its frames run)
    assert M.traceback_thread(stop(P.R_EXCEPTION, agent_frames), live) is None
    assert M.traceback_thread(stop(P.R_BREAKPOINT, agent_frames), live) is None
    assert M.traceback_thread(stop(P.R_STEP, agent_frames), None) is None


def test_the_stop_the_user_sees_survives_the_agents_own_stops():
    s = stop(P.R_BREAKPOINT, [PyFrameInfo(TEST, 15, "test_fails")])
    native = DebuggerState().evolve(generation=7)
    assert pyview.stop_generation(native) == 7
    first = native.with_python(stop=s, stop_generation=7)
    # an evaluation: the agent's thread ran and stopped again (generation 8), the same stop for the user
    after_eval = DebuggerState().evolve(generation=8).with_python(stop=s, stop_generation=7)
    assert pyview.stop_generation(first) == pyview.stop_generation(after_eval) == 7
    # a native stop afterwards has no agent stop: its own generation
    assert pyview.stop_generation(DebuggerState().evolve(generation=9).with_python(stop_generation=7)) == 9


class _Session:
    """What ``PyAgent``'s stop hook and refresh stage use of a session: its state, and the mailbox reads
    (each answered with the stop the agent wrote, as the agent lays out its mailbox)."""

    def __init__(self, mailboxes):
        self.state = DebuggerState()
        self.mailboxes = mailboxes  # address -> the out area's JSON
        self.reads = []

    def set_state(self, st):
        self.state = st

    def take(self, line, hooks):
        """A record from gdb, as DebugSession._on_async takes it."""
        from tuidbg.engine.mi import parse_line
        from tuidbg.engine.state import reduce

        rec = parse_line(line)
        new = reduce(self.state, rec)
        if rec.cls == "stopped":
            for hook in hooks:
                new = hook(new)
        self.state = new

    async def read_memory(self, address, count):
        import json
        import struct

        self.reads.append(address)
        body = json.dumps(self.mailboxes[address]).encode()
        head = bytearray(P.HEADER_SIZE)
        head[: len(P.MAGIC)] = P.MAGIC
        struct.pack_into("<I", head, P.OFF_OUT_LEN, len(body))
        return (bytes(head) + body)[:count]


async def test_a_request_in_one_process_does_not_hide_the_next_stop_of_another():
    """tuidbg run --children: an evaluation in one worker that needed its other threads to run (its interrupt
    is one of the request's own stops), then the other worker's Python breakpoint. When generations were
    counted per process, the second stop's could be the number of the first's, and it was taken for the
    request's (never read: the test waited for a stop forever). No two stops share one now."""
    from tuidbg.engine.pyagent import PyAgent
    from tuidbg.engine.pyagent.base import ProcLink
    from tuidbg.engine.python.model import AgentInfo
    from tuidbg.engine.session_config import SessionConfig

    stub = {200: 0x7FFFF6BA9000, 300: 0x7FFFF6A75000}
    mailbox = {200: 0x5EFC230, 300: 0x5F00000}
    s = _Session({mailbox[pid]: {"reason": "breakpoint", "seq": 2, "thread": 1, "file": TEST, "line": 13,
                                 "func": "__getitem__", "frames": [{"file": TEST, "line": 13, "func": "__getitem__"}]}
                  for pid in stub})
    ctl = PyAgent(SessionConfig(mode="run", program="python", agent=True, children="python"))
    ctl.session = s
    for pid in stub:
        ctl.add_link(ProcLink(AgentInfo(status="connected", pid=pid, stub_traps=True, stub_addr=stub[pid],
                                        mailbox=mailbox[pid]), pid))
    hooks = [ctl.stop_hook]

    def trap(tid, pid):  # the agent's stop function traps (real gdb 13 records, --children)
        s.take(f'*stopped,reason="signal-received",signal-name="SIGTRAP",signal-meaning="Trace/breakpoint trap",'
               f'frame={{addr="{stub[pid] + 1:#x}",func="??",args=[]}},thread-id="{tid}",stopped-threads="all"', hooks)

    for line in ('=thread-group-added,id="i2"', '=thread-group-started,id="i2",pid="200"',
                 '=thread-created,id="3",group-id="i2"', '*running,thread-id="3"'):
        s.take(line, hooks)
    s.state = s.state.evolve(inferiors=s.state.inferiors[1:])  # (the workers; their parent plays no part)

    trap("3", 200)  # the first worker's breakpoint
    assert s.state.selected_inferior == "i2" and s.state.python.stop_pending
    await ctl.stage(s, s.state.generation)
    assert s.state.python.stop is not None and not s.state.python.stop_pending and s.reads == [mailbox[200]]
    # the second worker starts meanwhile: it has had one stop fewer
    for line in ('=thread-group-added,id="i3"', '=thread-group-started,id="i3",pid="300"',
                 '=thread-created,id="5",group-id="i3"', '*running,thread-id="5"'):
        s.take(line, hooks)

    # an evaluation there: the program runs for it, is interrupted (a stop of the request's own), runs again
    with ctl.request_window(s):
        s.take('*running,thread-id="all"', hooks)
        s.take('*stopped,reason="signal-received",signal-name="SIGINT",signal-meaning="Interrupt",'
               'frame={addr="0x00007ffff7d32fcb",func="futex_wait",args=[]},thread-id="3",stopped-threads="all"', hooks)
        request_stop = s.state.generation
        await ctl.stage(s, request_stop)  # (not the agent's: nothing to read)
    s.take('*running,thread-id="all"', hooks)

    # the other worker's breakpoint: its own process's generation, once, was the number the request's stop
    # had in the first worker (generations counted per process); no two stops share one now
    trap("5", 300)
    assert s.state.selected_inferior == "i3" and s.state.generation > request_stop
    await ctl.stage(s, s.state.generation)
    assert not s.state.python.stop_pending and s.state.python.stop is not None, s.state.python
    assert s.reads == [mailbox[200], mailbox[300]]
