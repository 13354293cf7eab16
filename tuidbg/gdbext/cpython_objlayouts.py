"""Where CPython keeps what the asyncio task reader needs beyond the stack walk, per minor version.

The same three sources as ``cpython_layouts`` (whose ``TABLES`` and ``DWARF_FIELDS`` take these
keys in): the interpreter's DWARF, ``_Py_DebugOffsets`` where it has the field (3.13+:
``interp.imports_modules``; 3.14: ``gen``, ``iframe.stackpointer``), and the tables below,
measured on CPython 3.9.18, 3.10.13, 3.11.7, 3.12.1 and 3.13.0 and checked against the DWARF of
those builds by the test suite (tests/gdbext/test_pystack_tables.py).

Keys, short struct names as in ``cpython_layouts``: ``tp`` PyTypeObject (its base), ``mod``
PyModuleObject, ``is.modules`` (sys.modules), ``wr``
PyWeakReference, ``meth`` PyMethodObject (a bound method), ``cfn`` PyCFunctionObject (a builtin
bound to an object), ``fn`` PyFunctionObject, ``gen`` PyGenObject (coroutines and async generators
share its head), ``asend``/``athrow`` an async generator's awaitables, ``fo`` the frame object of
3.9/3.10 (its value stack), ``if`` _PyInterpreterFrame (its stack top), ``co.code`` the bytecode of
3.9/3.10.

Plain data only (runs in gdb's Python, any version from 3.6).
"""

# GIL builds, offsets from the object's start. A free-threaded build's object header is 16 bytes
# longer: ``SHIFTED`` lists the keys that move with it (``cpython_interp`` adds the difference).
_T39 = {
    "tp.base": 256,
    "mod.dict": 16,
    "is.modules": 856,
    "wr.object": 16,
    "meth.func": 16,
    "meth.self": 24,
    "cfn.self": 24,
    "fn.closure": 48,
    "gen.frame": 16,
    "gen.running": 24,
    "asend.gen": 16,
    "athrow.gen": 16,
    "fo.valuestack": 64,
    "fo.stacktop": 72,
    "co.code": 48,
}

_T310 = dict(_T39)
del _T310["gen.running"], _T310["fo.stacktop"]
_T310.update({
    "fn.closure": 72,
    "fo.stackdepth": 80,
    "fo.state": 108,
})

_T311 = dict(_T310)
for _k in ("gen.frame", "fo.valuestack", "fo.stackdepth", "fo.state", "co.code"):
    del _T311[_k]
_T311.update({
    "is.modules": 888,
    "gen.frame_state": 75,
    "gen.iframe": 80,
    "if.stacktop": 64,
})

_T312 = dict(_T311)
_T312.update({
    "is.modules": 944,
    "gen.frame_state": 67,
    "gen.iframe": 72,
})

_T313 = dict(_T312)
_T313.update({"is.modules": 7656})

OBJECT_TABLES = {9: _T39, 10: _T310, 11: _T311, 12: _T312, 13: _T313}

# Keys relative to an object's start (3.14t: 16 bytes further, with the longer header).
SHIFTED = ("tp.base", "mod.dict", "wr.object", "meth.func", "meth.self", "cfn.self", "fn.closure", "asend.gen",
           "athrow.gen")

OBJECT_DWARF_FIELDS = {
    "tp.base": [("PyTypeObject", "tp_base")],
    "mod.dict": [("PyModuleObject", "md_dict")],
    "is.modules": [("struct _is", "imports.modules"), ("struct _is", "modules")],
    "wr.object": [("PyWeakReference", "wr_object")],
    "meth.func": [("PyMethodObject", "im_func")],
    "meth.self": [("PyMethodObject", "im_self")],
    "cfn.self": [("PyCFunctionObject", "m_self")],
    "fn.closure": [("PyFunctionObject", "func_closure")],
    "gen.frame": [("PyGenObject", "gi_frame")],
    "gen.running": [("PyGenObject", "gi_running")],
    "gen.frame_state": [("PyGenObject", "gi_frame_state")],
    "gen.iframe": [("PyGenObject", "gi_iframe")],
    "asend.gen": [("PyAsyncGenASend", "ags_gen")],
    "athrow.gen": [("PyAsyncGenAThrow", "agt_gen")],
    "fo.valuestack": [("struct _frame", "f_valuestack")],
    "fo.stacktop": [("struct _frame", "f_stacktop")],
    "fo.stackdepth": [("struct _frame", "f_stackdepth")],
    "fo.state": [("struct _frame", "f_state")],
    "if.stacktop": [("struct _PyInterpreterFrame", "stacktop")],
    "if.stackpointer": [("struct _PyInterpreterFrame", "stackpointer")],
    "co.code": [("PyCodeObject", "co_code")],
}

# _Py_DebugOffsets entries (3.13+) for these keys
OBJECT_DEBUG_OFFSETS_KEYS = {
    "interp.imports_modules": "is.modules",
    "gen.gi_iframe": "gen.iframe",
    "gen.gi_frame_state": "gen.frame_state",
    "iframe.stackpointer": "if.stackpointer",
}

# Frame states of generators and coroutines (gi_frame_state, 3.11+; f_state of 3.10's frames)
FRAME_STATES = {
    # minor: (created, suspended (plain yield), suspended in yield from / await or None, executing, completed)
    10: (-2, -1, None, 0, 1),
    11: (-2, -1, None, 0, 1),
    12: (-2, -1, None, 0, 1),
    13: (-3, -2, -1, 0, 1),
    14: (-3, -2, -1, 0, 1),
}

# Opcodes that tell a suspended frame is in ``yield from``/``await`` where the frame state does not
# (3.9/3.10: YIELD_FROM is the next instruction; 3.11/3.12: the next is a RESUME with oparg >= 2)
YIELD_FROM_39 = 72
RESUME_OPCODES = {11: (151, 150), 12: (151, 240)}
