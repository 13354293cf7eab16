"""The architecture's rules (ARCHITECTURE.md) hold: import-linter's contracts in pyproject.toml, run
on the package as it is, and proven able to fail on a copy with one rule broken."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from helpers import REPO

LINT = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT), "--config", str(root / "pyproject.toml"), "--no-cache"], cwd=root,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)


def test_the_contracts_hold():
    res = _lint(REPO)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert "0 broken" in res.stdout


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(REPO / "tuidbg", root / "tuidbg", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def _add_import(path: Path, line: str) -> None:
    text = path.read_text()
    head, sep, rest = text.partition("from __future__ import annotations\n")
    path.write_text(head + sep + line + "\n" + rest)


def test_a_pane_that_imports_the_session_breaks_a_contract(tmp_path):
    root = _copy(tmp_path)
    _add_import(root / "tuidbg/ui/panes/tables.py", "from tuidbg.engine.session import DebugSession  # noqa")
    res = _lint(root)
    assert res.returncode != 0 and "panes never import the session BROKEN" in res.stdout.replace("\n", " "), res.stdout


def test_an_upward_import_in_the_engine_breaks_a_contract(tmp_path):
    root = _copy(tmp_path)
    # the state importing the session (a layer above it), hidden in a function as cycles used to be
    path = root / "tuidbg/engine/state.py"
    path.write_text(path.read_text() + "\n\ndef _sneaky():\n    from tuidbg.engine import session  # noqa\n")
    res = _lint(root)
    assert res.returncode != 0 and "layered" in res.stdout and "BROKEN" in res.stdout, res.stdout


def test_the_engine_importing_textual_breaks_a_contract(tmp_path):
    root = _copy(tmp_path)
    _add_import(root / "tuidbg/engine/records.py", "import textual  # noqa")
    res = _lint(root)
    assert res.returncode != 0 and "never import Textual" in res.stdout.replace("\n", " "), res.stdout


def test_panes_hold_no_session():
    """Panes read on demand through the door they declare (a Protocol the app's SessionBridge
    provides), never through the session: no pane module touches a ``.session`` attribute."""
    import ast

    found = []
    for path in sorted((REPO / "tuidbg/ui/panes").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "session":
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert found == []


def test_a_pane_that_imports_the_bridge_breaks_a_contract(tmp_path):
    root = _copy(tmp_path)
    _add_import(root / "tuidbg/ui/panes/variables.py", "from tuidbg.ui.bridge import SessionBridge  # noqa")
    res = _lint(root)
    assert res.returncode != 0 and "panes never import the session BROKEN" in res.stdout.replace("\n", " "), res.stdout


MODULE_LIMIT = 600  # lines: a module a reader takes in at one sitting


def test_modules_are_short_or_say_why():
    """No module of tuidbg over 600 lines unless its docstring says why (the words "over the
    project's 600" and the reason): a long module is a choice someone made and explained."""
    import ast

    long = []
    for path in sorted((REPO / "tuidbg").rglob("*.py")):
        text = path.read_text()
        doc = ast.get_docstring(ast.parse(text)) or ""
        if text.count("\n") > MODULE_LIMIT and "over the project's 600" not in doc:
            long.append(f"{path.relative_to(REPO)}: {text.count(chr(10))} lines")
    assert long == [], "modules over 600 lines that do not say why: " + ", ".join(long)


def test_the_module_size_rule_finds_a_long_module(tmp_path, monkeypatch):
    """The rule above, run on a copy with one long module that gives no reason, fails."""
    import pytest

    fake = tmp_path / "tuidbg"
    fake.mkdir()
    (fake / "short.py").write_text('"""Short."""\n')
    (fake / "long.py").write_text('"""Long, no reason."""\n' + "x = 1\n" * 700)
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    with pytest.raises(AssertionError, match="long.py"):
        test_modules_are_short_or_say_why()
    (fake / "long.py").write_text('"""Long: over the project\'s 600 because it is one table."""\n' + "x = 1\n" * 700)
    test_modules_are_short_or_say_why()
