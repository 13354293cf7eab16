"""The stop at the program's entry (tuidbg.engine.entry), on real gdb: ``main`` of a compiled program, the
first line of a Python script or ``-m`` module under the agent; when no breakpoint is set (remembered
ones count), always, or never; only in the program's own process under ``--children``."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, PROGRAMS, compile_c, wait_stopped

from tuidbg import cli
from tuidbg.engine import mi, pyagent
from tuidbg.engine.debugger import default_extensions
from tuidbg.engine.entry import EntryStop
from tuidbg.engine.session import SessionConfig
from tuidbg.engine.state import ProcessState

pytestmark = requires_gdb
needs_py311 = pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="needs Debian's /usr/bin/python3.11")

CHILDREN = PROGRAMS / "py" / "children.py"


def _notes(session) -> list[str]:
    got: list[str] = []
    session.on_console(lambda rec: got.append(rec.text) if rec.kind == mi.TEXT else None, replay=False)
    return got


async def test_a_program_without_breakpoints_stops_at_main_and_again_when_run_again(make_session, threads_prog):
    s = await make_session(mode="run", program=str(threads_prog), stop_at_entry=None)
    notes = _notes(s)
    await s.launch()
    st = await wait_stopped(s)
    assert st.process is ProcessState.STOPPED and st.stop.reason == "entry" and st.frames[0].func == "main"
    assert st.stop.describe() == "at entry (main)"
    assert not [b for b in st.breakpoints if not b.internal]  # (tuidbg's own breakpoint, not listed as the user's)
    assert any("Stopped at entry (main): no breakpoint is set" in n for n in notes), notes
    await s.cont()
    st = await wait_stopped(s)
    assert st.process is ProcessState.EXITED and st.exit_code == 7
    await s.run()  # R: run again, still no breakpoint: the entry again
    st = await wait_stopped(s)
    assert st.process is ProcessState.STOPPED and st.stop.reason == "entry" and st.frames[0].func == "main"


@pytest.mark.parametrize("entry, want", [(None, ["middle"]), (True, ["entry", "middle"]), (False, [])])
async def test_with_a_breakpoint_it_stops_at_entry_only_when_asked(make_session, threads_prog, entry, want):
    s = await make_session(mode="run", program=str(threads_prog), stop_at_entry=entry,
                           ex=[] if entry is False else ["break middle"])
    await s.launch()
    seen = []
    while True:
        st = await wait_stopped(s)
        if st.process is not ProcessState.STOPPED:
            break
        seen.append("entry" if st.stop.reason == "entry" else st.frames[0].func)
        await s.cont()
    assert seen == want and st.exit_code == 7


async def test_remembered_breakpoints_count_as_set(make_session, threads_prog, tmp_path):
    state = str(tmp_path / "remembered.json")
    first = await make_session(mode="run", program=str(threads_prog), stop_at_entry=None, remember=state)
    await first.load()
    await first.break_insert("middle")
    await first.close()
    again = await make_session(mode="run", program=str(threads_prog), stop_at_entry=None, remember=state)
    await again.launch()
    st = await wait_stopped(again)
    assert st.stop.reason == "breakpoint-hit" and st.frames[0].func == "middle"
    fresh = await make_session(mode="run", program=str(threads_prog), stop_at_entry=None, remember=state,
                               fresh_state=True)
    await fresh.launch()
    st = await wait_stopped(fresh)
    assert st.stop.reason == "entry"


async def test_a_program_without_main_runs_on_and_says_why(make_session, tmp_path):
    prog = compile_c(PROGRAMS / "threads.c", tmp_path / "stripped", "-pthread")
    subprocess.run(["strip", "--strip-all", str(prog)], check=True)
    s = await make_session(mode="run", program=str(prog), stop_at_entry=None)
    notes = _notes(s)
    await s.launch()
    st = await wait_stopped(s)
    assert st.process is ProcessState.EXITED and st.exit_code == 7
    assert any("no stop at entry: the program has no main" in n for n in notes), notes


@needs_py311
@pytest.mark.parametrize("how", ["script", "module"])
async def test_a_python_program_stops_at_its_first_line(make_session, tmp_path, how):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    main = tmp_path / ("prog.py" if how == "script" else "pkg/__main__.py")
    main.write_text('"""The program."""\nimport os\nx = len(os.sep)\nprint("done", x)\n')
    args = [str(main)] if how == "script" else ["-m", "pkg"]
    s = await make_session(mode="run", program=str(DEBIAN_PY311), args=args, python_target=True, agent=True,
                           stop_at_entry=None, cwd=str(tmp_path))
    ctl = pyagent.controller(s)
    await s.launch()
    st = await ctl.wait_stop(60)
    stop = st.python.stop
    assert stop is not None and stop.reason == "entry" and stop.file == str(main) and stop.line == 1, stop
    assert stop.describe() == "at entry (the program's first line)"
    await ctl.step_over()
    st = await ctl.wait_stop(60)
    assert st.python.stop.reason == "step" and st.python.stop.line == 2
    await ctl.resume()
    st = await ctl.wait_stop(60)
    assert st.process is ProcessState.EXITED and st.exit_code == 0


@needs_py311
@pytest.mark.slow
async def test_only_the_program_stops_at_entry_not_its_children(make_session):
    """--children: a child that is a Python program of its own (children.py started again by subprocess)
    runs its __main__ without a stop; the program stopped at its own entry."""
    out = bytearray()
    s = await make_session(mode="run", program=str(DEBIAN_PY311), args=[str(CHILDREN), "subprocess"], agent=True,
                           python_target=True, children="python", stop_at_entry=None)
    s.on_program_output(out.extend)
    ctl = pyagent.controller(s)
    await s.launch()
    st = await ctl.wait_stop(60)
    assert st.python.stop.reason == "entry" and st.selected_inferior == "i1"
    await ctl.resume()
    st = await ctl.wait_stop(60)
    assert st.process is ProcessState.EXITED, (st.process, st.python.stop)
    assert len(st.inferiors) > 1  # (the child was under gdb, and ran through)
    assert b"subprocess said square 9" in out


def test_attach_and_core_have_no_entry():
    for mode in ("attach", "core"):
        cfg = SessionConfig(mode=mode, pid=1, program="/bin/true", core="/nonexistent", stop_at_entry=True)
        assert not any(isinstance(e, EntryStop) for e in default_extensions(cfg))
    assert any(isinstance(e, EntryStop) for e in default_extensions(SessionConfig(mode="run", program="/bin/true")))


def test_the_command_line_and_a_profile_decide(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.run_config(cli.run_args(["--", "/bin/true"])).stop_at_entry is None  # (when no breakpoint is set)
    assert cli.run_config(cli.run_args(["--stop-at-entry", "--", "/bin/true"])).stop_at_entry is True
    assert cli.run_config(cli.run_args(["--no-stop-at-entry", "--", "/bin/true"])).stop_at_entry is False
    with pytest.raises(cli.UsageError, match="not allowed with"):
        cli.run_args(["--stop-at-entry", "--no-stop-at-entry", "--", "/bin/true"])
    (tmp_path / "t.py").write_text("pass\n")
    with pytest.raises(cli.UsageError, match="needs the agent"):
        cli.run_config(cli.run_args(["--stop-at-entry", "--no-agent", "--python", shutil.which("python3"), "t.py"]))
    (tmp_path / ".tuidbg.toml").write_text('[profiles.go]\nprogram = "/bin/true"\nstop_at_entry = false\n'
                                           '[profiles.halt]\nprogram = "/bin/true"\nstop_at_entry = true\n')
    assert cli.run_config(cli.run_args(["--profile", "go"])).stop_at_entry is False
    assert cli.run_config(cli.run_args(["--profile", "halt"])).stop_at_entry is True
    assert cli.run_config(cli.run_args(["--profile", "go", "--stop-at-entry"])).stop_at_entry is True  # (the command line wins)
    (tmp_path / ".tuidbg.toml").write_text('[profiles.bad]\nprogram = "/bin/true"\nstop_at_entry = "yes"\n')
    with pytest.raises(cli.UsageError, match="stop_at_entry.*true or false"):
        cli.run_config(cli.run_args(["--profile", "bad"]))
