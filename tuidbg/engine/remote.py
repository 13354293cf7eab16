"""A process on another node, through gdb's own remote engine: ``gdbserver --multi HOST:PORT`` there.

``tuidbg attach --remote HOST:PORT PID`` and ``tuidbg dump --remote HOST:PORT PID...`` give
gdb ``target extended-remote HOST:PORT`` and then ``attach PID``: gdbserver (Debian's
``gdbserver`` package, started once on the node as ``gdbserver --multi HOST:PORT``) attaches
there, and everything tuidbg reads of the process comes over the remote protocol: memory (the
CPython walker in ``tuidbg.gdbext`` reads through gdb, so Python frames come the same way),
registers, threads, and the node's own files (``set sysroot target:``: the executable and its
libraries are read from the node, ``/proc/PID/...`` of the process with ``remote get``).
Nothing local names the PID: it is a process of the other node, so no ``/proc/PID`` of this
machine is read and nothing here ptraces it; a session with ``SessionConfig.remote`` set does
none of its local rescue work (``tuidbg.engine.rescue``) either, and has no Python agent (it
connects back over a local socket).

gdb drives gdbserver in non-stop mode under the all-stop the session shows (``maint set
target-non-stop on``), so that it detaches a running process without interrupting it (gdbserver
interrupts with a SIGINT to the process's group, which fails for a process that leads none).
Detaching leaves the process running and untraced; gdbserver --multi goes on listening for the
next gdb. If gdb dies instead (or hangs and is killed), gdbserver keeps the process traced, with
gdb's breakpoints in its code: the session's ``abandon`` has another gdb take them out and detach
(``release``).

The session calls ``connect``, ``attach_failure`` and ``after_attach`` (``launch``) and ``release``
(``abandon``); ``tuidbg dump --remote`` calls ``facts``.
"""

from __future__ import annotations

import os
import re
import tempfile

from tuidbg.engine import mi
from tuidbg.engine.errors import EngineError, MIError, StartupError

CONNECT_TIMEOUT = 10  # seconds gdb waits for the TCP connection (gdb's "set tcp connect-timeout")
HANDSHAKE_TIMEOUT = 60  # and then for gdbserver's first answers
NO_AGENT = "Python breakpoints and stepping need tuidbg's Python agent, which cannot reach a process on another node"


class BadAddress(ValueError):
    """HOST:PORT that is not one (one line)."""


class Unreachable(StartupError):
    """No gdbserver --multi to talk to at the address (one line): no process there can be read."""


def parse_address(text: str) -> tuple[str, int]:
    """(host, port) of ``HOST:PORT`` or ``[IPv6]:PORT``; BadAddress for anything else."""
    m = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\]:(\d+)", text) or re.fullmatch(r"([A-Za-z0-9._-]+):(\d+)", text)
    if not m:
        raise BadAddress(f"--remote {text}: not HOST:PORT (e.g. node2:2345, the address gdbserver --multi listens on)")
    port = int(m.group(2))
    if not 0 < port < 65536:
        raise BadAddress(f"--remote {text}: port {port} is not between 1 and 65535")
    return m.group(1), port


def host_of(address: str) -> str:
    return parse_address(address)[0]


async def connect(session, address: str) -> None:
    """Connect ``session``'s gdb to the gdbserver --multi at ``address``; StartupError (one line)
    when it cannot be reached or is not a gdbserver --multi with nothing attached."""
    host, port = parse_address(address)
    for setting in ("sysroot target:", "tcp auto-retry off", f"tcp connect-timeout {CONNECT_TIMEOUT}"):
        await session.cmd(f"-gdb-set {setting}", check=False)
    # (see the module's docstring)
    await session.cmd("-interpreter-exec console \"maint set target-non-stop on\"", check=False)
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        await session.cmd(f"-target-select extended-remote {target}", timeout=CONNECT_TIMEOUT + HANDSHAKE_TIMEOUT)
    except MIError as exc:
        raise Unreachable(_connect_failure(address, exc.message)) from None
    # gdbserver without --multi was started on a program (or --attach) and has it stopped already:
    # attaching to another process through it is not possible, and quitting would kill or detach it.
    res = await session.cmd("-list-thread-groups", check=False)
    busy = [g for g in mi.as_list(res.get("groups")) if isinstance(g, dict) and g.get("pid")]
    if busy:
        await session.cmd("-target-disconnect", check=False)
        raise Unreachable(
            f"the gdbserver at {address} is already debugging process {busy[0].get('pid')}: "
            f"tuidbg needs one started as gdbserver --multi {address} (it attaches to the process itself)"
        )


def _connect_failure(address: str, message: str) -> str:
    why = message.strip().rstrip(".")
    why = why[len(address) + 2:] if why.startswith(address + ": ") else why
    low = why.lower()
    if "refused" in low:
        hint = f"is gdbserver --multi {address} running there?"
    elif "resolve" in low or "no such file" in low:  # (gdb's error after "cannot resolve name")
        why, hint = f"cannot resolve the host name {parse_address(address)[0]}", ""
    elif "timed out" in low or "unreachable" in low or "no route" in low:
        hint = "the node cannot be reached from here"
    else:
        hint = ""
    return f"cannot connect to gdbserver at {address}: {why}" + (f" ({hint})" if hint else "")


def attach_failure(pid: int, address: str, message: str) -> str:
    """One line for gdbserver's refusal to attach (its reason is on the node's terminal only)."""
    text = message.strip().rstrip(".")
    if re.fullmatch(r"Attaching to process \d+ failed", text):
        text = "gdbserver could not attach to it (no such process there, or not permitted)"
    return f"cannot attach to process {pid} on {address}: {text}"


async def after_attach(session) -> str:
    """After attaching: whether the process runs a Python (``config.python_target``, from its
    executable's name on the node); returns the console's word on what a remote session lacks."""
    cfg = session.config
    exe = (await facts(session, int(cfg.pid or 0), ("exe",))).get("executable") or ""
    cfg.python_target = os.path.basename(exe).startswith("python")
    return f"process {cfg.pid} on {cfg.remote} ({exe or 'executable unknown'}): Python stacks are read from its memory; {NO_AGENT}"


# ---------------------------------------------------------------------------------------------
# Facts about the remote process, read through gdb from the node's /proc


async def facts(session, pid: int, which=("exe", "cmdline", "stat", "environ", "hostname")) -> dict:
    """What ``tuidbg dump`` says of a process besides its stacks, read on the node: {"executable",
    "cmdline", "ppid", "environ" (bytes), "hostname"} (those that could be read)."""
    out: dict = {}
    if "exe" in which:
        res = await _console(session, f"info proc exe {pid}")
        m = re.search(r"exe = '(.*)'", res)
        if m:
            out["executable"] = m.group(1)
    files = {"cmdline": f"/proc/{pid}/cmdline", "stat": f"/proc/{pid}/stat", "environ": f"/proc/{pid}/environ",
             "hostname": "/proc/sys/kernel/hostname"}
    with tempfile.TemporaryDirectory(prefix="tuidbg-remote-") as tmp:
        for key in which:
            if key not in files:
                continue
            local = os.path.join(tmp, key)
            data = await _remote_get(session, files[key], local)
            if data is None:
                continue
            if key == "cmdline":
                out["cmdline"] = [a.decode("utf-8", "replace") for a in data.split(b"\0") if a]
            elif key == "stat":
                try:
                    out["ppid"] = int(data[data.rfind(b")") + 2:].split()[1])
                except (ValueError, IndexError):
                    pass
            elif key == "environ":
                out["environ"] = data
            elif key == "hostname":
                name = data.strip().decode("utf-8", "replace")
                if name:
                    out["hostname"] = name
    return out


async def _console(session, command: str) -> str:
    try:
        res = await session.cmd(f"-interpreter-exec console {mi.quote(command)}")
    except (MIError, EngineError):
        return ""
    return res.console_text()


async def _remote_get(session, remote: str, local: str) -> bytes | None:
    """A file of the node (gdb's ``remote get``, over the remote protocol), or None."""
    try:
        await session.cmd(f"-interpreter-exec console {mi.quote(f'remote get {remote} {local}')}")
        with open(local, "rb") as f:
            return f.read()
    except (MIError, EngineError, OSError):
        return None


# ---------------------------------------------------------------------------------------------
# When gdb died attached: another gdb lets the process go


RELEASE_TIMEOUT = 20.0
# gdbserver keeps the breakpoints a gdb that died had inserted (and hides them from memory reads):
# the releasing gdb sets its own at the same addresses, inserted at once, and takes them all out as it
# detaches, gdbserver's with them (gdb's internal ones, at the same places in the same libraries, too).
_RELEASE_SCRIPT = r'''
import os, gdb
pid = int(os.environ["TUIDBG_RELEASE_PID"])
inf = [i for i in gdb.inferiors() if i.pid == pid]
if not inf:
    print("tuidbg-release: not attached")
else:
    gdb.execute("inferior %d" % inf[0].num, to_string=True)
    gdb.execute("set breakpoint always-inserted on")
    n = 0
    for addr in os.environ.get("TUIDBG_RELEASE_ADDRS", "").split():
        try:
            gdb.execute("break *%s" % addr, to_string=True)
            n += 1
        except gdb.error:
            pass
    gdb.execute("detach", to_string=True)
    print("tuidbg-release: detached, %d" % n)
'''


def breakpoint_addresses(breakpoints) -> list[int]:
    """The code addresses of the session's breakpoints (``records.Breakpoint``) and their locations."""
    out: list[int] = []
    for b in breakpoints:
        for text in [b.addr] + [loc.addr for loc in b.locations]:
            try:
                addr = int(text, 16)
            except (TypeError, ValueError):  # "<PENDING>", "<MULTIPLE>"
                continue
            if addr not in out:
                out.append(addr)
    return out


def release(cfg, breakpoints=()) -> str:
    """gdb died (or was killed, hung) attached to ``cfg.pid`` on the node: gdbserver still traces it,
    with the breakpoints that gdb had put in its code (``breakpoints``: their addresses). Another gdb
    (bounded, synchronous: safe where the session abandons its gdb) connects, takes them out (see
    above) and detaches. Returns what became of the process."""
    import subprocess

    host, port = parse_address(cfg.remote or "")
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    with tempfile.TemporaryDirectory(prefix="tuidbg-release-") as tmp:
        script = os.path.join(tmp, "release.py")
        with open(script, "w") as f:
            f.write(_RELEASE_SCRIPT)
        argv = [cfg.gdb, "-nx", "-q", "-batch", "-ex", "set debuginfod enabled off", "-ex", "set sysroot target:",
                "-ex", "maint set target-non-stop on", "-ex", "set tcp connect-timeout 5",
                "-ex", f"target extended-remote {target}", "-x", script]
        env = dict(os.environ, TUIDBG_RELEASE_PID=str(int(cfg.pid or 0)),
                   TUIDBG_RELEASE_ADDRS=" ".join(f"{int(a):#x}" for a in breakpoints))
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=RELEASE_TIMEOUT, env=env,
                                 stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"process {cfg.pid} on {cfg.remote}: not released ({exc})"
    m = re.search(r"tuidbg-release: detached, (\d+)", res.stdout)
    if m:
        return f"process {cfg.pid} on {cfg.remote} released ({m.group(1)} breakpoint(s) taken out)"
    if "tuidbg-release: not attached" in res.stdout:
        return f"process {cfg.pid} on {cfg.remote}: gdbserver had let it go"
    tail = " | ".join(line for line in res.stderr.splitlines()[-2:] if line.strip())
    return f"process {cfg.pid} on {cfg.remote}: not released ({tail or 'gdb exited ' + str(res.returncode)})"
