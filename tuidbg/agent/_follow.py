"""What a process whose children tuidbg keeps changes in itself, and puts back when the agent goes.

Two changes, made by ``follow`` (``tuidbg attach --children``: a process that was started without
tuidbg) or found already made (``adopt``: a process ``tuidbg run --children`` started, or a child
of either that inherited them):

- ``subprocess`` forks rather than vforks or uses posix_spawn (which vforks): gdb 13, keeping the
  children of a multi-threaded parent, leaves one of the parent's other threads stopped after a
  vfork (a torchrun launcher's store thread: its ranks then wait for it forever);
- the environment names tuidbg's socket and puts the agent's boot directory first on
  ``PYTHONPATH``, so that a Python child started anew (multiprocessing's spawn and forkserver, a
  ``subprocess`` running Python) loads the agent at start-up (``boot/sitecustomize.py``), as it
  does under ``tuidbg run``. A fork needs none of it: the agent's fork hook reconnects it.

``unfollow`` puts both back as they were (the agent calls it as it switches off: at a detach the
process goes on as before tuidbg came). The environment is changed with ``os.environ`` from the
thread that runs the agent's boot or its detach, holding the GIL, as a program's own Python code
would change it.
"""

import os

from . import protocol as P

_KEYS = (P.ENV_SOCKET, P.ENV_TOKEN, P.ENV_CHILDREN, P.ENV_ORIG_PYTHONPATH, "PYTHONPATH")
_saved = []  # [(environment values before, subprocess's switches before)] while following


def _no_vfork():
    try:
        import subprocess

        before = (subprocess._USE_VFORK, subprocess._USE_POSIX_SPAWN)
        subprocess._USE_VFORK = False
        subprocess._USE_POSIX_SPAWN = False
        return before
    except Exception:  # (an interpreter without these switches: nothing to change)
        return None


def follow(sock_path, token, boot_dir):
    """Children started from now on load the agent (a Python started anew) and fork plainly."""
    if _saved:
        return
    env = os.environ
    before = {k: env.get(k) for k in _KEYS}
    orig = env.get("PYTHONPATH")
    env[P.ENV_SOCKET] = sock_path
    env[P.ENV_TOKEN] = token
    env[P.ENV_CHILDREN] = "1"
    if orig is not None:
        env[P.ENV_ORIG_PYTHONPATH] = orig
    env["PYTHONPATH"] = boot_dir + (os.pathsep + orig if orig else "")
    _saved.append((before, _no_vfork()))


def adopt():
    """A process started with tuidbg's variables (``tuidbg run --children`` or a child of a followed
    process): the same changes, already in its environment; what to put back is the user's
    ``PYTHONPATH`` the variables name."""
    if _saved:
        return
    orig = os.environ.get(P.ENV_ORIG_PYTHONPATH)
    before = {k: None for k in _KEYS}
    before["PYTHONPATH"] = orig
    _saved.append((before, _no_vfork()))


def unfollow():
    """Put back what ``follow`` or ``adopt`` changed (nothing if neither ran)."""
    if not _saved:
        return
    before, sub = _saved.pop()
    env = os.environ
    for k, v in before.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    if sub is not None:
        try:
            import subprocess

            subprocess._USE_VFORK, subprocess._USE_POSIX_SPAWN = sub
        except Exception:
            pass
