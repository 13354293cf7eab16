"""Code that runs inside gdb's embedded Python (loaded by tuidbg.engine.gdbext_loader).

Only the standard library and gdb's module: gdb's Python may be older than the
one running tuidbg (keep the syntax Python 3.6 can read).

``cpython_walk``, ``cpython_layouts`` and ``elfsyms`` do not import gdb, so
tuidbg's front end imports them too (the MI-memory backend for a gdb without
Python).
"""


def register():
    from . import commands, pystack_cmds

    commands.register()
    pystack_cmds.register()
