"""Load tuidbg's gdb-side package (``tuidbg/gdbext``) into gdb's embedded Python.

gdb's Python is independent of the Python that runs tuidbg (it may be older), so
the package is loaded from its directory under a private module name and uses
only the standard library and gdb's own module.
"""

from __future__ import annotations

import logging
import os
import sys

from tuidbg.engine import mi
from tuidbg.engine.errors import MIError

log = logging.getLogger("tuidbg.engine")

GDBEXT_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gdbext")

_BOOT = (
    "import importlib.util as _u, sys as _s\n"
    "_spec = _u.spec_from_file_location('tuidbg_gdbext', {init!r}, submodule_search_locations=[{dir!r}])\n"
    "_m = _u.module_from_spec(_spec); _s.modules['tuidbg_gdbext'] = _m; _spec.loader.exec_module(_m)\n"
    "_m.register()\n"
    "import tuidbg_gdbext.orphan as _o; _o.watch({parent}, {rescuer!r})\n"
)


def rescuer_argv() -> list[str]:
    """The command line of ``engine.orphan``, which the gdb side starts (with gdb's PID added) should gdb
    outlive tuidbg: this Python, with the folder tuidbg is in first on its path."""
    root = os.path.dirname(os.path.dirname(GDBEXT_DIR))
    return [sys.executable, "-c", f"import sys; sys.path.insert(0, {root!r}); from tuidbg.engine import orphan; "
            "sys.exit(orphan.main(sys.argv[1:]))"]


def boot_code() -> str:
    """The package loaded, its commands registered, and gdb's watch for a tuidbg that is gone started
    (``gdbext.orphan``: no gdb outlives tuidbg)."""
    return _BOOT.format(init=os.path.join(GDBEXT_DIR, "__init__.py"), dir=GDBEXT_DIR, parent=os.getpid(),
                        rescuer=rescuer_argv())


async def load(session) -> bool:
    """Load the package; returns whether gdb now has tuidbg's commands."""
    code = boot_code()
    # One console 'python' command per line keeps this working on old gdbs
    # (cuda-gdb 11.8) where multi-line python through MI is awkward.
    one_line = "; ".join(line for line in code.splitlines() if line)
    try:
        await session.cmd(f"-interpreter-exec console {mi.quote('python ' + one_line)}", timeout=60)
    except MIError as exc:
        log.warning("could not load tuidbg's gdb extension: %s", exc)
        session.startup_messages.append(f"tuidbg's gdb extension did not load: {exc.message}")
        return False
    session.gdbext_loaded = True
    return True
