"""Loading the agent into a running process (``tuidbg attach``): the boot script, PEP 768
(``sys.remote_exec``) where the interpreter allows it, else a pending call through gdb, each through
a thread that runs Python (not only the main thread, which may be blocked in C: a join, a lock, a
read): 3.12/3.13, the interpreter's pending calls; 3.14, PEP 768 in the GIL's last holder; before 3.12
and on 3.14t, a thread of its own beside the main thread's pending call (``boot_thread``); and
wrapping the session's detach so that the agent is off first."""

from __future__ import annotations

import logging
import os
import struct
from dataclasses import replace

from tuidbg.engine import mi
from tuidbg.engine.errors import EngineError, MIError, Timeout
import tuidbg.engine.pyagent.gate as gate
from tuidbg.engine.pyagent.base import AgentBase, BOOT_DIR, ProcLink, TUIDBG_PARENT
import tuidbg.engine.pyagent.boot_thread as boot_thread
from tuidbg.engine.pyagent.boot_thread import BootThread
from tuidbg.engine.state import ProcessState
from tuidbg.engine.python.model import INJECT_MAIN_OR_THREAD, INJECT_PENDING, INJECT_PEP768, INJECT_WORDS, AgentInfo

log = logging.getLogger("tuidbg.engine")

# Where the queued load runs (``AgentInfo.message`` while it waits: ``python.view.agent_inactive_reason``
# and the breakpoints set meanwhile say it).
LOADS_ANY = "it loads at the next Python line of any thread"
LOADS_MAIN = "it loads when the main thread runs Python code"
LOADS_LAST = "it loads at the next Python line of the thread that last ran Python"
LOADS_MAIN_OR_THREAD = ("it loads at the main thread's next Python line, or in a thread of its own as soon as "
                        "no thread holds the GIL")
LOADS_THREAD = "it loads in a thread of its own, or at the main thread's next Python line"

# _Py_DebugOffsets of 3.14 (8-byte words; tuidbg.gdbext.cpython_layouts, layout 14): the interpreter's
# thread list, its GIL's last holder, a thread state's next.
_DO_THREADS_HEAD, _DO_GIL_HOLDER, _DO_TSTATE_NEXT = 9, 19, 24


class Injection(BootThread, AgentBase):
    """Part of ``PyAgent`` (see the module's docstring)."""

    # -- attach: loading the agent into a running process ------------------------------------------

    async def _inject(self) -> None:
        """Into every process of the session (``tuidbg attach PID PID...``, ``--children``), the first
        one first; one that cannot take it says why in its own agent status, and the others go on."""
        if self.config.remote:  # (a process of another node: the agent's socket and boot file are local)
            raise EngineError("it connects back over a local socket, which a process on another node cannot reach")
        s = self._session()
        st = s.state
        procs = [(inf.id, inf.pid) for inf in st.inferiors if inf.pid and inf.process is not ProcessState.EXITED]
        if not procs:  # (the attach's stop not read yet)
            procs = [(st.inferiors[0].id, int(self.config.pid))]
        first = procs[0][0] if procs else None
        if len(procs) == 1:
            await self._inject_into(self._attach_link(procs[0][1]), None)
            return
        failures = []
        try:
            await s.wait_refreshed(30)  # (the refresh under way reads gdb's current process, which this moves)
        except Timeout:
            pass
        # Only the process being loaded runs during its inferior calls: another one's agent, already
        # loaded, would stop in it (and gdb abandon the call), or a child's exit come in the middle.
        # (each 'inferior N' moves gdb's selection: the first process stays shown, gdb's selection put back)
        done: dict[str, list[int]] = {}  # what each said, the processes that said it (one note for all of them)
        async with s.keeping_shown(first), self._only_this_process():
            for iid, pid in procs:
                link = self._attach_link(pid)
                try:
                    await self._inject_into(link, iid, say=False)
                except (MIError, EngineError, Timeout) as exc:
                    link.info = replace(link.info, status="failed", message=f"cannot load the Python agent: {exc}")
                    failures.append(f"tuidbg: cannot load the Python agent into process {pid}: {exc}")
                else:
                    done.setdefault(self._injected_words(link), []).append(pid)
        self._publish()
        for words, pids in done.items():
            who = f"process {pids[0]}" if len(pids) == 1 else f"{len(pids)} processes ({', '.join(map(str, pids[:4]))}" + (
                ", ...)" if len(pids) > 4 else ")")
            self._notify(f"Python agent injected into {who} {words}")
        for text in failures:
            self._notify(text)

    def _attach_link(self, pid: int) -> ProcLink:
        """The link of an attached process, made before its agent says hello (the first process's is the
        one the extension started with)."""
        link = self._links.get(pid)
        if link is None:
            link = self._link if self._link.pid in (None, pid) else ProcLink(AgentInfo(status="waiting", how="attach"))
            link.pid = pid
            self._links[pid] = link
        if link.info.pid is None:
            # (the process it is for, before its hello: gdb no longer selects each process as it attaches to
            # it, RunControl.keeping_shown, so the link is made here rather than when it is first selected)
            link.info = replace(link.info, pid=pid)
        return link

    async def _inject_into(self, link: ProcLink, iid: str | None, say: bool = True) -> None:
        """Load the agent into one process: ``iid`` names its inferior when it is not gdb's selected one."""
        if iid:
            await self._switch_inferior(iid)
        pid = link.pid
        sock, uid, gid = await self._socket_of_target(pid)
        version = await self._target_hexversion()
        why = "Python before 3.14 has no PEP 768 remote execution"
        no_thread = await self._inject_own_thread(version, sock, link, say)
        if no_thread is None:
            return
        if version is not None and version >= 0x030E0000:
            script = self._write_boot_script(pid, sock, uid, gid)
            ok, why = await self._inject_pep768(script, link)
            if ok:
                link.info = replace(link.info, status="waiting", inject=INJECT_PEP768, inject_note=None,
                                    message=link.info.message)
                self._say_injected(link, say)
                return
        log.info("PEP 768 injection not used in %s (%s); using a pending call", pid, why)
        if no_thread:
            why += f"; no thread of its own: {no_thread}"
        any_thread = version is not None and version >= 0x030C0000
        await self._inject_pending_call(self._boot_code(sock), link, any_thread)
        link.info = replace(link.info, status="waiting", inject=INJECT_PENDING, inject_note=why,
                            message=LOADS_ANY if link.injection and link.injection[0] == "pending-any" else LOADS_MAIN)
        self._say_injected(link, say)

    async def _inject_own_thread(self, version: int | None, sock: str, link: ProcLink, say: bool) -> str | None:
        """Where neither a pending call nor PEP 768 reaches a thread that runs Python, a booting thread of
        its own (``boot_thread``): before 3.12, and in a free-threaded build. None once it is done; else
        why not, nothing changed ("" where it is not for this interpreter): then the other ways are taken."""
        old = version is None or version < 0x030C0000
        if not old:
            if version < 0x030E0000:
                return ""  # (3.12, 3.13: the interpreter's pending calls, which any thread runs)
            gil = await self.gil_holder()
            if not gil.get("free_threaded"):
                return ""  # (3.14 with a GIL: PEP 768 in the thread that last held it)
        try:
            # (the main thread's pending call beside it, whichever runs Python first: a main thread that runs
            # Python loads the agent before its next line, as a pending call alone did)
            await self._inject_thread(self._boot_code(sock), link, main_too=True)
        except EngineError as exc:
            log.info("no booting thread in %s (%s); the other ways", link.pid, exc)
            return str(exc)
        link.info = replace(link.info, status="waiting", inject=INJECT_MAIN_OR_THREAD, inject_note=None,
                            message=LOADS_MAIN_OR_THREAD if old else LOADS_THREAD)
        self._say_injected(link, say)
        return None

    async def _switch_inferior(self, iid: str) -> None:
        """gdb's current inferior becomes ``iid`` (and its thread the selected one). Not MI's --thread-group
        option: gdb 13 runs an inferior call under it with the wrong process's breakpoints (the call's
        return breakpoint went into the other process, which died of it)."""
        await self._session().cmd(f"-interpreter-exec console {mi.quote('inferior ' + iid.lstrip('i'))}")

    def _say_injected(self, link: ProcLink, say: bool = True) -> None:
        """Which path loaded the agent (and why not PEP 768): in the log and, through the listeners, the
        UI's console (``say``; a session of several processes says it once for all of them)."""
        text = f"Python agent injected into process {link.pid} {self._injected_words(link)}"
        log.info("%s", text)
        if say:
            self._notify(text)

    @staticmethod
    def _injected_words(link: ProcLink) -> str:
        text = INJECT_WORDS[link.info.inject]
        if link.info.inject_note:
            text += f" (not PEP 768: {link.info.inject_note})"
        return text

    def _boot_args(self, sock: str) -> dict[str, object]:
        s = self.session
        following = getattr(self.config, "children", "none") != "none"
        several = following or (s is not None and len(s.state.inferiors) > 1)
        return {"socket": sock, "token": self._token, "parent": TUIDBG_PARENT,
                "several": several, "children": following}

    def _boot_code(self, sock: str) -> str:
        """The Python statement the target runs to load the agent: self-contained (it needs no file of this
        session, which is gone once tuidbg detaches) and it can never raise. A pending call that fails
        kills the program's main thread ("SystemError: error return without exception set"), so every
        error is swallowed here; the boot script reports its own on the program's stderr."""
        boot = os.path.join(BOOT_DIR, "attach.py")
        args = self._boot_args(sock)
        return (
            "try:\n"
            f" exec(compile(open({boot!r}).read(), {boot!r}, 'exec'), "
            f"{{'__name__': '_tuidbg_attach', 'TUIDBG_ARGS': {args!r}}})\n"
            "except BaseException:\n"
            " pass\n"
        )

    def _write_boot_script(self, pid: int | None, sock: str, uid: int, gid: int) -> str:
        """3.14's PEP 768 runs a script file: the same statement, in this session's private folder,
        readable by the target's user alone (it holds the token: ``gate``)."""
        assert self._folder is not None
        text = "# tuidbg: loads tuidbg's agent into this process (written by tuidbg attach)\n" + self._boot_code(sock)
        return self._folder.write_secret(f"attach-{pid}.py", text, uid, gid)

    async def _socket_of_target(self, pid: int | None) -> tuple[str, int, int]:
        """The socket the agent in process ``pid`` connects to, and the user (uid, gid) it runs as: tuidbg's
        own, or, when root attaches to another user's process, a socket of that user's (``gate``)."""
        ids = gate.uid_of(pid) if pid else None
        uid, gid = ids if ids is not None else (os.geteuid(), os.getegid())
        if uid == os.geteuid():
            return self._sock_path or "", uid, gid
        return await self._socket_for(uid, gid), uid, gid

    async def _cancel_injection(self) -> None:
        """Before detaching: the load queued in a process whose agent never said hello must not run once
        tuidbg is gone (it would find no debugger, or, before this fix, no boot file)."""
        s = self._session()
        for link in list(self._links.values()) or [self._link]:
            inj, link.injection = link.injection, None
            if inj is None or link.hello is not None:
                continue
            kind, addr, iid = inj
            try:
                if iid and len(self._links) > 1:
                    await self._switch_inferior(iid)
                if kind == "thread":
                    # The booting thread ends at its gate, and the pending call beside it does nothing (one that
                    # claimed the load already is under way: it finds no debugger and says so on stderr).
                    gate = addr + boot_thread.GATE
                    r = await s.cmd(f"-data-read-memory-bytes {gate:#x} 4")
                    now = int.from_bytes(bytes.fromhex(mi.as_list(r.get("memory"))[0]["contents"]), "little")
                    if now != boot_thread.GATE_CLAIMED:
                        await s.cmd(f"-data-write-memory-bytes {gate:#x} "
                                    f"{struct.pack('<i', boot_thread.GATE_CANCELLED).hex()}")
                elif kind in ("pending", "pending-any"):
                    # The queued call runs PyRun_SimpleString on this page: make it a statement that does nothing.
                    await s.cmd(f"-data-write-memory-bytes {addr:#x} {b'pass'.hex()}00")
                elif kind == "pep768":
                    await s.cmd(f"-data-write-memory-bytes {addr:#x} {struct.pack('<i', 0).hex()}")
            except (MIError, Timeout) as exc:
                log.info("cancelling the agent's load in %s: %s", link.pid, exc)

    def _inferior_of(self, link: ProcLink) -> str | None:
        st = self._state()
        inf = next((i for i in st.inferiors if i.pid == link.pid), None) if st is not None else None
        return inf.id if inf is not None else None

    def _injections_pending(self) -> bool:
        return any(link.injection is not None and link.hello is None for link in self._links.values())

    async def _target_hexversion(self) -> int | None:
        r = await self._session().cmd('-data-evaluate-expression "*(unsigned int*)&Py_Version"', check=False)
        if r.cls != "done":
            return None  # no Py_Version: 3.10 or older
        return mi.to_int(r.get("value"))

    async def _inject_pending_call(self, source: str, link: ProcLink, any_thread: bool = False) -> None:
        """3.9-3.13: Py_AddPendingCall(PyRun_SimpleString, page) as gdb inferior calls.

        ``any_thread`` (3.12, 3.13): ``_PyEval_AddPendingCall(main interpreter, ..., 0)`` instead, the
        interpreter's own queue that any of its threads runs at its next eval-breaker check (CPython's
        ``make_pending_calls``; ``Py_AddPendingCall`` is that call with "main thread only"), so that a
        program whose main thread is blocked in C (``join``, a lock, a read) loads the agent in a thread
        that runs Python. Before 3.12 every pending call is the main thread's.

        The page comes from an inferior mmap (a plain system call: unlike malloc it takes no lock that a
        frozen thread could hold) and holds ``source`` itself. The pending call runs in the main thread at
        its next eval-breaker check; until the agent says hello, ``_cancel_injection`` can void it.
        """
        s = self._session()
        code = source.encode() + b"\0"
        if len(code) > 4096:
            raise EngineError(f"the agent's boot statement is {len(code)} bytes, over one page")
        if any_thread:
            r = await s.cmd('-data-evaluate-expression "(long)&_PyEval_AddPendingCall"', check=False)
            any_thread = r.cls == "done"
        for name in ("Py_AddPendingCall", "PyRun_SimpleString"):  # (a process that is not Python: nothing is mapped in it)
            r = await s.cmd(f'-data-evaluate-expression "(long)&{name}"', check=False)
            if r.cls != "done":
                raise EngineError(f"it has no {name} (not a Python process)")
        await s.cmd("-gdb-set unwindonsignal on", check=False)
        # Only the calling thread runs during the calls: another thread of the program that forks meanwhile
        # (a pool replacing a worker) made gdb 13 fail in the middle of the call and end (exit 1), leaving the
        # thread in the call's made-up frame, which then crashed the program. (Neither call waits for
        # another thread: mmap is a system call, Py_AddPendingCall's lock is only ever held a moment.)
        shown = await s.cmd("-gdb-show scheduler-locking", check=False)
        locking = str(shown.get("value") or "replay") if shown.cls == "done" else "replay"
        await s.cmd("-gdb-set scheduler-locking on", check=False)
        try:
            r = await s.cmd(
                '-data-evaluate-expression "(long)((void*(*)(void*,unsigned long,int,int,int,long))mmap)(0,4096,3,34,-1,0)"',
                timeout=30,
            )
            page = mi.to_int(r.get("value"))
            if page is None or page <= 0:
                raise EngineError(f"mmap in the program failed ({r.get('value')})")
            await s.cmd(f"-data-write-memory-bytes {page:#x} {code.hex()}")
            interp = None
            if any_thread:
                # (PyInterpreterState_Main: a plain read of _PyRuntime, no lock)
                r = await s.cmd('-data-evaluate-expression "(long)((void*(*)(void))PyInterpreterState_Main)()"',
                                check=False, timeout=30)
                interp = mi.to_int(r.get("value")) if r.cls == "done" else None
            if interp:
                call = (f"((int(*)(void*,void*,void*,int))_PyEval_AddPendingCall)"
                        f"((void*){interp:#x},(void*)PyRun_SimpleString,(void*){page:#x},0)")
            else:
                call = f"((int(*)(void*,void*))Py_AddPendingCall)((void*)PyRun_SimpleString,(void*){page:#x})"
            r = await s.cmd("-data-evaluate-expression " + mi.quote(call), timeout=30)
            if mi.to_int(r.get("value")) != 0:
                raise EngineError("Py_AddPendingCall refused (its queue is full)")
            link.injection = ("pending-any" if interp else "pending", page, self._inferior_of(link))
        finally:
            await s.cmd(f"-gdb-set scheduler-locking {locking}", check=False)
            await s.cmd("-gdb-set unwindonsignal off", check=False)

    async def _inject_pep768(self, script: str, link: ProcLink) -> tuple[bool, str]:
        """3.14+: write the PEP 768 fields of a thread state (no inferior call at all): that of the
        thread that last held the GIL, which runs Python or did last, else the main thread's.

        The same fields in a free-threaded build (the eval-breaker bit is the one CPython's own
        ``sys.remote_exec`` sets, its stop-the-world bit: a thread that finds no stop-the-world under
        way goes on at once). The debugger-support offsets are found by their shape in
        ``_Py_DebugOffsets`` (the last block: ..., pending-call offset 0, script-path offset 4,
        script-path size 512) rather than by a hard-coded position, because the struct grew
        during 3.14's betas.
        """
        s = self._session()

        r = await s.cmd('-data-evaluate-expression "(unsigned long)&_PyRuntime"', check=False)
        rt = mi.to_int(r.get("value")) if r.cls == "done" else None
        if not rt:
            return False, "no _PyRuntime symbol"
        blob = await s.read_memory(rt, 2048)
        if blob[:8] != b"xdebugpy":
            return False, "no _Py_DebugOffsets cookie"
        words = struct.unpack_from("<256Q", blob)
        interp_head_off, threads_main_off = words[5], words[10]
        dbg = None
        for i in range(30, 256 - 6):
            eb, rds, rde, pend, path_off, size = words[i : i + 6]
            if pend == 0 and path_off == 4 and size == 512 and 0 < eb < 1 << 16 and 0 < rds < 1 << 16 and 0 < rde < 1 << 20:
                dbg = (eb, rds, rde, pend, path_off, size)
                break
        if dbg is None:
            return False, "debugger support offsets not found"
        eb, rds, rde, pend, path_off, size = dbg
        interp = struct.unpack("<Q", await s.read_memory(rt + interp_head_off, 8))[0]
        if not interp:
            return False, "no interpreter"
        enabled = struct.unpack("<i", await s.read_memory(interp + rde, 4))[0]
        if enabled != 1:
            return False, "remote debugging is disabled in it (PYTHON_DISABLE_REMOTE_DEBUG or -X disable-remote-debug)"
        tstate = struct.unpack("<Q", await s.read_memory(interp + threads_main_off, 8))[0]
        if not tstate:
            return False, "no main thread state"
        # The thread that last held the GIL runs Python (or did last): its state, not the main thread's,
        # whose next Python line may never come (blocked in C: join, a lock, a read). (A free-threaded
        # build has no holder: the main thread's.)
        holder = struct.unpack("<Q", await s.read_memory(interp + words[_DO_GIL_HOLDER], 8))[0]
        target, ts, seen = tstate, struct.unpack("<Q", await s.read_memory(interp + words[_DO_THREADS_HEAD], 8))[0], 0
        while holder and ts and seen < 4096:  # (only a state in the interpreter's list: never a stale pointer)
            if ts == holder:
                target = holder
                break
            ts, seen = struct.unpack("<Q", await s.read_memory(ts + words[_DO_TSTATE_NEXT], 8))[0], seen + 1
        link.info = replace(link.info, message=LOADS_MAIN if target == tstate else LOADS_LAST)
        tstate = target
        path = script.encode() + b"\0"
        if len(path) > size:
            return False, "script path too long"
        await s.cmd(f"-data-write-memory-bytes {tstate + rds + path_off:#x} {path.hex()}")
        await s.cmd(f"-data-write-memory-bytes {tstate + rds + pend:#x} {struct.pack('<i', 1).hex()}")
        link.injection = ("pep768", tstate + rds + pend, self._inferior_of(link))
        breaker = struct.unpack("<Q", await s.read_memory(tstate + eb, 8))[0]
        await s.cmd(f"-data-write-memory-bytes {tstate + eb:#x} {struct.pack('<Q', breaker | (1 << 5)).hex()}")
        return True, ""

    # -- detach ------------------------------------------------------------------------------

    def _wrap_detach(self, session) -> None:
        # DebugSession has no hook before detaching; wrap this session's detach so quitting an attached
        # process always switches the agent off first.
        original = session.detach

        async def detach() -> None:
            held = await self._quiesce()  # type: ignore[attr-defined]  (requests)
            try:
                await self.shutdown()
                await original()
            finally:
                if held:
                    self._agent_lock().release()  # type: ignore[attr-defined]  (requests)

        session.detach = detach
