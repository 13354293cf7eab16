"""Keymaps and themes are data files; every shipped one must load and be consistent."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from textual.app import App
from textual.binding import Binding

import tuidbg.ui
from tuidbg import config as tconfig
from tuidbg.ui import bindings, keyclash
from tuidbg.ui.picker import PickerApp


def _keys_written_in_code() -> dict[str, set[str]]:
    """Binding id -> the keys written for it in the classes of tuidbg.ui (every module, every class).

    The picker of ``tuidbg attach`` is an App of its own that loads no keymap; its ids are not
    the debugger's."""
    out: dict[str, set[str]] = {}
    for info in pkgutil.walk_packages(tuidbg.ui.__path__, "tuidbg.ui."):
        module = importlib.import_module(info.name)
        for cls in vars(module).values():
            if not inspect.isclass(cls) or cls.__module__ != module.__name__ or cls is PickerApp:
                continue
            for b in cls.__dict__.get("BINDINGS", []):
                if isinstance(b, Binding) and b.id:
                    out.setdefault(b.id, set()).add(b.key)
    return out


ALL_IDS = set(_keys_written_in_code())

KEYMAPS = sorted(tconfig.keymap_files())


def test_shipped_keymaps():
    assert {"default", "vscode", "vim"} <= set(KEYMAPS)


@pytest.mark.parametrize("name", KEYMAPS)
def test_keymap_loads_and_names_only_existing_ids(name):
    km = tconfig.load_keymap(name)
    assert km.keys, f"{name} maps nothing"
    unknown = set(km.keys) - ALL_IDS
    assert not unknown, f"{name} names ids that do not exist: {sorted(unknown)}"


SHIPPED = sorted((tconfig.PACKAGE_DIR.parent / "keymaps").glob("*.toml"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_no_keymap_tuidbg_ships_gives_one_key_two_actions(path):
    """Every file in keymaps/: no key bound to two actions in force at once (anywhere the focus is)."""
    assert len(SHIPPED) >= 3
    found = keyclash.clashes(tconfig.load_keymap(str(path)).keys)
    assert not found, keyclash.describe(found, keyclash.descriptions(), path.stem)


def test_the_clash_check_finds_a_key_given_twice_where_both_are_in_force():
    assert keyclash.clashes({"exec.next": "c"}) == [keyclash.Clash("c", "exec.continue", "exec.next", "everywhere")]
    # x is the Locals' "memory at a pointer": bound to continue too, the two meet in the Locals pane only
    found = keyclash.clashes({"exec.continue": "x"})
    assert {(c.key, c.first, c.second) for c in found} >= {("x", "exec.continue", "variables.memory")}
    assert all(c.where != "everywhere" for c in found)
    # e is both "breakpoint condition" (Breakpoints) and "edit a register" (Registers): never in force together
    assert keyclash.clashes({}) == []
    # the one intended overlap: tab completes in the console's input line
    assert keyclash.clashes({"console.complete": "tab"}) == []
    text = keyclash.describe(keyclash.clashes({"exec.next": "c"}), keyclash.descriptions(), "mine")
    assert "key c: Continue (exec.continue) and Next (exec.next)" in text, text


def test_the_default_keymap_names_every_binding_id_and_no_other():
    in_code = set(_keys_written_in_code())
    assert bindings.global_ids() <= in_code  # the app's own BINDINGS are the global ones
    in_file = set(tconfig.shipped_default_keys())
    assert not in_code - in_file, f"ids with no key in keymaps/default.toml: {sorted(in_code - in_file)}"
    assert not in_file - in_code, f"keymaps/default.toml names ids that do not exist: {sorted(in_file - in_code)}"


def test_keys_still_written_in_panes_and_dialogs_are_the_default_keymaps():
    # Global bindings take their keys from the file; a pane's or a dialog's Binding still
    # spells its key, which must be the file's (it is what a keymap that leaves the id out gets).
    default = tconfig.shipped_default_keys()
    global_ids = bindings.global_ids()
    differ = {bid: keys for bid, keys in _keys_written_in_code().items() if bid not in global_ids and keys != {default.get(bid)}}
    assert not differ, f"keys in code that keymaps/default.toml does not have: {differ}"


def _ship_default_keymap(tmp_path, monkeypatch, text: str) -> None:
    """tuidbg as installed in tmp_path, with this keymaps/default.toml."""
    (tmp_path / "tuidbg" / "_data" / "keymaps").mkdir(parents=True)
    (tmp_path / "tuidbg" / "_data" / "keymaps" / "default.toml").write_text(text)
    monkeypatch.setattr(tconfig, "PACKAGE_DIR", tmp_path / "tuidbg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home"))


def test_global_bindings_take_their_keys_from_the_shipped_default_keymap(tmp_path, monkeypatch):
    real = tconfig.shipped_default_keys()
    assert {b.id: b.key for b in bindings.global_bindings()} == {bid: real[bid] for bid in bindings.global_ids()}
    text = (tconfig.PACKAGE_DIR.parent / "keymaps" / "default.toml").read_text()
    _ship_default_keymap(tmp_path, monkeypatch, text.replace('"exec.next" = "n,f10"', '"exec.next" = "j"'))
    # a user's keymap called default is a keymap like any other: it does not change the defaults
    (tmp_path / "home" / "tuidbg" / "keymaps").mkdir(parents=True)
    (tmp_path / "home" / "tuidbg" / "keymaps" / "default.toml").write_text('[keys]\n"exec.step" = "i"\n')
    keys = {b.id: b.key for b in bindings.global_bindings()}
    assert keys["exec.next"] == "j" and keys["exec.step"] == "s,f11"
    assert tconfig.load_keymap("default").keys == {"exec.step": "i"}


def test_a_default_keymap_without_a_global_id_is_one_clear_error(tmp_path, monkeypatch):
    text = (tconfig.PACKAGE_DIR.parent / "keymaps" / "default.toml").read_text()
    _ship_default_keymap(tmp_path, monkeypatch, text.replace('"exec.next" = "n,f10"\n', ""))
    with pytest.raises(tconfig.UsageError, match="default.toml has no key for 'exec.next'"):
        bindings.global_bindings()
    (tmp_path / "tuidbg" / "_data" / "keymaps" / "default.toml").unlink()
    monkeypatch.setattr(tconfig, "PACKAGE_DIR", tmp_path / "elsewhere" / "tuidbg")
    with pytest.raises(tconfig.UsageError, match="default keymap .* is missing"):
        bindings.global_bindings()


def test_vscode_keymap_has_no_single_letter_execution_keys():
    km = tconfig.load_keymap("vscode")
    for bid in ("exec.continue", "exec.next", "exec.step", "exec.finish", "bp.toggle"):
        assert all(len(k) > 1 for k in km.keys[bid].split(",")), bid
    assert km.keys["exec.continue"] == "f5" and km.keys["exec.next"] == "f10"
    assert km.keys["exec.step"] == "f11" and km.keys["exec.finish"] == "shift+f11" and km.keys["bp.toggle"] == "f9"


def test_user_keymap_and_config_overrides(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "tuidbg" / "keymaps").mkdir(parents=True)
    (tmp_path / "tuidbg" / "keymaps" / "mine.toml").write_text('name = "mine"\n[keys]\n"exec.next" = "j"\n')
    (tmp_path / "tuidbg" / "config.toml").write_text('theme = "tuidbg-light"\nkeymap = "mine"\n[keys]\n"exec.step" = "i"\n')
    settings = tconfig.load_settings()
    assert settings.theme == "tuidbg-light" and settings.keymap == "mine"
    km = tconfig.load_keymap(settings.keymap, settings.keys)
    assert km.keys == {"exec.next": "j", "exec.step": "i"}
    assert "mine" in tconfig.keymap_files()


def test_bad_keymap_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n[keys]\n"exec.next" = 3\n')
    with pytest.raises(tconfig.UsageError, match="binding id"):
        tconfig.load_keymap(str(bad))


THEMES = sorted(tconfig.theme_files())


def test_shipped_themes():
    assert {"tuidbg-dark", "tuidbg-light", "tuidbg-high-contrast", "tuidbg-ansi"} <= set(THEMES)


@pytest.mark.parametrize("name", THEMES)
async def test_theme_loads_and_applies(name):
    from tuidbg.ui.app import THEME_VARIABLE_DEFAULTS, theme_from_file

    theme = theme_from_file(tconfig.theme_files()[name])
    assert theme.name == name
    missing = set(THEME_VARIABLE_DEFAULTS) - set(theme.variables)
    assert not missing, f"{name} leaves app colours to the defaults: {sorted(missing)}"

    class ThemeApp(App):
        def compose(self):
            from tuidbg.ui.panes.source import SourceView

            yield SourceView()

        def get_theme_variable_defaults(self):
            return dict(THEME_VARIABLE_DEFAULTS)

    app = ThemeApp()
    async with app.run_test() as pilot:
        app.register_theme(theme)
        app.theme = name
        await pilot.pause()
        assert app.current_theme.name == name


def test_themes_and_keymaps_ship_in_the_wheel():
    text = (tconfig.PACKAGE_DIR.parent / "pyproject.toml").read_text()
    assert '"themes" = "tuidbg/_data/themes"' in text
    assert '"keymaps" = "tuidbg/_data/keymaps"' in text


async def test_no_color_is_honoured(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")

    class Plain(App):
        pass

    app = Plain()
    async with app.run_test():
        assert app.no_color
