"""tuidbg's bootstrap for ``tuidbg attach``: run inside the target by gdb's injection.

Executed with ``TUIDBG_ARGS`` in its globals (socket path, token, the directory
holding tuidbg's package, whether tuidbg debugs several processes and whether it
keeps this one's children). On CPython 3.9-3.11 and free-threaded 3.14t it runs
either as the main thread's pending call (scheduled by gdb) or in a thread that gdb
made the program start (it takes the GIL with ``PyGILState_Ensure``), whichever
runs Python first (``tuidbg.engine.pyagent.boot_thread``); on 3.12/3.13 as one of
the interpreter's pending calls, in whichever thread runs Python first; on 3.14 as
the PEP 768 debugger script of the thread that last held the GIL. Either way it
runs with the GIL (or attached, 3.14t), between two bytecodes or in a thread of
its own, in a fresh namespace (``tuidbg.engine.pyagent.inject``).
"""


def _tuidbg_attach(args):
    import os
    import sys

    parent = args["parent"]
    try:
        finder = os.path.join(parent, "tuidbg", "agent", "boot", "_tuidbg_finder.py")
        ns = {"__name__": "_tuidbg_finder"}
        with open(finder) as f:
            exec(compile(f.read(), finder, "exec"), ns)
        had_finder = any(type(f).__name__ == "TuidbgFinder" for f in sys.meta_path)
        finder = ns["install"](parent)
        try:
            # first of all the SIGTRAP shield (before the agent's imports load libraries: gdb stops at
            # each load, and a gdb killed then would leave its trap to end the process)
            from tuidbg.agent import _shield

            _shield.arm()
            from tuidbg.agent import core
        finally:
            if not had_finder:
                ns["uninstall"](finder)
        if core.start_attach(args["socket"], args["token"], args.get("several", False),
                             args.get("children", False)) is None:
            _shield.disarm()
    except Exception as exc:
        sys.stderr.write("tuidbg agent: not loaded: %s: %s\n" % (type(exc).__name__, exc))
        shield = sys.modules.get("tuidbg.agent._shield")
        if shield is not None:
            shield.disarm()
    finally:
        try:
            os.unlink(args.get("script", ""))
        except OSError:
            pass


_tuidbg_attach(TUIDBG_ARGS)  # noqa: F821 (given by the injector)
