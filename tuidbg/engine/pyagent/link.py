"""The socket link to the agent: the server it connects to, hello, messages, the stop function's
breakpoint, and leaving the program without gdb (``restore_bytes``, ``abandon``)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import tempfile
from dataclasses import replace
from typing import Any

from tuidbg.agent import protocol as P
from tuidbg.engine import mi, rescue
from tuidbg.engine.errors import EngineError, GdbExited, MIError, Timeout
from tuidbg.engine.python.model import AGENT_DIR, AgentInfo
from tuidbg.engine.state import mark_internal
from tuidbg.engine.pyagent.base import AgentBase, BOOT_DIR, ProcLink, _reply

log = logging.getLogger("tuidbg.engine")


class AgentLink(AgentBase):
    """Part of ``PyAgent`` (see the module's docstring)."""

    # -- connection -----------------------------------------------------------------------------

    async def _listen(self) -> None:
        if self._server is not None:
            return
        self._dir = tempfile.mkdtemp(prefix="tuidbg-agent-")
        os.chmod(self._dir, 0o700)
        self._sock_path = os.path.join(self._dir, "agent.sock")
        self._server = await asyncio.start_unix_server(self._on_client, path=self._sock_path, limit=1 << 24)

    def closed(self) -> None:
        """The session ended, or let gdb go: the socket and its folder go (a run's program is killed
        without the agent's shutdown; and a session ended any other way must not leave them either).
        Off the loop's thread (a signal guard's, the loop hung) only the folder is removed."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            folder, self._dir = self._dir, None
            if folder:
                shutil.rmtree(folder, ignore_errors=True)
            return
        self._close_server()

    def _close_server(self) -> None:
        # Every connection, the agent's and any still saying hello: an agent whose hello was not read
        # yet must see the end of the conversation (and switch itself off), not wait on it forever.
        for w in list(self._conns):
            w.close()
        self._conns.clear()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

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

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._server is None:  # (closing)
            writer.close()
            return
        self._conns.add(writer)
        try:
            await self._serve(reader, writer)
        finally:
            self._conns.discard(writer)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
            msg = json.loads(line.decode("utf-8", "replace")) if line else {}
        except (ValueError, OSError):
            writer.close()
            return
        if msg.get("ev") != "hello" or msg.get("token") != self._token:
            writer.close()
            return
        link = self._hello_link(msg)
        if link.writer is not None:
            link.writer.close()
        link.writer = writer
        try:
            await self._on_hello(msg, link)
            while True:
                raw = await reader.readline()
                if not raw:
                    break
                try:
                    self._on_agent_message(json.loads(raw.decode("utf-8", "replace")))
                except ValueError:
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
        if link is None and pid is not None:  # a process in a PID namespace of its own knows itself by another number
            link = next((k for k in self._links.values() if k.hello is None and k.pid and _ns_pid(k.pid) == pid), None)
            if link is not None:
                return link
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
                self._links[pid] = link
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
        ops = [{"op": "set_bps", "bps": self._bp_defs()}, dict(op="options", **self._opts)]
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
            self._transient += 1
            try:
                s.set_state(s.state.with_python(transient=True))
                await s.interrupt()
                # gdb 10 made the breakpoint before it failed to write it (the error names its number):
                # that one, written when the program goes on; a second at the same place would hide it
                await s.refresh_breakpoints()
                made = [b for b in s.state.breakpoints if b.original_location == f"*{addr:#x}"]
                bp = made[-1] if made else await s.break_insert(address=addr)
                await s.cmd("-exec-continue")
            finally:
                self._transient -= 1
                if s.state.python.transient and self._transient == 0:
                    s.set_state(s.state.with_python(transient=False))
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
            replies = msg.get("replies") or []
            if rid == "init":
                self._apply_statuses(_reply(replies, "set_bps").get("bps") or [])
                return
            fut = self._requests.pop(rid, None) if isinstance(rid, int) else None
            if fut is not None and not fut.done():
                fut.set_result(replies)
            for r in replies:
                if r.get("op") == "set_bps":
                    self._apply_statuses(r.get("bps") or [])
            return
        ev = msg.get("ev")
        if ev == "bps":
            self._apply_statuses(msg.get("bps") or [])

    async def _send(self, obj: dict[str, Any], link: ProcLink | None = None) -> None:
        w = (link or self._link).writer
        if w is None:
            return
        w.write((json.dumps(obj) + "\n").encode())
        await w.drain()


def _ns_pid(pid: int) -> int | None:
    """The number process ``pid`` has in its own PID namespace (the last of /proc's NSpid)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError, IndexError):
        pass
    return None
