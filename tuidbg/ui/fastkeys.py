"""A run-control key (next, step, continue, finish...) taken the short way to its action.

Textual gives a key to the app, which looks for a priority binding, forwards the key to the focused
widget, and the key bubbles back up through every ancestor's message queue to the app, which then
looks up the bindings from the focused widget up (``App._check_bindings``): five message hops from
the source pane, ~0.7 ms of a step's ~6 ms on a 2-core machine (bench/step_tmux.py --watch control).

``binding_action`` finds, as the app arrives at it, what that trip would end in. When nothing on the
way could act on the key (no widget that takes keys itself, no ``key_`` method or key handler, no
priority binding, no message still queued on the way, no dialog, a bound action of ``FAST_ACTIONS``
in the app itself), the app runs the action at once; any other key takes Textual's way. The mixin
``FastKeys`` puts ``run`` in the keys' way in: ``_post_message`` (how Textual's drivers hand the app
a message) and ``take_input`` (how tuidbg's terminal driver does, ``ui.driver``).
"""

from __future__ import annotations

import functools
from typing import Any

from textual import events
from textual.actions import ActionError, parse
from textual.app import App
from textual.driver import Driver
from textual.message import Message
from textual.widget import Widget

from tuidbg.ui import driver, fastpath

# the app's actions that a key may run without the trip through the widgets
FAST_ACTIONS = frozenset({"exec"})


def binding_action(app: App, event: events.Key) -> tuple[str, tuple[Any, ...]] | None:
    """The app's action (name, parameters) that Textual would run for ``event``, when it is one of
    ``FAST_ACTIONS`` and nothing else on the key's way would act on it; else None."""
    if not fastpath.ENABLED or len(app.screen_stack) != 1 or not app.app_focus or event.is_forwarded:
        return None
    screen = app.screen
    if screen.maximized is not None or not app._message_queue.empty():
        return None  # (an earlier message first: keys keep their order)
    key = event.key
    focused = app.focused
    path = list(focused.ancestors_with_self) if focused is not None else [screen, app]
    for node in path:
        if node is app:
            continue
        if not node._message_queue.empty():
            return None  # (an earlier key may still be on its way up)
        if key_handled(node, event):
            return None  # a widget that handles keys itself (Input, TextArea, Select), or this key
        if node.check_consume_key(key, event.character) or node.is_modal:
            return None
    # (Textual's own chain copies every map to apply the keymap: only needed when there is one)
    chain = screen._modal_binding_chain if app._keymap else [(node, node._bindings) for node in path]
    for _node, bindings in chain:
        if any(b.priority for b in bindings.key_to_bindings.get(key, ())):
            return None  # (Textual runs priority bindings before anything else)
    for node, bindings in chain:
        for b in bindings.key_to_bindings.get(key, ()):
            # the first binding Textual would try: ours only if it is one of the app's fast actions
            try:
                target, name, params = parse(b.action)
            except ActionError:
                return None
            if node is app and not target and name in FAST_ACTIONS and app.check_action(name, params):
                return name, params
            return None
    return None


def key_handled(node: object, event: events.Key) -> bool:
    """``node`` handles keys itself (``_takes_keys``), or has a key method for ``event`` under any of
    its names, as ``dispatch_key`` looks them up (``key_upper_n``, ``_key_f10``)."""
    return _takes_keys(type(node)) or any(hasattr(node, f"key_{name}") or hasattr(node, f"_key_{name}")
                                          for name in event.name_aliases)


@functools.cache
def _takes_keys(cls: type) -> bool:
    """Widgets of ``cls`` handle keys themselves: their own ``_on_key`` (Input, TextArea, Select), an
    ``on_key`` or an ``@on(events.Key)`` handler. Worked out once per class: asked at every key."""
    if issubclass(cls, Widget) and cls._on_key is not Widget._on_key:
        return True
    return hasattr(cls, "on_key") or any(events.Key in getattr(c, "_decorated_handlers", {}) for c in cls.__mro__)


def take_input(app: App, message: Message) -> None:
    """A message from the driver's input thread, on the app's loop: a fast key runs its action, the
    rest go to the app's queue as Textual's driver would post them."""
    if not (isinstance(message, events.Key) and run(app, message)):
        app.post_message(message)


class FastKeys:
    """A mixin for the app (before ``App`` in its bases): keys pass ``run`` on their way in."""

    async def _post_message(self, message: Message) -> bool:
        # (how Textual's drivers hand the app each key, from their input thread; the terminal's own
        # driver calls take_input instead)
        if isinstance(message, events.Key) and run(self, message):  # type: ignore[arg-type]
            return True
        return await super()._post_message(message)  # type: ignore[misc]

    def get_driver_class(self) -> type[Driver]:
        return driver.driver_class(super().get_driver_class(), take_input)  # type: ignore[misc]


def run(app: App, event: events.Key) -> bool:
    """Run ``event``'s action at once when ``binding_action`` finds one; whether it took the key. An
    error of the action stops the app, as Textual does with an error of a key's handler."""
    try:
        found = binding_action(app, event)
        if found is None:
            return False
        name, params = found
        if app.focused is not None:
            app.screen._clear_tooltip()
        getattr(app, f"action_{name}")(*params)
    except Exception as error:
        app._handle_exception(error)
    return True
