"""What native function a line runs first through an operator, a subscript or an attribute access.

"Step into native" stops at the first native function the line calls. A call is seen as it is made
(the backends' C-call events), but ``a @ b``, ``t[0]`` and ``t.shape`` call no function the
interpreter reports: it runs the operand type's slot (``nb_matrix_multiply``, ``mp_subscript``, a
getter). ``line_native_target(frame)`` reads the line's instructions from the one the frame is at,
keeps the operands that are plain names or constants (``LOAD_FAST a``, ``LOAD_GLOBAL t``,
``LOAD_CONST 0``), and at the first operator, subscript or attribute access, before any call, looks
up what the operand's type runs for it (``__matmul__``, ``__getitem__``, the attribute's descriptor)
in the type's own dictionaries, without running anything of the program: a builtin method, a slot
wrapper or a getter of a C type gives its C function (``_native.c_entry``). Anything else (a Python
method, an operand computed on the line, an instance attribute) gives None, and the step goes on as
before. Standard library only.
"""

import sys

from ._native import native_entry

# BINARY_OP's operators (3.11+, as dis writes them) and the older opcodes, to the special method
_BINARY = {
    "+": "__add__", "-": "__sub__", "*": "__mul__", "@": "__matmul__", "/": "__truediv__", "//": "__floordiv__",
    "%": "__mod__", "**": "__pow__", "<<": "__lshift__", ">>": "__rshift__", "&": "__and__", "|": "__or__",
    "^": "__xor__",
}
_OLD_BINARY = {
    "ADD": "__add__", "SUBTRACT": "__sub__", "MULTIPLY": "__mul__", "MATRIX_MULTIPLY": "__matmul__",
    "TRUE_DIVIDE": "__truediv__", "FLOOR_DIVIDE": "__floordiv__", "MODULO": "__mod__", "POWER": "__pow__",
    "LSHIFT": "__lshift__", "RSHIFT": "__rshift__", "AND": "__and__", "OR": "__or__", "XOR": "__xor__",
}
_COMPARE = {"<": "__lt__", "<=": "__le__", "==": "__eq__", "!=": "__ne__", ">": "__gt__", ">=": "__ge__"}
_UNARY = {"UNARY_NEGATIVE": "__neg__", "UNARY_INVERT": "__invert__", "UNARY_POSITIVE": "__pos__"}
# instructions that neither push nor pop anything the operators look at
_QUIET = ("NOP", "RESUME", "CACHE", "EXTENDED_ARG", "COPY_FREE_VARS", "MAKE_CELL", "NOT_TAKEN")
_UNKNOWN = object()


def line_native_target(frame):
    """(address, name) of the C function the line the frame is at runs first through an operator, a
    subscript or an attribute access, before any call; None when it is not one (see the module)."""
    try:
        return _target(frame)
    except Exception:  # never into the program: the step goes on as it would have
        return None


def _target(frame):
    import dis

    code = frame.f_code
    here = frame.f_lasti
    stack = []
    line = None
    for ins in dis.get_instructions(code):
        if ins.offset < here:
            continue
        at = _line_of(ins)
        if line is None:
            line = at
        elif at is not None and at != line:
            return None  # (the line is over)
        name = ins.opname
        if name in _QUIET:
            continue
        if name.startswith("LOAD_FAST") or name in ("LOAD_NAME", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_CLOSURE"):
            names = ins.argval if isinstance(ins.argval, tuple) else (ins.argval,)
            if name == "LOAD_GLOBAL" and "NULL" in (ins.argrepr or ""):
                stack.append(_UNKNOWN)  # (3.11+: a NULL for the call that follows)
            for n in names:
                stack.append(_value(frame, n, global_only=name == "LOAD_GLOBAL"))
            continue
        if name in ("LOAD_CONST", "LOAD_SMALL_INT"):
            stack.append(ins.argval)
            continue
        special, operand = _special(ins, stack)
        if special is None or operand is _UNKNOWN:
            return None  # (a call, or anything else first: not an operator's; an operand computed on the line)
        if special != "__getattr__":
            return _slot(operand, special)
        found = _attribute(operand, ins.argval)
        if found is not _UNKNOWN:
            return found
        # a plain attribute (an instance's, a module's): its value, read as the interpreter would
        stack[-1] = operand.__dict__[ins.argval]
    return None


def _line_of(ins):
    pos = getattr(ins, "positions", None)
    if pos is not None and pos.lineno is not None:
        return pos.lineno
    return ins.starts_line  # (3.9/3.10: only on a line's first instruction)


def _value(frame, name, global_only=False):
    if not global_only and name in frame.f_locals:
        return frame.f_locals[name]
    if name in frame.f_globals:
        return frame.f_globals[name]
    builtins = frame.f_builtins
    return builtins[name] if name in builtins else _UNKNOWN


def _special(ins, stack):
    """(special method, its operand) of an operator instruction; (None, None) for any other."""
    name = ins.opname
    top = stack[-1] if stack else _UNKNOWN
    second = stack[-2] if len(stack) > 1 else _UNKNOWN
    if name == "BINARY_OP":
        sym = (ins.argrepr or "").strip()
        if sym == "[]":  # (3.14: subscripts are BINARY_OP too)
            return "__getitem__", second
        inplace = sym.endswith("=") and sym[:-1] in _BINARY
        return (_BINARY.get(sym[:-1] if inplace else sym), second)
    if name.startswith(("BINARY_", "INPLACE_")) and name.split("_", 1)[1] in _OLD_BINARY:
        return _OLD_BINARY[name.split("_", 1)[1]], second
    if name == "BINARY_SUBSCR":
        return "__getitem__", second
    if name == "STORE_SUBSCR":
        return "__setitem__", second  # (value, container, key: the container is second from the top)
    if name == "COMPARE_OP":
        return _COMPARE.get(str(ins.argval)), second
    if name in _UNARY:
        return _UNARY[name], top
    if name in ("LOAD_ATTR", "LOAD_METHOD"):
        return "__getattr__", top
    return None, None


def _lookup(tp, name):
    """``name`` in the dictionaries of ``tp``'s MRO, as the interpreter finds it (no descriptor run)."""
    for klass in getattr(tp, "__mro__", ()):
        d = klass.__dict__
        if name in d:
            return d[name]
    return None


def _slot(operand, special):
    found = _lookup(type(operand), special)
    if found is None:
        return None
    return native_entry(found) or _wrapped_entry(found)


def _attribute(owner, name):
    """The native function an attribute access runs: a C type's getter, or the builtin method the call
    that follows runs; None when it runs Python (a property, a method) or nothing native; _UNKNOWN for a
    plain attribute of the object's own dictionary (no data descriptor of the type in the way)."""
    if not isinstance(name, str):
        return None
    found = _lookup(type(owner), name)
    own = getattr(owner, "__dict__", None)
    if isinstance(own, dict) and name in own and not (found is not None and hasattr(type(found), "__set__")):
        return _UNKNOWN
    if found is None:
        return None
    if type(found).__name__ == "getset_descriptor":
        return _getter_entry(found, name)
    getter = _lookup(type(found), "__get__")  # (a C type's own descriptor, such as a ctypes field's)
    if getter is not None and type(getter) is type(object.__init__):
        return _wrapped_entry(getter)
    return native_entry(found)  # (a method: the call that follows runs it)


_PTR = 8 if sys.maxsize > 2 ** 32 else 4


def _wrapped_entry(descr):
    """A C type's slot wrapper (``wrapper_descriptor``): the slot function it wraps (``d_wrapped``)."""
    if type(descr) is not type(object.__init__):
        return None
    import ctypes

    from ._native import _HEAD, native_at

    addr = ctypes.c_void_p.from_address(id(descr) + _HEAD + 4 * _PTR).value or 0
    return native_at(addr, getattr(descr, "__qualname__", None) or "slot")


def _getter_entry(descr, name):
    """A C type's attribute (``getset_descriptor``): its getter (``d_getset->get``)."""
    import ctypes

    from ._native import _HEAD, native_at

    getset = ctypes.c_void_p.from_address(id(descr) + _HEAD + 3 * _PTR).value or 0
    addr = ctypes.c_void_p.from_address(getset + _PTR).value or 0 if getset else 0
    return native_at(addr, "%s.%s" % (getattr(descr, "__objclass__", type).__name__, name))


__all__ = ["line_native_target"]
