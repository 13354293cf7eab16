"""Steps and breakpoints that understand asyncio (used by ``core`` and the backends).

- ``suspends(frame)``: a coroutine or generator frame leaving at an ``await``/``yield`` (settrace
  reports it as a return; sys.monitoring has PY_YIELD of its own);
- ``awaiter_frame()``: when the coroutine of the running task returns, the frame that awaits that
  task (the innermost coroutine of the task that awaits it, directly or through a ``gather``,
  ``shield``, ``wait`` or a ``TaskGroup``): "finish" stops there when that task resumes;
- ``current_task_name()``: for breakpoints limited to one task (``pybreak FILE:LINE task NAME``).

Only C-level accessors of asyncio's objects are used (the base classes' descriptors and methods,
``__self__``, ``__closure__``, ``cr_await``), never an attribute looked up on a task or a future:
a subclass that runs code when asked (``__getattribute__``, a property) is not run. Nothing here
imports asyncio: a program that has not imported it has no tasks.
"""

import sys

# co_flags of code whose frames suspend: generator, coroutine, iterable coroutine, async generator
SUSPENDING = 0x20 | 0x80 | 0x100 | 0x200
MAX_DEPTH = 6
_ops = []  # [the yield opcodes, YIELD_FROM's]: read from ``opcode`` when first needed (settrace only)


def suspends(frame):
    """settrace's "return" event: whether ``frame`` suspends (an await, a yield) rather than returns."""
    code = frame.f_code
    if not code.co_flags & SUSPENDING:
        return False
    if not _ops:
        import opcode

        _ops[:] = [frozenset(opcode.opmap[n] for n in ("YIELD_VALUE", "YIELD_FROM") if n in opcode.opmap),
                   opcode.opmap.get("YIELD_FROM")]
    yields, yield_from = _ops
    co = code.co_code
    i = frame.f_lasti
    if 0 <= i < len(co) and co[i] in yields:
        return True
    # 3.9/3.10: suspended in YIELD_FROM, the frame points at the instruction before it
    return yield_from is not None and 0 <= i + 2 < len(co) and co[i + 2] == yield_from


def _asyncio():
    return sys.modules.get("asyncio")


def current_task():
    aio = _asyncio()
    if aio is None:
        return None
    try:
        return aio.current_task()
    except (RuntimeError, AttributeError):  # (no running loop in this thread)
        return None


def current_task_name():
    """The name of the task the running loop of this thread runs now, or None."""
    task = current_task()
    if task is None:
        return None
    try:
        return _asyncio().Task.get_name(task)
    except (TypeError, AttributeError):
        return None


def _callbacks(aio, fut):
    desc = aio.Future.__dict__.get("_callbacks")
    try:
        if desc is not None and hasattr(desc, "__get__") and isinstance(fut, aio.Future):
            cbs = desc.__get__(fut)
        else:
            cbs = vars(fut).get("_callbacks")
    except (TypeError, AttributeError):
        return []
    out = []
    for item in cbs or ():
        out.append(item[0] if type(item) is tuple and item else item)
    return out


def _awaiters(aio, fut, found, seen, depth):
    """The tasks the done-callbacks of ``fut`` wake, directly or through other futures."""
    if id(fut) in seen or depth > MAX_DEPTH:
        return
    seen.add(id(fut))
    for cb in _callbacks(aio, fut):
        owner = getattr(cb, "__self__", None) if type(cb).__name__ in (
            "builtin_function_or_method", "TaskWakeupMethWrapper", "method") else None
        if owner is not None:
            if isinstance(owner, aio.Task):
                found.append(owner)
            elif type(owner).__name__ == "TaskGroup":
                parent = vars(owner).get("_parent_task")
                if parent is not None:
                    found.append(parent)
            elif isinstance(owner, aio.Future):
                _awaiters(aio, owner, found, seen, depth + 1)
            continue
        for cell in getattr(cb, "__closure__", None) or ():
            try:
                x = cell.cell_contents
            except ValueError:
                continue
            if x is not fut and isinstance(x, aio.Future) and not isinstance(x, aio.Task):
                _awaiters(aio, x, found, seen, depth + 1)


def _innermost(aio, task):
    """The frame of the innermost coroutine of ``task`` (where it awaits)."""
    try:
        coro = aio.Task.get_coro(task)
    except (TypeError, AttributeError):
        return None
    frame = None
    for _ in range(1000):
        f = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None) or getattr(coro, "ag_frame", None)
        if f is None:
            break
        frame = f
        nxt = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None) or getattr(coro, "ag_await", None)
        if nxt is None or not hasattr(nxt, "send"):
            break
        if type(nxt).__name__ == "async_generator_asend":
            break
        coro = nxt
    return frame


def awaiter_frame():
    """The frame that awaits the running task (its coroutine is returning), or None."""
    aio = _asyncio()
    task = current_task()
    if task is None:
        return None
    found = []
    try:
        _awaiters(aio, task, found, set(), 0)
    except Exception:  # never into the program
        return None
    for t in found:
        f = _innermost(aio, t)
        if f is not None:
            return f
    return None
