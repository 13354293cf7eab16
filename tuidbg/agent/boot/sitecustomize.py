"""tuidbg's start-up hook for ``tuidbg run`` (a Python program): loads the agent, then the user's own sitecustomize.

tuidbg puts this directory first on the program's PYTHONPATH. This module:

1. takes tuidbg's variables out of the environment and puts PYTHONPATH back as
   the user had it, so child processes do not load the agent (unless tuidbg keeps the
   program's children, ``--children``: then they stay, and a Python child loads it too);
2. removes this directory from ``sys.path``;
3. makes ``import tuidbg`` find tuidbg's package (a finder for that one name,
   so nothing else next to it becomes importable), and starts the agent, which
   connects to tuidbg and waits for the breakpoints before the program runs;
4. runs the sitecustomize module that this one hides, if there is one.
"""


def _tuidbg_bootstrap():
    import os
    import sys

    env = os.environ
    here = os.path.dirname(os.path.abspath(__file__))
    children = env.get("TUIDBG_AGENT_CHILDREN") == "1"
    take = env.get if children else env.pop
    sock = take("TUIDBG_AGENT_SOCKET", None)
    token = take("TUIDBG_AGENT_TOKEN", "")
    orig = take("TUIDBG_AGENT_ORIG_PYTHONPATH", None)
    if sock is not None and not children:  # tuidbg set PYTHONPATH: put back the user's
        if orig is None:
            env.pop("PYTHONPATH", None)
        else:
            env["PYTHONPATH"] = orig

    def _same(p):
        try:
            return os.path.abspath(p or os.curdir) == here
        except (TypeError, ValueError):
            return False

    sys.path[:] = [p for p in sys.path if not _same(p)]

    if sock:
        try:
            parent = os.path.dirname(os.path.dirname(os.path.dirname(here)))
            finder = os.path.join(here, "_tuidbg_finder.py")
            ns = {"__name__": "_tuidbg_finder"}
            with open(finder) as f:
                exec(compile(f.read(), finder, "exec"), ns)
            ns["install"](parent)
            from tuidbg.agent import _shield

            shielded = _shield.arm_if_traced()  # (first of all: see boot/attach.py)
            from tuidbg.agent import core

            if core.start_run(sock, token, children) is None and shielded:
                _shield.disarm()
        except Exception as exc:  # the program must run even if the agent cannot
            sys.stderr.write("tuidbg agent: not loaded: %s: %s\n" % (type(exc).__name__, exc))

    # Chain to the sitecustomize this module shadows.
    try:
        import importlib.machinery
        import importlib.util

        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [p for p in sys.path if not _same(p)])
        if spec is not None and spec.origin and os.path.dirname(os.path.abspath(spec.origin)) != here:
            mod = importlib.util.module_from_spec(spec)
            sys.modules["sitecustomize"] = mod
            spec.loader.exec_module(mod)
    except Exception:
        import traceback

        sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n")
        traceback.print_exc()


_tuidbg_bootstrap()
del _tuidbg_bootstrap
