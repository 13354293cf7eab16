"""Whether a program is a CPython interpreter, by its file name: the one rule for tuidbg's children
(``engine.children``: a child that became something else is let go) and for gdb's side of it (the
condition of the exec catchpoint, ``gdbext.commands``). Standard library only (runs in gdb too)."""

import os
import re

_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?[a-z]*(-dbg)?$")


def is_python_program(path) -> bool:
    """A CPython interpreter by its file name (python, python3, python3.11, python3.13t, python3-dbg)."""
    return bool(path) and bool(_PYTHON.match(os.path.basename(str(path))))
