"""The Python view-model (engine/python/view.py): which Python stack and frame the panes show, what
folds, what threads and eval-loop frames are labelled with. Pure functions over states built by
hand, as the session builds them: no gdb, no Textual."""

from __future__ import annotations

from tuidbg.agent import protocol as P
from tuidbg.agent.protocol import AGENT_THREAD_NAME
from tuidbg.engine.python import merge as M
from tuidbg.engine.python import view as V
from tuidbg.engine.python.model import AGENT_DIR, AgentStop, PyFrame, PyFrameInfo, PyStack, PyThread
from tuidbg.engine.state import DebuggerState, Frame, ProcessState, StopInfo

AGENT_FILE = AGENT_DIR + "/core.py"


def pyf(index, function, level, file="/app/x.py", line=10):
    return PyFrame(index=index, function=function, file=file, line=line, native_level=level)


def stopped(frames=(), *, tid="1", selected_frame=0, signal=None, py_threads=(), agent_stop=None, generation=3):
    st = DebuggerState().evolve(
        process=ProcessState.STOPPED, generation=generation, current_thread=tid, selected_thread=tid,
        selected_frame=selected_frame, frames=tuple(frames), frames_thread=tid, refreshed=True,
        stop=StopInfo(reason="signal-received" if signal else "breakpoint-hit", thread_id=tid, signal_name=signal),
    )
    if py_threads:
        st = st.with_python(stack=PyStack(status="ok", python="3.12.1", threads=tuple(py_threads)))
    if agent_stop is not None:
        st = st.with_python(stop=agent_stop, stop_generation=generation)
    return st


NATIVE = [Frame(level=i, func=f, addr=hex(0x1000 + i)) for i, f in enumerate(
    ["agent_stop_fn", "_PyEval_EvalFrameDefault", "_PyEval_EvalFrameDefault", "main"])]


def test_before_the_stacks_are_read_the_selection_is_kept():
    st = stopped(NATIVE)
    sel = V.PySelection(key=(3, "1"), index=2)
    assert V.next_selection(st, sel).index == 2  # nothing decoded yet: keep it until it is


def test_a_sigtrap_selects_the_frame_that_sent_it_and_asks_for_its_eval_loop():
    py = PyThread(tid="1", frames=(pyf(0, "trap_here", 2), pyf(1, "main", 2)))
    st = stopped(NATIVE, signal="SIGTRAP", py_threads=[py])
    sel = V.next_selection(st, V.PySelection())
    assert sel.index == 0 and sel.select_native == 2 and 3 in sel.auto_done
    # the automatic selection is made once per stop: the user's choice then stays
    again = V.next_selection(st, V.replace(sel, index=1, select_native=None))
    assert again.index == 1 and again.select_native is None


def test_at_a_plain_stop_the_partner_of_the_selected_native_frame_is_selected():
    py = PyThread(tid="1", frames=(pyf(0, "inner", 1), pyf(1, "outer", 2)))
    st = stopped(NATIVE, selected_frame=2, py_threads=[py])
    assert V.next_selection(st, V.PySelection()).index == 1
    # a new stop forgets the old selection
    newer = stopped(NATIVE, selected_frame=1, py_threads=[py], generation=4)
    assert V.next_selection(newer, V.PySelection(key=(3, "1"), index=1)).index == 0


def test_an_attach_or_an_interrupt_selects_the_users_innermost_frame_not_libcs():
    py = PyThread(tid="1", frames=(pyf(0, "inner", 1), pyf(1, "outer", 2)))
    # the attach: gdb's *stopped record gives no reason and no signal; frame 0 is libc's sleep
    attach = stopped(NATIVE, py_threads=[py]).evolve(stop=StopInfo(reason="", thread_id="1"))
    assert V.auto_python_stop(attach)
    assert V.next_selection(attach, V.PySelection()).index == 0
    sigint = stopped(NATIVE, signal="SIGINT", py_threads=[py])
    assert V.auto_python_stop(sigint)
    # a native breakpoint is not one: the partner of the selected native frame stays the rule
    at_bp = stopped(NATIVE, selected_frame=2, py_threads=[py])
    assert not V.auto_python_stop(at_bp) and V.next_selection(at_bp, V.PySelection()).index == 1
    # nor is a stop in another thread than the one selected
    other = attach.evolve(selected_thread="2")
    assert not V.auto_python_stop(other)


def test_the_agents_frames_are_skipped_and_folded():
    py = PyThread(tid="1", frames=(pyf(0, "_stop", 1, file=AGENT_FILE), pyf(1, "user_fn", 2), pyf(2, "main", 2)))
    stop = AgentStop(reason=P.R_BREAKPOINT, seq=1, thread_id="1", native_id=11, python_thread=5,
                     file="/app/x.py", line=10, func="user_fn", frames=(PyFrameInfo("/app/x.py", 10, "user_fn"),))
    st = stopped(NATIVE, py_threads=[py], agent_stop=stop)
    assert V.agent_stop_here(st) is stop and V.exception_stop(st) is None
    assert V.agent_top(st) == 2  # native frames 0 and 1 are the agent's stop function and its eval loop
    sel = V.next_selection(st, V.PySelection())
    assert sel.index == 1  # the user's innermost frame, not the agent's
    assert V.agent_frame_index(st, sel.index) == 0  # the agent counts the user's frames only
    rows = V.fold_agent_top(M.merged_stack(st), V.agent_top(st))
    assert rows[0].kind == "fold" and rows[0].rule == "tuidbg-stop"
    assert all(r.level is None or r.level >= 2 for r in rows[1:])
    notes = V.eval_frame_notes(py)
    assert notes[1] == "(tuidbg's agent)" and notes[2] == "⇠ py user_fn:10 (+1)"


def test_an_uncaught_exception_shows_the_traceback_joined_to_the_live_callers():
    live = PyThread(tid="1", frames=(pyf(0, "hook", 1, file=AGENT_FILE), pyf(1, "main", 2, file="/app/t.py")))
    stop = AgentStop(reason=P.R_UNCAUGHT, seq=2, thread_id="1", native_id=11, python_thread=5,
                     frames=(PyFrameInfo("/app/t.py", 3, "fails"), PyFrameInfo("/app/t.py", 9, "main")))
    st = stopped(NATIVE, py_threads=[live], agent_stop=stop)
    assert V.exception_stop(st) is stop
    pt = V.python_thread(st)
    assert [f.function for f in pt.frames] == ["fails", "main"]
    assert [f.native_level for f in pt.frames] == [None, 2]  # only main still runs
    assert V.python_thread(st) is pt  # asked again at the same stop: the same value
    # another thread selected: its own live stack
    other = st.evolve(selected_thread="2")
    assert V.exception_stop(other) is None and V.python_thread(other) is None


def test_threads_are_labelled_with_their_python_line_and_the_agents_thread_says_so():
    t1 = PyThread(tid="1", lwp=11, frames=(pyf(0, "cb", 1, file=AGENT_FILE), pyf(1, "work", 2, file="/app/w.py")))
    t2 = PyThread(tid="2", lwp=12, frames=(pyf(0, "_control_loop", 1, file=AGENT_FILE),))
    st = stopped(NATIVE, py_threads=[t1, t2])
    where = V.thread_python(st, {12: AGENT_THREAD_NAME})
    assert where == {"1": "work:10 w.py", "2": "(tuidbg's agent)"}
    assert V.thread_python(st.evolve(process=ProcessState.RUNNING), {}) == {}


def test_finish_returns_into_python_only_through_interpreter_or_ffi_glue():
    native = [Frame(level=0, func="c_add", addr="0x1"), Frame(level=1, func="ffi_call_unix64", addr="0x2"),
              Frame(level=2, func="_PyEval_EvalFrameDefault", addr="0x3"), Frame(level=3, func="main", addr="0x4")]
    py = PyThread(tid="1", frames=(pyf(0, "caller", 2),))
    assert V.returns_into_python(stopped(native, py_threads=[py]))
    direct = [Frame(level=0, func="c_add", addr="0x1"), Frame(level=1, func="c_main_loop", addr="0x2"),
              Frame(level=2, func="_PyEval_EvalFrameDefault", addr="0x3")]
    assert not V.returns_into_python(stopped(direct, py_threads=[py]))


def test_finish_returns_into_python_through_pybind11_and_the_dispatcher():
    """A custom op's function under pybind11's call (std::__invoke_impl, one frame or several) returns into
    the Python line that called it: finish goes back there; a kernel under the dispatcher and a binding that
    is not glue (THPVariable_matmul) finishes one frame."""
    op = [Frame(level=0, func="scale_add", addr="0x1"),
          Frame(level=1, func="at::Tensor std::__invoke_impl<at::Tensor, at::Tensor (*&)(at::Tensor, double)>(...)", addr="0x2"),
          Frame(level=2, func="pybind11::cpp_function::dispatcher(_object*, _object*, _object*)", addr="0x3"),
          Frame(level=3, func="cfunction_call", addr="0x4"), Frame(level=4, func="_PyEval_EvalFrameDefault", addr="0x5")]
    py = PyThread(tid="1", frames=(pyf(0, "main", 4),))
    assert V.returns_into_python(stopped(op, py_threads=[py]))
    assert V.returns_into_python(stopped(op, py_threads=[py], selected_frame=1))  # (from the glue itself)
    kernel = [Frame(level=0, func="at::native::mm(at::Tensor const&, at::Tensor const&)", addr="0x1"),
              Frame(level=1, func="c10::impl::wrap_kernel_functor_unboxed_<...>::call(...)", addr="0x2"),
              Frame(level=2, func="at::_ops::mm::call(at::Tensor const&, at::Tensor const&)", addr="0x3"),
              Frame(level=3, func="torch::autograd::THPVariable_mm(_object*, _object*, _object*)", addr="0x4"),
              Frame(level=4, func="_PyEval_EvalFrameDefault", addr="0x5")]
    assert not V.returns_into_python(stopped(kernel, py_threads=[PyThread(tid="1", frames=(pyf(0, "f", 4),))]))


# -- every process at an all-stop stop ---------------------------------------------------------------


def _process(iid, pid, threads, *, stop_tid=None, agent=None, process=ProcessState.STOPPED, read=True):
    from tuidbg.engine.state import Inferior, PythonView

    return Inferior(id=iid, pid=pid, process=process,
                    stop=StopInfo(reason="", thread_id=stop_tid) if stop_tid else None,
                    python=PythonView(stack=PyStack(status="ok", threads=tuple(threads), backend="proc") if threads else None,
                                      stack_read=read, agent=agent))


def test_a_process_line_is_the_thread_that_stopped_else_the_main_thread_else_the_first():
    from tuidbg.engine.python.model import AgentInfo

    worker = PyThread(tid=None, lwp=12, frames=(pyf(0, "poll", None, line=5),))
    main = PyThread(tid=None, lwp=10, frames=(pyf(0, "wait", None, line=7), pyf(1, "main", None)))
    # the main thread (its LWP is the PID) rather than the first one listed
    line = V.process_line(_process("i2", 10, [worker, main]))
    assert (line.lwp, line.frame.function, line.frame.line) == (10, "wait", 7)
    # the thread gdb stopped in, when it runs Python
    named = [PyThread(tid="7", lwp=12, frames=worker.frames), PyThread(tid="6", lwp=10, frames=main.frames)]
    assert V.process_line(_process("i2", 10, named, stop_tid="7")).tid == "7"
    # the agent's own frames on top are passed over; its own thread is left out
    busy = PyThread(tid=None, lwp=10, frames=(pyf(0, "stop", None, file=AGENT_FILE), pyf(1, "step", None, line=3)))
    own = PyThread(tid=None, lwp=11, frames=(pyf(0, "_control_loop", None, file="/x/threading.py"),))
    line = V.process_line(_process("i2", 10, [own, busy], agent=AgentInfo(status="connected", control_native_id=11)))
    assert (line.lwp, line.frame.function) == (10, "step")
    # the first thread that runs Python when the main thread runs none
    idle = PyThread(tid=None, lwp=10, frames=())
    assert V.process_line(_process("i2", 10, [idle, worker])).lwp == 12
    # nothing while it runs, before its stacks are read, or where no thread runs Python
    assert V.process_line(_process("i2", 10, [main], process=ProcessState.RUNNING)) is None
    assert V.process_line(_process("i2", 10, [], read=False)) is None
    assert V.process_line(_process("i2", 10, [idle])) is None


def test_an_agent_stop_is_the_process_line():
    stop = AgentStop(reason=P.R_BREAKPOINT, seq=1, thread_id="3", native_id=21, python_thread=1,
                     file="/app/x.py", line=9, func="f", frames=(PyFrameInfo("/app/x.py", 9, "f"),))
    from dataclasses import replace as rep

    inf = _process("i2", 20, [PyThread(tid="3", lwp=21, frames=(pyf(0, "other", None),))])
    line = V.process_line(rep(inf, python=rep(inf.python, stop=stop)))
    assert (line.tid, line.lwp, line.frame.func, line.frame.line) == ("3", 21, "f", 9)


def test_the_stacks_are_read_when_every_stopped_process_has_its_own():
    from dataclasses import replace as rep

    a = _process("i1", 10, [PyThread(tid="1", lwp=10, frames=(pyf(0, "main", 1),))])
    b = _process("i2", 11, [], read=False)
    gone = _process("i3", None, [], read=False, process=ProcessState.EXITED)
    st = DebuggerState(inferiors=(a, b, gone))
    assert not V.stacks_read(st)
    st = rep(st, inferiors=(a, rep(b, python=rep(b.python, stack_read=True)), gone))  # (b: no Python)
    assert V.stacks_read(st)


def test_thread_ids_come_from_gdb_threads_by_lwp():
    from tuidbg.engine.python.model import with_thread_ids
    from tuidbg.engine.state import Thread

    ps = PyStack(status="ok", backend="proc", threads=(PyThread(tid=None, lwp=10), PyThread(tid=None, lwp=99)))
    threads = [Thread(id="4", target_id="Thread 0x7f (LWP 10)"), Thread(id="5", target_id="Thread 0x7e (LWP 11)")]
    named = with_thread_ids(ps, threads)
    assert [(t.tid, t.lwp) for t in named.threads] == [("4", 10), (None, 99)]
    assert with_thread_ids(named, threads) is named  # nothing more to name: the same stack
    assert with_thread_ids(ps, []) is ps


def test_a_python_step_without_an_active_agent_is_refused_with_the_agents_own_reason():
    # (the attach path, the agent's load queued: tests/ui/test_ui_python_inactive.py on real interpreters)
    from tuidbg.engine.python.model import INJECT_PENDING, AgentInfo

    assert "does not load" in V.agent_inactive_reason(None)  # --no-agent, a program that embeds Python
    queued = AgentInfo(status="waiting", how="attach", inject=INJECT_PENDING)
    assert "loads when the main thread runs Python code" in V.agent_inactive_reason(queued)
    assert "has not started yet" in V.agent_inactive_reason(AgentInfo(status="waiting", how="run"))
    failed = AgentInfo(status="failed", message="cannot load the Python agent: it has no Py_AddPendingCall")
    assert V.agent_inactive_reason(failed) == ("the Python agent is not active (cannot load the Python agent: "
                                               "it has no Py_AddPendingCall)")
    gone = AgentInfo(status="disconnected", message="the Python agent closed the connection")
    assert "closed the connection" in V.agent_inactive_reason(gone)


def test_a_python_breakpoint_set_while_the_agents_load_waits_says_where_it_loads_and_why_not_yet():
    # (issue 30 item 13; on real interpreters: tests/ui/test_ui_attach_blocked_main.py)
    from tuidbg.engine.python.model import INJECT_PENDING, AgentInfo

    anyt = AgentInfo(status="waiting", how="attach", inject=INJECT_PENDING,
                     message="it loads at the next Python line of any thread")
    assert V.breakpoint_waits_note(anyt, False) == (
        "it takes effect when the Python agent loads: it loads at the next Python line of any thread")
    assert V.breakpoint_waits_note(anyt, True).endswith("no thread has run any since the attach (all are blocked in C)")
    main = AgentInfo(status="waiting", how="attach", inject=INJECT_PENDING)  # (before 3.12: the main thread's)
    assert V.breakpoint_waits_note(main, True).endswith(
        "when the main thread runs Python code, and the main thread has not run any since the attach (it is blocked in C)")
    held = AgentInfo(status="waiting", how="attach", inject="pending-call+thread",  # (3.9-3.11)
                     message="it loads at the main thread's next Python line, or in a thread of its own as soon "
                     "as no thread holds the GIL")
    assert V.breakpoint_waits_note(held, True).endswith(
        "as soon as no thread holds the GIL, and neither has come since the attach (a thread holds the GIL in C)")
    assert "any thread" in V.agent_inactive_reason(anyt)
    for other in (None, AgentInfo(status="connected", how="attach", inject=INJECT_PENDING),
                  AgentInfo(status="waiting", how="run")):
        assert V.breakpoint_waits_note(other, True) is None
