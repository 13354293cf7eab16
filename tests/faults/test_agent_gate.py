"""Nobody but the session's own processes gets at the Python agent's socket (tuidbg.engine.pyagent.gate):
another local user (made by the test) can neither reach the socket nor read the files beside it; a
process of tuidbg's own user outside the session is turned away before a byte is read, however many
connections it opens and whatever it sends; a debugged process that crowds the socket itself costs
one connection at a time; and meanwhile the real agent connects and stops at a breakpoint. The same
when root attaches to another user's process (3.11 through a pending call, 3.14 through PEP 768's
boot script). And the folder of a tuidbg killed with SIGKILL is swept at the next start."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, PROGRAMS, cpython314, line_of, wait_for
from pystack_helpers import running_untraced
from tmux_term import tmux  # noqa: F401 (fixture)

from faults.procs import assert_clean, descendants, proc, wait_until
from faults.users import local_user, needs_root

from tuidbg.engine import pyagent
from tuidbg.engine.pyagent import gate
from tuidbg.engine.pyagent.link import HELLO_TIMEOUT

pytestmark = [requires_gdb, needs_root, pytest.mark.slow,
              pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="needs Debian's python3.11 (another user can run it)")]

FAMILY = PROGRAMS / "py" / "family.py"
CROWD = PROGRAMS / "py" / "crowd.py"
INTRUDER = PROGRAMS / "py" / "intruder.py"
TIMEOUT = 60
MiB = 1 << 20


@pytest.fixture
def open_dir():
    """A folder every user can read: the programs other users run, and their Python (a 3.14 build, as
    hard links: /root is closed to them)."""
    d = Path(tempfile.mkdtemp(prefix="tuidbg-gate-", dir="/tmp"))
    os.chmod(d, 0o755)
    for p in (FAMILY, INTRUDER):
        shutil.copy(p, d / p.name)
        os.chmod(d / p.name, 0o644)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def shared_tmp(monkeypatch):
    """A temporary folder for tuidbg (where it makes the agent's) like /tmp: anyone may pass, on a path
    everyone can walk (the test run's own TMPDIR may be private); nothing of tuidbg's left in it after."""
    tmp = tempfile.mkdtemp(prefix="tt-shared-", dir="/tmp")
    os.chmod(tmp, 0o1777)
    monkeypatch.setenv("TMPDIR", tmp)
    monkeypatch.setattr(tempfile, "tempdir", tmp)
    yield tmp
    deadline = time.monotonic() + 5
    while (left := list(Path(tmp).glob("tuidbg-agent-*"))) and time.monotonic() < deadline:
        time.sleep(0.05)
    shutil.rmtree(tmp, ignore_errors=True)
    assert not left, f"the agent's folders were left behind: {left}"


def rss() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


async def run_json(argv: list[str], timeout: float = 120) -> dict:
    """A program's one JSON line, run without holding up the loop (tuidbg's engine answers meanwhile)."""
    p = await asyncio.create_subprocess_exec(*argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/")
    out, err = await asyncio.wait_for(p.communicate(), timeout)
    assert p.returncode == 0, err.decode()[-2000:]
    return json.loads(out)


def agent_folder() -> str:
    found = [str(p) for p in Path(tempfile.gettempdir()).glob("tuidbg-agent-*")]
    assert len(found) == 1, found
    return found[0]


def mode_owner(path: str) -> tuple[int, int]:
    st = os.lstat(path)
    return stat.S_IMODE(st.st_mode), st.st_uid


async def until_connected(s, pid: int | None = None) -> None:
    def ok() -> bool:
        agent = s.state.python.agent
        return agent is not None and agent.connected and (pid is None or agent.pid == pid)

    await wait_for(ok, TIMEOUT, "the agent's hello")


async def stops_at_tick(s, program: Path, resume: bool) -> None:
    """The real agent works: a Python breakpoint stops the program where it should."""
    ctl = pyagent.controller(s)
    line = line_of(program, "tick line")
    await ctl.add_breakpoint(str(program), line)
    if resume:
        await ctl.resume()
    st = await ctl.wait_stop(TIMEOUT)
    assert st.python.stop is not None and (st.python.stop.func, st.python.stop.line) == ("tick", line), st.python


def start_as(user, argv: list[str], ready: Path) -> subprocess.Popen:
    p = subprocess.Popen(user.run(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         start_new_session=True, cwd="/")
    deadline = time.monotonic() + 60
    while not list(ready.parent.glob(ready.name)):
        assert p.poll() is None, p.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "the target never got ready"
        time.sleep(0.05)
    return p


def stop(p: subprocess.Popen) -> None:
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
    p.wait(10)


async def test_a_run_session_admits_its_program_alone(make_session, tmp_path, open_dir, shared_tmp):
    d = tmp_path / "fam"
    d.mkdir()
    with local_user() as intruder:
        s = await make_session(mode="run", program=str(DEBIAN_PY311), args=[str(FAMILY), str(d)], agent=True,
                               python_target=True)
        await s.launch()
        await until_connected(s)
        folder = agent_folder()
        sock = os.path.join(folder, "agent.sock")
        assert mode_owner(folder) == (0o700, 0) and mode_owner(sock) == (0o600, 0)
        assert mode_owner(os.path.join(folder, "owner")) == (0o600, 0)

        # another user: nothing at all
        got = await run_json(intruder.run([str(DEBIAN_PY311), str(open_dir / INTRUDER.name), "probe", folder,
                                           "agent.sock", "owner"]))
        assert got == {"list": "EACCES", "agent.sock": {"read": "EACCES", "connect": "EACCES"},
                       "owner": {"read": "EACCES"}}, got

        # tuidbg's own user, outside the session: every connection closed unread, the huge lines too
        before = rss()
        got = await run_json([str(DEBIAN_PY311), str(INTRUDER), "flood", sock, "300", "16"])
        grew = rss() - before
        assert got["refused"] == [] and got["outcomes"] == {"closed": 300}, got
        assert all(n < 16 * MiB for n in got["sent"]), got["sent"]
        assert grew < 64 * MiB, f"tuidbg's memory grew by {grew // MiB} MB"
        got = await run_json([str(DEBIAN_PY311), str(INTRUDER), "probe", folder, "agent.sock"])
        assert got["agent.sock"]["connect"] == "closed", got

        # and the program's own agent, connected all along, still works
        assert s.state.python.agent.connected
        await stops_at_tick(s, FAMILY, resume=False)
        await s.close()


async def test_a_debugged_process_crowding_the_socket_costs_one_connection(make_session, tmp_path):
    """The program itself (admitted: gdb traces it) opens 50 connections that say nothing, sends a 32 MB
    first line, and opens one more: each new one replaces its last, the long line is cut after 64 KB, the
    last one is closed at the hello's timeout; its agent's own connection is untouched."""
    d = tmp_path / "crowd"
    d.mkdir()
    s = await make_session(mode="run", program=str(DEBIAN_PY311), args=[str(CROWD), str(d)], agent=True,
                           python_target=True, children="python")
    await s.launch()
    await until_connected(s)
    await wait_for(lambda: (d / "ready").exists(), TIMEOUT, "the program")
    before = rss()
    (d / "go").touch()
    await wait_for(lambda: (d / "result.json").exists(), TIMEOUT, "the program's result")
    got = json.loads((d / "result.json").read_text())
    grew = rss() - before
    assert got["idle_closed"] == 50 and got["big_closed"] and got["last_closed"], got
    assert got["big_sent"] < 32 * MiB, got
    assert grew < 64 * MiB, f"tuidbg's memory grew by {grew // MiB} MB"

    # held stopped by gdb longer than the hello's timeout: not closed for it; closed once it ran as long
    await wait_for(lambda: s.state.is_stopped and s.state.stop is not None and s.state.stop.signal_name == "SIGUSR2",
                   TIMEOUT, "the program's SIGUSR2")
    await asyncio.sleep(HELLO_TIMEOUT + 2)  # (the time that must not count)
    await s.cont()
    await wait_for(lambda: (d / "result2.json").exists(), TIMEOUT, "the program's second result")
    got = json.loads((d / "result2.json").read_text())
    assert got == {"late_open_after_stop": True, "late_closed": True}, got
    assert s.state.python.agent.connected
    await stops_at_tick(s, CROWD, resume=False)
    await s.close()


def _314_for_others(open_dir: Path) -> Path | None:
    """A 3.14 build that another user can run: hard links to the files of the one in root's cache."""
    py = cpython314("3.14")
    if py is None:
        return None
    top = py.parent.parent
    copy = open_dir / "py314"
    subprocess.run(["cp", "-al", str(top), str(copy)], check=True)
    return copy / "bin" / py.name


@pytest.mark.parametrize("python", ["3.11", "3.14"])
async def test_root_attaching_to_another_users_process(make_session, open_dir, shared_tmp, python):
    """The target's user gets a socket of its own and (3.14) the boot script; no third user reaches
    either; another process of the target's user is turned away; the agent stops at a breakpoint."""
    py = DEBIAN_PY311 if python == "3.11" else _314_for_others(open_dir)
    if py is None:
        pytest.skip("no CPython 3.14 build here (scripts/build-cpython314.sh)")
    with local_user() as owner, local_user() as intruder:
        d = open_dir / "fam"
        d.mkdir()
        os.chown(d, owner.uid, owner.gid)
        target = start_as(owner, [str(py), str(open_dir / FAMILY.name), str(d)], d / "ready-*.json")
        s = None
        try:
            s = await make_session(mode="attach", pid=target.pid, agent=True, python_target=True)
            await s.launch()
            await pyagent.controller(s).resume()  # (the agent loads as the process runs on)
            await until_connected(s, target.pid)
            folder = agent_folder()
            theirs = f"agent-{owner.uid}.sock"
            script = f"attach-{target.pid}.py"
            assert mode_owner(folder) == (0o711, 0)
            assert mode_owner(os.path.join(folder, "agent.sock")) == (0o600, 0)
            assert mode_owner(os.path.join(folder, theirs)) == (0o600, owner.uid)
            names = ["agent.sock", theirs, "owner"]
            if python == "3.14":
                assert s.state.python.agent.inject == "pep768", s.state.python.agent
                assert mode_owner(os.path.join(folder, script)) == (0o600, owner.uid)
                names.append(script)

            got = await run_json(intruder.run([str(DEBIAN_PY311), str(open_dir / INTRUDER.name), "probe", folder, *names]))
            assert got["list"] == "EACCES", got
            for name in names:
                assert got[name]["read"] == "EACCES", (name, got)
                if name.endswith(".sock"):
                    assert got[name]["connect"] == "EACCES", (name, got)

            # the target's user may read what is theirs, but a process of theirs that gdb does not trace
            # is turned away
            got = await run_json(owner.run([str(DEBIAN_PY311), str(open_dir / INTRUDER.name), "probe", folder, *names]))
            assert got["list"] == "EACCES" and got[theirs]["connect"] == "closed", got
            assert got["agent.sock"]["connect"] == "EACCES" and got["owner"]["read"] == "EACCES", got
            if python == "3.14":
                assert isinstance(got[script]["read"], int) and got[script]["read"] > 0, got

            assert s.state.python.agent.connected
            await stops_at_tick(s, open_dir / FAMILY.name, resume=False)
            await s.close()
            s = None
            running_untraced(target.pid)
        finally:
            if s is not None:
                await s.close()
            stop(target)


# -- state folders -------------------------------------------------------------------------------------


def test_state_folders_are_0700_and_state_files_0600(tmp_path, monkeypatch):
    """The remembered breakpoints name your files and the conditions you typed: yours alone, the folders
    made above them too (XDG); a folder an older tuidbg made 0755 is made 0700."""
    from tuidbg.engine import remember

    home = tmp_path / "state-home"
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "deeper"))
    path = remember.state_file("/src/proj", "python /src/proj/x.py")
    remember.save(path, {"version": remember.VERSION, "breakpoints": []})
    for folder in (home, home / "deeper", home / "deeper" / "tuidbg"):
        assert mode_owner(str(folder))[0] == 0o700, folder
    assert mode_owner(path)[0] == 0o600
    os.chmod(home / "deeper" / "tuidbg", 0o755)
    remember.save(path, {"version": remember.VERSION, "breakpoints": []})
    assert mode_owner(str(home / "deeper" / "tuidbg"))[0] == 0o700


# -- the folder a tuidbg killed with SIGKILL leaves -------------------------------------------------


def test_stale_folders_are_those_whose_tuidbg_is_gone(tmp_path):
    """Only this user's, this PID namespace's, whose owner is gone or whose PID another process holds now."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    ns = gate.pid_namespace()
    me = os.getpid()
    gone = subprocess.Popen(["true"])
    gone.wait()

    def folder(name: str, owner: str | None) -> Path:
        f = tmp / name
        f.mkdir(mode=0o700)
        if owner is not None:
            (f / "owner").write_text(f"{gate.OWNER_MAGIC}\n{owner}\n")
        return f

    dead = folder(f"tuidbg-agent-{gone.pid}-a", f"{ns} {gone.pid} 1")
    reused = folder(f"tuidbg-agent-{me}-b", f"{ns} {me} {gate.start_time(me) + 1}")
    alive = folder(f"tuidbg-agent-{me}-c", f"{ns} {me} {gate.start_time(me)}")
    elsewhere = folder(f"tuidbg-agent-{gone.pid}-d", f"pid:[1] {gone.pid} 1")
    unknown = folder("tuidbg-agent-e", None)
    theirs = folder(f"tuidbg-agent-{gone.pid}-f", f"{ns} {gone.pid} 1")
    os.chown(theirs, 65534, 65534)
    (tmp / f"tuidbg-agent-{gone.pid}-g").symlink_to(dead)
    not_ours = folder("something-else", f"{ns} {gone.pid} 1")

    assert sorted(gate.sweep(str(tmp))) == sorted([str(dead), str(reused)])
    assert not dead.exists() and not reused.exists()
    assert all(p.exists() for p in (alive, elsewhere, unknown, theirs, not_ours))


def _tuidbg_of(shell: int) -> int | None:
    for p in map(proc, descendants(shell)):
        if p is not None and p.comm.startswith("python"):
            try:
                if b"tuidbg" in Path(f"/proc/{p.pid}/cmdline").read_bytes():
                    return p.pid
            except OSError:
                pass
    return None


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed on this machine")
async def test_the_folder_of_a_killed_tuidbg_is_swept_at_the_next_start(make_session, tmux, tmp_path):
    d = tmp_path / "fam"
    d.mkdir()
    tmux.start([sys.executable, "-m", "tuidbg", "run", "--nx", "--no-stop-at-entry", "--", str(DEBIAN_PY311), str(FAMILY), str(d)])
    wait_until(lambda: list(d.glob("ready-*.json")), 60, "the program under tuidbg")
    left = agent_folder()
    pid = _tuidbg_of(tmux.pane_pid())
    assert pid is not None
    ours = descendants(pid) | {pid}
    os.kill(pid, signal.SIGKILL)
    assert_clean(ours, timeout=20)  # (gdb goes, and the program with it)
    assert os.path.isdir(left)  # what SIGKILL leaves

    s = await make_session(mode="run", program=str(DEBIAN_PY311), args=[str(FAMILY), str(d)], agent=True,
                           python_target=True)
    await wait_for(lambda: not os.path.exists(left), 20, "the stale folder swept")
    assert os.path.isdir(agent_folder())  # (the new session's own)
    await s.close()
