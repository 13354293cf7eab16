"""tuidbg's bootstrap for ``tuidbg attach``: run inside the target by gdb's injection.

Executed with ``TUIDBG_ARGS`` in its globals (socket path, token, the directory
holding tuidbg's package). On CPython 3.9-3.13 it runs as a pending call
(``Py_AddPendingCall(PyRun_SimpleString, ...)`` scheduled by gdb) in the main
thread; on 3.14 as the PEP 768 debugger script of the main thread. Either way
it runs between two bytecodes, with the GIL, in a fresh namespace.
"""


def _tuidbg_attach(args):
    import os
    import sys

    parent = args["parent"]

    class TuidbgFinder(object):
        """Finds the package ``tuidbg`` in tuidbg's own installation, and nothing else."""

        def find_spec(self, name, path=None, target=None):
            if name != "tuidbg":
                return None
            import importlib.machinery

            return importlib.machinery.PathFinder.find_spec(name, [parent])

    if not any(type(f).__name__ == "TuidbgFinder" for f in sys.meta_path):
        sys.meta_path.insert(0, TuidbgFinder())
    try:
        from tuidbg.agent import core

        core.start(args["socket"], args["token"], "attach")
    except Exception as exc:
        sys.stderr.write("tuidbg agent: not loaded: %s: %s\n" % (type(exc).__name__, exc))
    finally:
        try:
            os.unlink(args.get("script", ""))
        except OSError:
            pass


_tuidbg_attach(TUIDBG_ARGS)  # noqa: F821 (given by the injector)
