"""Code that runs inside gdb's embedded Python (loaded by tuidbg.engine.gdbext_loader).

Only the standard library and gdb's module: gdb's Python may be older than the
one running tuidbg (keep the syntax Python 3.6 can read).

The walker (``cpython_walk`` and the ``cpython_*`` modules it is made of) and
``elfsyms`` do not import gdb, so tuidbg's front end imports them too (the
MI-memory backend for a gdb without Python).

Layers, each importing only the ones below it: ``elfsyms``, ``cpython_layouts``,
``cpython_mem``, ``cpython_lines`` < ``cpython_interp`` < ``cpython_native``,
``cpython_values`` < ``cpython_walk`` < ``cpython_taskobjs`` < ``cpython_tasks`` (asyncio tasks; its
tables in ``cpython_objlayouts``, below ``cpython_layouts``) < ``gdb_target`` < ``pystack_cmds`` <
``tasks_cmds``; ``commands``, ``torch_printers`` (the at::Tensor pretty-printer), ``cxxbreak`` (C++
breakpoints in libraries read without demangling; ``cxxnames`` below it) < this package's
``register``. Modules import their siblings by name
(``from .cpython_mem import ...``), never the package itself.
"""


def register():
    from . import commands, cxxbreak, pystack_cmds, tasks_cmds, torch_printers

    commands.register()
    cxxbreak.register()
    pystack_cmds.register()
    tasks_cmds.register()
    torch_printers.register()
