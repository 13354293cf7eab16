"""Settings, themes and keymaps: files, not code.

Themes (``themes/*.toml``) and keymaps (``keymaps/*.toml``) ship inside the
wheel (``tuidbg/_data``) and sit at the top of a source checkout; users add
their own under ``$XDG_CONFIG_HOME/tuidbg/themes`` and ``.../keymaps``. The
config file ``$XDG_CONFIG_HOME/tuidbg/config.toml`` chooses them::

    theme = "tuidbg-light"
    keymap = "vim"

    [keys]              # per-id overrides on top of the chosen keymap
    "exec.next" = "n,f10"

The shipped ``keymaps/default.toml`` is also the one place tuidbg's default
keys are written: the bindings take their keys from it (``shipped_default_keys``).
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuidbg.launch import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10
    import tomli as tomllib

PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_THEME = "tuidbg-dark"
DEFAULT_KEYMAP = "default"


def config_home() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "tuidbg"


def data_dirs(kind: str) -> list[Path]:
    """Folders holding ``kind`` ("themes" or "keymaps"): the user's first, then the shipped ones."""
    out = [config_home() / kind]
    installed = PACKAGE_DIR / "_data" / kind
    checkout = PACKAGE_DIR.parent / kind
    for d in (installed, checkout):
        if d.is_dir():
            out.append(d)
            break
    return out


def _exists(path: Path) -> bool:
    """Whether ``path`` exists. One that cannot even be looked at (a folder without permission on the
    way) is the user's to fix: one line, never a traceback."""
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror}); fix its permissions, or pass --config FILE") from exc
    return True


def _toml_files(d: Path) -> list[Path]:
    """The ``*.toml`` files of a themes/keymaps folder (none when it does not exist)."""
    if not _exists(d) or not d.is_dir():
        return []
    try:
        return sorted(d.glob("*.toml"))
    except OSError as exc:
        raise UsageError(f"{d}: cannot list it ({exc.strerror}); fix its permissions") from exc


def read_toml(path: Path) -> dict[str, Any]:
    from tuidbg.engine import files

    try:
        text = files.read_text(str(path), files.CONFIG_CAP)
    except files.Unreadable as exc:
        raise UsageError(f"{path}: cannot read it ({exc.why})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from exc
    except RecursionError:
        raise UsageError(f"{path}: not valid TOML (nested too deeply)") from None


@dataclass
class Settings:
    theme: str | None = None
    keymap: str | None = None
    keys: dict[str, str] = field(default_factory=dict)
    path: Path | None = None


def load_settings(path: str | None = None) -> Settings:
    p = Path(path) if path else config_home() / "config.toml"
    if not _exists(p):
        if path:
            raise UsageError(f"--config {path}: no such file")
        return Settings()
    data = read_toml(p)
    keys = data.get("keys", {})
    if not isinstance(keys, dict) or not all(isinstance(v, str) for v in keys.values()):
        raise UsageError(f"{p}: [keys] must map binding ids to key strings")
    theme = data.get("theme")
    keymap = data.get("keymap")
    for name, val in (("theme", theme), ("keymap", keymap)):
        if val is not None and not isinstance(val, str):
            raise UsageError(f"{p}: {name} must be a string")
    return Settings(theme=theme, keymap=keymap, keys=dict(keys), path=p)


# -- themes ---------------------------------------------------------------------------------------


def theme_files() -> dict[str, Path]:
    """Theme name -> file; a user's theme overrides a shipped one of the same name."""
    found: dict[str, Path] = {}
    for d in reversed(data_dirs("themes")):
        for f in _toml_files(d):
            try:
                name = read_toml(f).get("name") or f.stem
            except UsageError:
                name = f.stem
            found[str(name)] = f
    return found


def load_theme_data(path: Path) -> dict[str, Any]:
    data = read_toml(path)
    if "name" not in data:
        data["name"] = path.stem
    for key in ("primary",):
        if key not in data:
            raise UsageError(f"{path}: a theme needs at least '{key}'")
    return data


def resolve_theme_name(name: str | None) -> str:
    if name is None:
        return DEFAULT_THEME
    if name.endswith(".toml") and _exists(Path(name)):
        return str(load_theme_data(Path(name))["name"])
    themes = theme_files()
    from textual.theme import BUILTIN_THEMES

    if name not in themes and name not in BUILTIN_THEMES:
        avail = ", ".join(sorted(themes))
        raise UsageError(f"unknown theme {name!r} (available: {avail})")
    return name


# -- keymaps ------------------------------------------------------------------------------------


def keymap_files() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in reversed(data_dirs("keymaps")):
        for f in _toml_files(d):
            found[f.stem] = f
    return found


@dataclass
class Keymap:
    name: str
    keys: dict[str, str]
    path: Path | None = None


def _keymap_keys(path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """A keymap file's data and its ``[keys]`` table (binding id -> "key1,key2"), checked."""
    data = read_toml(path)
    keys = data.get("keys")
    if not isinstance(keys, dict) or not all(isinstance(v, str) for v in keys.values()):
        raise UsageError(f"{path}: a keymap needs a [keys] table of binding id = \"key1,key2\"")
    return data, dict(keys)


def load_keymap(name: str | None, overrides: dict[str, str] | None = None) -> Keymap:
    """A keymap by name (default, vscode, vim, a user's) or path; ``[keys]`` maps binding ids to keys."""
    name = name or DEFAULT_KEYMAP
    if name.endswith(".toml"):
        path = Path(name)
        if not _exists(path):
            raise UsageError(f"--keymap {name}: no such file")
    else:
        files = keymap_files()
        if name not in files:
            raise UsageError(f"unknown keymap {name!r} (available: {', '.join(sorted(files))})")
        path = files[name]
    data, merged = _keymap_keys(path)
    if overrides:
        merged.update(overrides)
    return Keymap(name=str(data.get("name", path.stem)), keys=merged, path=path)


def shipped_default_keys() -> dict[str, str]:
    """tuidbg's own default keys: the ``[keys]`` of the shipped ``keymaps/default.toml``.

    That file is the one place the default keys are written; the bindings take
    their keys from it (``tuidbg.ui.bindings``). A user's keymap named
    ``default`` is a keymap like any other and does not change these.
    """
    shipped = data_dirs("keymaps")[1:]
    path = shipped[0] / f"{DEFAULT_KEYMAP}.toml" if shipped else None
    if path is None or not _exists(path):
        raise UsageError(f"tuidbg's default keymap (keymaps/{DEFAULT_KEYMAP}.toml) is missing from {PACKAGE_DIR}: reinstall tuidbg")
    return dict(_read_keys_once(path))


@functools.lru_cache(maxsize=4)
def _read_keys_once(path: Path) -> tuple[tuple[str, str], ...]:
    """A shipped keymap's keys, read once (every binding asks for its key when its class is made)."""
    return tuple(_keymap_keys(path)[1].items())
