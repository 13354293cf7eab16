"""DebugSession: one gdb (or cuda-gdb), the program it debugs, and the operations on them.

The session owns the MI client, the program's pseudo-terminal and the current
``DebuggerState``: it starts gdb and loads the program, turns async records into
new states through the pure reducer (``tuidbg.engine.state``), watches gdb's
health, and closes (or, without gdb, abandons) the session leaving nothing
behind. The MI commands themselves are families of mixins in
``tuidbg.engine.commands`` (run control, stack and refresh, breakpoints, data).
Listeners (``tuidbg.engine.listeners``) get every new state, the program's output and gdb's
console output; they are plain callables, so the engine knows nothing of the UI.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from dataclasses import replace
from typing import Any, Awaitable, Callable, Coroutine

from tuidbg.engine import mi, remote, rescue
from tuidbg.engine.client import MIClient, Result
from tuidbg.engine.commands.base import CMD_TIMEOUT, START_TIMEOUT, RefreshStage
from tuidbg.engine.commands.breakpoints import BreakpointCommands
from tuidbg.engine.commands.data import DataCommands
from tuidbg.engine.commands.finish import FinishCommands
from tuidbg.engine.commands.run import RunControl
from tuidbg.engine.commands.stack import StackCommands
from tuidbg.engine.errors import EngineError, GdbExited, MIError, StartupError, Timeout, attach_failure
from tuidbg.engine.extensions import Extension, ExtensionFactory
from tuidbg.engine.inferior_tty import InferiorTTY
from tuidbg.engine.listeners import Listeners, tuidbgs_own_stop
from tuidbg.engine.session_config import GdbInfo, SessionConfig, parse_banner, program_arguments
from tuidbg.engine.state import DebuggerState, ProcessState, gdb_gone, reduce, stop_seen
from tuidbg.engine.transport import SubprocessTransport, Transport, gdb_env
from tuidbg.engine.watchdog import GdbHealth, GdbWatchdog

log = logging.getLogger("tuidbg.engine")

POLITE_CLOSE = 8.0  # how long close() asks gdb to detach/kill and exit before it acts without gdb
ACTIVITY_LINGER = 1.0  # "loading libfoo.so" stays in the status this long after the last library event
THREADS_SETTLE = 0.05  # threads that start or end: their state goes to the listeners this much later, at most


class DebugSession(Listeners, RunControl, FinishCommands, StackCommands, BreakpointCommands, DataCommands):
    """One gdb and the program it debugs: gdb's life (start-up, records, health, close) here, the MI
    command families in ``tuidbg.engine.commands``."""

    def __init__(self, config: SessionConfig, transport: Transport | None = None,
                 extensions: ExtensionFactory | None = None) -> None:
        """``extensions`` makes the parts that plug into this session (``tuidbg.engine.debugger``
        gives the defaults: ``new_session``); without it the session is bare gdb."""
        self.config = config
        self._transport = transport
        self.client: MIClient | None = None
        self._state = DebuggerState()
        self._init_listeners()
        self.tty: InferiorTTY | None = None
        self.info = GdbInfo()
        self.startup_messages: list[str] = []
        self.startup_errors: list[str] = []  # -ex and -x commands that failed (startup_messages has them too)
        self._refresh_task: asyncio.Task | None = None
        self.refresh_stages: list[RefreshStage] = []
        self.select_stages: list[RefreshStage] = []
        self.stop_hooks: list[Callable[[DebuggerState], DebuggerState]] = []
        self.mi_async = False
        self._prev_values: dict[tuple[str, str], str] = {}
        self._closing = False
        self.gdbext_loaded = False
        self.loaded = False
        self._load_task: asyncio.Future | None = None
        self._launch_task: asyncio.Future | None = None
        # A Python program's stops show a Python frame's locals first: native ones when a native frame is shown.
        self.native_locals_on_stop = not config.python_target
        self.cuda_workaround_applied = False
        # The program as a process: (pid, start time), known once it runs or is attached to; what
        # close() releases or ends when gdb cannot do it.
        self._target: tuple[int, int | None, bool] | None = None  # (pid, start time, stopped before us)
        self._more_targets: list[tuple[int, int | None, bool]] = []  # attach PID PID...: the others
        self._born_since = rescue.boot_ticks()  # (a process forked under this session was born since)
        self.watchdog = GdbWatchdog(self.gdb_pid, lambda: self.client.oldest_pending() if self.client else None)
        self._activity_timer: asyncio.TimerHandle | None = None
        self._detached = False  # gdb detached from the program itself (its breakpoints are out)
        self._abandoned = False  # abandon() ran: gdb was killed on purpose
        self._extension_factory = extensions
        self.extensions: list[Extension] = list(extensions(config)) if extensions is not None else []

    def renew(self, config: SessionConfig | None = None) -> DebugSession:
        """A new session (not started) like this one: the same configuration (or ``config``), fresh extensions."""
        return DebugSession(config or self.config, extensions=self._extension_factory)

    # -- state and listeners ------------------------------------------------------------------

    @property
    def state(self) -> DebuggerState:
        return self._state

    @property
    def closing(self) -> bool:
        """close() was called: gdb going away now is expected, not a crash."""
        return self._closing

    # -- start-up ---------------------------------------------------------------------------

    def gdb_argv(self) -> list[str]:
        # A gdb that fails an assertion quits (confirm off answers its question) and the session goes on
        # without it, as after any crash; it leaves no core file of itself (tens of MB) in the user's directory.
        argv = [self.config.gdb, "--interpreter=mi3", "-q", "-iex", "maint set internal-error corefile no"]
        if self.config.nx:
            argv.append("-nx")
        return argv

    async def start(self, load: bool = True) -> None:
        """Start gdb and apply defaults; with ``load``, also load the program (see load()).

        Raises StartupError. The split lets the CLI fail fast on a broken gdb while
        the UI, already on screen, shows gdb reading a big program's symbols.
        """
        cfg = self.config
        transport = self._transport or SubprocessTransport(
            self.gdb_argv(), env=gdb_env(cfg.debuginfod), cwd=cfg.cwd or None
        )
        self._transport = transport
        self.client = MIClient(transport, self._on_record)
        self.client.on_exit = self._on_gdb_exit
        await self.client.start()
        await self._as_startup(self._configure(), "during start-up")
        if load:
            await self.load()

    async def load(self) -> None:
        """Load the program's symbols, set its arguments, run -x/-ex, set up the extensions. Once: a second
        caller waits for the first's load."""
        await asyncio.shield(self.begin_load())

    def begin_load(self) -> asyncio.Future:
        """The load, set going if it is not yet (the CLI starts it while the screen's code is imported; the
        screen waits for it with load())."""
        if self._load_task is None:
            self.loaded = True
            self._load_task = asyncio.ensure_future(self._as_startup(self._load(), "while loading the program"))
            # (retrieved: a load nobody waits for, e.g. the screen did not start, leaves no warning)
            self._load_task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return self._load_task

    async def _as_startup(self, step: Awaitable[None], when: str) -> None:
        """Run a start-up step; gdb dying or not answering becomes a StartupError."""
        try:
            await step
        except GdbExited as exc:
            raise StartupError(self._startup_failure(exc)) from exc
        except Timeout as exc:
            raise StartupError(f"gdb did not answer {when} ({exc})") from exc

    def _startup_failure(self, exc: GdbExited) -> str:
        tail = [t for t in exc.stderr_tail if t.strip()][-5:]
        msg = f"{self.config.gdb} exited during start-up ({exc.reason})"
        if tail:
            msg += ": " + " | ".join(t.strip() for t in tail)
        return msg

    async def _configure(self) -> None:
        cfg = self.config
        res = await self.cmd("-gdb-version", timeout=60)
        self.info = parse_banner(res.console_text())
        name = "cuda-gdb" if self.info.is_cuda else "gdb"
        cuda = f" (CUDA {'.'.join(map(str, self.info.cuda_version))})" if self.info.cuda_version else ""
        self._emit_console(mi.MIRecord(mi.TEXT, payload=f"{name} {self.info.version_text}{cuda}; debugging {cfg.describe()}"))
        feats = await self.cmd("-list-features", check=False)
        self.info = replace(self.info, features=frozenset(mi.as_list(feats.get("features"))))
        # breakpoint pending on: a CLI "break f" on a library not loaded yet (import torch
        # later) must not be dropped by the confirm-off "no" answer.
        for setting in ("mi-async on", "pagination off", "confirm off", "height 0", "width 0", "breakpoint pending on"):
            r = await self.cmd(f"-gdb-set {setting}", check=False)
            if setting == "mi-async on":
                self.mi_async = r.cls == "done"
        if not cfg.debuginfod and self.info.version >= (12,):
            await self.cmd("-gdb-set debuginfod enabled off", check=False)
        if cfg.mode == "attach" and not cfg.remote:
            # Steps over a breakpoint in place, not in a copy at the entry point: a gdb killed mid-step leaves
            # the thread where it belongs, which the agent's SIGTRAP shield lets run (tuidbg.agent._shield).
            await self.cmd("-gdb-set displaced-stepping off", check=False)
        # Python's own gdb printers make every PyObject* argument a huge repr.
        await self.cmd("-gdb-set print frame-arguments scalars", check=False)
        await self.cmd("-enable-pretty-printing", check=False)
        for ext in self.extensions:
            await ext.on_gdb_ready(self)
        if cfg.load_gdbext and self.info.has_python:
            from tuidbg.engine import gdbext_loader

            lazy = not (cfg.gdb_demangles or cfg.debuginfod or cfg.remote or self.info.is_cuda)
            if await gdbext_loader.load(self) and lazy:
                # libraries without debug info read without demangling, 3x faster on libtorch
                # (gdbext.cxxbreak; records.py demangles what is shown). Not through gdbserver: its
                # libraries are the target's files, and a rescue there takes out only the user's
                # breakpoints, not the dlopen hook's.
                await self.cmd("-gdb-set tuidbg-lazy-demangle on", check=False)

    async def _load(self) -> None:
        cfg = self.config
        if cfg.mode == "run":
            self.tty = InferiorTTY(self._emit_output)
            self.tty.attach()
            await self.cmd(f"-inferior-tty-set {mi.quote(self.tty.path)}")
        if cfg.mode in ("run", "core") and cfg.program:
            self.set_state(self._state.evolve(activity=f"reading symbols of {os.path.basename(cfg.program)}"))
            try:
                await self.cmd(f"-file-exec-and-symbols {mi.quote(cfg.program)}", timeout=START_TIMEOUT)
            except MIError as exc:
                raise StartupError(f"gdb cannot load {cfg.program}: {exc.message}") from exc
            finally:
                self.set_state(self._state.evolve(activity=""))
        if cfg.mode == "run":
            shell, args = program_arguments(cfg.args)
            await self.cmd(f"-gdb-set startup-with-shell {'on' if shell else 'off'}", check=False)
            if args:
                await self.cmd("-exec-arguments " + args)
            if cfg.cwd:
                await self.cmd(f"-environment-cd {mi.quote(cfg.cwd)}", check=False)
            for k, v in cfg.program_env.items():
                await self.cmd(f"-gdb-set environment {k}={v}", check=False)
        for path in cfg.x_files:
            await self._user_console(f"source {path}")
        later = []  # commands of tuidbg's extensions (pybreak ...): once they are set up
        for command in cfg.ex:
            if self._extension_command(command) is not None:
                later.append(command)
            else:
                await self._user_console(command)
        for ext in self.extensions:
            await ext.on_configure(self)
        for command in later:
            await self._user_console(command)

    def _extension_command(self, command: str) -> Extension | None:
        """The extension that handles this console command itself (e.g. the Python agent's
        ``pybreak``, or ``break FILE.py:LINE``), or None for a gdb command."""
        for ext in self.extensions:
            if ext.claims_console(command):
                return ext
        return None

    async def _user_console(self, command: str) -> None:
        """A start-up command from -ex/-x: its output goes to the console, an error is kept (startup_errors)."""
        ext = self._extension_command(command)
        if ext is not None:
            try:
                text = await ext.handle_console(command)
            except GdbExited:
                raise
            except EngineError as exc:
                self._startup_error(f"{command}: {exc}")
                return
            if text:
                self._emit_console(mi.MIRecord(mi.TEXT, payload=text + "\n"))
            return
        try:
            await self.console(command, timeout=START_TIMEOUT)
        except MIError as exc:
            self._startup_error(f"{command}: {exc.message}")
        except EngineError as exc:  # (one that gdb must not be given: mi.takes_more_lines)
            self._startup_error(f"{command}: {exc}")

    def _startup_error(self, text: str) -> None:
        self.startup_messages.append(text)
        self.startup_errors.append(text)
        self._emit_console(mi.MIRecord(mi.LOG, payload=text + "\n"))

    async def launch(self) -> None:
        """Start the program (run), attach to it, or open the core. Raises StartupError (or GdbExited,
        EngineError). Once: a second caller waits for the first's launch (``tuidbg run`` starts it
        before the screen is up); a caller cancelled does not cancel the launch, which close() ends."""
        await asyncio.shield(self.begin_launch())

    def begin_launch(self) -> asyncio.Future:
        """The launch (after the load), set going if it is not yet."""
        if self._launch_task is None:
            self._launch_task = asyncio.ensure_future(self._launch())
            self._launch_task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return self._launch_task

    @property
    def launch_begun(self) -> bool:
        return self._launch_task is not None

    async def _launch(self) -> None:
        cfg = self.config
        await self.load()
        if cfg.mode == "run":
            await self.plain_vector_registers(cfg.program)
            for ext in self.extensions:  # (the stop at entry: engine.entry)
                await ext.before_run(self)
            try:
                await self.cmd("-exec-run", timeout=START_TIMEOUT)
            except MIError as exc:
                raise StartupError(f"cannot start {cfg.program}: {exc.message}") from exc
        elif cfg.mode == "attach":
            pid = int(cfg.pid or 0)
            if cfg.remote:  # a process of another node, through gdbserver --multi (tuidbg.engine.remote)
                await remote.connect(self, cfg.remote)
            self._note_target(pid)
            if not cfg.remote:
                await self.plain_vector_registers(f"/proc/{pid}/exe")
            try:
                await self.cmd(f"-target-attach {pid}", timeout=START_TIMEOUT)
            except MIError as exc:
                why = remote.attach_failure(pid, cfg.remote, exc.message) if cfg.remote else attach_failure(pid, exc.message)
                raise StartupError(why) from exc
            if cfg.remote:
                self._emit_console(mi.MIRecord(mi.TEXT, payload=await remote.after_attach(self)))
            if cfg.more_pids:
                await self.first_attached()
                await self.attach_more(cfg.more_pids)
        elif cfg.mode == "core":
            try:
                # -target-select core takes the quotes of a quoted path literally (gdb 13);
                # "core-file" takes the rest of its line as the path, spaces and quotes too.
                await self.cmd(
                    f"-interpreter-exec console {mi.quote('core-file ' + (cfg.core or ''))}",
                    timeout=START_TIMEOUT,
                    quiet=False,  # "Core was generated by …", "Program terminated with signal …": for the console
                )
            except MIError as exc:
                raise StartupError(f"gdb cannot open core file {cfg.core}: {exc.message}") from exc
            # A core has no *stopped record: make one from what gdb selected.
            await self.stop_at_selection("core file")
        for ext in self.extensions:
            await ext.on_launch(self)

    async def stop_at_selection(self, reason: str) -> None:
        """A stop made from what gdb has selected, said with ``reason``, for a target that gives no
        ``*stopped`` record (a core file opened)."""
        res = await self.cmd("-stack-info-frame", check=False)
        frame = res.get("frame") if res.cls == "done" else None
        threads = await self.cmd("-thread-info", check=False)
        tid = threads.get("current-thread-id")
        payload: dict[str, Any] = {"reason": reason}
        if frame:
            payload["frame"] = frame
        if tid:
            payload["thread-id"] = tid
        sig = re.search(r"terminated with signal (\w+), ([^.\n]+)", "".join(self.startup_messages))
        if sig:
            payload["signal-name"], payload["signal-meaning"] = sig.group(1), sig.group(2)
        self._on_async(mi.MIRecord(mi.EXEC, cls="stopped", payload=payload))

    def stopped_unannounced(self, payload: dict[str, Any]) -> None:
        """gdb stopped without a ``*stopped`` record (gdb 13 now and then, as a process of several exits):
        the stop is taken as if gdb had said so."""
        self._on_async(mi.MIRecord(mi.EXEC, cls="stopped", payload=payload))

    # -- records ----------------------------------------------------------------------------

    def _on_record(self, rec: mi.MIRecord, quiet: bool) -> None:
        if rec.kind == mi.RESULT:
            if rec.cls == "running" and self._state.process is not ProcessState.RUNNING:
                # (gdb's *running records follow; of several processes only the selected one surely runs:
                # a request's answer, or scheduler-locking, leaves the others stopped)
                tid = self._state.current_thread if len(self._state.inferiors) > 1 else None
                self._on_async(mi.MIRecord(mi.EXEC, cls="running", payload={"thread-id": tid or "all"}))
            return
        if rec.kind in (mi.EXEC, mi.NOTIFY, mi.STATUS):
            self._on_async(rec)
            return
        if rec.kind in mi.STREAM_KINDS or rec.kind == mi.TEXT:
            if quiet:
                self._internal(rec)
            elif rec.kind == mi.CONSOLE and self.client is not None and self.client.oldest_pending() is None:
                self._hold_unowned(rec)  # (listeners: a stop of tuidbg's own may follow)
            else:
                self._told(False)
                self._emit_console(rec)
            if rec.kind == mi.CONSOLE and rec.text.startswith("Core was generated by"):
                self.startup_messages.append(rec.text)
            if rec.kind == mi.CONSOLE and "terminated with signal" in rec.text:
                self.startup_messages.append(rec.text)

    def _on_async(self, rec: mi.MIRecord) -> None:
        if rec.kind == mi.EXEC and rec.cls == "stopped" and self._stops_seen.listened:
            self._stops_seen.emit(stop_seen(rec))
        if not (rec.kind == mi.EXEC and rec.cls == "stopped"):
            self._told(False)
        new = reduce(self._state, rec)
        keep = self._keep_shown
        quiet_stop = False
        if keep and new.selected_inferior != keep and (rec.cls == "stopped" or rec.cls == "thread-selected"):
            shown = new.find(keep)
            if shown is not None and shown.process is ProcessState.STOPPED:
                # (keeping_shown: another process's stop, or gdb's selection of it, as gdb attaches to it or
                # loads the agent into it; the shown one stays as it is, the other is not read through gdb)
                new = replace(new, selected_inferior=keep)
                quiet_stop = True
        main = new.inferiors[0].pid  # (the program, or the first PID attached to; the others: _more_targets)
        if main and main != self._state.inferiors[0].pid:
            self._note_target(main)
        if rec.kind == mi.NOTIFY and rec.cls == "library-loaded" and new.activity:
            self._linger_activity(new.activity)
        if rec.kind == mi.NOTIFY and rec.cls in ("thread-created", "thread-exited"):
            # (in bursts: 500 threads start, end, or go as gdb detaches them; one state for the lot)
            self.set_state_soon(new, THREADS_SETTLE)
            return
        if rec.kind == mi.EXEC and rec.cls == "stopped":
            if self.tty is not None:
                self.tty.drain()
            for hook in self.stop_hooks:
                try:
                    new = hook(new)
                except Exception:
                    log.exception("stop hook failed")
            self._told(tuidbgs_own_stop(new))
            self.set_state(new)
            if new.process is ProcessState.STOPPED and not quiet_stop:
                self._start_refresh(new.generation)
            return
        self.set_state(new)

    def _note_target(self, pid: int) -> None:
        if self.config.remote:  # (its PID is another node's: nothing of this machine's /proc is it)
            return
        info = rescue.proc_info(pid)
        self._target = (pid, info.start_time if info else None, info is not None and info.state == "T")

    def _linger_activity(self, activity: str) -> None:
        """Library loads come in bursts while the program runs: their note leaves the status line a
        moment after the last one (the reducer keeps it until the next run/stop record otherwise)."""
        if self._activity_timer is not None:
            self._activity_timer.cancel()

        def clear() -> None:
            self._activity_timer = None
            if self._state.activity == activity:
                self.set_state(self._state.evolve(activity=""))

        try:
            self._activity_timer = asyncio.get_running_loop().call_later(ACTIVITY_LINGER, clear)
        except RuntimeError:  # no loop (a reducer test feeding records by hand)
            self._activity_timer = None

    def gdb_pid(self) -> int | None:
        """gdb's process id (None before gdb started, or over a transport without a process)."""
        return self._transport.pid if self._transport is not None else None

    def health(self) -> GdbHealth:
        """Whether gdb answers (see ``tuidbg.engine.watchdog``)."""
        return self.watchdog.check()

    def wake_gdb(self) -> None:
        """SIGCONT a stopped gdb."""
        pid = self.gdb_pid()
        if pid:
            rescue.wake(pid)

    def _on_gdb_exit(self, err: GdbExited) -> None:
        if not self._closing and not self._abandoned:
            # gdb died under us (a crash, kill -9): what it had attached to must not stay stopped or
            # carry its breakpoints; a program it started is ended (gdb's EXITKILL usually did).
            self.abandon()
        if self.tty is not None:
            self.tty.drain()
        reason = err.reason
        tail = [t.strip() for t in err.stderr_tail if t.strip()][-3:]
        if tail and not self._closing:
            reason += ": " + " | ".join(tail)
        self.set_state(gdb_gone(self._state, reason))

    # -- commands ---------------------------------------------------------------------------

    async def cmd(
        self, command: str, timeout: float | None = CMD_TIMEOUT, check: bool = True, quiet: bool = True
    ) -> Result:
        """Send one MI command. Its stream output is hidden from the console unless quiet=False."""
        if self.client is None:
            raise GdbExited("gdb is not running")
        return await self.client.send(command, timeout=timeout, check=check, quiet=quiet)

    def cmd_now(self, command: str, timeout: float | None = CMD_TIMEOUT, check: bool = True) -> Coroutine[Any, Any, Result]:
        """``cmd``, written to gdb before this returns; the coroutine returned waits for the result."""
        if self.client is None:
            raise GdbExited("gdb is not running")
        return self.client.send_now(command, timeout=timeout, check=check, quiet=True)

    async def console(self, command: str, timeout: float | None = CMD_TIMEOUT) -> Result:
        """Run a gdb CLI command (as typed in gdb's console); its output also goes to the console. One that
        would read more lines (``if``, ``define``: mi.takes_more_lines) is refused with EngineError."""
        why = mi.takes_more_lines(command)
        if why:
            raise EngineError(why)
        return await self.cmd(f"-interpreter-exec console {mi.quote(command)}", timeout=timeout, quiet=False)

    async def complete(self, text: str) -> list[str]:
        res = await self.cmd(f"-complete {mi.quote(text)}", check=False)
        if res.cls != "done":
            return []
        return [str(m) for m in mi.as_list(res.get("matches"))]

    def _resolve_how(self, how: str) -> str:
        if how == "auto":
            return "detach" if self.config.mode == "attach" else "kill"
        return how

    async def close(self, how: str = "auto", polite: float = POLITE_CLOSE) -> None:
        """End the session: detach from or kill the program (how: "detach", "kill", or "auto": detach
        when attached, else kill), then end gdb.

        Bounded, and it leaves nothing behind whatever happens, cancelled included: a gdb that does
        not do it within ``polite`` seconds (hung, stopped, crashed) is killed, and the program is
        then released (detach: running, untraced, without gdb's breakpoints) or ended (kill) from
        /proc, without gdb (``tuidbg.engine.rescue``)."""
        self._closing = True
        how = self._resolve_how(how)
        try:
            if self.client is not None and self.client.alive:
                self.wake_gdb()  # a gdb stopped by SIGSTOP can still do it properly
                try:
                    await asyncio.wait_for(self._close_politely(how), polite)
                except (EngineError, asyncio.TimeoutError, OSError) as exc:
                    log.info("gdb did not close the session (%s); acting without it", exc)
        finally:
            self.abandon(how)  # (which also lets the extensions go: _extensions_closed)
            if self.client is not None:
                try:
                    await asyncio.wait_for(self.client.close(), 3)
                except (asyncio.TimeoutError, Exception):
                    pass
            if self.tty is not None:
                self.tty.close()

    def _extensions_closed(self) -> None:
        for ext in self.extensions:
            try:
                ext.closed()
            except Exception:
                log.exception("extension close failed")

    async def _close_politely(self, how: str) -> None:
        if self._state.has_process:
            if how == "detach":
                await self.detach()
            else:
                await self.kill()
        await self.cmd("-gdb-exit", timeout=5, check=False)
        if self.client is not None:
            await self.client.wait_exit()

    def abandon(self, how: str = "auto") -> str:
        """End gdb without asking it, and see to the program: synchronous, bounded, safe to call from
        anywhere (a signal's watchdog thread, gdb's death). Returns what became of the program.

        detach: the program, stopped first so that no thread runs into a breakpoint meanwhile, gets its
        code back from under gdb's breakpoints, tuidbg's extensions switch off what they put in it
        (the Python agent, over its own socket), gdb is killed, and the program is continued, untraced.
        kill: gdb is killed, and the program with it. A process of another node (``config.remote``) is
        let go by another gdb through its gdbserver (``remote.release``)."""
        self._abandoned = True
        how = self._resolve_how(how)
        gdb = self.gdb_pid()
        gdb_alive = bool(gdb) and rescue.same_process(gdb, None)
        target = self._target
        tinfo = rescue.proc_info(target[0]) if target else None
        # gdb's breakpoints may be in its code: gdb still holds it, or died holding it
        ours = tinfo is not None and not self._detached and tinfo.tracer in (0, gdb)
        stopped_by_us = False
        if how == "detach" and target and ours and self.config.mode == "attach":
            if gdb_alive:  # (a hung gdb: no thread may run into its breakpoints while they are taken out)
                rescue.stop_process(target[0])
                stopped_by_us = True
            extra: dict[int, bytes] = {}
            for ext in self.extensions:
                extra.update(ext.restore_bytes())
            n = rescue.restore_code(target[0], extra)
            if n:
                log.info("put back the code under %d breakpoint(s) gdb left in process %d", n, target[0])
        more = (rescue.stop_others(self._more_targets, gdb, gdb_alive)  # attach PID PID...: the others
                if how == "detach" and self.config.mode == "attach" and not self._detached else [])
        if how == "detach":
            for ext in self.extensions:
                try:
                    ext.abandon()
                except Exception:
                    log.exception("extension abandon failed")
        if gdb:
            # kill a live gdb; wait for a dying one (its pipes close before the kernel detaches its tracees)
            rescue.kill_gdb(gdb)
        self._extensions_closed()
        if self.config.remote and how == "detach" and not self._detached and self._state.pid:
            # (gdbserver on the node still traces it, with gdb's breakpoints in its code)
            return remote.release(self.config, remote.breakpoint_addresses(self._state.breakpoints))
        for (mpid, mstart, mwas), by_us in more:
            rescue.release(mpid, mstart, leave_stopped=mwas, stopped_by_us=by_us, calm=0.3)
        return rescue.let_go(target, how == "detach", stopped_by_us, self._detached, self._born_since,
                             {t[0] for t in self._more_targets} | {i.os_pid or i.pid or 0 for i in self._state.inferiors})

    def write_program_input(self, data: bytes) -> None:
        if self.tty is not None:
            self.tty.write(data)
