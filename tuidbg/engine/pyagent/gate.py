"""Who may reach the agent's socket, and the folder it lives in.

The agent in the program connects back to tuidbg over a Unix socket; whoever holds that connection
runs code in the program. So:

*The folder.* ``tuidbg-agent-PID-XXXXXXXX`` in the temporary folder (``TMPDIR``), made 0700 by
tuidbg's user, with an ``owner`` file naming the tuidbg process that made it (its PID namespace, PID
and start time). The socket in it is 0600. When root debugs another user's process (``tuidbg attach``
of user U's PID), the folder becomes 0711 (searchable, not listable) and gets a socket of U's own,
``agent-UID.sock``, owned by U and 0600, beside the boot script that holds the token (3.14's PEP 768
runs a script file): created there with ``O_EXCL|O_NOFOLLOW``, 0600 and handed to U with ``fchown``.
U's process can reach both; no other user can connect to either socket or read the script, and
nobody but root can add, rename or remove anything in the folder.

*The peer.* Each connection's peer is read with ``SO_PEERCRED`` (the kernel's word, not the hello's)
before a byte is read: only a process that this session's gdb traces (``TracerPid`` is gdb, or a
process gdb started) and that runs as tuidbg's user or as the user of a process tuidbg attached to
is admitted. That covers every process of a session, including a child forked a moment ago and not
yet known to the session: gdb follows forks with ``PTRACE_O_TRACEFORK``, so the kernel has the child
traced by gdb from its first instruction, before its agent can say hello. Any other process, of any
user, is turned away unread.

*Stale folders.* A tuidbg killed with SIGKILL leaves its folder behind. The next session sweeps the
temporary folder: a ``tuidbg-agent-*`` folder of this user whose ``owner`` is in this PID namespace
and is gone (no such PID, or a PID now held by a process started at another time) is removed.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import stat
import struct
import tempfile
import threading

from tuidbg.engine import files, rescue
from tuidbg.procread.proc import parent_of, tracer_of

log = logging.getLogger("tuidbg.engine")

PREFIX = "tuidbg-agent-"
OWNER = "owner"
OWNER_MAGIC = "tuidbg-agent-owner 1"


def start_time(pid: int) -> int | None:
    """When the process started (clock ticks since boot), or None: with the PID, it names one process."""
    info = rescue.proc_info(int(pid))
    return info.start_time if info is not None else None


def pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def peer_credentials(sock: socket.socket | None) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a Unix socket, as the kernel recorded them
    when it connected; (0, -1, -1) when there is no such record."""
    if sock is None:
        return 0, -1, -1
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", raw)
    except (OSError, struct.error):
        return 0, -1, -1


def uid_of(pid: int) -> tuple[int, int] | None:
    """(uid, gid) a process runs as (the owner of its /proc folder), or None."""
    try:
        st = os.stat(f"/proc/{int(pid)}")
    except OSError:
        return None
    return st.st_uid, st.st_gid


def _descends(pid: int, ancestor: int, depth: int = 16) -> bool:
    """``pid`` is ``ancestor`` or one of its descendants (a gdb started through a wrapper script)."""
    for _ in range(depth):
        if pid == ancestor:
            return True
        parent = parent_of(pid)
        if not parent or parent == pid:
            return False
        pid = parent
    return False


def refusal(pid: int, uid: int, gdb_pid: int | None, uids: set[int]) -> str | None:
    """Why the process ``pid`` (running as ``uid``) may not talk to this session's agent socket, or
    None when it may: see the module's docstring."""
    if pid <= 0:
        return "no peer credentials"
    if uid not in uids:
        return f"process {pid} runs as user {uid}, not as the user of a process of this session"
    if not gdb_pid:
        return "the session has no gdb"
    tracer = tracer_of(pid)
    if not tracer or not _descends(tracer, gdb_pid):
        return f"process {pid} is not traced by this session's gdb"
    return None


class AgentFolder:
    """The session's private folder: its sockets and the boot scripts of an attach."""

    def __init__(self, tmp: str | None = None) -> None:
        me = os.getpid()
        self.path = tempfile.mkdtemp(prefix=f"{PREFIX}{me}-", dir=tmp)  # (0700)
        self._fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        self.shared = False
        self._write(OWNER, f"{OWNER_MAGIC}\n{pid_namespace()} {me} {start_time(me)}\n")

    def _write(self, name: str, text: str, uid: int | None = None, gid: int | None = None) -> str:
        """A new file of the folder, 0600, handed to ``uid`` when given; never through a link, never
        one that is there already."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(name, flags, 0o600, dir_fd=self._fd)
        try:
            if uid is not None and uid != os.geteuid():
                os.fchown(fd, uid, gid if gid is not None else -1)
            os.fchmod(fd, 0o600)
            data = text.encode()
            while data:
                data = data[os.write(fd, data) :]
        finally:
            os.close(fd)
        return os.path.join(self.path, name)

    def write_secret(self, name: str, text: str, uid: int, gid: int) -> str:
        """A file holding the token (a boot script), readable by ``uid`` alone (and root)."""
        try:
            os.unlink(name, dir_fd=self._fd)  # (a script of an earlier load into the same PID)
        except FileNotFoundError:
            pass
        return self._write(name, text, uid, gid)

    def socket_name(self, uid: int) -> str:
        return "agent.sock" if uid == os.geteuid() else f"agent-{uid}.sock"

    def socket_path(self, uid: int) -> str:
        return os.path.join(self.path, self.socket_name(uid))

    def secure_socket(self, uid: int, gid: int) -> None:
        """The socket just bound for ``uid``: 0600, owned by that user; the folder searchable by
        others (0711) once a socket is another user's."""
        name = self.socket_name(uid)
        if uid != os.geteuid():
            os.chown(name, uid, gid, dir_fd=self._fd, follow_symlinks=False)
            os.chmod(self.path, 0o711)
            self.shared = True
        os.chmod(os.path.join(self.path, name), 0o600)

    def remove(self) -> None:
        try:
            os.close(self._fd)
        except OSError:
            pass
        shutil.rmtree(self.path, ignore_errors=True)


def _owner(folder: str) -> tuple[str, int, int] | None:
    try:
        text = files.read_now(os.path.join(folder, OWNER), 512).decode("utf-8", "replace")
        magic, rest = text.split("\n", 1)
        ns, pid, start = rest.split()
        if magic != OWNER_MAGIC:
            return None
        return ns, int(pid), int(start)
    except (OSError, ValueError):
        return None


def stale_folders(tmp: str | None = None) -> list[str]:
    """This user's agent folders in ``tmp`` (default: the temporary folder) whose tuidbg is gone."""
    tmp = tmp or tempfile.gettempdir()
    me, ns = os.geteuid(), pid_namespace()
    out = []
    try:
        entries = list(os.scandir(tmp))
    except OSError:
        return []
    for e in entries:
        if not e.name.startswith(PREFIX):
            continue
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != me:
            continue
        owner = _owner(e.path)
        if owner is None or owner[0] != ns:
            continue  # (not one this tuidbg can judge: an older tuidbg's, another PID namespace's)
        if start_time(owner[1]) != owner[2]:
            out.append(e.path)
    return out


def sweep(tmp: str | None = None) -> list[str]:
    """Remove the stale agent folders (``stale_folders``); returns what was removed."""
    gone = stale_folders(tmp)
    for path in gone:
        log.info("removing the agent folder of a tuidbg that is gone: %s", path)
        shutil.rmtree(path, ignore_errors=True)
    return gone


def sweep_in_background(tmp: str | None = None) -> None:
    """``sweep`` in a thread of its own: a big temporary folder does not hold up the session's start."""
    threading.Thread(target=sweep, args=(tmp or tempfile.gettempdir(),), name="tuidbg-sweep", daemon=True).start()
