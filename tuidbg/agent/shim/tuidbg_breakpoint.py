"""``PYTHONBREAKPOINT=tuidbg_breakpoint.set_trace`` for programs whose Python cannot import tuidbg.

Put only this directory on the program's PYTHONPATH (nothing else of tuidbg's
installation becomes importable)::

    PYTHONPATH=/path/to/tuidbg/agent/shim PYTHONBREAKPOINT=tuidbg_breakpoint.set_trace python app.py

``breakpoint()`` then stops in tuidbg when it is attached (``tuidbg attach PID``),
and otherwise prints one line and goes on, or waits with ``TUIDBG_ON_BREAK=wait``.
Under ``tuidbg run``, and after ``tuidbg attach``, plain ``breakpoint()`` and
``import tuidbg; tuidbg.breakpoint()`` work without this.
"""

import importlib.machinery
import os
import sys

_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class TuidbgFinder(object):
    """Finds the package ``tuidbg`` in tuidbg's own installation, and nothing else."""

    def find_spec(self, name, path=None, target=None):
        if name != "tuidbg":
            return None
        return importlib.machinery.PathFinder.find_spec(name, [_PARENT])


if not any(type(f).__name__ == "TuidbgFinder" for f in sys.meta_path):
    sys.meta_path.insert(0, TuidbgFinder())

from tuidbg.agent.api import breakpoint, set_trace  # noqa: E402

__all__ = ["set_trace", "breakpoint"]
