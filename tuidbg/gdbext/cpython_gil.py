"""Which thread holds the GIL, read from the stopped process's memory (``-tuidbg-gil``).

The front end asks before it evaluates Python at a native stop (``pyprint``, the watches): the selected
thread can run Python only if it holds the GIL; otherwise it names the holder. Where the GIL's state is:

- 3.9/3.10: ``_PyRuntime.ceval.gil`` (``last_holder`` at +360, ``locked`` at +368);
- 3.11: the same struct at +368/+376 (pyenv's 3.11.7 and Debian's stripped 3.11.2 alike);
- 3.12: each interpreter has a pointer to its GIL (``interp->ceval.gil`` at +384), whose
  ``last_holder`` is at +8 and ``locked`` at +16;
- 3.13/3.14: ``_Py_DebugOffsets`` gives both in the interpreter (``interp._gil``).

(Read from the interpreters' DWARF: ``ptype/o`` of ``_PyRuntimeState`` / ``PyInterpreterState``.)
``last_holder`` is the thread state that holds the GIL while ``locked`` is set. A free-threaded build
has no GIL: the answer says so. Standard library only, Python 3.6 syntax.
"""

from .cpython_mem import ReadError, WalkError

RUNTIME_GIL = {9: (360, 368), 10: (360, 368), 11: (368, 376)}  # (last_holder, locked) from _PyRuntime
INTERP_GIL_PTR_312 = 384  # PyInterpreterState.ceval.gil (3.12)
GIL_STRUCT_312 = (8, 16)  # struct _gil_runtime_state: last_holder, locked


def gil_state(walker):
    """{"free_threaded": bool, "locked": bool, "holder": tstate address or 0} of the main interpreter."""
    ip, mem, off = walker.ip, walker.mem, walker.off
    if ip.free_threaded:
        return {"free_threaded": True, "locked": False, "holder": 0}
    try:
        if ip.minor in RUNTIME_GIL:
            holder_at, locked_at = [ip.runtime + o for o in RUNTIME_GIL[ip.minor]]
        else:
            interp = _main_interp(mem, ip.runtime + off["rt.interp_head"], off["is.next"])
            if ip.minor == 12:
                gil = mem.ptr(interp + INTERP_GIL_PTR_312)
                holder_at, locked_at = gil + GIL_STRUCT_312[0], gil + GIL_STRUCT_312[1]
            elif "is.gil_holder" in off and "is.gil_locked" in off:
                holder_at, locked_at = interp + off["is.gil_holder"], interp + off["is.gil_locked"]
            else:
                raise WalkError("Python %s: where its GIL is is not known" % ip.version_text)
        locked = mem.i32(locked_at) != 0
        holder = mem.ptr(holder_at) if locked else 0
    except ReadError as exc:
        raise WalkError("cannot read the GIL's state (%s)" % exc)
    return {"free_threaded": False, "locked": locked, "holder": holder}


def _main_interp(mem, head_at, next_off):
    """The main interpreter: the last of the list (each new one goes to its head)."""
    interp = mem.ptr(head_at)
    seen = set()
    while interp and interp not in seen and len(seen) < 64:
        seen.add(interp)
        nxt = mem.ptr(interp + next_off)
        if not nxt:
            return interp
        interp = nxt
    return interp


def gil_result(walker, target):
    """The GIL's state with its holder's gdb thread (JSON-able; ``holder_thread`` None when nobody holds it
    or the holder is no thread gdb knows)."""
    st = gil_state(walker)
    out = {"v": 1, "status": "ok", "free_threaded": st["free_threaded"], "locked": st["locked"],
           "holder_thread": None, "holder_lwp": None, "holder_name": None}
    if st["holder"]:
        recs = walker.thread_states()
        walker.map_threads(recs, target.threads())
        for r in recs:
            if r.tstate == st["holder"] and r.gdb is not None:
                out["holder_thread"], out["holder_lwp"], out["holder_name"] = r.gdb.num, r.gdb.lwp, r.gdb.name
                break
    return out
