"""Where sessions are made: a ``DebugSession`` with the extensions a configuration asks for.

The session (``tuidbg.engine.session``) knows extensions only through ``Extension``'s hooks; this
module, above it and above every extension, puts them together, so that no import goes from the
session to the parts that plug into it.
"""

from __future__ import annotations

from tuidbg.engine.children import ChildProcesses
from tuidbg.engine.crossrank import CrossRank
from tuidbg.engine.cuda import CudaExtension
from tuidbg.engine.cxxthrow import CxxThrows
from tuidbg.engine.entry import EntryStop
from tuidbg.engine.extensions import Extension
from tuidbg.engine.procstacks import ProcessStacks
from tuidbg.engine.pyagent import PyAgent
from tuidbg.engine.pystack import PystackExtension
from tuidbg.engine.pytasks import TasksExtension
from tuidbg.engine.remember import RememberExtension
from tuidbg.engine.session import DebugSession, SessionConfig
from tuidbg.engine.transport import Transport


def default_extensions(config: SessionConfig) -> list[Extension]:
    """CUDA (inert unless gdb turns out to be cuda-gdb), the Python stacks after every stop (and the
    asyncio tasks running then, in a program with asyncio), and
    tuidbg's Python agent (breakpoints, stepping) when the configuration asks for it, with the stops at
    PyTorch's C++ throws that go with its exception stops, and the
    remembered breakpoints when there is a file for them; the program's children when it keeps them, and in
    a session of several processes the Python stacks of those that stop with another; the stop at the
    program's entry."""
    exts: list[Extension] = [CudaExtension(config), PystackExtension(), TasksExtension()]
    if config.agent:
        agent = PyAgent(config)
        throws = CxxThrows(config)
        # pycatch uncaught (and --break-on-exception) stops at c10 errors' throws too
        agent.on_uncaught_changed = throws.set_enabled
        exts += [agent, throws]
    if (config.mode == "run" and config.children != "none") or (config.mode == "attach" and (config.more_pids or config.children != "none")):
        # (after the agent: its stop hook sees the agent's mark on a stop that ends an agent request's short
        # run, which the request goes on from itself)
        exts += [ChildProcesses(config), ProcessStacks(config), CrossRank(config)]
    if config.remember:
        exts.append(RememberExtension(config))  # (it puts Python breakpoints into the agent)
    if config.mode == "run":
        exts.append(EntryStop(config))  # (last: it counts the breakpoints the others set)
    return exts


def new_session(config: SessionConfig, transport: Transport | None = None) -> DebugSession:
    """A session (not started) for ``config``, with the default extensions."""
    return DebugSession(config, transport, extensions=default_extensions)
