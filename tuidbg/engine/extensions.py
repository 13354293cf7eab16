"""Parts of the engine that plug into a session: Python stacks, the Python agent, CUDA.

An extension is any object with some of these async methods, called in order:

- ``on_configure(session)``: gdb is up and configured, the program is loaded but
  not started (run), or not attached yet (attach), or the core not opened (core).
- ``on_launch(session)``: the program was started, attached to, or the core opened.

Extensions register what they need on the session (``refresh_stages``,
``stop_hooks``, ``state`` extras) from those methods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tuidbg.engine.session import SessionConfig


def default_extensions(config: "SessionConfig") -> list[Any]:
    exts: list[Any] = []
    from tuidbg.engine.cuda import CudaExtension  # inert unless gdb turns out to be cuda-gdb

    exts.append(CudaExtension(config))
    from tuidbg.engine.pystack import PystackExtension  # Python stacks after every stop
    exts.append(PystackExtension())
    if config.agent:  # Python breakpoints and stepping (tuidbg/agent, tuidbg/engine/pyagent.py)
        from tuidbg.engine.pyagent import PyAgent

        exts.append(PyAgent(config))
    return exts
