"""A walk's result as a compact JSON-able dict, strings interned in one table: what the gdb command
``-tuidbg-pystack`` prints and the front end reads (``tuidbg/engine/pystack.py``). Standard library
only, Python 3.6 syntax.
"""


def result_dict(interp, recs):
    """A compact JSON-able description (strings interned in a table)."""
    strings = []
    index = {}

    def s(x):
        if x is None:
            return -1
        i = index.get(x)
        if i is None:
            i = index[x] = len(strings)
            strings.append(x)
        return i

    threads = []
    for r in recs:
        g = r.gdb
        frames = []
        for f in r.frames:
            frames.append([
                s(f.function), s(f.qualname), s(f.file), f.line if f.line is not None else -1,
                1 if f.entry else 0, f.native_level if f.native_level is not None else -1, f.code, f.addr,
            ])
        threads.append({
            "tid": g.num if g is not None else None,
            "lwp": g.lwp if g is not None else r.native_id,
            "name": g.name if g is not None else None,
            "thread_id": r.thread_id,
            "native_id": r.native_id,
            "tstate": r.tstate,
            "interp": r.interp_id,
            "truncated": 1 if r.truncated else 0,
            "error": r.error,
            "merge": r.merge,
            "merge_note": r.merge_note,
            "frames": frames,
        })
    return {
        "v": 1,
        "python": interp.version_text,
        "runtime": interp.runtime,
        "runtime_from": interp.runtime_source,
        "offsets": interp.offsets_source,
        "objfile": interp.objfile,
        "text": [list(r) for r in interp.interp_text],
        "strings": strings,
        "threads": threads,
    }
