"""Which native frame runs each run of Python frames (the merge of the two stacks).

Given a thread's Python frames in runs (one run per eval-loop call, with the C-stack
address of its entry frame or CFrame when the version has one), find the native frame
that executes each run: by stack address ("anchor"), else by counting eval-loop frames.

Standard library only, Python 3.6 syntax.
"""

from .cpython_interp import EVAL_NAME


def attach_native(target, rec, depth=100000):
    """Set native_level on rec's frames: by stack anchors, else by counting eval frames."""
    if rec.gdb is None:
        rec.merge = "unmerged"
        rec.merge_note = "no gdb thread runs this Python thread state"
        return
    segs = [s for s in rec.segments if s[1] >= s[0]]
    if not segs:
        rec.merge = "anchor"
        return
    natives = _LazyFrames(target.native_frames(rec.gdb), depth)
    anchors = [s[2] for s in rec.segments]
    if all(a is not None for a in anchors):
        levels = _match_anchors(natives, anchors)
        if levels is not None:
            assigned = 0
            for (a, b, _), level in zip(rec.segments, levels):
                if level is None:
                    continue
                for i in range(a, b + 1):
                    rec.frames[i].native_level = level
                if b >= a:
                    assigned += 1
            if assigned == len(segs):
                rec.merge = "anchor"
                return
            if assigned:
                rec.merge = "partial"
                rec.merge_note = "%d of %d runs of Python frames matched by stack address" % (assigned, len(segs))
                if natives.limited:
                    rec.merge_note += " (native frames read up to level %d)" % (depth - 1)
                return
    # Counting: the n-th eval-loop frame runs the n-th run of Python frames.
    evals = [nf.level for nf in natives.iter_all() if nf.name.startswith(EVAL_NAME)]
    if natives.limited:
        if len(evals) >= 1:
            for (a, b, _), level in zip(segs, evals):
                for i in range(a, b + 1):
                    rec.frames[i].native_level = level
            rec.merge = "partial"
            rec.merge_note = "native frames read up to level %d only" % (depth - 1)
            return
    if rec.truncated:
        # only the innermost Python frames were read: align from the innermost
        for (a, b, _), level in zip(segs, evals):
            for i in range(a, b + 1):
                rec.frames[i].native_level = level
        rec.merge = "partial"
        rec.merge_note = "counted from the innermost eval-loop frame (Python stack read in part)"
        return
    if len(evals) == len(segs) or len(evals) == len(segs) + 1:
        # align from the outermost: an extra eval frame is the innermost one (it has not
        # pushed its Python frame yet, or already popped it)
        evals = evals[len(evals) - len(segs):]
        for (a, b, _), level in zip(segs, evals):
            for i in range(a, b + 1):
                rec.frames[i].native_level = level
        rec.merge = "count"
        return
    rec.merge = "unmerged"
    rec.merge_note = "%d eval-loop frames in the native stack for %d runs of Python frames" % (len(evals), len(segs))


class _LazyFrames(object):
    """Native frames read on demand, at most ``depth`` of them."""

    def __init__(self, it, depth):
        self.it = it
        self.depth = depth
        self.frames = []
        self.done = False
        self.limited = False

    def get(self, i):
        while len(self.frames) <= i and not self.done:
            if len(self.frames) >= self.depth:
                self.done = True
                self.limited = True
                break
            try:
                nf = next(self.it)
            except StopIteration:
                self.done = True
                break
            self.frames.append(nf)
        return self.frames[i] if i < len(self.frames) else None

    def iter_all(self):
        i = 0
        while True:
            nf = self.get(i)
            if nf is None:
                return
            yield nf
            i += 1


def _match_anchors(natives, anchors):
    """Level of the native frame whose [sp, caller's sp) holds each anchor (None when not found).

    Eval-loop frames are tried first (two stack-pointer reads each); the rest of the frames
    only for anchors that those do not hold (a stripped build may misname a .cold part).
    """
    result = [None] * len(anchors)
    todo = sorted(set(anchors))
    found = {}

    def span(i):
        nf = natives.get(i)
        if nf is None:
            return None
        lo = nf.sp
        nxt = natives.get(i + 1)
        hi = nxt.sp if nxt is not None else None
        if lo is None:
            return None
        if hi is None or hi < lo:
            hi = lo + (1 << 20)  # the outermost frame: its locals lie just above its sp
        return lo, hi

    # pass 1: frames named like the eval loop
    for nf in natives.iter_all():
        if not todo:
            break
        if not nf.name.startswith(EVAL_NAME):
            continue
        sp_range = span(nf.level)
        if sp_range is None:
            continue
        lo, hi = sp_range
        for a in list(todo):
            if lo <= a < hi:
                found[a] = nf.level
                todo.remove(a)
    # pass 2: every frame, for what is left
    if todo:
        for nf in natives.iter_all():
            if not todo:
                break
            sp_range = span(nf.level)
            if sp_range is None:
                continue
            lo, hi = sp_range
            if hi - lo >= (1 << 20):
                continue
            for a in list(todo):
                if lo <= a < hi:
                    found[a] = nf.level
                    todo.remove(a)
    if not found:
        return None
    for i, a in enumerate(anchors):
        result[i] = found.get(a)
    return result
