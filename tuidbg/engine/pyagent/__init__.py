"""The front end's half of tuidbg's Python agent: Python breakpoints, stepping, exceptions.

``PyAgent`` is a session extension (created when ``SessionConfig.agent`` is
true). It loads the agent into the program (``tuidbg run``: through the
program's environment; ``tuidbg attach``: injected through gdb), keeps the
table of Python breakpoints, and turns the UI's actions into messages for the
agent. The agent and the wire format are described in ``tuidbg/agent``.

What the UI uses (``controller(session)`` finds the instance):

- the state, refreshed at every stop and whenever it changes:
  ``state.python_breakpoints`` (the table) and the process's ``state.python``
  (``PythonView``: the agent's ``AgentInfo``, the ``AgentStop`` of a stop it made,
  ``stop_pending`` between such a stop and its ``AgentStop``, ``transient`` on the
  short internal stops of a request: panes need not redraw);
- breakpoints: ``add_breakpoint``, ``delete_breakpoint``, ``enable_breakpoint``,
  ``set_condition``, ``set_ignore_count``, ``toggle_breakpoint_at``;
- execution: ``step_over``, ``step_into``, ``step_out``, ``step_into_native``,
  ``step_out_to_python`` (from a native frame), ``resume``;
- exceptions: ``set_exception_breaks``, ``set_break_on_failure``;
- data: ``evaluate``, ``python_locals``;
- ``handle_console(text)`` for the ``py*`` console commands (``pyhelp``);
- ``on_message(callback)`` for notes such as "breakpoint moved to line 12";
- ``shutdown()`` before detaching (called by ``session.detach`` too);
- ``is_agent_frame(frame)``: what to hide (``python.model.is_agent_file`` for Python files).

The package: ``agent`` (``PyAgent``, the public API), ``base`` (shared attributes and helpers),
``console`` (the ``py*`` commands), ``stops`` (stop hook, refresh stage, stepping), ``requests``
(mailbox and requests), ``link`` (the socket) and ``inject`` (loading into an attached process).
"""

from tuidbg.engine.pyagent.agent import PyAgent, controller
from tuidbg.engine.python.model import AgentStop
from tuidbg.engine.errors import EngineError

__all__ = ["AgentStop", "EngineError", "PyAgent", "controller"]
