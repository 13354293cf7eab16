"""The session's MI commands, one module per command family (the way MIEngine and cdt-gdb-adapter
separate theirs): run control, stack and refresh, breakpoints, data and variable objects.

Each family is a mixin of ``DebugSession`` (``tuidbg.engine.session``), which keeps gdb's life
(start-up, records, close). ``finish`` is a family of its own (it follows a C++ throw). A family uses only what ``CommandBase`` declares: ``cmd``/``console``
to send, ``state``/``set_state`` to read and change the typed state, and the selected-thread
options. Families do not import each other; the session puts them together.
"""
