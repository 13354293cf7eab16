"""Reading a live process's Python stacks without a debugger (``tuidbg dump``'s fast path).

- ``freeze``: every thread stopped for a moment with ``PTRACE_SEIZE`` + ``PTRACE_INTERRUPT``
  (ctypes), and always let go again: on errors, on SIGINT/SIGTERM/SIGHUP/SIGQUIT, and
  (by the kernel) if tuidbg itself is killed;
- ``target``: the walker's ``Target`` over ``/proc/PID``: memory from ``/proc/PID/mem``,
  symbols from the ELF files mapped in ``/proc/PID/maps``, threads from ``/proc/PID/task``;
- ``snapshot``: the two together around the one CPython walker (``tuidbg.gdbext.cpython_walk``);
- ``native`` (with ``regs`` and ``unwind``): ``tuidbg dump --native``'s native stacks, unwound
  from each stopped thread's registers with the CFI of the mapped ELF files (x86-64).

Why a package of its own, not in ``tuidbg.gdbext``: gdbext is what runs inside gdb's
embedded Python (Python 3.6 syntax, loaded into gdb); this runs in tuidbg's own process and
drives ptrace, which gdb must never do behind its own back. It imports the walker from gdbext,
as ``tuidbg.engine.pystack_mi`` does, and nothing of the engine: the dump path stays free of
asyncio and the session (it is timed end to end against py-spy, see bench/RESULTS.md).
Linux only (``/proc``, ptrace); 64-bit little-endian ELF, as the walker.
"""
