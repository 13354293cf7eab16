"""What a new user reaches for first (issue 30): keymaps that do not complain, the help, the command
palette and the file picker, at 80x24 and 160x48, asserted on what the screen shows."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from ui_helpers import make_app, press_and_stop, toasts_text, until, until_stopped

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
