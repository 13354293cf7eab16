"""tuidbg: a terminal debugger for Python, C++ and CUDA in one stack.

Importing the package imports nothing else: gdb's embedded Python loads
``tuidbg.gdbext`` from here, and the engine must not pull in the UI.

``tuidbg.set_trace()`` and ``tuidbg.breakpoint()`` (for the debugged program,
also as ``PYTHONBREAKPOINT=tuidbg.set_trace``) are loaded on first use.
"""

__version__ = "0.1.0"


def __getattr__(name):
    if name in ("set_trace", "breakpoint"):
        from tuidbg.agent import api

        return getattr(api, name)
    raise AttributeError("module 'tuidbg' has no attribute %r" % (name,))
