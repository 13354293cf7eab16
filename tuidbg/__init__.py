"""tuidbg: a terminal debugger for Python, C++ and CUDA in one stack.

Importing the package imports nothing else: gdb's embedded Python loads
``tuidbg.gdbext`` from here, and the engine must not pull in the UI.
"""

__version__ = "0.1.0"
