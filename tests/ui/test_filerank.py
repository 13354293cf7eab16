"""The file picker's order (tuidbg.ui.filerank) on real folders: the program's own files first, then the
working directory's, the script's package, site-packages, and the rest; each labelled with where it
comes from. (The picker on the screen, with gdb's real list: tests/ui/test_first_minutes.py.)"""

from __future__ import annotations

import os

from tuidbg.ui import filerank


def _tree(root, files):
    for rel in files:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x = 1\n")


def test_a_python_programs_files_come_first_then_the_cwd_then_its_package_then_the_rest(tmp_path):
    _tree(tmp_path, ["lib/pkg/__init__.py", "lib/pkg/util.py", "lib/pkg/sub/__init__.py", "lib/pkg/sub/run.py",
                     "lib/pkg/sub/peer.py", "work/notes.py", "work/.hidden/x.py", "work/__pycache__/y.py",
                     "work/venv/lib/z.py", "work/env2/pyvenv.cfg", "work/env2/lib/w.py",
                     "py/lib/python3.11/site-packages/torch/nn.py"])
    script = tmp_path / "lib/pkg/sub/run.py"
    places = filerank.Places.of("/usr/bin/python3.11", str(tmp_path / "work"), str(script), python=True)
    assert places.package == str(tmp_path / "lib") and places.exe is None
    site = str(tmp_path / "py/lib/python3.11/site-packages/torch/nn.py")
    gdb = [("/usr/include/stdio.h", "/usr/bin/python3.11"), ("Python/ceval.c", "/usr/bin/python3.11")]
    got = filerank.candidates(gdb, places, extra=[site])
    by = {os.path.basename(c.path): c for c in got}
    assert [c.origin for c in got] == sorted((c.origin for c in got), key=filerank.ORIGINS.index)
    assert by["run.py"].origin == by["peer.py"].origin == "program"
    assert by["notes.py"].origin == "cwd" and by["notes.py"].shown == "notes.py"
    assert by["util.py"].origin == "package"
    assert by["nn.py"].origin == "site-packages"
    assert by["stdio.h"].origin == by["ceval.c"].origin == "system"  # (the interpreter's own are not the program's)
    assert not by["ceval.c"].exists  # (a relative name gdb has: not on this machine)
    assert not {"x.py", "y.py", "z.py", "w.py"} & set(by)  # hidden folders, caches, virtual environments


def test_a_native_programs_sources_are_its_own_wherever_they_are(tmp_path):
    _tree(tmp_path, ["src/app.c", "src/app.h", "build/gen.c", "cwd/tool.py"])
    exe = tmp_path / "build" / "app"
    exe.write_text("")
    places = filerank.Places.of(str(exe), str(tmp_path / "cwd"))
    gdb = [(str(tmp_path / "src/app.c"), str(exe)), (str(tmp_path / "src/app.h"), str(exe)),
           ("/usr/include/stdio.h", str(exe)), ("./elf/dl-debug.c", "/usr/lib/debug/libc.debug")]
    got = filerank.candidates(gdb, places)
    assert [(os.path.basename(c.path), c.origin) for c in got] == [
        ("app.c", "program"), ("app.h", "program"),  # (named by its debug information: before the folder's)
        ("gen.c", "program"), ("tool.py", "cwd"), ("stdio.h", "system"), ("dl-debug.c", "system")]


def test_matching_keeps_the_order_and_puts_a_file_name_match_first(tmp_path):
    _tree(tmp_path, ["p/train.py", "p/data/train_utils.py", "p/trainer/loop.py"])
    places = filerank.Places.of(str(tmp_path / "p" / "train.py"), str(tmp_path / "p"), str(tmp_path / "p" / "train.py"),
                                python=True)
    got = filerank.matching(filerank.candidates([], places), "train")
    assert [c.shown for c in got] == ["train.py", "data/train_utils.py", "trainer/loop.py"]


def test_the_walk_is_bounded(tmp_path):
    for i in range(50):
        _tree(tmp_path, [f"d{i:02}/f.py"])
    assert len(filerank.walk([str(tmp_path)])) == 50
    assert len(filerank.walk([str(tmp_path)], limit=20)) < 50  # (it stops looking, it does not fail)
