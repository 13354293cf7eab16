"""tuidbg's in-process Python agent: Python breakpoints and stepping next to gdb.

Code in this package runs inside the debugged Python (CPython 3.9-3.14), with
the standard library only and no syntax newer than 3.9. The front end's half
is ``tuidbg.engine.pyagent``.

How it fits together
--------------------

*Loading.* ``tuidbg run`` puts ``tuidbg/agent/boot`` first on the program's
PYTHONPATH; its ``sitecustomize`` restores the user's environment (so child
processes stay clean), makes ``import tuidbg`` resolve to tuidbg's package (a
meta-path finder for that single name), starts the agent and then runs the
user's own sitecustomize. ``tuidbg attach`` injects ``boot/attach.py``: on 3.14
by writing the PEP 768 fields of the main thread state from gdb (script path,
pending flag, eval-breaker bit); on 3.9-3.13 by a gdb inferior call
``Py_AddPendingCall(PyRun_SimpleString, buf)``, where ``buf`` is a page gdb
obtained with an inferior ``mmap`` (no malloc while threads are frozen at
arbitrary points). Both run the bootstrap in the main thread at its next safe
point.

*Handshake.* The front end listens on a Unix socket in a private directory;
its path and a random token reach the agent through the environment (run) or
the bootstrap's arguments (attach). The agent connects and sends a hello line:
pid, Python version, backend, the stop function's address and the mailbox's
address. The front end sets an internal gdb breakpoint on the stop function and
answers with the breakpoint table and options; only then does the agent return
and the program's own code run, so breakpoints set before ``run`` are in force
from the first line. Before the first stop, the front end therefore knows both
addresses.

*Stopping.* To stop, the agent writes a JSON description of the stop (reason,
thread, file/line, breakpoint, Python frames, exception) into the mailbox's
out area and calls the stop function (``_stub``: a bare ``ret`` in a page of
its own, called through ctypes with the GIL held). gdb's breakpoint there stops
every thread; the thread that stopped is the one gdb reports. The front end
reads the out area with ``-data-read-memory-bytes``.

*Answering while stopped.* The front end writes ``{"ops": [...]}`` into the in
area and the header's ``ack_seq`` in one memory write, then resumes. The
stopped thread, still holding the GIL, reads it before any other Python code
runs: a resume mode (continue, step over/into/out, step into native), a new
breakpoint table, options. Requests that need an answer while the program
stays stopped (evaluate an expression, a breakpoint's resolved line) end with
a ``reply`` op: the front end resumes only that thread (``scheduler-locking
on``), the agent answers through a second stop (reason ``reply``), and the
front end restores the scheduler. A stop nobody answers (plain ``continue`` in
gdb) is a continue; if no debugger is attached any more, the agent disables
itself.

*Answering while running.* Breakpoint and option changes go over the socket;
a daemon thread (``tuidbg-agent``) applies them. After a native stop, a Python
step in progress is cancelled or told to stop when control comes back to
Python through the header's ``ctl_token``/``ctl_flags``, which the front end
may write at any stop.

*The GIL.* The stopped thread keeps the GIL while stopped (the stop function
is called without releasing it), so no other Python thread runs before it has
read the answer. Just before calling the stop function it releases and
re-takes the GIL (``time.sleep(0)``): taking it clears a drop request that a
thread waiting for the GIL may have posted; otherwise, answering a request
while gdb runs only this thread, CPython's forced switching would hand the GIL
to a thread gdb keeps frozen and wait for it forever.

*Evaluating at a native stop.* Where no agent stop is there to answer (a SIGTRAP, ctrl+c, a native
breakpoint), gdb writes the requests into the mailbox and calls a second C function pointer
(``_native_eval``) in the selected thread, which runs them in that thread's Python frames when it
holds the GIL or nobody does (the front end checks first, engine/pyagent/native_eval.py); an
expression past its time gets an exception raised in it by a watchdog thread.

*No GIL (free-threaded 3.13t/3.14t).* Threads really run at once. Stops still
go one at a time (a lock around the stop; a thread that hits a breakpoint
while another is stopped waits for it, then stops, unless the breakpoint was
deleted or disabled meanwhile). What the interpreter does
by stopping the world (every ``sys.monitoring`` change, a DISABLE returned by
a callback, ``sys._current_frames()``, a collection) waits for every thread,
so none of it may run while gdb holds the others and only the stopped thread
answers: in a stop, a new breakpoint table is instrumented once the program
resumes, and automatic collection is off until then. A stop-the-world that
another thread had begun when gdb froze it still parks the answering thread:
the front end then lets every thread run until the answer comes (its
fallback). The breakpoint table is swapped in one store, and a callback that
began under an older table never returns DISABLE (``_monitoring._disable``).

*Cost.* 3.12+: ``sys.monitoring`` with events only on code objects that hold
breakpoints (PY_START fires once per code object, then is disabled). 3.9-3.11:
no trace function at all without breakpoints; with breakpoints, on x86-64, a
native PEP 523 frame filter (``_framefilter``) turns tracing on only for a
thread that enters a code object holding a breakpoint, and off when it leaves
it; elsewhere (aarch64, raised-exception filters, another tool owning the
frame evaluation function) a global trace function on every thread. See
``bench/RESULTS.md``.

*User entry points.* ``tuidbg.set_trace()`` / ``tuidbg.breakpoint()`` (also
``PYTHONBREAKPOINT=tuidbg.set_trace``; under tuidbg the plain ``breakpoint()``
stops in tuidbg too when PYTHONBREAKPOINT is unset), see ``api``; the pytest
plugin for ``--break-on-failure``, see ``pytest_plugin``.
"""
