"""The audit hook that hands the agent the code objects about to run, cheap on x86-64.

``sys.addaudithook`` calls a Python function for every audit event of the
process (file opens, imports, socket calls: about 8,000 in a small pytest run),
which costs about 1.5 % of such a run on 3.12. Only the ``exec`` event (code
about to be executed: the ``__main__`` script, imports, ``runpy``, ``exec()``)
matters to the agent. On x86-64 the hook is installed with
``PySys_AddAuditHook`` as a 29-byte function that compares the event name with
"exec" and calls back into Python only then; elsewhere ``sys.addaudithook``
with a Python function.

Either way the hook cannot be removed: the callback checks whether it is still
wanted.
"""

import ctypes
import platform
import sys

# x86-64 System V, hook(const char *event, PyObject *args, void *userData) -> int:
#   cmp dword [rdi], "exec" ; jne ret0 ; cmp byte [rdi+4], 0 ; jne ret0
#   movabs rax, CALLBACK ; jmp rax            (the callback returns the hook's int)
#   ret0: xor eax, eax ; ret
_X86_64 = bytes.fromhex("813f65786563" "7512" "807f0400" "750c" "48b8") + bytes(8) + bytes.fromhex("ffe0" "31c0" "c3")
_CALLBACK_AT = 16  # the movabs immediate

_HOOK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.py_object, ctypes.c_void_p)
_keep = []  # the callback objects and the code page live as long as the process


def install(on_exec):
    """Call ``on_exec(args)`` for every ``exec`` audit event from now on. Returns "native" or "python"."""
    if platform.machine().lower() in ("x86_64", "amd64"):
        try:
            _install_native(on_exec)
            return "native"
        except Exception:  # no executable memory, no PySys_AddAuditHook: the portable way
            pass

    def hook(event, args):
        if event == "exec":
            on_exec(args)

    sys.addaudithook(hook)
    _keep.append(hook)
    return "python"


def _install_native(on_exec):
    from ._stub import map_code

    def callback(_event, args, _data):
        try:
            on_exec(args)
        except Exception:
            pass  # never into the program
        return 0

    cb = _HOOK(callback)
    code = bytearray(_X86_64)
    code[_CALLBACK_AT:_CALLBACK_AT + 8] = (ctypes.cast(cb, ctypes.c_void_p).value).to_bytes(8, "little")
    addr = map_code(bytes(code))
    add = ctypes.pythonapi.PySys_AddAuditHook
    add.restype = ctypes.c_int
    add.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    _keep.extend([cb, callback])
    if add(addr, None) != 0:
        raise OSError("PySys_AddAuditHook refused")
