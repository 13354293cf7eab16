"""What a new user reaches for first (issue 30): keymaps that do not complain, the help, the command
palette and the file picker, at 80x24 and 160x48, asserted on what the screen shows."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from ui_helpers import make_app, press_and_stop, screen_rows, toasts_text, until, until_palette_searched, until_stopped

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
        shown = toasts_text(app)
        assert shown.count("two actions") == 1, shown
        assert "key c: Continue (exec.continue) and Next (exec.next)" in shown, shown
        await press_and_stop(pilot, "f11")  # two stops: the notification is not made again
        await press_and_stop(pilot, "f11")
        shown = toasts_text(app)  # (the first one may have gone by now, on a loaded machine)
        assert shown.count("two actions") <= 1 and "clash" not in shown, shown


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
            # (the hint, then the line on signals, fill the box's last rows; gdb is asked for that line once the
            # help is up)
            await until(pilot, lambda: "Signals that stop" in "\n".join(screen_rows(app)), 10, "the line on signals")
            rows = screen_rows(app)
            foot = max(i for i, r in enumerate(rows) if "╰" in r)
            assert any("scroll" in r for r in rows[foot - 4:foot]) and any("Signals" in r for r in rows[foot - 4:foot])
            assert rows[foot - 1].strip("│ ") and rows[foot - 2].strip("│ ")
        else:
            assert "app.quit" not in shown and "source.up" in shown
            await pilot.press("end")
            await pilot.wait_for_scheduled_animations()  # (the box scrolls to its end)
            shown = "\n".join(screen_rows(app))
            assert "app.quit" in shown and "source.up" not in shown
            await pilot.press("home")
            for _ in range(6):  # a page at a time: each key passes through the box
                seen |= {bid for bid in _global_ids() if bid in "\n".join(screen_rows(app))}
                await pilot.press("pagedown")
                await pilot.wait_for_scheduled_animations()
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


def _palette_rows(app) -> list[str]:
    """The command palette's rows on the screen (below its search line)."""
    rows = screen_rows(app)
    top = next(i for i, r in enumerate(rows) if "🔎" in r)
    return [r.strip() for r in rows[top + 1:] if r.strip() and not set(r.strip()) <= set("▁▔")]


async def _palette(pilot, text: str) -> list[str]:
    app = pilot.app
    await pilot.press("ctrl+p")
    await until(pilot, lambda: any("🔎" in r for r in screen_rows(app)), 10, "the palette")
    if text:
        await pilot.press(*text)
    await until_palette_searched(pilot)
    return _palette_rows(app)


def test_every_binding_of_the_debuggers_screen_is_a_palette_command():
    """Each binding id of the default keymap is a command, but the dialogs' and tuidbg view's own."""
    from textual.app import App

    from tuidbg import config as tconfig
    from tuidbg.ui import palette

    class Stand(App):  # (what palette.commands reads of the app)
        keymap_info = tconfig.load_keymap("vim")
        settings = tconfig.Settings()

    got = {c.bid: c for c in palette.binding_commands(Stand())}
    ids = {bid for bid in tconfig.shipped_default_keys()
           if bid.split(".")[0] not in ("help", "quit", "prompt", "open", "value", "gdbexit", "gdbhung")
           and bid not in ("view.quit", "view.next", "view.previous", "view.help")}
    assert set(got) == ids - {"app.command_palette"}, ids ^ set(got)
    assert got["exec.continue"].keys == "c" and got["frame.up"].keys == "K"  # (the active keymap's keys)
    assert got["variables.show_value"].where == "Locals"


@pytest.mark.parametrize("size", SIZES)
async def test_the_palette_finds_every_action_with_its_key_and_runs_it(threads_prog, size):
    from tuidbg.engine.state import ProcessState

    app = make_app(program=str(threads_prog), ex=["break main"])
    async with app.run_test(size=size) as pilot:
        await until_stopped(pilot)
        rows = await _palette(pilot, "")
        assert rows[0].startswith("Continue") and rows[0].endswith("c, f5"), rows
        await pilot.press("escape")
        rows = await _palette(pilot, "break")
        want = {("Breakpoint", "b, f9"), ("Breakpoint condition", "B"), ("Breakpoints", "7")}
        shown = {(r.rsplit("  ", 1)[0].strip(), r.rsplit("  ", 1)[1].strip()) for r in rows if "  " in r}
        assert want <= shown, rows
        assert any(r.startswith("Breakpoint at a location") for r in rows), rows
        # a breakpoint at a typed location
        await pilot.press("escape")
        await _palette(pilot, "Breakpoint at a loc")
        await pilot.press("enter")
        await until(pilot, lambda: "Breakpoint at" in "\n".join(screen_rows(app)), 10, "the location prompt")
        await pilot.press(*"middle", "enter")
        await until(pilot, lambda: any(b.func == "middle" or "middle" in (b.original_location or "")
                                       for b in app.state.breakpoints), 10, "the breakpoint at middle")
        # an action: continue, from the palette, runs to it
        gen = app.state.generation
        await _palette(pilot, "continue")
        await pilot.press("enter")
        await until_stopped(pilot, generation=gen)
        assert app.state.frames[0].func == "middle"
        assert "in middle" in screen_rows(app)[-2]  # (the status line)
        # another keymap: the footer shows its keys
        await _palette(pilot, "keymap: vscode")
        await pilot.press("enter")
        await until(pilot, lambda: "f5 Continue" in screen_rows(app)[-1], 10, "the vscode keys in the footer")
        assert app.state.process is ProcessState.STOPPED


@pytest.mark.parametrize("size", SIZES)
async def test_a_program_without_breakpoints_shows_main_and_says_so(threads_prog, size):
    app = make_app(program=str(threads_prog), stop_at_entry=None)  # (what tuidbg run -- ./threads asks)
    async with app.run_test(size=size) as pilot:
        await until_stopped(pilot)
        rows = screen_rows(app)
        status = next(r for r in rows if "■ stopped" in r)
        assert "stopped: at entry (main)  in main at threads.c:" in status, status
        pc = next(r for r in rows if "▶" in r and "argc > 1" in r)  # (the source pane's pc line: main's first)
        assert pc
        await pilot.press("8")  # (the console: at 80x24 its tab group is not the one shown)
        await until(pilot, lambda: any("Stopped at entry (main): no breakpoint is set" in r for r in screen_rows(app)),
                    10, "the console's note")


@pytest.mark.skipif(not __import__("helpers").DEBIAN_PY311.exists(), reason="needs Debian's /usr/bin/python3.11")
@pytest.mark.parametrize("size", SIZES)
async def test_a_python_script_without_breakpoints_shows_its_first_line(tmp_path, size):
    from helpers import DEBIAN_PY311

    script = tmp_path / "first.py"
    script.write_text('import os\nx = len(os.sep)\nprint("done", x)\n')
    app = make_app(program=str(DEBIAN_PY311), args=[str(script)], python_target=True, agent=True, stop_at_entry=None)
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.state.python.stop is not None, 60, "the entry stop")
        await until_stopped(pilot)
        await until(pilot, lambda: any("at entry (the program's first line)" in r for r in screen_rows(app)), 10,
                    "the status line")
        rows = screen_rows(app)
        status = next(r for r in rows if "■ stopped" in r)
        assert "in <module> at first.py:1" in status, status
        assert any("import os" in r and "1" in r.split("import os")[0] for r in rows)


def _picker_rows(app) -> list[str]:
    rows = screen_rows(app)
    top = next(i for i, r in enumerate(rows) if "Open a file" in r)
    body = [r.strip().strip("│").strip() for r in rows[top + 1:]]
    out = []
    for r in body:
        if r.startswith("╰"):
            break
        r = r.strip("▊▎ ")
        if r and not set(r) <= set("▁▔") and "/path/to/file" not in r:
            out.append(r)
    return out


async def _open_picker(pilot, text: str = "") -> list[str]:
    app = pilot.app
    await pilot.press("ctrl+o")
    await until(pilot, lambda: any("files (" in r for r in screen_rows(app)), 30, "the file picker")
    if text:
        await pilot.press(*text)
    await pilot.pause()  # (the list is filtered as each key's change is taken in)
    return _picker_rows(app)


@pytest.mark.parametrize("size", SIZES)
async def test_the_file_picker_lists_the_programs_files_first_and_says_where_each_is_from(tmp_path, size):
    from helpers import compile_c

    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / "build").mkdir()
    (proj / "tools").mkdir()
    (proj / "src" / "app.c").write_text('#include <stdio.h>\nint main(void) {\n    puts("app");\n    return 0;\n}\n')
    (proj / "tools" / "gen.py").write_text("print('generating')\n")
    exe = compile_c(proj / "src" / "app.c", proj / "build" / "app")
    app = make_app(program=str(exe), ex=["break main"], cwd=str(proj))
    async with app.run_test(size=size) as pilot:
        await until_stopped(pilot)
        rows = await _open_picker(pilot)
        assert rows[0].startswith("src/app.c") and rows[0].endswith("program"), rows
        assert any(r.startswith("tools/gen.py") and r.endswith("cwd") for r in rows), rows
        labels = [r.rsplit(" ", 1)[-1] for r in rows if r.startswith(("src/", "tools/", "/", "."))]
        assert labels.index("cwd") > labels.index("program") and "system" not in labels[:labels.index("cwd")], rows
        hint = next(r for r in screen_rows(app) if "files (" in r)
        assert "program" in hint and "system" in hint, hint  # (how many of each)
        await pilot.press("escape")
        rows = await _open_picker(pilot, "stdio.h")
        assert any(r.startswith("/usr/include/stdio.h") and r.endswith("system") for r in rows), rows
        await pilot.press("enter")
        await until(pilot, lambda: app.query_one("#source-title").render().plain.endswith("stdio.h"), 10, "stdio.h")
