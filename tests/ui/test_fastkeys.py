"""A run-control key taken straight to its action (ui.fastkeys): once, and only where Textual's own
way would end in the same action; every other key takes Textual's way."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from textual import events, on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Input, Static
from ui_helpers import log_text, make_app, until, until_stopped

from tuidbg.ui import fastkeys, keyplan
from tuidbg.ui.fastkeys import FastKeys
from tuidbg.ui.panes.io import ConsolePane
from tuidbg.ui.panes.source import SourceView


class Pane(Widget, can_focus=True):
    pass


class OwnN(Widget, can_focus=True):
    """A widget with its own binding for n."""

    BINDINGS = [Binding("n", "mine", "Mine")]

    def action_mine(self) -> None:
        self.app.ran.append("widget's n")


class KeyMethod(Widget, can_focus=True):
    def key_n(self) -> None:
        self.app.ran.append("key_n")


class Dialog(ModalScreen):
    def compose(self) -> ComposeResult:
        yield Static("a dialog")


class KeysApp(FastKeys, App):
    BINDINGS = [Binding("n", "exec('next')", "Next"), Binding("x", "other", "Other"),
                Binding("p", "exec('cont')", "Continue", priority=True)]

    def __init__(self, child: Widget) -> None:
        super().__init__()
        self.child = child
        self.ran: list[str] = []
        self.taken: list = []  # what fastkeys.binding_action found for each key

    def compose(self) -> ComposeResult:
        yield self.child

    def on_mount(self) -> None:
        self.child.focus()

    def action_exec(self, op: str) -> None:
        self.ran.append(op)

    def action_other(self) -> None:
        self.ran.append("other")


@pytest.fixture
def taken(monkeypatch):
    """What binding_action found, key by key, in the app under test."""
    found: list = []
    real = fastkeys.binding_action

    def spy(app, event):
        result = real(app, event)
        found.append((event.key, result))
        return result

    monkeypatch.setattr(fastkeys, "binding_action", spy)
    return found


async def _quiet(pilot, found: list) -> None:
    """Until nothing is queued before a key (under load the start's own messages may still wait: a key then
    rightly goes Textual's way, after them); the probes are then forgotten."""
    app = pilot.app
    await until(pilot, lambda: fastkeys.binding_action(app, events.Key("n", "n")) is not None, 30,
                "the app's queues to be empty")
    found.clear()


async def test_a_bound_run_control_key_runs_its_action_once_the_short_way(taken):
    app = KeysApp(Pane())
    fast = ("n", ("exec", ("next",)))
    async with app.run_test() as pilot:
        # (a message may still be queued when a key comes, under load: a timer's, the start's own; that key
        # rightly goes Textual's way, after it) each press runs its action once, whichever way it went; pressed
        # until two went the short way (the first two, on an idle machine)
        shortcuts = 0
        for _ in range(50):
            await _quiet(pilot, taken)
            before = len(app.ran)
            await pilot.press("n")
            await pilot.pause()
            assert app.ran[before:] == ["next"]  # (once: a key taken the short way did not go on to Textual too)
            assert taken in ([fast], [("n", None)])
            shortcuts += taken == [fast]
            if shortcuts == 2:
                break
        assert shortcuts == 2, "no n went the short way in 50 presses, each when the app's queues were empty"
        await _quiet(pilot, taken)
        await pilot.press("x")
        await pilot.pause()
    assert app.ran[-1] == "other" and taken == [("x", None)]  # (a binding not of FAST_ACTIONS: Textual's way)


async def test_a_focused_input_gets_the_letter(taken):
    app = KeysApp(Input())
    async with app.run_test() as pilot:
        await pilot.press("n")
        await pilot.pause()
        assert app.query_one(Input).value == "n"
    assert app.ran == [] and taken == [("n", None)]


async def test_the_focused_widgets_own_binding_or_key_method_goes_textuals_way(taken):
    # (a key_ method does not stop the key in Textual: the app's binding runs after it)
    for child, ran in ((OwnN(), ["widget's n"]), (KeyMethod(), ["key_n", "next"])):
        app = KeysApp(child)
        async with app.run_test() as pilot:
            await pilot.press("n")
            await pilot.pause()
        assert app.ran == ran
    assert taken == [("n", None), ("n", None)]


async def test_priority_bindings_and_dialogs_are_textuals(taken):
    app = KeysApp(Pane())
    async with app.run_test() as pilot:
        await pilot.press("p")  # (a priority binding: Textual runs it, before anything else)
        await pilot.pause()
        assert app.ran == ["cont"]
        app.push_screen(Dialog())
        await pilot.pause()
        await pilot.press("n")  # a dialog on top: its bindings, not the app's
        await pilot.pause()
        assert app.ran == ["cont"]
    assert taken == [("p", None), ("n", None)]


class Ping(Message):
    pass


async def test_a_key_waits_its_turn_behind_a_message_not_handled_yet():
    app = KeysApp(Pane())
    async with app.run_test() as pilot:
        key = events.Key("n", "n")
        await _quiet(pilot, [])
        assert fastkeys.binding_action(app, key) == ("exec", ("next",))
        app.post_message(Ping())  # (not handled yet: the key would overtake it)
        assert fastkeys.binding_action(app, key) is None
        fastkeys.take_input(app, key)  # goes to the queue after it
        await pilot.pause()
        assert app.ran == ["next"]


@requires_gdb
async def test_tuidbg_steps_once_per_key_and_the_console_gets_its_letters(threads_prog, taken, monkeypatch):
    # (arming the step keys' plan asks binding_action too, ui.keyplan; headless, no input thread takes one)
    monkeypatch.setattr(keyplan, "arm", lambda app, tries=0: None)
    app = make_app(program=str(threads_prog), ex=["break middle"])
    async with app.run_test(size=(160, 48)) as pilot:
        await until_stopped(pilot)
        src = app.query_one(SourceView)
        app.query_one(SourceView).focus()
        await pilot.pause()
        first = app.state.frames[0].line
        sent: list[str] = []
        real = app.session.step_now
        app.session.step_now = lambda op: (sent.append(op), real(op))[1]
        await pilot.press("n")
        await until(pilot, lambda: app.state.is_stopped and app.state.frames[0].line != first, 10, "the step")
        await until(pilot, lambda: src.pc_line == app.state.frames[0].line, 5, "the line shown")
        assert sent == ["next"] and taken[-1] == ("n", ("exec", ("next",)))
        line = app.state.frames[0].line
        await pilot.press("colon")  # the console's input line
        await pilot.press("n", "e", "x", "t")
        await pilot.pause()
        assert app.query_one(ConsolePane).query_one(Input).value == "next"
        assert sent == ["next"] and app.state.frames[0].line == line  # typed, not stepped


class Broken(KeysApp):
    def action_exec(self, op: str) -> None:
        raise RuntimeError(f"broken {op}")


async def test_an_error_of_a_fast_keys_action_stops_the_app_as_textuals_own_would():
    app = Broken(Pane())
    with pytest.raises(RuntimeError, match="broken next"):
        async with app.run_test() as pilot:
            await pilot.press("n")
            await pilot.pause()


def test_a_key_method_under_any_of_the_keys_names_or_a_key_handler_is_seen():
    class Upper(Widget):
        def key_upper_n(self) -> None: ...

    class Private(Widget):
        def _key_f10(self) -> None: ...

    class Handler(Widget):
        @on(events.Key)
        def seen(self, event: events.Key) -> None: ...

    assert fastkeys.key_handled(Upper(), events.Key("N", "N"))
    assert fastkeys.key_handled(Private(), events.Key("f10", None))
    assert fastkeys.key_handled(Handler(), events.Key("x", "x"))
    assert not fastkeys.key_handled(Pane(), events.Key("n", "n"))


@requires_gdb
async def test_a_steps_unexpected_error_is_shown_and_the_debugger_goes_on(threads_prog):
    app = make_app(program=str(threads_prog), ex=["break middle"])
    async with app.run_test(size=(160, 48)) as pilot:
        await until_stopped(pilot)
        app.query_one(SourceView).focus()
        await pilot.pause()

        async def broken() -> None:
            raise ValueError("not the engine's")

        app.session.step_now = lambda op: broken()
        await pilot.press("n")
        await until(pilot, lambda: "internal error in next: ValueError: not the engine's" in log_text(app, "console-log"),
                    5, "the error in the console")
        assert app.is_running
