"""``tuidbg dump --remote HOST:PORT PID`` and ``tuidbg attach --remote HOST:PORT PID``: a process of
another node, through the ``gdbserver --multi`` running there (gdb's remote protocol).

The other node is made here: a network namespace joined to this one by a veth pair (addresses on a
private /30, 10.251.N.0/30 with N free on this machine), and in it, in new UTS, PID and mount
namespaces (a hostname of its own, PIDs of its own, its own /proc), ``gdbserver --multi`` and Debian's
stripped python3.11 running tests/programs/py/remote_node.py. The program's PID there is a small
number that names no such program here: a dump or an attach that read this machine's /proc or
ptraced that PID here would get another process (or none), not the frames checked below. Test
traffic goes only to that namespace. Everything made here is taken down by the fixture's finalizer,
whatever happened.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, check_error, line_of, run_tuidbg, wait_stopped
from pystack_helpers import PY_PROGRAMS
from tmux_term import Tmux

pytestmark = [requires_gdb, pytest.mark.slow,
              pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="needs Debian's /usr/bin/python3.11"),
              pytest.mark.skipif(shutil.which("gdbserver") is None, reason="needs gdbserver (Debian's gdbserver package)")]

PROG = PY_PROGRAMS / "remote_node.py"
PORT = 2345
HERE = os.uname().nodename


def _netns_unusable() -> str | None:
    """Why this machine cannot make the test's second node (None: it can)."""
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        return "needs ip (iproute2) and unshare (util-linux) to make a second node with ip netns"
    probe = f"tdbgprobe{os.getpid()}"
    res = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if res.returncode != 0:
        return f"ip netns is not usable here (a second node needs a network namespace): {res.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


class Node:
    """The second node: its namespace, address, hostname, and the program running on it."""

    def __init__(self, n: int, tmp: Path) -> None:
        self.n = n
        self.ns = f"tdbg-remote-{n}"
        self.veth = f"tdbgr{n}a"
        self.peer = f"tdbgr{n}b"
        self.address = f"10.251.{n}.2:{PORT}"
        self.hostname = f"tuidbg-node-{n}"
        self.tmp = tmp
        self.out = tmp / "stack.json"
        self.server: subprocess.Popen | None = None
        self.rpid = 0  # the program's PID on the node
        self.lpid = 0  # the same process's PID here (for the checks that it runs on, untraced)

    def ticks(self) -> int:
        try:
            return int((self.out.parent / (self.out.name + ".tick")).read_text() or 0)
        except (OSError, ValueError):
            return 0

    def running_untraced(self) -> None:
        """The program is not traced, not stopped, and runs (its ticker goes on)."""
        with open(f"/proc/{self.lpid}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        assert int(status["TracerPid"]) == 0, status["TracerPid"]
        assert status["State"].split()[0] not in ("t", "T"), status["State"]
        before = self.ticks()
        deadline = time.monotonic() + 10
        while self.ticks() <= before + 2:
            assert time.monotonic() < deadline, "the program on the node does not run"
            time.sleep(0.05)

    def serving(self) -> None:
        """gdbserver --multi still listens (it must be there for the next user)."""
        assert self.server is not None and self.server.poll() is None, "gdbserver ended"


def _ip(*args: str, ns: str | None = None) -> None:
    cmd = ["ip", "netns", "exec", ns, "ip", *args] if ns else ["ip", *args]
    subprocess.run(cmd, check=True, capture_output=True)


def _free_netns() -> tuple[int, str]:
    """(N, namespace) for a 10.251.N.0/30 no interface here has and a namespace nobody else made:
    ``ip netns add`` fails on a name that exists, so two test runs cannot take the same N."""
    used = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
    start = os.getpid() % 250
    for i in range(250):
        n = 2 + (start + i) % 250
        if f" 10.251.{n}." in used:
            continue
        ns = f"tdbg-remote-{n}"
        if subprocess.run(["ip", "netns", "add", ns], capture_output=True).returncode == 0:
            return n, ns
    raise AssertionError("no free 10.251.N.0/30 for the test's second node")


def _local_pid_of(out: Path) -> int:
    """This machine's PID of the program writing ``out`` (its command line names the file)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(PROG).encode() in cmd and str(out).encode() in cmd:
            return int(name)
    raise AssertionError(f"the node's program (writing {out}) is not running")


def _start_server(node: Node, port: int) -> subprocess.Popen:
    """The node's gdbserver --multi and its program, in new UTS, PID and mount namespaces inside the
    node's network namespace, in a session of their own (killed as one)."""
    script = (f"hostname {node.hostname}; {DEBIAN_PY311} {PROG} {node.out} & "
              f"exec gdbserver --multi 10.251.{node.n}.2:{port}")
    log = open(node.tmp / f"gdbserver-{port}.log", "wb")
    return subprocess.Popen(["ip", "netns", "exec", node.ns, "unshare", "--uts", "--pid", "--fork", "--mount-proc",
                             "sh", "-c", script], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _wait_listening(node: Node, server: subprocess.Popen, port: int) -> None:
    log = node.tmp / f"gdbserver-{port}.log"
    deadline = time.monotonic() + 30
    while b"Listening on port" not in log.read_bytes():
        assert server.poll() is None, f"gdbserver exited: {log.read_text()}"
        assert time.monotonic() < deadline, f"gdbserver does not listen: {log.read_text()}"
        time.sleep(0.05)


def _stop_tree(server: subprocess.Popen | None) -> None:
    if server is None:
        return
    try:
        os.killpg(server.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    server.wait(30)


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    why = _netns_unusable()
    if why:
        pytest.skip(why)
    n, ns = _free_netns()
    node = Node(n, tmp_path_factory.mktemp("node"))
    try:
        _ip("link", "add", node.veth, "type", "veth", "peer", "name", node.peer)
        _ip("link", "set", node.peer, "netns", ns)
        _ip("addr", "add", f"10.251.{n}.1/30", "dev", node.veth)
        _ip("link", "set", node.veth, "up")
        _ip("addr", "add", f"10.251.{n}.2/30", "dev", node.peer, ns=ns)
        _ip("link", "set", node.peer, "up", ns=ns)
        _ip("link", "set", "lo", "up", ns=ns)
        node.server = _start_server(node, PORT)
        _wait_listening(node, node.server, PORT)
        deadline = time.monotonic() + 60
        while not node.out.exists():
            assert node.server.poll() is None and time.monotonic() < deadline, "the node's program did not start"
            time.sleep(0.05)
        node.rpid = json.loads(node.out.read_text())["pid"]
        node.lpid = _local_pid_of(node.out)
        yield node
    finally:
        _stop_tree(node.server)
        # (whatever else is left in the namespace was started here)
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        subprocess.run(["ip", "link", "del", node.veth], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _expected() -> list[tuple[str, str, int]]:
    """The main thread's Python frames, innermost first."""
    return [("leaf", str(PROG), line_of(PROG, "remote_leaf")),
            ("middle", str(PROG), line_of(PROG, "remote_middle")),
            ("outer", str(PROG), line_of(PROG, "remote_outer")),
            ("<module>", str(PROG), line_of(PROG, "remote_module"))]


def test_the_pid_names_the_program_only_on_the_node(node):
    """(What the other tests rest on: read here, the PID is another process or none.)"""
    assert node.rpid != node.lpid
    try:
        here = Path(f"/proc/{node.rpid}/cmdline").read_bytes()
    except OSError:
        here = b""
    assert str(PROG).encode() not in here


def test_dump_remote_prints_the_python_frames(node):
    res = run_tuidbg("dump", "--remote", node.address, str(node.rpid))
    assert res.returncode == 0, res.stderr
    lines = [line.strip() for line in res.stdout.splitlines()]
    want = [f"{fn} ({file}:{line})" for fn, file, line in _expected()]
    i = lines.index(want[0])
    assert lines[i:i + len(want)] == want, res.stdout
    assert f"Process {node.rpid}: {DEBIAN_PY311} {PROG}" in res.stdout
    node.running_untraced()
    node.serving()


def test_dump_remote_json_schema_and_host(node):
    res = run_tuidbg("dump", "--remote", node.address, str(node.rpid), "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["format"] == "tuidbg-dump" and doc["version"] == 2 and "errors" not in doc
    [p] = doc["processes"]
    assert p["pid"] == node.rpid
    assert p["host"] == node.hostname  # what the node says (its /proc/sys/kernel/hostname), not this machine's
    assert p["remote"] == node.address
    assert p["reader"] == "gdb"
    assert p["executable"] == str(DEBIAN_PY311)
    assert p["cmdline"] == [str(DEBIAN_PY311), str(PROG), str(node.out)]
    assert p["ppid"] == 1 and p["env"] == {}  # (sh, the namespace's init, exec'd gdbserver)
    assert p["python"].startswith("3.11")
    main = [t for t in p["threads"] if t["main"]]
    assert len(main) == 1 and main[0]["tid"] == node.rpid
    got = [(f["kind"], f["function"], f["file"], f["line"]) for f in main[0]["frames"]]
    assert got == [("python", *f) for f in _expected()]
    ticker = [t for t in p["threads"] if not t["main"]]
    assert len(ticker) == 1 and any(f["function"] == "tick" for f in ticker[0]["frames"])
    node.running_untraced()


def test_dump_remote_native(node):
    res = run_tuidbg("dump", "--remote", node.address, str(node.rpid), "--native", "--json")
    assert res.returncode == 0, res.stderr
    [p] = json.loads(res.stdout)["processes"]
    [main] = [t for t in p["threads"] if t["main"]]
    kinds = [(f["kind"], f["function"]) for f in main["frames"]]
    natives = [fn for kind, fn in kinds if kind == "native"]
    assert any("nanosleep" in (fn or "") for fn in natives[:3]), kinds  # innermost: the sleep in libc
    pys = [f for f in main["frames"] if f["kind"] == "python"]
    assert [(f["function"], f["file"], f["line"]) for f in pys] == _expected()
    node.running_untraced()


def test_merge_groups_a_local_and_a_remote_dump(node, tmp_path):
    out = tmp_path / "local.json"
    local = subprocess.Popen([str(DEBIAN_PY311), str(PROG), str(out)], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not out.exists():
            assert local.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        here = run_tuidbg("dump", "--json", str(local.pid))
        there = run_tuidbg("dump", "--json", "--remote", node.address, str(node.rpid))
        assert here.returncode == 0 and there.returncode == 0, (here.stderr, there.stderr)
        (tmp_path / "here.json").write_text(here.stdout)
        (tmp_path / "there.json").write_text(there.stdout)
        res = run_tuidbg("dump", "--merge", str(tmp_path / "here.json"), str(tmp_path / "there.json"))
        assert res.returncode == 0, res.stderr
        assert "2 processes, 4 threads, on 2 hosts" in res.stdout
        both = f"== 2 processes: {HERE}:{local.pid} {node.hostname}:{node.rpid}"
        lines = res.stdout.splitlines()
        # the main threads' group: the same four frames, one group for both nodes
        groups = [lines[j + 1:j + 5] for j, line in enumerate(lines) if line == both]
        want = [f"    {fn} ({file}:{line})" for fn, file, line in _expected()]
        assert want in groups, res.stdout
    finally:
        local.kill()
        local.wait()
    node.running_untraced()


# ---------------------------------------------------------------------------------------------
# Errors: one line, exit 2


def test_connection_refused(node):
    res = run_tuidbg("dump", "--remote", f"10.251.{node.n}.2:{PORT + 1}", str(node.rpid))
    check_error(res, "cannot connect to gdbserver", "Connection refused", f"gdbserver --multi 10.251.{node.n}.2:{PORT + 1}")
    res = run_tuidbg("attach", "--remote", f"10.251.{node.n}.2:{PORT + 1}", str(node.rpid))
    check_error(res, "cannot connect to gdbserver", "Connection refused")
    node.running_untraced()


@pytest.mark.parametrize("address", ["node2", "node2:", ":2345", "a:b:c", "node2:99999", "node 2:1"])
def test_bad_address(address):
    for cmd in ("dump", "attach"):
        check_error(run_tuidbg(cmd, "--remote", address, "12"), f"--remote {address}")


def test_no_such_process_on_the_node(node):
    res = run_tuidbg("dump", "--remote", node.address, "999999")
    check_error(res, "cannot attach to process 999999 on", "gdbserver could not attach")
    node.serving()
    # one of several: the others are read, the missing one said on stderr
    res = run_tuidbg("dump", "--remote", node.address, str(node.rpid), "999999", "--json")
    assert res.returncode == 2
    doc = json.loads(res.stdout)
    assert [p["pid"] for p in doc["processes"]] == [node.rpid]
    assert doc["errors"] == [{"pid": 999999, "host": f"10.251.{node.n}.2", "error": res.stderr.strip()[len("tuidbg: "):]}]
    node.running_untraced()


def test_options_that_read_this_machine_are_refused(node):
    check_error(run_tuidbg("dump", "--remote", node.address, "--children", str(node.rpid)), "--children", "--remote")
    check_error(run_tuidbg("dump", "--remote", node.address, "--nonblocking", str(node.rpid)), "--nonblocking")
    check_error(run_tuidbg("attach", "--remote", node.address, "--list"), "--list")
    check_error(run_tuidbg("attach", "--remote", node.address), "needs the PID")
    check_error(run_tuidbg("dump", "--remote", node.address, "x1"), "'x1' is not a process ID")


def test_gdbserver_without_multi(node):
    """A gdbserver started on a program of its own cannot attach to another: said, and that gdbserver
    and its program are left as they were."""
    port = PORT + 2
    script = f"exec gdbserver 10.251.{node.n}.2:{port} /bin/sleep 1000"
    log = open(node.tmp / f"gdbserver-{port}.log", "wb")
    server = subprocess.Popen(["ip", "netns", "exec", node.ns, "sh", "-c", script], stdin=subprocess.DEVNULL,
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_listening(node, server, port)
        res = run_tuidbg("dump", "--remote", f"10.251.{node.n}.2:{port}", str(node.rpid))
        check_error(res, "is already debugging process", "gdbserver --multi")
        assert server.poll() is None  # (disconnected, not killed)
    finally:
        _stop_tree(server)
    node.running_untraced()


# ---------------------------------------------------------------------------------------------
# attach --remote


async def test_attach_remote_session(node):
    """The engine as ``tuidbg attach --remote`` makes it: native and merged Python stacks, a C
    breakpoint, a step, continue, and a detach that leaves the process running, untraced."""
    from tuidbg.cli import build_parser, remote_attach_config
    from tuidbg.engine import remote
    from tuidbg.engine.debugger import new_session
    from tuidbg.engine.errors import EngineError
    from tuidbg.engine.state import ProcessState

    args = build_parser().parse_args(["attach", "--nx", "--remote", node.address, str(node.rpid)])
    cfg = remote_attach_config(args)
    assert cfg.remote == node.address and not cfg.agent and cfg.remember is None
    s = new_session(cfg)
    console: list[str] = []
    s.on_console(lambda rec: console.append(str(rec.payload)))
    try:
        await s.start()
        await s.launch()
        st = await wait_stopped(s)
        assert st.process is ProcessState.STOPPED and st.pid == node.rpid
        assert cfg.python_target  # (its executable, as the node names it)
        assert any(remote.NO_AGENT in line for line in console), console
        assert [e for e in s.extensions if type(e).__name__ == "PyAgent"] == []
        # the merged Python stack of the main thread (the pystack extension, through gdb's memory reads)
        await _until(lambda: s.state.python.stack is not None and s.state.python.stack.generation == s.state.generation)
        ps = s.state.python.stack
        assert ps.ok, ps.reason
        main = next(t for t in ps.threads if t.lwp == node.rpid)
        assert [(f.function, f.file, f.line) for f in main.frames] == _expected()
        frames, _more = await s.fetch_frames(next(t.id for t in s.state.threads if t.lwp == node.rpid), 0, 50)
        assert any("nanosleep" in (f.func or "") for f in frames[:3]), [f.func for f in frames]
        # a C breakpoint: the ticker's sleep
        await s.console("break clock_nanosleep")
        await s.cont()
        st = await wait_stopped(s)
        assert st.process is ProcessState.STOPPED and st.stop is not None and st.stop.reason == "breakpoint-hit", st.stop
        assert "clock_nanosleep" in (st.frames[0].func or "")
        await s.console("delete")
        await s.finish()  # a step out of it
        st = await wait_stopped(s)
        assert st.process is ProcessState.STOPPED and "clock_nanosleep" not in (st.frames[0].func or ""), st.frames[0]
        # running, with a breakpoint in its code that it does not reach: quitting detaches it as it runs
        await s.console("break PyErr_Print")
        await s.cont()
        await _until(lambda: s.state.process is ProcessState.RUNNING)
        # gdbserver interrupts with a SIGINT to the process's group, and this process leads none: said so
        with pytest.raises(EngineError, match="gdbserver did not stop the process"):
            await s.interrupt()
    finally:
        await s.close()
    node.running_untraced()
    node.serving()


async def test_gdb_killed_while_attached_remote_the_process_is_let_go(node):
    """gdb dies (kill -9) while the remote process runs with a breakpoint in its code: gdbserver keeps
    it traced, with the breakpoint, until the session's abandon has another gdb take it out and detach."""
    from tuidbg.engine import rescue
    from tuidbg.engine.debugger import new_session
    from tuidbg.engine.session_config import SessionConfig
    from tuidbg.engine.state import ProcessState

    s = new_session(SessionConfig(mode="attach", pid=node.rpid, nx=True, remote=node.address))
    outcome: list[str] = []
    abandon = s.abandon
    s.abandon = lambda *a: (outcome.append(abandon(*a)), outcome[-1])[1]
    try:
        await s.start()
        await s.launch()
        await wait_stopped(s)
        await s.console("break PyErr_Print")  # (never called: the process runs with it in its code)
        await s.cont()
        await _until(lambda: s.state.process is ProcessState.RUNNING)
        await _until(lambda: rescue.proc_info(node.lpid).state not in ("t", "T"))  # (resumed, the breakpoint in)
        os.kill(s.gdb_pid(), signal.SIGKILL)
        await _until(lambda: s.state.process is ProcessState.GDB_EXITED)
    finally:
        await s.close()
    assert outcome and "released (1 breakpoint(s) taken out)" in outcome[0], outcome
    node.running_untraced()
    # (read here, as a check: no breakpoint instruction left in its code, against the files it maps)
    assert rescue.restore_code(node.lpid, {}) == 0
    node.serving()


async def _until(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def test_attach_remote_without_a_terminal_detaches(node):
    res = run_tuidbg("attach", "--nx", "--remote", node.address, str(node.rpid))
    check_error(res, "needs a terminal")
    node.running_untraced()
    node.serving()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed on this machine")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_attach_remote_in_a_terminal_then_a_signal_detaches(node, tmp_path, sig):
    from faults.procs import descendants, proc, wait_until

    tmux = Tmux(tmp_path)
    try:
        tmux.start([sys.executable, "-m", "tuidbg", "attach", "--nx", "--remote", node.address, str(node.rpid)])
        screen = tmux.wait_for("leaf", 60)  # the merged Python stack on screen
        assert "middle" in screen
        shell = tmux.pane_pid()
        tuidbg = next(p for p in descendants(shell) if b"tuidbg" in Path(f"/proc/{p}/cmdline").read_bytes())
        ours = descendants(tuidbg) | {tuidbg}
        os.kill(tuidbg, sig)
        screen = tmux.wait_for("TUIDBG_EXIT=", 30)
        assert f"TUIDBG_EXIT={128 + sig}" in screen
        wait_until(lambda: all(proc(p) is None for p in ours), 10, "tuidbg and its gdb to be gone")
    finally:
        tmux.kill()
    node.running_untraced()
    node.serving()


async def test_attach_remote_in_the_ui(node):
    """The TUI on a remote process: the merged stack shows its Python frames, a Python breakpoint
    says plainly why there is none, and quitting detaches it running."""
    from ui_helpers import make_app, until, until_stopped

    from tuidbg.engine import remote
    from tuidbg.ui.screens.modals import QuitScreen
    from tuidbg.ui.panes.frames import CppFramesPane, PythonRow

    app = make_app(mode="attach", pid=node.rpid, remote=node.address)
    notes: list[str] = []
    orig = app.notify
    app.notify = lambda message, *a, **k: (notes.append(str(message)), orig(message, *a, **k))[1]
    async with app.run_test(size=(120, 40)) as pilot:
        await until_stopped(pilot, 60)
        assert f"attached to process {node.rpid}" in app.query_one("#status").render().plain
        await until(pilot, lambda: app.state.python.stack is not None, 60, "the Python stack")
        await pilot.press("m")  # the merged stack: Python rows in place of the eval loop's frames
        cpp = app.query_one(CppFramesPane)
        await until(pilot, lambda: [r.frame.function for r in cpp.rows if isinstance(r, PythonRow)][:4]
                    == ["leaf", "middle", "outer", "<module>"], 20, "the Python frames in the merged stack")
        # a click in the source pane's gutter (its message: a Python file's line)
        from tuidbg.ui.panes.source import SourceView
        app.query_one(SourceView).post_message(SourceView.BreakpointToggle(str(PROG), line_of(PROG, "remote_leaf")))
        await until(pilot, lambda: remote.NO_AGENT in notes, 5, "the note that there is no agent")
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, QuitScreen), 5, "the quit question")
        assert app.screen.focused.id == "detach"
        await pilot.press("enter")
        await until(pilot, lambda: not app.is_running, 15, "the app to end")
    node.running_untraced()
    node.serving()
