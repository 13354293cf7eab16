"""The meta-path finder that makes ``import tuidbg`` find tuidbg's own package, and nothing else.

Never imported: its users run before tuidbg can be imported (``sitecustomize.py``
and ``attach.py`` here, ``../shim/tuidbg_breakpoint.py``), so each executes this
file by path and calls ``install(parent)`` (which returns the finder), ``parent`` being the directory that
holds the ``tuidbg`` package. A finder for that single name keeps everything else
next to the package out of the program's imports. Installed once per process.
"""


def install(parent):
    import importlib.machinery
    import sys

    class TuidbgFinder(object):
        """Finds the package ``tuidbg`` in tuidbg's own installation, and nothing else."""

        def find_spec(self, name, path=None, target=None):
            if name != "tuidbg":
                return None
            return importlib.machinery.PathFinder.find_spec(name, [parent])

    for f in sys.meta_path:
        if type(f).__name__ == "TuidbgFinder":
            return f
    finder = TuidbgFinder()
    sys.meta_path.insert(0, finder)
    return finder


def uninstall(finder):
    """Take the finder out again (attach: once ``tuidbg`` is imported, its submodules are found through
    the package itself, and a process tuidbg detaches from keeps no trace of it on its import path)."""
    import sys

    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
