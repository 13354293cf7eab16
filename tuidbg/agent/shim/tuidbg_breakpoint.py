"""``PYTHONBREAKPOINT=tuidbg_breakpoint.set_trace`` for programs whose Python cannot import tuidbg.

Put only this directory on the program's PYTHONPATH (nothing else of tuidbg's
installation becomes importable)::

    PYTHONPATH=/path/to/tuidbg/agent/shim PYTHONBREAKPOINT=tuidbg_breakpoint.set_trace python app.py

``breakpoint()`` then stops in tuidbg when it is attached (``tuidbg attach PID``),
and otherwise prints one line and goes on, or waits with ``TUIDBG_ON_BREAK=wait``.
Under ``tuidbg run``, and after ``tuidbg attach``, plain ``breakpoint()`` and
``import tuidbg; tuidbg.breakpoint()`` work without this.
"""

import os


def _install_finder():
    agent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    finder = os.path.join(agent, "boot", "_tuidbg_finder.py")
    ns = {"__name__": "_tuidbg_finder"}
    with open(finder) as f:
        exec(compile(f.read(), finder, "exec"), ns)
    ns["install"](os.path.dirname(os.path.dirname(agent)))


_install_finder()
del _install_finder

from tuidbg.agent.api import breakpoint, set_trace  # noqa: E402

__all__ = ["set_trace", "breakpoint"]
