"""Where a native stop is no safe point for running Python (engine/pyagent/native_eval.py): the C frames
above the thread's Python frame, by name, as gdb names them with and without debug information."""

import pytest

from tuidbg.engine.pyagent.native_eval import EVAL_LOOP, UNSAFE_FRAMES


@pytest.mark.parametrize("name", [
    "malloc", "__GI___libc_malloc", "_int_malloc", "__libc_free", "_int_free", "realloc", "calloc", "tcache_get",
    "malloc_consolidate", "__lll_lock_wait", "__lll_lock_wait_private", "pthread_mutex_lock",
    "___pthread_mutex_lock", "_PyObject_Malloc", "PyObject_Free", "_PyObject_GC_New", "pymalloc_alloc",
    "gc_collect_main", "collect_with_callback", "take_gil", "drop_gil", "PyEval_RestoreThread", "PyThread_acquire_lock_timed", "_PyMutex_LockTimed",
])
def test_allocator_lock_and_gil_frames_are_unsafe(name):
    assert UNSAFE_FRAMES.search(name)


@pytest.mark.parametrize("name", [
    "native_point", "foo_add", "kill", "__GI___kill", "os_kill", "cfunction_vectorcall_FASTCALL",
    "_ctypes_callproc", "ffi_call", "PyObject_Vectorcall", "_PyObject_MakeTpCall", "at::native::add", "memcpy",
    "freeze_support", "mallocator::get", "clock_nanosleep", "select", "collect", "gc_stats",
])
def test_ordinary_frames_are_safe(name):
    assert not UNSAFE_FRAMES.search(name)


def test_the_eval_loop_by_name():
    assert EVAL_LOOP.match("_PyEval_EvalFrameDefault") and not EVAL_LOOP.match("_PyEval_EvalFrame")
