"""``tuidbg.set_trace()`` / ``tuidbg.breakpoint()``: stop in tuidbg from the program's own code.

With tuidbg attached (the agent is running), the call stops the whole process
at the next line the caller runs once the call has returned, as pdb does (a
step over armed at the call, its stop said as the set_trace stop). Without it, the process goes on: one
line on stderr says so (once per call site), or, with ``TUIDBG_ON_BREAK=wait``,
the call waits until ``tuidbg attach PID`` has loaded the agent, then stops.

Also usable as ``PYTHONBREAKPOINT=tuidbg.set_trace`` (the program must be able
to import ``tuidbg``: under ``tuidbg run`` and after ``tuidbg attach`` it can;
otherwise add the directory holding tuidbg's package to PYTHONPATH).
"""

import os
import sys

from . import _registry
from . import protocol as P

_warned = set()


def set_trace(*args, **kwargs):
    """Stop here in tuidbg if it is attached; otherwise say so on stderr (or wait) and go on."""
    frame = sys._getframe(1)
    agent = _registry.active()
    if agent is None:
        where = "%s:%s" % (frame.f_code.co_filename, frame.f_lineno)
        mode = os.environ.get(P.ENV_ON_BREAK, "").strip().lower()
        if mode == "wait":
            sys.stderr.write("tuidbg: breakpoint at %s: waiting for the debugger (tuidbg attach %d)\n"
                             % (where, os.getpid()))
            sys.stderr.flush()
            agent = _registry.wait_for()
        else:
            if where not in _warned:
                _warned.add(where)
                sys.stderr.write("tuidbg: breakpoint at %s ignored: no debugger attached (tuidbg attach %d; "
                                 "TUIDBG_ON_BREAK=wait waits for it)\n" % (where, os.getpid()))
                sys.stderr.flush()
            return None
    agent.break_after(frame)  # (at the next line the caller runs, as pdb's set_trace)
    return None


breakpoint = set_trace
