"""The socket link to the agent: the server it connects to, hello, messages, the stop function's
breakpoint, and leaving the program without gdb (``restore_bytes``, ``abandon``)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
from dataclasses import replace
from typing import Any

from tuidbg.agent import protocol as P
from tuidbg.engine import mi, rescue
from tuidbg.engine.errors import EngineError, GdbExited, MIError, Timeout
from tuidbg.engine.python.model import AGENT_DIR, AgentInfo
from tuidbg.engine.state import mark_internal
import tuidbg.engine.pyagent.gate as gate
from tuidbg.engine.pyagent.base import AgentBase, BOOT_DIR, ProcLink, _reply

log = logging.getLogger("tuidbg.engine")


class AgentLink(AgentBase):
    """Part of ``PyAgent`` (see the module's docstring)."""

    # -- connection -----------------------------------------------------------------------------

    async def _listen(self) -> None:
        if self._server is not None:
            return
        gate.sweep_in_background()
        self._folder = gate.AgentFolder()
        self._sock_path = await self._socket_for(os.geteuid(), os.getegid())

    async def _socket_for(self, uid: int, gid: int) -> str:
        """The socket that the agent in a process of user ``uid`` connects to (one per user: see
        ``gate``), listening from now on."""
        assert self._folder is not None
        path = self._folder.socket_path(uid)
        if uid in self._servers:
            return path
        server = await asyncio.start_unix_server(self._on_client, path=path, limit=MAX_LINE)
        self._servers[uid] = server
        self._uids.add(uid)
        self._folder.secure_socket(uid, gid)
        if uid == os.geteuid():
            self._server = server
        return path

    @property
    def _dir(self) -> str | None:
        return self._folder.path if self._folder is not None else None

    def closed(self) -> None:
        """The session ended, or let gdb go: the socket and its folder go (a run's program is killed
        without the agent's shutdown; and a session ended any other way must not leave them either).
        Off the loop's thread (a signal guard's, the loop hung) only the folder is removed."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            folder, self._folder = self._folder, None
            if folder is not None:
                folder.remove()
            return
        self._close_server()

    def _close_server(self) -> None:
        # Every connection, the agent's and any still saying hello: an agent whose hello was not read
        # yet must see the end of the conversation (and switch itself off), not wait on it forever.
        for w in list(self._conns):
            w.close()
        self._conns.clear()
        self._hellos.clear()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        for server in self._servers.values():
            server.close()
        self._servers.clear()
        self._server = None
        if self._folder is not None:
            self._folder.remove()
            self._folder = None

    async def _set_program_env(self) -> None:
        s = self._session()
        orig = self.config.program_env.get("PYTHONPATH", os.environ.get("PYTHONPATH"))
        path = BOOT_DIR + (os.pathsep + orig if orig else "")
        env = {"PYTHONPATH": path, P.ENV_SOCKET: self._sock_path or "", P.ENV_TOKEN: self._token}
        if getattr(self.config, "children", "none") != "none":
            env[P.ENV_CHILDREN] = "1"
        if orig is not None:
            env[P.ENV_ORIG_PYTHONPATH] = orig
        else:
            await s.cmd(f"-interpreter-exec console {mi.quote('unset environment ' + P.ENV_ORIG_PYTHONPATH)}", check=False)
        for k, v in env.items():
            await s.cmd(f"-gdb-set environment {k}={v}")

    def _refusal(self, pid: int, uid: int) -> str | None:
        s = self.session
        return gate.refusal(pid, uid, s.gdb_pid() if s is not None else None, self._uids)

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._server is None:  # (closing)
            writer.close()
            return
        pid, uid, _gid = gate.peer_credentials(writer.get_extra_info("socket"))
        why = self._refusal(pid, uid)
        if why is not None:
            log.info("agent socket: a connection refused: %s", why)
            if not self._refused:  # (once: a flood of them is one line, the rest are in the log)
                self._notify(f"tuidbg: a connection to the Python agent's socket was refused: {why}")
            self._refused += 1
            writer.close()
            return
        # One connection saying hello per process (a newer one replaces it: the process's agent started
        # again, after an exec), beside its agent's connection, which only a new hello replaces.
        old = self._hellos.get(pid)
        if old is not None:
            old.close()
        self._hellos[pid] = writer
        self._conns.add(writer)
        try:
            await self._serve(reader, writer, pid)
        finally:
            self._conns.discard(writer)
            if self._hellos.get(pid) is writer:
                del self._hellos[pid]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pid: int) -> None:
        try:
            line, rest = await _hello_in_time(reader, pid)
            msg = json.loads(line.decode("utf-8", "replace"))
        except asyncio.TimeoutError:
            log.info("agent socket: process %s said no hello within %s s", pid, HELLO_TIMEOUT)
            writer.close()
            return
        except (ValueError, RecursionError, OSError, asyncio.IncompleteReadError) as exc:
            log.info("agent socket: process %s: no hello (%s)", pid, exc)
            writer.close()
            return
        finally:
            if self._hellos.get(pid) is writer:
                del self._hellos[pid]
        if not isinstance(msg, dict) or msg.get("ev") != "hello" or not secrets.compare_digest(
            str(msg.get("token")).encode(), self._token.encode()
        ):
            writer.close()
            return
        why = _bad_hello(msg)
        if why is not None:
            log.info("agent socket: process %s: %s", pid, why)
            writer.close()
            return
        msg["pid"] = pid  # (the kernel's number for it, the one gdb knows: not the one in its PID namespace)
        link = self._hello_link(msg)
        if link.writer is not None:
            link.writer.close()
        link.writer = writer
        try:
            await self._on_hello(msg, link)
            while True:
                try:
                    raw, rest = await _next_line(reader, rest)
                except ValueError as exc:  # (a line over MAX_LINE: asyncio's LimitOverrunError)
                    log.info("agent socket: process %s: %s; closing its connection", pid, exc)
                    writer.close()
                    break
                if raw is None:
                    break
                try:
                    got = json.loads(raw.decode("utf-8", "replace"))
                    if isinstance(got, dict):
                        self._on_agent_message(got)
                except (ValueError, RecursionError):  # (as before: a message it cannot use is dropped)
                    continue
        except (OSError, asyncio.IncompleteReadError, MIError, EngineError, Timeout, GdbExited) as exc:
            log.info("agent connection: %s", exc)
        except asyncio.CancelledError:
            # The session is closing. End quietly: asyncio's stream callback asks a cancelled
            # handler task for its exception and logs an error for it.
            writer.close()
        finally:
            if link.writer is writer:
                link.writer = None
                link.connected.clear()
                if link.info.status == "connected":
                    link.info = replace(link.info, status="disconnected", message="the Python agent closed the connection")
                    self._publish()

    def _hello_link(self, msg: dict[str, Any]) -> ProcLink:
        """The link of the process saying hello: the one made for it, else the first process's (its
        first hello, or the program run again), else a new one (a child of the program)."""
        pid = msg.get("pid") if isinstance(msg.get("pid"), int) else None
        link = self._links.get(pid) if pid is not None else None
        if link is None:
            st = self._state()
            others = st is not None and any(inf.pid and inf.pid != pid for inf in st.live_inferiors())
            if self._link.pid is None or (msg.get("how") != "fork" and not others):
                link = self._link  # (the program's own process)
                if link.pid is not None:
                    self._links.pop(link.pid, None)
            else:
                link = ProcLink(AgentInfo(status="waiting", how="fork"))
            link.pid = pid
            if pid is not None:
                self.add_link(link)
        return link

    async def _on_hello(self, msg: dict[str, Any], link: ProcLink) -> None:
        link.hello = msg
        self._conn += 1
        link.conn = self._conn
        link.injection = None  # it ran
        if link.stub_bp is not None:
            number, link.stub_bp = link.stub_bp, None
            await self._delete_bp(number)
        link.step_token = link.interrupted_token = 0
        link.last_stop = None
        info = AgentInfo(
            status="connected",
            pid=msg.get("pid"),
            python=msg.get("python"),
            backend=msg.get("backend"),
            how=msg.get("how"),
            stub_addr=msg.get("stub") or None,
            stub_traps=bool(msg.get("stub_traps")),
            arm_addr=msg.get("arm") or None,
            eval_addr=msg.get("eval") or None,
            mailbox=msg.get("mailbox") or None,
            main_native_id=msg.get("main_native_id"),
            control_native_id=msg.get("control_native_id"),
            agent_dir=str(msg.get("agent_dir") or AGENT_DIR),
            inject=link.info.inject,
            inject_note=link.info.inject_note,
            free_threaded=bool(msg.get("free_threaded")),
        )
        if msg.get("error") or not info.stub_addr:
            link.info = replace(link.info, status="failed", message=str(msg.get("error") or "no stop function"),
                                python=info.python)
            link.connected.clear()
            self._publish()
            await self._send({"id": "init", "ops": []}, link)
            self._notify(f"tuidbg: the Python agent cannot work in process {link.pid}: {msg.get('error')}")
            return
        if not info.stub_traps:
            await self._insert_stub_bp(int(info.stub_addr), link)
        link.info = info
        link.connected.set()
        ops = [{"op": "set_bps", "bps": self._bp_defs(link.pid)}, dict(op="options", **self._opts)]
        if self._entry_wanted and link is self._link and msg.get("how") == "run":
            self._entry_wanted = False  # (the program's own process: not a child's, engine.entry)
            ops.append({"op": "entry"})
        await self._send({"id": "init", "ops": ops}, link)
        self._publish()

    def restore_bytes(self) -> dict[int, bytes]:
        """The agent's stop function, as it was before gdb put its breakpoint there (for a session that
        must leave the process without gdb's help: ``DebugSession.abandon``)."""
        return dict(self._stub_code)

    def abandon(self) -> None:
        """Without gdb (hung or gone): tell the agent in every process over its own socket to switch
        itself off. Synchronous: the socket's transport sends at once when its buffer is empty."""
        for w in {self._writer, *(link.writer for link in self._links.values())}:
            if w is not None and not w.is_closing():
                try:
                    w.write((json.dumps({"ops": [{"op": "detach"}]}) + "\n").encode())
                except (OSError, RuntimeError):
                    pass

    async def _insert_stub_bp(self, addr: int, link: ProcLink | None = None) -> None:
        link = link or self._link
        s = self._session()
        pid = link.pid or s.state.pid or self.config.pid
        orig = rescue.read_memory(int(pid), addr, 4) if pid else None
        link.stub_code = {addr: orig} if orig else {}
        try:
            bp = await s.break_insert(address=addr)
        except MIError as exc:
            if not s.state.is_running:
                raise
            # A gdb without asynchronous MI (old cuda-gdb) cannot insert while the program runs. The
            # interrupt's stop is not the user's: marked transient, as a request's own stops are.
            log.info("inserting the agent breakpoint while running failed (%s); interrupting", exc.message)
            with self.request_window(s):
                s.set_state(s.state.with_python(transient=True))
                await s.interrupt()
                # gdb 10 made the breakpoint before it failed to write it (the error names its number):
                # that one, written when the program goes on; a second at the same place would hide it
                await s.refresh_breakpoints()
                made = [b for b in s.state.breakpoints if b.original_location == f"*{addr:#x}"]
                bp = made[-1] if made else await s.break_insert(address=addr)
                await s.cmd("-exec-continue")
        link.stub_bp = bp.number
        s.set_state(mark_internal(s.state, bp.number))

    async def _delete_stub_bp(self) -> None:
        if self._stub_bp is None or self.session is None:
            return
        number, self._stub_bp = self._stub_bp, None
        await self._delete_bp(number)

    async def _delete_bp(self, number: str) -> None:
        s = self.session
        if s is not None and s.client is not None and s.client.alive:
            await s.cmd(f"-break-delete {number}", check=False)
            await s.refresh_breakpoints()

    def _on_agent_message(self, msg: dict[str, Any]) -> None:
        if "re" in msg:
            rid = msg.get("re")
            raw = msg.get("replies")
            replies = [r for r in raw if isinstance(r, dict)] if isinstance(raw, list) else []
            if rid == "init":
                self._apply_statuses(_list(_reply(replies, "set_bps").get("bps")))
                return
            fut = self._requests.pop(rid, None) if isinstance(rid, int) else None
            if fut is not None and not fut.done():
                fut.set_result(replies)
            for r in replies:
                if r.get("op") == "set_bps":
                    self._apply_statuses(_list(r.get("bps")))
            return
        ev = msg.get("ev")
        if ev == "bps":
            self._apply_statuses(_list(msg.get("bps")))

    async def _send(self, obj: dict[str, Any], link: ProcLink | None = None) -> None:
        w = (link or self._link).writer
        if w is None:
            return
        w.write((json.dumps(obj) + "\n").encode())
        await w.drain()


def _list(v: Any) -> list:
    return v if isinstance(v, list) else []


HELLO_TIMEOUT = 10.0  # from connecting to the hello's end, running (the agent sends it at once; a loaded machine)
HELLO_TICK = 0.25
HELLO_MAX = 64 * 1024  # the hello: 490 bytes measured, its two paths at most PATH_MAX (4 KB) each
# Any later line: the largest the agent sends is its breakpoint table's statuses (measured: 100 KB for
# 1,000 breakpoints, a condition's error message more): 8 MB is ~80,000 breakpoints. A longer line
# ends that connection; asyncio's reader buffers at most about twice this per connection meanwhile.
MAX_LINE = 8 * 1024 * 1024


async def _hello_in_time(reader: asyncio.StreamReader, pid: int) -> tuple[bytes, bytes]:
    """``_read_hello`` within HELLO_TIMEOUT of the process's running time: a process gdb holds stopped
    meanwhile (all-stop: another process of the session stopped) is not running late."""
    task = asyncio.ensure_future(_read_hello(reader))
    spent = 0.0
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=HELLO_TICK)
            if done:
                return task.result()
            info = rescue.proc_info(pid)
            if info is None or info.state not in ("t", "T"):
                spent += HELLO_TICK
            if spent >= HELLO_TIMEOUT:
                raise asyncio.TimeoutError
    finally:
        if not task.done():
            task.cancel()


async def _read_hello(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """The first line (at most HELLO_MAX bytes), and whatever came after it in the same reads."""
    buf = b""
    while b"\n" not in buf:
        chunk = await reader.read(HELLO_MAX + 1 - len(buf))
        if not chunk:
            raise asyncio.IncompleteReadError(buf, None)
        buf += chunk
        if len(buf) > HELLO_MAX and b"\n" not in buf:
            raise ValueError(f"a first line longer than {HELLO_MAX} bytes")
    line, _, rest = buf.partition(b"\n")
    return line, rest


async def _next_line(reader: asyncio.StreamReader, rest: bytes) -> tuple[bytes | None, bytes]:
    """The next line, from what ``_read_hello`` read ahead first; (None, b"") at the end."""
    if b"\n" in rest:
        line, _, rest = rest.partition(b"\n")
        return line, rest
    more = await reader.readline()
    if not more:
        return None, b""
    if len(rest) + len(more) > MAX_LINE:
        raise ValueError(f"a line longer than {MAX_LINE} bytes")
    return rest + more, b""


_HELLO_TYPES: dict[str, tuple[type, ...]] = {
    "pid": (int,), "python": (str,), "backend": (str,), "how": (str,), "stub": (int, type(None)),
    "stub_traps": (bool, type(None)), "arm": (int, type(None)), "mailbox": (int, type(None)),
    "main_native_id": (int, type(None)), "control_native_id": (int, type(None)), "agent_dir": (str, type(None)),
    "free_threaded": (bool, type(None)), "error": (str, type(None)),
}


def _bad_hello(msg: dict[str, Any]) -> str | None:
    """What is wrong with a hello's fields (None: nothing), before any of them is used."""
    for key, types in _HELLO_TYPES.items():
        if key in msg and (not isinstance(msg[key], types) or (types[0] is int and isinstance(msg[key], bool))):
            return f"its hello's {key!r} is a {type(msg[key]).__name__}"
    return None
