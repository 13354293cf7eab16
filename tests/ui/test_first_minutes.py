"""What a new user reaches for first (issue 30): keymaps that do not complain, the help, the command
palette and the file picker, at 80x24 and 160x48, asserted on what the screen shows."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from ui_helpers import make_app, press_and_stop, screen_rows, toasts_text, until, until_stopped

pytestmark = requires_gdb

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]


@pytest.mark.parametrize("size, keymap, step", [((80, 24), "vim", "n"), ((160, 48), "vscode", "f10")],
                         ids=["80x24-vim", "160x48-vscode"])
async def test_the_shipped_keymaps_show_no_clash_at_a_stop(threads_prog, size, keymap, step):
    app = make_app(keymap=keymap, program=str(threads_prog), ex=["break main"])
    async with app.run_test(size=size, notifications=True) as pilot:
        await until_stopped(pilot)
        await press_and_stop(pilot, step)
        await press_and_stop(pilot, step)
        shown = toasts_text(app)
        assert "clash" not in shown and "two actions" not in shown, shown


@pytest.mark.parametrize("size", SIZES)
async def test_a_users_clash_is_named_once_by_its_key_and_its_two_actions(threads_prog, tmp_path, size):
    mine = tmp_path / "mine.toml"
    mine.write_text('name = "mine"\n[keys]\n"exec.next" = "c"\n')
    app = make_app(keymap=str(mine), program=str(threads_prog), ex=["break main"])
    async with app.run_test(size=size, notifications=True) as pilot:
        await until_stopped(pilot)
        await until(pilot, lambda: "two actions" in toasts_text(app), 10, "the clash's notification")
        await press_and_stop(pilot, "f11")  # two stops: the notification is not made again
        await press_and_stop(pilot, "f11")
        shown = toasts_text(app)
        assert shown.count("two actions") == 1, shown
        assert "key c: Continue (exec.continue) and Next (exec.next)" in shown, shown


def _global_ids() -> list[str]:
    from tuidbg.ui import bindings

    return [g[0] for g in bindings.GLOBAL]


@pytest.mark.parametrize("size", SIZES)
async def test_help_shows_every_key_at_once_or_scrolls_to_each(threads_prog, size):
    app = make_app(program=str(threads_prog), ex=["break main"])
    async with app.run_test(size=size) as pilot:
        await until_stopped(pilot)
        await pilot.press("question_mark")
        await until(pilot, lambda: "Keys (keymap: default)" in "\n".join(screen_rows(app)), 10, "the help")
        seen = set()
        shown = "\n".join(screen_rows(app))
        seen |= {bid for bid in _global_ids() if bid in shown}
        if size == (160, 48):
            # everything at once, and the box no taller than its rows (no blank rows at its foot)
            assert seen == set(_global_ids()), set(_global_ids()) - seen
            rows = screen_rows(app)
            foot = max(i for i, r in enumerate(rows) if "╰" in r)
            assert "scroll" in rows[foot - 1] and rows[foot - 2].strip("│ ")
        else:
            assert "app.quit" not in shown and "source.up" in shown
            await pilot.press("end")
            await pilot.pause(0.2)
            shown = "\n".join(screen_rows(app))
            assert "app.quit" in shown and "source.up" not in shown
            await pilot.press("home")
            for _ in range(6):  # a page at a time: each key passes through the box
                seen |= {bid for bid in _global_ids() if bid in "\n".join(screen_rows(app))}
                await pilot.press("pagedown")
                await pilot.pause(0.05)
            assert seen == set(_global_ids()), set(_global_ids()) - seen
        await pilot.press("escape")
        await until(pilot, lambda: "Keys (keymap" not in "\n".join(screen_rows(app)), 10, "the help to close")


@pytest.mark.parametrize("size", SIZES)
async def test_help_in_tuidbg_view(tmp_path, size):
    from tuidbg import dumpreport as R
    from tuidbg.ui.dumpview import ViewApp

    doc = {"format": "tuidbg-dump", "version": 1, "errors": [], "processes": [
        {"pid": 4242, "ppid": 1, "host": "node1", "cmdline": ["python", "job.py"], "env": {}, "python": "3.11.2",
         "reader": "memory", "threads": [{"id": "1", "tid": 4242, "name": "python", "main": True, "frames": [
             {"kind": "python", "function": "main", "qualname": "main", "file": str(tmp_path / "job.py"), "line": 3}]}]}]}
    path = tmp_path / "dump.json"
    path.write_text(__import__("json").dumps(doc))
    app = ViewApp(R.load(str(path)), [str(path)])
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        assert "? Keys" in screen_rows(app)[-1]  # (the footer says so)
        await pilot.press("question_mark")
        await until(pilot, lambda: "view.quit" in "\n".join(screen_rows(app)), 10, "the help")
        shown = "\n".join(screen_rows(app))
        assert "Keys (keymap: tuidbg view)" in shown
        for bid in ("view.quit", "view.next", "view.previous", "view.help"):
            assert bid in shown, shown
        await pilot.press("escape")
        await until(pilot, lambda: "view.quit" not in "\n".join(screen_rows(app)), 10, "the help to close")
        assert app.is_running
