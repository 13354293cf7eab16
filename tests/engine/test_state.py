"""The pure reducer: DebuggerState from async MI records."""

from __future__ import annotations

import dataclasses

import pytest

from tuidbg.engine.mi import parse_line
from tuidbg.engine.state import DebuggerState, ProcessState, apply_refresh, reduce


def run(state, *lines):
    for line in lines:
        state = reduce(state, parse_line(line))
    return state


def test_state_is_immutable():
    st = DebuggerState()
    with pytest.raises(dataclasses.FrozenInstanceError):
        st.process = ProcessState.RUNNING  # type: ignore[misc]


def test_run_stop_exit_sequence():
    st = run(
        DebuggerState(),
        '=thread-group-started,id="i1",pid="4242"',
        '=thread-created,id="1",group-id="i1"',
        '*running,thread-id="all"',
    )
    assert st.process is ProcessState.RUNNING and st.pid == 4242
    assert [t.state for t in st.threads] == ["running"]
    st2 = run(
        st,
        '*stopped,reason="breakpoint-hit",disp="keep",bkptno="1",frame={addr="0x1",func="add",args=[],file="a.c",fullname="/t/a.c",line="3",arch="i386:x86-64"},thread-id="1",stopped-threads="all",core="0"',
    )
    assert st2.process is ProcessState.STOPPED
    assert st2.generation == st.generation + 1
    assert st2.stop.bkptno == "1" and st2.stop.describe() == "breakpoint 1"
    assert st2.selected_thread == "1" and st2.selected_frame == 0
    assert st2.frames[0].func == "add" and st2.frames[0].line == 3
    assert st.process is ProcessState.RUNNING  # the old snapshot did not change
    st3 = run(
        st2,
        '=thread-exited,id="1",group-id="i1"',
        '=thread-group-exited,id="i1",exit-code="012"',
        '*stopped,reason="exited",exit-code="012"',
    )
    assert st3.process is ProcessState.EXITED and st3.exit_code == 10
    assert st3.exit_description == "exited with code 10"


def test_normal_exit_reads_the_same_whichever_record_comes_first():
    running = run(DebuggerState(), '=thread-group-started,id="i1",pid="7"', '*running,thread-id="all"')
    group = '=thread-group-exited,id="i1",exit-code="0"'
    stopped = '*stopped,reason="exited-normally"'
    for order in ((group,), (stopped,), (group, stopped), (stopped, group)):
        st = run(running, *order)
        assert st.process is ProcessState.EXITED and st.exit_code == 0, order
        assert st.exit_description == "exited normally (code 0)", order


def test_signal_stop_and_exited_signalled():
    st = run(DebuggerState(), '*stopped,reason="signal-received",signal-name="SIGSEGV",signal-meaning="Segmentation fault",frame={addr="0x1",func="main"},thread-id="1"')
    assert st.stop.describe() == "SIGSEGV (Segmentation fault)"
    st = run(st, '*stopped,reason="exited-signalled",signal-name="SIGKILL",signal-meaning="Killed"')
    assert st.process is ProcessState.EXITED and "SIGKILL" in st.exit_description


def test_breakpoints_created_modified_deleted():
    st = run(
        DebuggerState(),
        '=breakpoint-created,bkpt={number="2",type="breakpoint",disp="keep",enabled="y",addr="<PENDING>",pending="foo",times="0",original-location="foo"}',
        '=breakpoint-created,bkpt={number="1",type="breakpoint",disp="keep",enabled="y",addr="0x10",func="main",file="a.c",fullname="/t/a.c",line="5",times="0"}',
    )
    assert [b.number for b in st.breakpoints] == ["1", "2"]
    assert st.breakpoint("2").is_pending
    st = run(st, '=breakpoint-modified,bkpt={number="2",type="breakpoint",disp="keep",enabled="n",addr="0x20",func="foo",file="b.c",fullname="/t/b.c",line="9",times="3",cond="x > 1"}')
    b2 = st.breakpoint("2")
    assert not b2.is_pending and not b2.enabled and b2.times == 3 and b2.condition == "x > 1"
    assert b2.source_lines() == [("/t/b.c", 9)]
    st = run(st, '=breakpoint-deleted,id="1"')
    assert [b.number for b in st.breakpoints] == ["2"]


def test_multi_location_breakpoint_takes_a_source_line_from_its_locations():
    st = run(
        DebuggerState(),
        '=breakpoint-modified,bkpt={number="1",type="breakpoint",disp="keep",enabled="y",addr="<MULTIPLE>",times="1",original-location="vecAdd",locations=[{number="1.1",enabled="n",addr="0x5555",func="vecAdd(int const*, int const*, int*, int)",file="vecadd.cu",fullname="/p/vecadd.cu",line="5",thread-groups=["i1"]},{number="1.2",enabled="y",addr="0x7fff",func="vecAdd(int const*, int const*, int*, int)",file="vecadd.cu",fullname="/p/vecadd.cu",line="8",thread-groups=["i1"]}]}',
    )
    b = st.breakpoint("1")
    assert len(b.locations) == 2 and b.line == 8 and b.locations[0].enabled is False


def test_library_loaded_sets_activity_while_running():
    st = run(DebuggerState(), '*running,thread-id="all"', '=library-loaded,id="/x/libtorch_cpu.so",target-name="/x/libtorch_cpu.so",host-name="/x/libtorch_cpu.so",symbols-loaded="0",thread-group="i1"')
    assert st.activity == "loading libtorch_cpu.so"
    assert st.libraries[0].basename == "libtorch_cpu.so"
    st = run(st, '=library-unloaded,id="/x/libtorch_cpu.so",target-name="/x/libtorch_cpu.so",host-name="/x/libtorch_cpu.so",thread-group="i1"')
    assert st.libraries == ()


def test_thread_selected_from_the_console():
    st = run(DebuggerState(), '*stopped,reason="signal-received",signal-name="SIGINT",frame={addr="0x1",func="main"},thread-id="1"')
    st = run(st, '=thread-selected,id="3",frame={level="2",addr="0x2",func="worker"}')
    assert st.selected_thread == "3" and st.selected_frame == 2


def test_refresh_with_an_old_generation_is_dropped():
    st = run(DebuggerState(), '*stopped,reason="end-stepping-range",frame={addr="0x1",func="a"},thread-id="1"')
    gen = st.generation
    st2 = run(st, '*running,thread-id="all"', '*stopped,reason="end-stepping-range",frame={addr="0x2",func="b"},thread-id="1"')
    assert apply_refresh(st2, gen, frames=()) is st2
    st3 = apply_refresh(st2, st2.generation, frames=())
    assert st3.frames == ()


def test_records_of_other_kinds_change_nothing():
    st = DebuggerState()
    for line in ['~"hello\\n"', "(gdb)", "BFD: noise", '^done', '=cmd-param-changed,param="x",value="y"']:
        assert reduce(st, parse_line(line)) is st


TWO_PROCESSES = (  # gdb's records as a second process starts (thread 1 in i1, pid 100; thread 2 in i2, pid 200)
    '=thread-group-started,id="i1",pid="100"',
    '=thread-created,id="1",group-id="i1"',
    '=thread-group-added,id="i2"',
    '=thread-group-started,id="i2",pid="200"',
    '=thread-created,id="2",group-id="i2"',
)


def test_records_go_to_the_process_they_name_and_a_stop_selects_its_process():
    st = run(DebuggerState(), *TWO_PROCESSES, '*running,thread-id="all"')
    assert [(i.id, i.pid, i.process) for i in st.inferiors] == [
        ("i1", 100, ProcessState.RUNNING), ("i2", 200, ProcessState.NOT_STARTED)]
    st = run(st, '*running,thread-id="2"',
             '*stopped,reason="breakpoint-hit",bkptno="1",thread-id="2",frame={level="0",func="child"}')
    assert st.selected_inferior == "i2" and st.pid == 200 and st.is_stopped and st.frames[0].func == "child"
    assert st.generation == 1 and st.inferiors[0].generation == 0  # (only the process that stopped takes one)
    assert st.inferiors[0].process is ProcessState.RUNNING  # the other process runs on
    st = run(st, '=library-loaded,id="/lib/x.so",target-name="/lib/x.so",host-name="/lib/x.so",symbols-loaded="0",thread-group="i1"')
    assert [lib.id for lib in st.inferiors[0].libraries] == ["/lib/x.so"] and st.libraries == ()
    # a refresh stamped with the selected process's generation lands there
    st2 = apply_refresh(st, 1, locals_=(), locals_key=("2", 0), done=True)
    assert st2.inferior.refreshed and not st2.inferiors[0].refreshed


def test_a_refresh_of_one_process_never_lands_on_another():
    """Two processes run together and gdb stops both (all-stop): the refresh of one's stop, stamped with its
    generation, is dropped when the user has meanwhile selected the other (whose generation once had the
    same number: they were counted per process)."""
    st = run(
        DebuggerState(), *TWO_PROCESSES,
        '*running,thread-id="1"',
        '*running,thread-id="2"',
        '*stopped,reason="breakpoint-hit",bkptno="1",thread-id="2",stopped-threads="all",frame={level="0",func="f"}',
    )
    i1, i2 = st.inferiors
    assert i1.process is i2.process is ProcessState.STOPPED and i1.generation != i2.generation
    assert st.selected_inferior == "i2" and st.last_generation == max(i1.generation, i2.generation)
    other = dataclasses.replace(st, selected_inferior="i1")  # the user selects the other process
    assert apply_refresh(other, i2.generation, locals_=(), locals_key=("2", 0), done=True) is other
    # each stop takes a number no stop of any process had
    st = run(st, '*running,thread-id="all"',
             '*stopped,reason="breakpoint-hit",bkptno="1",thread-id="1",stopped-threads="all",frame={level="0",func="g"}')
    assert st.selected_inferior == "i1" and st.generation == st.last_generation
    assert len({inf.generation for inf in st.inferiors} | {i1.generation, i2.generation}) == 4


def test_a_stop_clears_the_views_of_the_previous_stop_but_keeps_the_agent():
    from tuidbg.engine.python.model import AgentInfo, PyStack

    st = run(DebuggerState(), '=thread-group-started,id="i1",pid="7"', '*stopped,reason="signal-received",thread-id="1"')
    agent = AgentInfo(status="connected")
    st = st.with_python(stack=PyStack(status="ok"), agent=agent, transient=True)
    st = run(st, '*running,thread-id="all"', '*stopped,reason="end-stepping-range",thread-id="1"')
    assert st.python.stack is None and not st.python.transient and st.python.agent is agent
    assert st.cuda.snapshot is None and not st.cuda.focus_known


def test_running_again_for_the_same_step_is_the_same_state():
    # gdb's ^running (the session makes a *running of it) and then its own *running, for one step
    st = run(DebuggerState(), '=thread-group-started,id="i1",pid="4242"', '=thread-created,id="1",group-id="i1"',
             '=thread-created,id="2",group-id="i1"', '*running,thread-id="all"',
             '*stopped,reason="end-stepping-range",thread-id="1",stopped-threads="all"')
    running = run(st, '*running,thread-id="all"')
    assert running.process is ProcessState.RUNNING
    assert reduce(running, parse_line('*running,thread-id="all"')) is running  # nothing new for the listeners
    assert reduce(running, parse_line('*running,thread-id="2"')) is running
    # a thread that was not running yet is news
    one = run(st, '*running,thread-id="1"')
    assert [t.state for t in one.threads] == ["running", "stopped"]
    both = reduce(one, parse_line('*running,thread-id="all"'))
    assert both is not one and [t.state for t in both.threads] == ["running", "running"]


def test_showing_another_process_keeps_a_stop_the_session_goes_on_from_unseen():
    from tuidbg.engine.state import Inferior

    st = DebuggerState(inferiors=(Inferior(id="i1"), Inferior(id="i2")), selected_inferior="i2")
    moved = st.with_python(transient=True).showing("i1")
    assert moved.selected_inferior == "i1" and moved.python.transient  # (the Python view is the shown one's)
    assert not st.showing("i1").python.transient  # (a stop to be seen stays one)
