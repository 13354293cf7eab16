"""Exceptions as the agent reports them: which raised ones stop, and what a stop on one shows.

Also ``safe_repr``/``safe_str``: the text of a program's value, never raising
(a ``__repr__`` may fail or run long).
"""

import os


from ._lines import canon
from ._native import lineno
from ._registry import is_agent_code

MAX_FRAMES = 256

_stdlib_dirs = []  # [tuple of the standard library's directories], computed once


def safe_repr(value, limit):
    try:
        text = repr(value)
    except Exception as exc:
        text = "<repr failed: %s: %s>" % (type(exc).__name__, exc)
    if len(text) > limit:
        text = text[:limit] + "..."
    return text


def safe_str(value, limit):
    try:
        text = str(value)
    except Exception:
        text = safe_repr(value, limit)
    return text[:limit]


def user_frames(frame):
    """``frame`` and its callers, without the agent's own frames (at most MAX_FRAMES)."""
    out = []
    f = frame
    while f is not None and len(out) < MAX_FRAMES:
        if not is_agent_code(f.f_code):
            out.append(f)
        f = f.f_back
    return out


def matches(names, exc, frame, cwd):
    """Whether a raised exception stops the program: its class (or a base) is in the filter ``names``,
    and it was not raised inside the standard library (which raises and catches KeyError,
    StopIteration, ... all the time)."""
    if not names:
        return False
    if frame is not None and in_stdlib(frame.f_code, cwd):
        return False
    for cls in type(exc).__mro__:
        if cls.__name__ in names or ("%s.%s" % (cls.__module__, cls.__qualname__)) in names:
            return True
    return "*" in names


def in_stdlib(code, cwd):
    if not _stdlib_dirs:
        import sysconfig

        paths = sysconfig.get_paths()
        _stdlib_dirs.append(tuple(
            sorted({os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if paths.get(k)})
        ))
    dirs = _stdlib_dirs[0]
    path = canon(code.co_filename, cwd)
    if path is None:
        return code.co_filename.startswith("<frozen")
    site = os.sep + "site-packages" + os.sep
    return any(path.startswith(d) and site not in path[len(d) - 1:] for d in dirs)


def frames_of(tb, frame=None):
    """[(frame, line)] innermost first for a stop on an exception: the traceback's frames (the lines
    where they were when it passed), then the callers of its outermost one; without a traceback,
    ``frame`` and its callers."""
    entries = []
    t = tb
    while t is not None:
        if not is_agent_code(t.tb_frame.f_code):
            entries.append((t.tb_frame, t.tb_lineno))
        t = t.tb_next
    entries.reverse()  # innermost first
    frames = list(entries)
    if entries:
        f = entries[-1][0].f_back
        while f is not None and len(frames) < MAX_FRAMES:
            if not is_agent_code(f.f_code):
                frames.append((f, lineno(f)))
            f = f.f_back
    elif frame is not None:
        frames = [(f, lineno(f)) for f in user_frames(frame)]
    return frames


def describe(exc, tb):
    """The ``exception`` field of a stop."""
    import traceback

    text = "".join(traceback.format_exception(type(exc), exc, tb))
    return {
        "type": "%s.%s" % (type(exc).__module__, type(exc).__qualname__),
        "message": safe_str(exc, 4000),
        "traceback": text[-20000:],
    }


