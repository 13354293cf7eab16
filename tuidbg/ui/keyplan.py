"""A step key's command written to gdb by the terminal's input thread, as the key's bytes come.

A native `next` spends ~0.5 ms in the app before gdb has it (bench/step_tmux.py --watch control):
Textual's parser and Key event, the hop to the app's loop, the key's binding (``ui.fastkeys``), the
action and the engine's command. A person steps by pressing the same key again and again; so, once
a stop is shown and the app is quiet (``arm``, ARM_AFTER seconds after the stop's refreshed state),
the app works out what each step key would do now, down to the line gdb would be sent, and
reserves those commands' tokens (``MIClient.reserve``). The input thread (``ui.driver``) hands
every read to ``take``: when it is exactly one of those keys and nothing that decides a key's way
has changed since (the app's state, screen, focus, keymap, queue; no other command written to gdb),
it writes the line to gdb's input itself, and the app's loop then takes the answer as its own
(``_written``). Any other read drops the plan, and the bytes take Textual's way, as does every key
when no plan is armed.

What a plan holds is what ``fastkeys.binding_action`` and ``TuidbgApp.action_exec`` decide for the
key at arming time: only a key bound to ``exec`` next/step/until, in a native program (no Python
agent), stopped. A plan is taken at most once; ``arm`` after the next stop makes a new one.

The step is written with gdb's output held until its ``*stopped`` record (``MIClient.write_reserved``'s
``on_stop``, ``engine.gdb_output``): the loop stays quiet while gdb steps, and the plan's
``ui.stoppaint`` (the rows the stop may change, drawn ahead) writes the new line from the thread
that reads gdb's output, before the loop hears of the stop.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any

from textual import events
from textual.actions import ActionError, parse

from tuidbg.engine.errors import EngineError
from tuidbg.engine.state import ProcessState
from tuidbg.ui import fastkeys, fastpath, stoppaint

ARM_AFTER = 0.03  # seconds after a stop's refreshed state: the plan is made once the app is quiet
ARM_TRIES = 100
STEP_OPS = ("next", "step", "until")


@dataclass
class _Armed:
    token: int
    op: str
    line: bytes  # what gdb is sent: "TOKEN-exec-next --thread N\n"


@dataclass
class Plan:
    """The step keys' commands for the app as it is now (``arm``); what must not have changed."""

    keys: dict[bytes, _Armed]
    client: Any
    fd: int  # a copy of gdb's input (os.dup: the plan's own, closed with it)
    state: Any
    screen: Any
    focused: Any
    keymap: Any
    writes: int  # MIClient.writes when armed
    tokens: list[int] = field(default_factory=list)
    paint: stoppaint.StopPaint | None = None  # the rows its stop may write from gdb's output thread
    py_sel: int | None = None  # the Python frame selected when armed (another one: its step may be refused)


def arm(app: Any, tries: int = 0) -> None:
    """The app's loop: a new plan for the step keys (the last one dropped), when a key of them would now
    go the fast way to a native step (``fastkeys.binding_action``, ``action_exec``). While a command
    is in flight, the panes have not taken in the engine's state yet or no key would go the fast way,
    tried again ARM_AFTER later (ARM_TRIES times at most)."""
    disarm(app)
    if not fastpath.ENABLED:
        return
    session = app.session
    client = session.client
    st = app.state
    if (not app.is_running or app._closing_screen() or client is None or not client.alive
            or session.state.process is not ProcessState.STOPPED or app._agent() is not None
            or session.attaching  # (no step until gdb has attached to every process: RunControl.keeping_shown)
            # (a Python frame selected with no agent: its step keys are refused, action_exec says why)
            or app.python_step_refused() is not None):
        return
    if st is not session.state or client.oldest_pending() is not None or app._posted is not None:
        if tries < ARM_TRIES:  # (a stage of the stop's refresh, a step's own answer: once it is in)
            asyncio.get_running_loop().call_later(ARM_AFTER, app.arm_keys, tries + 1)
        return
    if client.transport.write_fd() is None:
        return
    if stoppaint.rows_coming(app) and tries < ARM_TRIES:
        # (the source pane still draws the rows a step's stop may take from gdb's output thread)
        asyncio.get_running_loop().call_later(ARM_AFTER, app.arm_keys, tries + 1)
        return
    keys: dict[bytes, _Armed] = {}
    for key in _step_keys(app):
        found = fastkeys.binding_action(app, events.Key(key, key))
        if found is None or found[0] != "exec" or len(found[1]) != 1 or found[1][0] not in STEP_OPS:
            continue
        op = found[1][0]
        try:
            command = session.step_command(op)
        except EngineError:
            continue
        token, line = client.reserve(command)
        keys[key.encode()] = _Armed(token, op, line)
    if not keys:
        # (no key goes the fast way now: a message on its way, which is soon handled, or the focus on a
        # widget that takes keys, the keys' own way then; a focus change arms again anyway)
        if tries < ARM_TRIES:
            asyncio.get_running_loop().call_later(ARM_AFTER, app.arm_keys, tries + 1)
        return
    app.key_plan = Plan(keys, client, os.dup(client.transport.write_fd()), st, app.screen, app.focused,
                         app._keymap, client.writes, [a.token for a in keys.values()], stoppaint.make(app), app.py_sel)


def _step_keys(app: Any) -> list[str]:
    """The one-character keys bound, anywhere from the focused widget up, to a step action."""
    found = []
    for _node, node_bindings in app.screen._modal_binding_chain:  # (as the keys' way goes, the keymap applied)
        for key, bindings in node_bindings.key_to_bindings.items():
            if len(key) != 1 or not key.isprintable() or key in found:
                continue
            for b in bindings:
                try:
                    _target, name, params = parse(b.action)
                except ActionError:
                    continue
                if name == "exec" and params and params[0] in STEP_OPS:
                    found.append(key)
                    break
    return found


def disarm(app: Any) -> None:
    """The app's loop: the plan dropped, its tokens given back."""
    plan = app.__dict__.pop("_key_plan", None)
    if plan is not None:
        _release(app, plan, None)


def take(app: Any, data: bytes) -> bool:
    """The input thread, with each read of the terminal: whether ``data`` was a planned step key, now
    written to gdb (the app's loop told, ``_written``). Every read takes the plan away."""
    plan = app.__dict__.pop("_key_plan", None)  # (one dict operation: the loop's disarm, or this)
    if plan is None:
        return False
    written = False
    try:
        armed = plan.keys.get(data)
        client = plan.client
        app._stop_paint = plan.paint  # (its stop's rows, if the loop finds them written: app_source)
        # (an input in flight: a key read before this one, handed to the loop and not taken in yet)
        written = (armed is not None and app.state is plan.state and app.session.client is client
                   and not app.input_in_flight() and len(app.screen_stack) == 1
                   and app.screen is plan.screen and app.focused is plan.focused and app._keymap is plan.keymap
                   and app.py_sel == plan.py_sel
                   and app.app_focus and app._message_queue.empty() and app._posted is None
                   and client.write_reserved(armed.token, armed.line, plan.fd, plan.writes,
                                             plan.paint.on_stop if plan.paint is not None else _no_paint))
    except Exception:  # (gdb's input gone, the app closing: the key goes Textual's way, as without a plan)
        written = False
    if not written:
        app._stop_paint = None
    try:
        if written:
            app._loop.call_soon_threadsafe(_written, app, plan, armed)
        else:
            app._loop.call_soon_threadsafe(_release, app, plan, None)
    except RuntimeError:
        pass  # (the loop closed: the app is gone)
    return written


def _no_paint(_rec: Any) -> None:
    """A step's stop, held for (gdb steps sooner with the loop quiet) with no rows to write."""


def _release(app: Any, plan: Plan, kept: int | None) -> None:
    for token in plan.tokens:
        if token != kept:
            plan.client.release(token)
    if plan.fd >= 0:
        os.close(plan.fd)
        plan.fd = -1


def _written(app: Any, plan: Plan, armed: _Armed) -> None:
    """The app's loop, after ``take`` wrote a step: its answer awaited as ``action_exec``'s own is."""
    _release(app, plan, armed.token)
    client = plan.client
    if app.focused is not None:
        app.screen._clear_tooltip()  # (as fastkeys.run does for a key it takes)
    app._await_step_answer(client.take_reserved(armed.token), armed.op)
