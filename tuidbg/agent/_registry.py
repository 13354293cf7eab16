"""The agent of this process, where every part of the agent finds it without importing ``core``.

``core`` creates the agent and registers it here; the backends, ``api`` and the
pytest plugin only read it. This module imports nothing of tuidbg's, so the
dependencies point one way: ``core`` -> backends, ``api``, ``pytest_plugin`` ->
this module.
"""

import os
import time

AGENT_DIR = os.path.dirname(os.path.abspath(__file__))
AGENT_PREFIX = AGENT_DIR + os.sep

_slot = [None]  # the registered Agent (a list: one assignment, no ``global`` in the callers)


def active():
    """The agent of this process if one is running and connected, else None."""
    a = _slot[0]
    if a is not None and a.enabled:
        return a
    return None


def current():
    """The registered agent, connected or not (None when there is none)."""
    return _slot[0]


def register(agent):
    _slot[0] = agent


def unregister(agent):
    """Forget ``agent`` if it is the registered one."""
    if _slot[0] is agent:
        _slot[0] = None


def is_agent_code(code):
    """Whether a code object is the agent's own (its frames are never the program's)."""
    return code.co_filename.startswith(AGENT_PREFIX)


def run_by_agent(frame):
    """Whether ``frame`` is the agent's own code or code the agent calls (ctypes, os.path, ...).

    The program's frames never run below the agent's (it stops above them), so a step into must
    not end in a library function that the agent itself runs, e.g. from the frame filter's callback."""
    while frame is not None:
        if frame.f_code.co_filename.startswith(AGENT_PREFIX):
            return True
        frame = frame.f_back
    return False


def wait_for(timeout=None):
    """Wait until an agent is active (``TUIDBG_ON_BREAK=wait``); returns it or None."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        a = active()
        if a is not None:
            return a
        if deadline is not None and time.monotonic() > deadline:
            return None
        time.sleep(0.1)
