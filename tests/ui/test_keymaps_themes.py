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
from tuidbg.ui import bindings
from tuidbg.ui.panes.cuda import CudaInput, CudaPane, CudaRows
from tuidbg.ui.panes.disasm import DisasmView
from tuidbg.ui.panes.frames import CppFramesPane
from tuidbg.ui.panes.io import CommandInput, ProgramInput
from tuidbg.ui.panes.memory import MemoryView
from tuidbg.ui.panes.registers import RegistersPane
from tuidbg.ui.panes.source import SourceView
from tuidbg.ui.panes.tables import BreakpointsPane, ThreadsPane
from tuidbg.ui.panes.variables import LocalsPane, WatchPane
from tuidbg.ui.picker import PickerApp

# What can have focus, and whose bindings are in force then (besides the global ones).
CONTEXTS = {
    "source": [SourceView],
    "cpp frames": [CppFramesPane],
    "threads": [ThreadsPane],
    "breakpoints": [BreakpointsPane],
    "locals": [LocalsPane],
    "watch": [WatchPane],
    "console": [CommandInput],
    "program input": [ProgramInput],
    "cuda": [CudaPane, CudaRows],
    "cuda input": [CudaPane, CudaInput],
    "disassembly": [DisasmView],
    "registers": [RegistersPane],
    "memory": [MemoryView],
}


def id_bindings(cls) -> dict[str, str]:
    out = {}
    for klass in reversed(cls.__mro__):
        for b in klass.__dict__.get("BINDINGS", []):
            if isinstance(b, Binding) and b.id:
                out[b.id] = b.key
    return out


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


@pytest.mark.parametrize("name", KEYMAPS)
def test_no_two_ids_share_a_key(name):
    km = App._normalize_keymap(tconfig.load_keymap(name).keys)
    glob = {bid: km.get(bid, App._normalize_keymap({bid: keys})[bid]) for bid, keys in bindings.default_keys().items()}
    for context, classes in CONTEXTS.items():
        effective = dict(glob)
        for c in classes:
            for bid, keys in id_bindings(c).items():
                effective[bid] = km.get(bid, App._normalize_keymap({bid: keys})[bid])
        owner: dict[str, str] = {}
        clashes = []
        for bid, keys in effective.items():
            for key in (k.strip() for k in keys.split(",") if k.strip()):
                if key in owner and owner[key] != bid and not _intended(owner[key], bid):
                    clashes.append(f"{context}: {key!r} is both {owner[key]} and {bid}")
                owner[key] = bid
        assert not clashes, f"{name}: " + "; ".join(clashes)


# One deliberate exception: in the console's input line tab completes (as in any
# shell) instead of moving the focus; escape leaves the input line there.
INTENDED = {frozenset({"focus.next", "console.complete"})}


def _intended(a: str, b: str) -> bool:
    return frozenset({a, b}) in INTENDED


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
