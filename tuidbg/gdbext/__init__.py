"""Code that runs inside gdb's embedded Python (loaded by tuidbg.engine.gdbext_loader).

Only the standard library and gdb's module: gdb's Python may be older than the
one running tuidbg.
"""

import gdb  # noqa: F401  (only importable inside gdb)

from . import commands


def register():
    commands.register()
