"""merge(), fold() and friends: pure functions over frames (no gdb)."""

from __future__ import annotations


from tuidbg.engine.python import merge as M
from tuidbg.engine.python import model as PM
from tuidbg.engine.state import DebuggerState, Frame, ProcessState, StopInfo

INTERP = (0x400000, 0x700000)  # the interpreter's .text in these examples


def nat(level, func, addr=0x7F0000000000):
    return Frame(level=level, addr=hex(addr + level), func=func)


def pyf(index, function, level, file="/app/x.py", line=10, qualname=None):
    return PM.PyFrame(index=index, function=function, file=file, line=line, qualname=qualname, native_level=level)


def stack(*threads, text=(INTERP,)):
    return PM.PyStack(status="ok", python="3.12.1", threads=tuple(threads), interp_text=text)


def thread(*frames, merge="anchor", tid="1", note=""):
    return PM.PyThread(tid=tid, frames=tuple(frames), merge=merge, merge_note=note)


def kinds(rows):
    return [(r.kind, r.function if r.kind != "fold" else r.rule) for r in rows]


NATIVE = [
    nat(0, "clock_nanosleep"),
    nat(1, "time_sleep", 0x500000),  # a builtin inside the interpreter: kept
    nat(2, "cfunction_vectorcall_O", 0x500100),  # static plumbing inside the interpreter
    nat(3, "_PyEval_EvalFrameDefault", 0x500200),
    nat(4, "_PyFunction_Vectorcall", 0x500300),
    nat(5, "??", 0x500400),  # stripped build: an unnamed interpreter function
    nat(6, "_PyEval_EvalFrameDefault", 0x500200),
    nat(7, "PyEval_EvalCode", 0x500500),
    nat(8, "main", 0x401000),
    nat(9, "__libc_start_call_main"),
    nat(10, "_start", 0x10000000),
]
PY = thread(pyf(0, "inner", 3), pyf(1, "middle", 3), pyf(2, "<module>", 6))


def test_python_frames_replace_their_eval_frame_and_plumbing_between_them_is_hidden():
    rows = M.merge(NATIVE, PY, stack(PY))
    assert kinds(rows) == [
        ("native", "clock_nanosleep"),
        ("native", "time_sleep"),
        ("native", "cfunction_vectorcall_O"),
        ("python", "inner"),
        ("python", "middle"),
        ("python", "<module>"),
        ("native", "PyEval_EvalCode"),
        ("native", "main"),
        ("native", "__libc_start_call_main"),
        ("native", "_start"),
    ]
    # the call machinery between middle and <module> is not lost: it hangs off the upper row
    middle = rows[4]
    assert [f.func for f in middle.elided] == ["_PyFunction_Vectorcall", "??"]
    assert middle.native.level == 3 and rows[5].native.level == 6
    assert rows[2].internal and not rows[1].internal and rows[6].internal
    assert not rows[0].internal and not rows[9].internal


def test_show_internal_keeps_every_interpreter_frame():
    rows = M.merge(NATIVE, PY, stack(PY), show_internal=True)
    assert [r.native.level for r in rows if r.kind == "native"] == [0, 1, 2, 4, 5, 7, 8, 9, 10]
    assert all(not r.elided for r in rows)


def test_fold_collapses_glue_into_expandable_rows():
    rows = M.fold(M.merge(NATIVE, PY, stack(PY)))
    assert kinds(rows) == [
        ("native", "clock_nanosleep"),
        ("native", "time_sleep"),
        ("fold", "cpython"),
        ("python", "inner"),
        ("python", "middle"),
        ("python", "<module>"),
        ("fold", "cpython"),
        ("fold", "startup"),
    ]
    bottom = rows[6]
    assert bottom.label == "CPython internals (2 frames)"
    assert [c.native.func for c in bottom.children] == ["PyEval_EvalCode", "main"]
    assert bottom.level == 7 and [f.level for f in bottom.frames()] == [7, 8]
    assert [c.native.func for c in rows[7].children] == ["__libc_start_call_main", "_start"]
    # a run shorter than the rule's min_run stays as it is
    rows2 = M.fold(M.merge(NATIVE[:10], PY, stack(PY)))
    assert kinds(rows2)[-1] == ("native", "__libc_start_call_main")


def test_torch_dispatcher_frames_fold_between_the_kernel_and_the_binding():
    native = [
        nat(0, "at::native::randn(c10::ArrayRef<long>, std::optional<c10::ScalarType>)"),
        nat(1, "c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<...> >::call(...)"),
        nat(2, "at::_ops::randn::redispatch(c10::DispatchKeySet, c10::ArrayRef<c10::SymInt>)"),
        nat(3, "torch::autograd::VariableType::(anonymous namespace)::randn(...)"),
        nat(4, "at::_ops::randn::call(c10::ArrayRef<c10::SymInt>)"),
        nat(5, "torch::autograd::THPVariable_randn(_object*, _object*, _object*)"),
        nat(6, "_PyObject_MakeTpCall", 0x500000),
        nat(7, "_PyEval_EvalFrameDefault", 0x500200),
    ]
    py = thread(pyf(0, "make_tensor", 7, line=7))
    rows = M.fold(M.merge(native, py, stack(py)))
    assert kinds(rows) == [
        ("native", "at::native::randn(c10::ArrayRef<long>, std::optional<c10::ScalarType>)"),
        ("fold", "torch-dispatch"),
        ("native", "torch::autograd::THPVariable_randn(_object*, _object*, _object*)"),
        ("fold", "cpython"),
        ("python", "make_tensor"),
    ]
    assert rows[1].label == "PyTorch dispatcher (4 frames)"


def test_pytest_and_pluggy_frames_fold():
    plug = "/venv/lib/python3.12/site-packages/pluggy/_callers.py"
    pt = "/venv/lib/python3.12/site-packages/_pytest/python.py"
    frames = [pyf(0, "test_it", 0, "/proj/tests/test_a.py"), pyf(1, "pytest_pyfunc_call", 0, pt),
              pyf(2, "_multicall", 0, plug), pyf(3, "_hookexec", 0, plug), pyf(4, "runtest", 0, pt),
              pyf(5, "main", 0, "/proj/run.py")]
    py = thread(*frames)
    rows = M.fold(M.merge([nat(0, "_PyEval_EvalFrameDefault", 0x500200)], py, stack(py)))
    assert kinds(rows) == [("python", "test_it"), ("fold", "pytest"), ("python", "main")]
    assert [c.python.function for c in rows[1].children] == ["pytest_pyfunc_call", "_multicall", "_hookexec", "runtest"]


def test_rules_are_data():
    rule = M.FoldRule("mine", "My glue", native=(r"^glue_",), min_run=3)
    native = [nat(0, "work"), nat(1, "glue_a"), nat(2, "glue_b"), nat(3, "top"), nat(4, "glue_c"), nat(5, "glue_d"),
              nat(6, "glue_e")]
    rows = M.fold(M.merge(native, None), rules=[rule])
    assert kinds(rows) == [("native", "work"), ("native", "glue_a"), ("native", "glue_b"), ("native", "top"),
                           ("fold", "mine")]
    assert rows[-1].label == "My glue (3 frames)"
    assert M.fold(M.merge(native, None), rules=[]) == M.merge(native, None)


def test_unmerged_and_unplaced_python_frames_come_last_with_a_note():
    py = thread(pyf(0, "f", None), pyf(1, "g", None), merge="unmerged", note="3 eval-loop frames for 2 runs")
    rows = M.merge(NATIVE[:4], py, stack(py))
    assert kinds(rows)[-3:] == [("note", "Python stack (unmerged: 3 eval-loop frames for 2 runs)"),
                                ("python", "f"), ("python", "g")]
    # placed on a native frame that is not loaded yet (the first page of frames only)
    py2 = thread(pyf(0, "inner", 3), pyf(1, "outer", 60))
    rows = M.merge(NATIVE[:5], py2, stack(py2))
    assert kinds(rows)[-2:] == [("note", "Python frames of native frames not loaded yet"), ("python", "outer")]


def test_no_python_means_the_native_stack_unchanged():
    rows = M.merge(NATIVE, None)
    assert [r.native for r in rows] == NATIVE and not any(r.internal for r in rows)


def test_classify():
    st = stack()
    assert M.classify(nat(0, "_PyEval_EvalFrameDefault"), st) == "eval"
    assert M.classify(nat(0, "take_gil", 0x500000), st) == "keep"
    assert M.classify(nat(0, "PyThread_acquire_lock_timed"), st) == "keep"
    assert M.classify(nat(0, "_PyObject_MakeTpCall"), st) == "internal"
    assert M.classify(nat(0, "??", 0x500000), st) == "internal"
    assert M.classify(nat(0, "??", 0x10000000), st) == "other"
    assert M.classify(nat(0, "runTask", 0x10000000), st) == "other"  # a user function named like plumbing
    assert M.classify(nat(0, "run_mod", 0x500000), st) == "internal"


def test_stop_python_frame_and_thread_lookup():
    py = thread(pyf(0, "stop_here", 5), pyf(1, "main", 5), tid="3")
    st = DebuggerState().evolve(process=ProcessState.STOPPED, stop=StopInfo(reason="signal-received", thread_id="3",
                                                                             signal_name="SIGTRAP"), current_thread="3")
    assert M.stop_python_frame(st) is None
    st = st.with_python(stack=stack(py))
    f = M.stop_python_frame(st)
    assert f.function == "stop_here" and f.native_level == 5
    assert st.python.stack.thread("3").frames_at(5) == py.frames


def test_stack_from_dict():
    res = {"status": "ok", "python": "3.11.2", "offsets": "table", "runtime": 1234, "objfile": "/usr/bin/python3.11",
           "text": [[10, 20]], "strings": ["f", "/a.py", "C.f"],
           "threads": [{"tid": "1", "lwp": 77, "name": "python3", "thread_id": 5, "tstate": 9, "interp": 0,
                        "truncated": 0, "error": None, "merge": "anchor", "merge_note": "",
                        "frames": [[0, 2, 1, 12, 1, 4, 100, 200], [0, -1, 1, -1, 0, -1, 100, 300]]}]}
    ps = PM.stack_from_dict(res, "mi", 7)
    assert ps.ok and ps.generation == 7 and ps.interp_text == ((10, 20),) and ps.in_interpreter(15)
    f0, f1 = ps.thread("1").frames
    assert (f0.function, f0.qualname, f0.file, f0.line, f0.is_entry, f0.native_level) == ("f", "C.f", "/a.py", 12, True, 4)
    assert (f1.qualname, f1.line, f1.native_level, f1.name, f1.location) == (None, None, None, "f", "/a.py")
    assert PM.stack_from_dict({"status": "no-python", "reason": "x"}) is None
    err = PM.stack_from_dict({"status": "error", "reason": "unsupported Python 3.8"})
    assert not err.ok and err.reason == "unsupported Python 3.8"
