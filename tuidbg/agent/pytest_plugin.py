"""pytest plugin loaded by tuidbg's agent under ``tuidbg run -m pytest``: stop at failing tests.

The agent adds this module to ``PYTEST_PLUGINS`` for the pytest process it
runs in; ``pytest_configure`` puts the variable back as it was, so pytest runs
started by the tests themselves do not inherit it.
"""

import os

from . import _registry
from . import protocol as P

ENV_ORIG = "TUIDBG_AGENT_ORIG_PYTEST_PLUGINS"  # absent: PYTEST_PLUGINS was not set
ENV_MARK = "TUIDBG_AGENT_PYTEST"


def pytest_configure(config):
    if os.environ.pop(ENV_MARK, None) is None:
        return
    orig = os.environ.pop(ENV_ORIG, None)
    if orig is None:
        os.environ.pop("PYTEST_PLUGINS", None)
    else:
        os.environ["PYTEST_PLUGINS"] = orig


def pytest_exception_interact(node, call, report):
    """A test failed (or errored): with --break-on-failure, stop with its frames and the exception."""
    agent = _registry.active()
    if agent is None or not agent.opts.get("failure"):
        return
    excinfo = getattr(call, "excinfo", None)
    if excinfo is None:
        return
    agent.stop_exception(P.R_FAILURE, excinfo.value, excinfo.tb, extra_info={"test": getattr(node, "nodeid", None)})


def register_if_pytest(argv):
    """Called at start-up: add this plugin to PYTEST_PLUGINS when the program is pytest."""
    if not _is_pytest(argv):
        return
    cur = os.environ.get("PYTEST_PLUGINS")
    os.environ[ENV_MARK] = "1"
    if cur is not None:
        os.environ[ENV_ORIG] = cur
    os.environ["PYTEST_PLUGINS"] = (cur + "," if cur else "") + __name__


def _is_pytest(argv):
    for i, a in enumerate(argv[1:], 1):
        if a == "-m" and i + 1 < len(argv):
            return argv[i + 1] in ("pytest", "py.test")
        if a.startswith("-"):
            continue
        return os.path.basename(a) in ("pytest", "py.test")
    return False
