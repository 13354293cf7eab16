"""Where CPython keeps what the stack walker reads, per minor version (x86-64 / aarch64, 64-bit).

Three sources, best first:

1. DWARF of the interpreter itself (``DWARF_FIELDS``): exact for that build.
2. ``_Py_DebugOffsets`` (3.13+), the table CPython embeds at the start of
   ``_PyRuntime`` for out-of-process tools (``DEBUG_OFFSETS_LAYOUTS`` says where
   each entry sits in that table, per minor version).
3. The built-in tables below (``TABLES``), measured with ``offsetof`` on
   CPython 3.9.18, 3.10.13, 3.11.7, 3.12.1 and 3.13.0 and checked against the
   DWARF of those builds by the test suite.

Keys are ``"<struct>.<field>"`` with short struct names:

``rt`` _PyRuntimeState, ``is`` PyInterpreterState, ``ts`` PyThreadState,
``cf`` the per-C-call CFrame (3.10-3.12), ``fo`` PyFrameObject (frames of
3.9/3.10), ``if`` _PyInterpreterFrame (3.11+), ``co`` PyCodeObject, ``ob``
PyObject, ``tp`` PyTypeObject, ``str`` PyASCIIObject / PyCompactUnicodeObject,
``long``, ``float``, ``bytes``, ``tuple``, ``list``, ``dict``, ``dk``
PyDictKeysObject, ``dv`` PyDictValues, ``set``, ``cell``.

Plain data and small functions only: this module runs inside gdb's Python
(any version from 3.6) and in tuidbg's own process.
"""

from .cpython_objlayouts import OBJECT_DEBUG_OFFSETS_KEYS, OBJECT_DWARF_FIELDS, OBJECT_TABLES

# ---------------------------------------------------------------------------------------------
# Facts that are not offsets.

# owner values of _PyInterpreterFrame (3.11+)
OWNER_GENERATOR = 1
OWNER_CSTACK_312 = 3  # 3.12, 3.13: the entry ("shim") frame on the C stack
OWNER_INTERPRETER_314 = 3  # 3.14: entry frames; anything >= 3 is a boundary

# co_localspluskinds bits (3.11+)
CO_FAST_HIDDEN = 0x10
CO_FAST_LOCAL = 0x20
CO_FAST_CELL = 0x40
CO_FAST_FREE = 0x80

# co_flags
CO_VARARGS = 0x04
CO_VARKEYWORDS = 0x08

# tp_flags
TPFLAGS_LONG_SUBCLASS = 1 << 24
TPFLAGS_LIST_SUBCLASS = 1 << 25
TPFLAGS_TUPLE_SUBCLASS = 1 << 26
TPFLAGS_BYTES_SUBCLASS = 1 << 27
TPFLAGS_UNICODE_SUBCLASS = 1 << 28
TPFLAGS_DICT_SUBCLASS = 1 << 29

# PyASCIIObject.state bits (the same in 3.9-3.14 GIL builds)
STR_KIND_SHIFT = 2
STR_KIND_MASK = 0x7
STR_COMPACT_BIT = 1 << 5
STR_ASCII_BIT = 1 << 6
# A free-threaded build keeps ``interned`` in a whole byte (it is read atomically): the bit
# fields after it start at bit 8.
STR_KIND_SHIFT_FREE_THREADED = 8
STR_COMPACT_BIT_FREE_THREADED = 1 << 11
STR_ASCII_BIT_FREE_THREADED = 1 << 12

LONG_SHIFT = 30  # bits per digit (64-bit builds)


def features(minor):
    """How a minor version lays out its frames (independent of the offsets)."""
    return {
        # 'object': a PyFrameObject per Python call (3.9/3.10); 'interp': _PyInterpreterFrame (3.11+)
        "frames": "object" if minor <= 10 else "interp",
        # how the line table is encoded
        "linetable": "lnotab" if minor == 9 else ("pep626" if minor == 10 else "locations"),
        # f_lasti counts bytes (3.9) or code units (3.10)
        "lasti_unit": 1 if minor == 9 else 2,
        # where a run of Python frames ends and another C call of the eval loop begins
        "boundary": "every" if minor <= 10 else ("is_entry" if minor == 11 else "shim"),
        # the first owner value that marks a boundary (shim) frame
        "shim_owner": OWNER_INTERPRETER_314 if minor >= 14 else OWNER_CSTACK_312,
        # a C-stack address per eval-loop call that the native frames can be matched against
        "anchor": {10: "cframe", 11: "cframe", 12: "shim", 13: "shim"}.get(minor, "shim" if minor >= 14 else None),
        # 3.12+ keeps the sign and digit count of ints in lv_tag
        "long_tag": minor >= 12,
        # 3.14 frame slots are _PyStackRef (tagged pointers)
        "stackref": minor >= 14,
        # the current frame hangs off tstate->cframe (3.11/3.12) or tstate directly
        "cframe_current": minor in (11, 12),
        # PyDictKeysObject: dk_size (<=3.10) or dk_log2_size (3.11+)
        "dict_log2": minor >= 11,
    }


# ---------------------------------------------------------------------------------------------
# Built-in tables, 3.9-3.13 (3.13 also reads _Py_DebugOffsets; the table covers what that lacks).

_COMMON = {
    "ob.type": 8,
    "var.size": 16,
    "tp.name": 24,
    "tp.flags": 168,
    "float.value": 16,
    "bytes.size": 16,
    "bytes.data": 32,
    "tuple.size": 16,
    "tuple.items": 24,
    "list.size": 16,
    "list.items": 24,
    "dict.used": 16,
    "dict.keys": 32,
    "dict.values": 40,
    "set.used": 24,
    "set.mask": 32,
    "set.table": 40,
    "cell.ref": 16,
    "str.length": 16,
    "str.state": 32,
}

_T39 = {
    "rt.interp_head": 32,
    "is.next": 0,
    "is.threads_head": 8,
    "is.id": 24,
    "ts.next": 8,
    "ts.interp": 16,
    "ts.frame": 24,
    "ts.thread_id": 176,
    "fo.back": 24,
    "fo.code": 32,
    "fo.locals": 56,
    "fo.trace": 80,
    "fo.lasti": 104,
    "fo.lineno": 108,
    "fo.localsplus": 360,
    "co.argcount": 16,
    "co.posonlyargcount": 20,
    "co.kwonlyargcount": 24,
    "co.nlocals": 28,
    "co.flags": 36,
    "co.firstlineno": 40,
    "co.varnames": 72,
    "co.freevars": 80,
    "co.cellvars": 88,
    "co.filename": 104,
    "co.name": 112,
    "co.linetable": 120,
    "str.ascii_size": 48,
    "str.compact_size": 72,
    "long.size": 16,
    "long.digits": 24,
    "dk.size": 8,
    "dk.nentries": 32,
    "dk.indices": 40,
    "dv.values": 0,
}

_T310 = dict(_T39)
_T310.update({
    "ts.cframe": 48,
    "cf.previous": 8,
    "fo.trace": 72,
    "fo.lasti": 96,
    "fo.lineno": 100,
    "fo.localsplus": 352,
})

_T311 = {
    "rt.interp_head": 40,
    "is.next": 0,
    "is.threads_head": 16,
    "is.id": 48,
    "ts.next": 8,
    "ts.interp": 16,
    "ts.cframe": 56,
    "ts.thread_id": 152,
    "ts.native_thread_id": 160,
    "cf.current_frame": 8,
    "cf.previous": 16,
    "if.locals": 24,
    "if.code": 32,
    "if.frame_obj": 40,
    "fo.lineno": 40,
    "if.previous": 48,
    "if.instr": 56,
    "if.is_entry": 68,
    "if.owner": 69,
    "if.localsplus": 72,
    "co.flags": 48,
    "co.argcount": 56,
    "co.posonlyargcount": 60,
    "co.kwonlyargcount": 64,
    "co.firstlineno": 72,
    "co.nlocalsplus": 76,
    "co.localsplusnames": 96,
    "co.localspluskinds": 104,
    "co.filename": 112,
    "co.name": 120,
    "co.qualname": 128,
    "co.linetable": 136,
    "co.firsttraceable": 168,
    "co.code_adaptive": 184,
    "str.ascii_size": 48,
    "str.compact_size": 72,
    "long.size": 16,
    "long.digits": 24,
    "dk.log2_size": 8,
    "dk.log2_index_bytes": 9,
    "dk.kind": 10,
    "dk.nentries": 24,
    "dk.indices": 32,
    "dv.values": 0,
}

_T312 = dict(_T311)
for _k in ("if.is_entry",):
    del _T312[_k]
_T312.update({
    "is.id": 8,
    "is.threads_head": 72,
    "ts.thread_id": 136,
    "ts.native_thread_id": 144,
    "cf.current_frame": 0,
    "cf.previous": 8,
    "if.code": 0,
    "if.previous": 8,
    "if.locals": 40,
    "if.frame_obj": 48,
    "if.instr": 56,
    "if.owner": 70,
    "if.localsplus": 72,
    "co.argcount": 52,
    "co.posonlyargcount": 56,
    "co.kwonlyargcount": 60,
    "co.firstlineno": 68,
    "co.nlocalsplus": 72,
    "co.firsttraceable": 176,
    "co.code_adaptive": 192,
    "str.ascii_size": 40,
    "str.compact_size": 56,
    "long.tag": 16,
})
del _T312["long.size"]

_T313 = dict(_T312)
for _k in ("ts.cframe", "cf.current_frame", "cf.previous"):
    del _T313[_k]
_T313.update({
    "rt.interp_head": 632,
    "is.next": 7264,
    "is.id": 7272,
    "is.threads_head": 7344,
    "ts.current_frame": 72,
    "ts.thread_id": 152,
    "ts.native_thread_id": 160,
    "co.firsttraceable": 184,
    "co.code_adaptive": 200,
    "dv.values": 8,
})

TABLES = {}
for _minor, _t in ((9, _T39), (10, _T310), (11, _T311), (12, _T312), (13, _T313)):
    _full = dict(_COMMON)
    _full.update(_t)
    _full.update(OBJECT_TABLES[_minor])  # (what the asyncio task reader needs: cpython_objlayouts)
    TABLES[_minor] = _full

# 3.14: everything _Py_DebugOffsets does not describe, as in 3.13 (the object headers,
# dict keys and the int fields of code objects did not move). Fields that are
# derived from a debug-offset entry are computed in ``offsets_from_debug``.
TABLE_314_BASE = dict(TABLES[13])
for _k in ("rt.interp_head", "is.threads_head", "ts.current_frame", "ts.thread_id", "ts.native_thread_id",
           "if.stacktop"):
    del TABLE_314_BASE[_k]

# Keys a walk needs per frame model (a table or DWARF that lacks one cannot be used).
REQUIRED_OBJECT = (
    "rt.interp_head", "is.next", "is.threads_head", "ts.next", "ts.interp", "ts.frame", "ts.thread_id",
    "fo.back", "fo.code", "fo.lasti", "co.filename", "co.name", "co.firstlineno", "co.linetable",
)
REQUIRED_INTERP = (
    "rt.interp_head", "is.next", "is.threads_head", "ts.next", "ts.interp", "ts.thread_id", "ts.native_thread_id",
    "if.code", "if.previous", "if.instr", "if.owner", "co.filename", "co.name", "co.qualname", "co.firstlineno",
    "co.linetable", "co.code_adaptive",
)


# ---------------------------------------------------------------------------------------------
# DWARF: (type, field path) per key; alternatives in order. ('sizeof', type) gives a size.

DWARF_FIELDS = {
    "rt.interp_head": [("_PyRuntimeState", "interpreters.head")],
    "is.next": [("struct _is", "next")],
    "is.threads_head": [("struct _is", "threads.head"), ("struct _is", "tstate_head")],
    "is.id": [("struct _is", "id")],
    "ts.next": [("struct _ts", "next")],
    "ts.interp": [("struct _ts", "interp")],
    "ts.frame": [("struct _ts", "frame")],
    "ts.cframe": [("struct _ts", "cframe")],
    "ts.current_frame": [("struct _ts", "current_frame")],
    "ts.thread_id": [("struct _ts", "thread_id")],
    "ts.native_thread_id": [("struct _ts", "native_thread_id")],
    "cf.current_frame": [("struct _PyCFrame", "current_frame")],
    "cf.previous": [("struct _PyCFrame", "previous"), ("struct _cframe", "previous")],
    "fo.back": [("struct _frame", "f_back")],
    "fo.code": [("struct _frame", "f_code")],
    "fo.locals": [("struct _frame", "f_locals")],
    "fo.trace": [("struct _frame", "f_trace")],
    "fo.lasti": [("struct _frame", "f_lasti")],
    "fo.lineno": [("struct _frame", "f_lineno")],
    "fo.localsplus": [("struct _frame", "f_localsplus")],
    "if.code": [("struct _PyInterpreterFrame", "f_executable"), ("struct _PyInterpreterFrame", "f_code")],
    "if.previous": [("struct _PyInterpreterFrame", "previous")],
    "if.locals": [("struct _PyInterpreterFrame", "f_locals")],
    "if.frame_obj": [("struct _PyInterpreterFrame", "frame_obj")],
    "if.instr": [("struct _PyInterpreterFrame", "instr_ptr"), ("struct _PyInterpreterFrame", "prev_instr")],
    "if.is_entry": [("struct _PyInterpreterFrame", "is_entry")],
    "if.owner": [("struct _PyInterpreterFrame", "owner")],
    "if.localsplus": [("struct _PyInterpreterFrame", "localsplus")],
    "co.argcount": [("PyCodeObject", "co_argcount")],
    "co.posonlyargcount": [("PyCodeObject", "co_posonlyargcount")],
    "co.kwonlyargcount": [("PyCodeObject", "co_kwonlyargcount")],
    "co.nlocals": [("PyCodeObject", "co_nlocals")],
    "co.flags": [("PyCodeObject", "co_flags")],
    "co.firstlineno": [("PyCodeObject", "co_firstlineno")],
    "co.nlocalsplus": [("PyCodeObject", "co_nlocalsplus")],
    "co.localsplusnames": [("PyCodeObject", "co_localsplusnames")],
    "co.localspluskinds": [("PyCodeObject", "co_localspluskinds")],
    "co.varnames": [("PyCodeObject", "co_varnames")],
    "co.freevars": [("PyCodeObject", "co_freevars")],
    "co.cellvars": [("PyCodeObject", "co_cellvars")],
    "co.filename": [("PyCodeObject", "co_filename")],
    "co.name": [("PyCodeObject", "co_name")],
    "co.qualname": [("PyCodeObject", "co_qualname")],
    "co.linetable": [("PyCodeObject", "co_linetable"), ("PyCodeObject", "co_lnotab")],
    "co.firsttraceable": [("PyCodeObject", "_co_firsttraceable")],
    "co.code_adaptive": [("PyCodeObject", "co_code_adaptive")],
    "ob.type": [("PyObject", "ob_type")],
    "var.size": [("PyVarObject", "ob_size")],
    "tp.name": [("PyTypeObject", "tp_name")],
    "tp.flags": [("PyTypeObject", "tp_flags")],
    "str.length": [("PyASCIIObject", "length")],
    "str.state": [("PyASCIIObject", "state")],
    "str.ascii_size": [("sizeof", "PyASCIIObject")],
    "str.compact_size": [("sizeof", "PyCompactUnicodeObject")],
    "long.size": [("PyLongObject", "ob_base.ob_size")],
    "long.tag": [("PyLongObject", "long_value.lv_tag")],
    "long.digits": [("PyLongObject", "long_value.ob_digit"), ("PyLongObject", "ob_digit")],
    "float.value": [("PyFloatObject", "ob_fval")],
    "bytes.size": [("PyBytesObject", "ob_base.ob_size")],
    "bytes.data": [("PyBytesObject", "ob_sval")],
    "tuple.size": [("PyTupleObject", "ob_base.ob_size")],
    "tuple.items": [("PyTupleObject", "ob_item")],
    "list.size": [("PyListObject", "ob_base.ob_size")],
    "list.items": [("PyListObject", "ob_item")],
    "dict.used": [("PyDictObject", "ma_used")],
    "dict.keys": [("PyDictObject", "ma_keys")],
    "dict.values": [("PyDictObject", "ma_values")],
    "dk.size": [("struct _dictkeysobject", "dk_size")],
    "dk.log2_size": [("struct _dictkeysobject", "dk_log2_size")],
    "dk.log2_index_bytes": [("struct _dictkeysobject", "dk_log2_index_bytes")],
    "dk.kind": [("struct _dictkeysobject", "dk_kind")],
    "dk.nentries": [("struct _dictkeysobject", "dk_nentries")],
    "dk.indices": [("struct _dictkeysobject", "dk_indices")],
    "dv.values": [("struct _dictvalues", "values")],
    "set.used": [("PySetObject", "used")],
    "set.mask": [("PySetObject", "mask")],
    "set.table": [("PySetObject", "table")],
    "cell.ref": [("PyCellObject", "ob_ref")],
}
DWARF_FIELDS.update(OBJECT_DWARF_FIELDS)

# Keys whose DWARF answer differs in meaning between versions and must not override a table
# from a mismatching struct (e.g. 3.9's dict values are a plain array, no struct _dictvalues).
DWARF_OPTIONAL = frozenset(["dv.values"])


# ---------------------------------------------------------------------------------------------
# _Py_DebugOffsets: the position (in 8-byte words after the cookie/version/free_threaded
# header) of each entry we use, per minor version. Every group starts with its struct size.

def _do_layout(groups):
    """Map key -> word index from [(group, [field names])]; field names may be None (unused)."""
    out = {}
    word = 3  # cookie, version, free_threaded
    for group, fields in groups:
        for name in fields:
            if name is not None:
                out[group + "." + name] = word
            word += 1
    out["_words"] = word
    return out


DEBUG_OFFSETS_LAYOUTS = {
    13: _do_layout([
        ("runtime", ["size", "finalizing", "interpreters_head"]),
        ("interp", ["size", "id", "next", "threads_head", "gc", "imports_modules", "sysdict", "builtins",
                    "ceval_gil", "gil_runtime_state", "gil_enabled", "gil_locked", "gil_holder"]),
        ("tstate", ["size", "prev", "next", "interp", "current_frame", "thread_id", "native_thread_id",
                    "datastack_chunk", "status"]),
        ("iframe", ["size", "previous", "executable", "instr_ptr", "localsplus", "owner"]),
        ("code", ["size", "filename", "name", "qualname", "linetable", "firstlineno", "argcount",
                  "localsplusnames", "localspluskinds", "co_code_adaptive"]),
        ("pyobject", ["size", "ob_type"]),
        ("type", ["size", "tp_name", "tp_repr", "tp_flags"]),
        ("tuple", ["size", "ob_item", "ob_size"]),
        ("list", ["size", "ob_item", "ob_size"]),
        ("dict", ["size", "ma_keys", "ma_values"]),
        ("float", ["size", "ob_fval"]),
        ("long", ["size", "lv_tag", "ob_digit"]),
        ("bytes", ["size", "ob_size", "ob_sval"]),
        ("unicode", ["size", "state", "length", "asciiobject_size"]),
        ("gc", ["size", "collecting"]),
    ]),
    14: _do_layout([
        ("runtime", ["size", "finalizing", "interpreters_head"]),
        ("interp", ["size", "id", "next", "threads_head", "threads_main", "gc", "imports_modules", "sysdict",
                    "builtins", "ceval_gil", "gil_runtime_state", "gil_enabled", "gil_locked", "gil_holder",
                    "code_object_generation", "tlbc_generation"]),
        ("tstate", ["size", "prev", "next", "interp", "current_frame", "thread_id", "native_thread_id",
                    "datastack_chunk", "status"]),
        ("iframe", ["size", "previous", "executable", "instr_ptr", "localsplus", "owner", "stackpointer",
                    "tlbc_index"]),
        ("code", ["size", "filename", "name", "qualname", "linetable", "firstlineno", "argcount",
                  "localsplusnames", "localspluskinds", "co_code_adaptive", "co_tlbc"]),
        ("pyobject", ["size", "ob_type"]),
        ("type", ["size", "tp_name", "tp_repr", "tp_flags"]),
        ("tuple", ["size", "ob_item", "ob_size"]),
        ("list", ["size", "ob_item", "ob_size"]),
        ("set", ["size", "used", "table", "mask"]),
        ("dict", ["size", "ma_keys", "ma_values"]),
        ("float", ["size", "ob_fval"]),
        ("long", ["size", "lv_tag", "ob_digit"]),
        ("bytes", ["size", "ob_size", "ob_sval"]),
        ("unicode", ["size", "state", "length", "asciiobject_size"]),
        ("gc", ["size", "collecting"]),
        ("gen", ["size", "gi_name", "gi_iframe", "gi_frame_state"]),
        ("llist", [None, None]),
        ("debugger", ["eval_breaker", "remote_debugger_support", "remote_debugging_enabled",
                      "debugger_pending_call", "debugger_script_path", "debugger_script_path_size"]),
    ]),
}

# debug-offset entry -> our key
DEBUG_OFFSETS_KEYS = {
    "runtime.interpreters_head": "rt.interp_head",
    "interp.id": "is.id",
    "interp.next": "is.next",
    "interp.threads_head": "is.threads_head",
    "interp.gil_holder": "is.gil_holder",  # (offsets in the interpreter's own _gil: cpython_gil)
    "interp.gil_locked": "is.gil_locked",
    "tstate.next": "ts.next",
    "tstate.interp": "ts.interp",
    "tstate.current_frame": "ts.current_frame",
    "tstate.thread_id": "ts.thread_id",
    "tstate.native_thread_id": "ts.native_thread_id",
    "iframe.previous": "if.previous",
    "iframe.executable": "if.code",
    "iframe.instr_ptr": "if.instr",
    "iframe.localsplus": "if.localsplus",
    "iframe.owner": "if.owner",
    "code.filename": "co.filename",
    "code.name": "co.name",
    "code.qualname": "co.qualname",
    "code.linetable": "co.linetable",
    "code.firstlineno": "co.firstlineno",
    "code.argcount": "co.argcount",
    "code.localsplusnames": "co.localsplusnames",
    "code.localspluskinds": "co.localspluskinds",
    "code.co_code_adaptive": "co.code_adaptive",
    "pyobject.ob_type": "ob.type",
    "type.tp_name": "tp.name",
    "type.tp_flags": "tp.flags",
    "tuple.ob_item": "tuple.items",
    "tuple.ob_size": "tuple.size",
    "list.ob_item": "list.items",
    "list.ob_size": "list.size",
    "set.used": "set.used",
    "set.table": "set.table",
    "set.mask": "set.mask",
    "dict.ma_keys": "dict.keys",
    "dict.ma_values": "dict.values",
    "float.ob_fval": "float.value",
    "long.lv_tag": "long.tag",
    "long.ob_digit": "long.digits",
    "bytes.ob_size": "bytes.size",
    "bytes.ob_sval": "bytes.data",
    "unicode.state": "str.state",
    "unicode.length": "str.length",
    "unicode.asciiobject_size": "str.ascii_size",
}
DEBUG_OFFSETS_KEYS.update(OBJECT_DEBUG_OFFSETS_KEYS)

# Offsets every sane 64-bit build has, relative to the size of the object header
# (pyobject.size: 16, or 32 in a free-threaded build, where ob_tid, the flags and the
# two reference counts come before ob_type); a debug-offset table that disagrees is read
# with the wrong layout (or belongs to a build we do not understand). 3.14 caches a
# tuple's hash before its items (TUPLE_HASH_MINOR).
DEBUG_OFFSETS_EXPECT = {
    "pyobject.ob_type": -8,
    "float.size": 8,
    "float.ob_fval": 0,
    "tuple.ob_item": 8,
    "tuple.ob_size": 0,
    "list.ob_item": 8,
    "list.ob_size": 0,
    "bytes.ob_size": 0,
    "type.tp_name": 8,
}
HEADER_SIZE = 16
HEADER_SIZE_FREE_THREADED = 32
TUPLE_HASH_MINOR = 14
