"""An expression in a frame of another thread, at a stop that is not the agent's own (``pyall``: the
same expression in every process of a job).

The debugger holds the process stopped wherever it was (a rank waiting in a collective, stopped
because another process stopped) and lets the agent's own thread alone run to answer a request on
the socket. The frame is found by what the front end read from memory: the thread (its native id)
and the function (its file and qualified name), the innermost frame of that thread that runs it.
The value of a torch object is its metadata line (``_values.describe``: shape, dtype, device; no data
is read, no user code runs), anything else its repr. Standard library only; Python 3.6 syntax.
"""

import sys

from . import _values
from ._exceptions import safe_repr
from ._native import ident_of_native

VALUE_LIMIT = 2000


def _name(code):
    return getattr(code, "co_qualname", None) or code.co_name


def _find(frame, file, func):
    while frame is not None:
        code = frame.f_code
        if code.co_filename == file and func in (_name(code), code.co_name):
            return frame
        frame = frame.f_back
    return None


def eval_in_thread(op):
    """{"op": "eval_thread", "value", "type", "torch"} or {..., "absent": True} or {..., "error"}."""
    reply = {"op": "eval_thread"}
    file, func, expr = op.get("file") or "", op.get("func") or "", op.get("expr") or ""
    frames = sys._current_frames()
    ident = ident_of_native(int(op.get("native_id") or 0))
    frame = _find(frames.get(ident), file, func) if ident is not None else None
    if frame is None:
        # (a thread the threading module does not know: the innermost frame of any thread running it)
        for f in frames.values():
            frame = _find(f, file, func)
            if frame is not None:
                break
    if frame is None:
        reply["absent"] = True
        return reply
    try:
        value = eval(compile(expr, "<tuidbg>", "eval"), frame.f_globals, frame.f_locals)
    except Exception as exc:
        reply["error"] = "%s: %s" % (type(exc).__name__, exc)
        return reply
    line = _values.describe(value)
    reply["value"] = line[:VALUE_LIMIT] if line is not None else safe_repr(value, VALUE_LIMIT)
    reply["type"] = type(value).__name__
    reply["torch"] = line is not None
    return reply
