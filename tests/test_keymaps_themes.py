"""Keymaps and themes are data files; every shipped one must load and be consistent."""

from __future__ import annotations

import pytest
from textual.app import App
from textual.binding import Binding

from tuidbg import config as tconfig
from tuidbg.ui import bindings
from tuidbg.ui.panes.cuda import CudaInput, CudaPane, CudaRows
from tuidbg.ui.panes.frames import CppFramesPane
from tuidbg.ui.panes.io import CommandInput, ProgramInput
from tuidbg.ui.panes.source import SourceView
from tuidbg.ui.panes.tables import BreakpointsPane, ThreadsPane
from tuidbg.ui.panes.variables import LocalsPane, WatchPane

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
}


def id_bindings(cls) -> dict[str, str]:
    out = {}
    for klass in reversed(cls.__mro__):
        for b in klass.__dict__.get("BINDINGS", []):
            if isinstance(b, Binding) and b.id:
                out[b.id] = b.key
    return out


ALL_IDS = set(bindings.global_ids())
for classes in CONTEXTS.values():
    for c in classes:
        ALL_IDS |= set(id_bindings(c))

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


def test_default_keymap_file_matches_the_bindings():
    km = tconfig.load_keymap("default")
    for bid, keys in bindings.default_keys().items():
        assert km.keys.get(bid) == keys, bid


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
