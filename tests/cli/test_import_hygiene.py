"""The engine never imports Textual (it is a plain asyncio library)."""

import subprocess
import sys

from helpers import REPO


def test_engine_does_not_import_textual():
    code = (
        "import importlib, pkgutil, sys\n"
        "import tuidbg.engine\n"
        "for m in pkgutil.iter_modules(tuidbg.engine.__path__):\n"  # every engine module, present and future
        "    importlib.import_module('tuidbg.engine.' + m.name)\n"
        "import tuidbg.launch, tuidbg.dump, tuidbg.agent.core\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith(('textual.', 'tuidbg.ui')))\n"
        "assert not bad, bad\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def test_package_import_is_lazy():
    res = subprocess.run(
        [sys.executable, "-c", "import sys, tuidbg; print(sorted(m for m in sys.modules if m.startswith('tuidbg')))"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert res.stdout.strip() == "['tuidbg']"
