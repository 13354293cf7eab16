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
