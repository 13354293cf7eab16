"""A thread's frames as ``tuidbg dump``'s report has them (the schema in ``tuidbg.dumpreport``),
from either reader: the walker's Python frames (``rec_frame_dict``), gdb's (``pyframe_dict``),
native frames (``native_dict``), and with ``--native`` a thread's native and Python frames merged
and folded (``merge_into``: ``tuidbg.engine.python.merge``, the same for the direct reader and
for gdb's, so that both print the same stacks).
"""

from __future__ import annotations


def merge_into(entry: dict, frames, py, ps) -> None:
    """A thread's entry with --native: its native ``frames`` and Python thread ``py`` merged and folded."""
    from tuidbg.engine.python import merge as M

    rows = M.fold(M.merge(frames, py, ps))
    entry["frames"] = [d for r in rows for d in row_dicts(r)]
    notes = [r.label for r in rows if r.kind == "note"]
    if py is not None and not py.merged and py.frames:
        notes.insert(0, f"Python frames not merged: {py.merge_note}")
    if notes:
        entry["notes"] = notes


def rec_frame_dict(f) -> dict:
    """A walker frame (cpython_walk.PyFrameRec) as the gdb path's frames are printed."""
    return {"kind": "python", "function": f.function or "?", "qualname": f.qualname, "file": f.file or "?",
            "line": f.line, "entry": bool(f.entry), "native_level": f.native_level}


def pyframe_dict(f) -> dict:
    return {"kind": "python", "function": f.function, "qualname": f.qualname, "file": f.file, "line": f.line,
            "entry": f.is_entry, "native_level": f.native_level}


def native_dict(f) -> dict:
    return {"kind": "native", "function": f.func, "file": f.fullname or f.file, "line": f.line, "addr": f.addr,
            "library": f.library, "level": f.level}


def row_dicts(r, fold: str | None = None) -> list[dict]:
    """A merged stack's row as the schema's frames (a fold: its frames, each marked with the fold)."""
    if r.kind == "python":
        d = pyframe_dict(r.python)
    elif r.kind == "native":
        d = native_dict(r.native)
        if r.internal:
            d["internal"] = True
    elif r.kind == "fold":
        return [d for c in r.children for d in row_dicts(c, fold or r.label)]
    else:
        return []  # a note: the thread's notes
    if fold:
        d["fold"] = fold
    return [d]
