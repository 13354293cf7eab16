"""tuidbg's dialogs (``ui.screens.modals.Dialog``) go once, and only themselves: Textual's own dismiss pops
whatever screen is on top (a second dismiss of a prompt popped the main screen: issue 29, item 9)."""

from __future__ import annotations

from textual.app import App

from tuidbg.ui.screens.modals import GdbHungScreen, PromptScreen, ValueScreen


class _App(App):
    def __init__(self) -> None:
        super().__init__()
        self.results: list = []


async def test_a_second_dismiss_does_nothing():
    app = _App()
    async with app.run_test() as pilot:
        prompt = PromptScreen("go to line")
        app.push_screen(prompt, app.results.append)
        await pilot.pause()
        prompt.dismiss("12")
        prompt.dismiss(None)  # (the Escape typed after Enter, handled by the same prompt)
        await pilot.pause()
        assert app.results == ["12"] and len(app.screen_stack) == 1 and app.is_running


async def test_a_dialog_under_another_goes_when_it_is_on_top_again():
    """gdb answers while its not-answering dialog is under another (a value shown over it): that one stays on
    top; the gdb dialog goes, with its result, once the other is closed."""
    app = _App()
    async with app.run_test() as pilot:
        hung = GdbHungScreen("gdb has not answered -exec-continue for 6 s", False, "attach")
        app.push_screen(hung, app.results.append)
        await pilot.pause()
        value = ValueScreen("x", "1")
        app.push_screen(value)
        await pilot.pause()
        hung.dismiss("answered")
        await pilot.pause()
        assert app.screen is value and hung in app.screen_stack and app.results == []
        await pilot.press("escape")  # (closes the value)
        await pilot.pause()
        await pilot.pause()
        assert app.results == ["answered"] and len(app.screen_stack) == 1


async def test_a_dialog_dismissed_before_it_is_mounted_does_not_crash():
    """A key typed ahead reaches a dialog just pushed (the open-file one, pushed once gdb has listed the
    source files) before its widgets are mounted, and dismisses it."""
    from tuidbg.ui.screens.modals import OpenFileScreen, QuitScreen

    app = _App()
    async with app.run_test() as pilot:
        for make in (lambda: OpenFileScreen(["/a.c", "/b.c"], "/"), lambda: PromptScreen("watch"),
                     lambda: QuitScreen("attach", "process 1")):
            screen = make()
            app.push_screen(screen, app.results.append)
            screen.dismiss(None)
            await pilot.pause()
            await pilot.pause()
        assert app.is_running and len(app.screen_stack) == 1 and app.results == [None, None, None]


async def test_the_help_closed_before_gdb_answers_on_signals_does_not_crash():
    """F1 then Escape typed at once: the help is gone when the app hands it gdb's line on signals (the key
    fuzz found a NoMatches there); shown before its mount, the line is there once it is mounted."""
    from tuidbg.ui.screens.modals import HelpScreen

    app = _App()
    async with app.run_test() as pilot:
        screen = HelpScreen([("q", "Quit", "app.quit")], "default")
        app.push_screen(screen, app.results.append)
        screen.dismiss(None)
        screen.show_signals("SIGINT stops")
        await pilot.pause()
        await pilot.pause()
        assert app.is_running and len(app.screen_stack) == 1
        early = HelpScreen([("q", "Quit", "app.quit")], "default")
        early.show_signals("SIGTERM passes")
        await app.push_screen(early)
        await pilot.pause()
        assert "SIGTERM passes" in str(early.query_one("#help-signals").render())
