"""DebugSession: one gdb (or cuda-gdb), the program it debugs, and the operations on them.

The session owns the MI client, the program's pseudo-terminal and the current
``DebuggerState``. Async records go through the pure reducer; after each
``*stopped`` the session refreshes threads, a bounded list of frames and the
locals of the selected frame, stamped with the stop's generation so that a
stale reply never overwrites a newer stop. Listeners get every new state, the
program's output and gdb's console output; they are plain callables, so the
engine knows nothing of the UI.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shlex
import signal
from dataclasses import dataclass, field, replace
from typing import Any, Awaitable, Callable

from tuidbg.engine import mi, rescue
from tuidbg.engine.client import MIClient, Result
from tuidbg.engine.errors import EngineError, GdbExited, MIError, StartupError, Timeout
from tuidbg.engine.extensions import Extension, ExtensionFactory
from tuidbg.engine.inferior_tty import InferiorTTY
from tuidbg.engine.records import CHILDREN_PAGE, VarObj
from tuidbg.engine.state import (
    Breakpoint,
    DebuggerState,
    Frame,
    ProcessState,
    Thread,
    Variable,
    apply_refresh,
    gdb_gone,
    reduce,
    set_breakpoints,
)
from tuidbg.engine.transport import SubprocessTransport, Transport, gdb_env
from tuidbg.engine.watchdog import GdbHealth, GdbWatchdog
from tuidbg.procread.proc import ptrace_scope, tracer_of

log = logging.getLogger("tuidbg.engine")

FRAME_PAGE = 64  # frames fetched per request
START_TIMEOUT = 600.0  # loading a large executable's symbols can take minutes
CMD_TIMEOUT = 30.0
POLITE_CLOSE = 8.0  # how long close() asks gdb to detach/kill and exit before it acts without gdb
ACTIVITY_LINGER = 1.0  # "loading libfoo.so" stays in the status this long after the last library event


@dataclass
class SessionConfig:
    """What to debug and how. Built by the CLI; every field has a plain meaning."""

    mode: str = "none"  # "run", "attach", "core" or "none" (gdb only)
    program: str | None = None  # executable (for Python targets: the interpreter)
    args: list[str] = field(default_factory=list)
    pid: int | None = None
    core: str | None = None
    gdb: str = "gdb"
    cuda: bool = False
    ex: list[str] = field(default_factory=list)
    x_files: list[str] = field(default_factory=list)
    nx: bool = False
    debuginfod: bool = False
    cwd: str | None = None
    python_target: bool = False
    program_env: dict[str, str] = field(default_factory=dict)
    load_gdbext: bool = True
    agent: bool = False  # load tuidbg's in-process Python agent (Python breakpoints, stepping)
    break_on_exception: bool = False  # the agent stops on uncaught Python exceptions
    break_on_failure: bool = False  # the agent stops at a failing pytest test
    remember: str | None = None  # the file of remembered breakpoints (engine.remember); None: none
    fresh_state: bool = False  # --fresh: do not put the remembered ones back

    def describe(self) -> str:
        if self.mode == "attach":
            return f"process {self.pid}"
        if self.mode == "core":
            return f"{self.program} with core {self.core}"
        if self.program:
            return " ".join([os.path.basename(self.program)] + [shlex.quote(a) for a in self.args])
        return "gdb"


@dataclass(frozen=True)
class GdbInfo:
    banner: str = ""
    version: tuple[int, ...] = ()
    is_cuda: bool = False
    cuda_version: tuple[int, ...] = ()
    features: frozenset[str] = frozenset()

    @property
    def has_python(self) -> bool:
        return "python" in self.features

    @property
    def version_text(self) -> str:
        return ".".join(str(v) for v in self.version) or "unknown"


def parse_banner(text: str) -> GdbInfo:
    """Version facts from ``-gdb-version`` / ``gdb --version`` text."""
    is_cuda = "NVIDIA" in text or "cuda-gdb" in text.lower()
    version: tuple[int, ...] = ()
    m = re.search(r"GNU gdb[^\n]*?(\d+)\.(\d+)", text) or re.search(r"Based on GNU gdb (\d+)\.(\d+)", text)
    if m:
        version = (int(m.group(1)), int(m.group(2)))
    cuda_version: tuple[int, ...] = ()
    if is_cuda:
        cm = re.search(r"(?:CUDA Toolkit |cuda-gdb |^)(\d+)\.(\d+) release", text, re.M) or re.search(
            r"cuda-gdb (\d+)\.(\d+)", text
        )
        if cm:
            cuda_version = (int(cm.group(1)), int(cm.group(2)))
    return GdbInfo(banner=text.strip(), version=version, is_cuda=is_cuda, cuda_version=cuda_version)


StateListener = Callable[[DebuggerState], None]
OutputListener = Callable[[bytes], None]
ConsoleListener = Callable[[mi.MIRecord], None]
RefreshStage = Callable[["DebugSession", int], Awaitable[None]]


class DebugSession:
    def __init__(self, config: SessionConfig, transport: Transport | None = None,
                 extensions: ExtensionFactory | None = None) -> None:
        """``extensions`` makes the parts that plug into this session (``tuidbg.engine.debugger``
        gives the defaults: ``new_session``); without it the session is bare gdb."""
        self.config = config
        self._transport = transport
        self.client: MIClient | None = None
        self._state = DebuggerState()
        self._state_listeners: list[StateListener] = []
        self._output_listeners: list[OutputListener] = []
        self._console_listeners: list[ConsoleListener] = []
        # Console output from before anyone listened (start-up, -ex commands), replayed
        # to the first listener so nothing is lost whoever starts the session.
        self._console_backlog: list[mi.MIRecord] | None = []
        self.tty: InferiorTTY | None = None
        self.info = GdbInfo()
        self.startup_messages: list[str] = []
        self._refresh_task: asyncio.Task | None = None
        self.refresh_stages: list[RefreshStage] = []
        self.stop_hooks: list[Callable[[DebuggerState], DebuggerState]] = []
        self.mi_async = False
        self._prev_values: dict[tuple[str, str], str] = {}
        self._closing = False
        self.gdbext_loaded = False
        self.loaded = False
        self.cuda_workaround_applied = False
        # The program as a process: (pid, start time), known once it runs or is attached to; what
        # close() releases or ends when gdb cannot do it.
        self._target: tuple[int, int | None, bool] | None = None  # (pid, start time, stopped before us)
        self.watchdog = GdbWatchdog(self._gdb_pid, lambda: self.client.oldest_pending() if self.client else None)
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

    def set_state(self, new: DebuggerState) -> None:
        if new is self._state:
            return
        self._state = new
        for cb in list(self._state_listeners):
            try:
                cb(new)
            except Exception:
                log.exception("state listener failed")

    def on_state(self, cb: StateListener) -> None:
        self._state_listeners.append(cb)

    def on_program_output(self, cb: OutputListener) -> None:
        self._output_listeners.append(cb)

    def on_console(self, cb: ConsoleListener) -> None:
        self._console_listeners.append(cb)
        backlog, self._console_backlog = self._console_backlog, None
        for rec in backlog or ():
            cb(rec)

    def _emit_output(self, data: bytes) -> None:
        for cb in list(self._output_listeners):
            try:
                cb(data)
            except Exception:
                log.exception("output listener failed")

    def _emit_console(self, rec: mi.MIRecord) -> None:
        if self._console_backlog is not None:
            if len(self._console_backlog) < 10000:
                self._console_backlog.append(rec)
            return
        for cb in list(self._console_listeners):
            try:
                cb(rec)
            except Exception:
                log.exception("console listener failed")

    # -- start-up ---------------------------------------------------------------------------

    def gdb_argv(self) -> list[str]:
        argv = [self.config.gdb, "--interpreter=mi3", "-q"]
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
        """Load the program's symbols, set its arguments, run -x/-ex, set up the extensions."""
        if self.loaded:
            return
        self.loaded = True
        await self._as_startup(self._load(), "while loading the program")

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
        # Python's own gdb printers make every PyObject* argument a huge repr.
        await self.cmd("-gdb-set print frame-arguments scalars", check=False)
        await self.cmd("-enable-pretty-printing", check=False)
        for ext in self.extensions:
            await ext.on_gdb_ready(self)
        if cfg.load_gdbext and self.info.has_python:
            from tuidbg.engine import gdbext_loader

            await gdbext_loader.load(self)

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
            if cfg.args:
                await self.cmd("-exec-arguments " + " ".join(shell_quote(a) for a in cfg.args))
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
        """A start-up command from -ex/-x: its output goes to the console, an error does not stop us."""
        ext = self._extension_command(command)
        if ext is not None:
            try:
                text = await ext.handle_console(command)
            except GdbExited:
                raise
            except EngineError as exc:
                self.startup_messages.append(f"{command}: {exc}")
                self._emit_console(mi.MIRecord(mi.LOG, payload=f"{command}: {exc}\n"))
                return
            if text:
                self._emit_console(mi.MIRecord(mi.TEXT, payload=text + "\n"))
            return
        try:
            res = await self.console(command, timeout=START_TIMEOUT)
        except MIError as exc:
            self.startup_messages.append(f"{command}: {exc.message}")
            self._emit_console(mi.MIRecord(mi.LOG, payload=f"{command}: {exc.message}\n"))
            return

    async def launch(self) -> None:
        """Start the program (run), attach to it, or open the core. Raises StartupError."""
        cfg = self.config
        await self.load()
        if cfg.mode == "run":
            try:
                await self.cmd("-exec-run", timeout=START_TIMEOUT)
            except MIError as exc:
                raise StartupError(f"cannot start {cfg.program}: {exc.message}") from exc
        elif cfg.mode == "attach":
            self._note_target(int(cfg.pid or 0))
            try:
                await self.cmd(f"-target-attach {int(cfg.pid or 0)}", timeout=START_TIMEOUT)
            except MIError as exc:
                raise StartupError(attach_failure(int(cfg.pid or 0), exc.message)) from exc
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
            await self._synthesize_stop("core file")
        for ext in self.extensions:
            await ext.on_launch(self)

    async def _synthesize_stop(self, reason: str) -> None:
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

    # -- records ----------------------------------------------------------------------------

    def _on_record(self, rec: mi.MIRecord, quiet: bool) -> None:
        if rec.kind == mi.RESULT:
            if rec.cls == "running" and self._state.process is not ProcessState.RUNNING:
                self._on_async(mi.MIRecord(mi.EXEC, cls="running", payload={"thread-id": "all"}))
            return
        if rec.kind in (mi.EXEC, mi.NOTIFY, mi.STATUS):
            self._on_async(rec)
            return
        if rec.kind in mi.STREAM_KINDS or rec.kind == mi.TEXT:
            if quiet:
                return
            self._emit_console(rec)
            if rec.kind == mi.CONSOLE and rec.text.startswith("Core was generated by"):
                self.startup_messages.append(rec.text)
            if rec.kind == mi.CONSOLE and "terminated with signal" in rec.text:
                self.startup_messages.append(rec.text)

    def _on_async(self, rec: mi.MIRecord) -> None:
        new = reduce(self._state, rec)
        if new.pid and new.pid != self._state.pid:
            self._note_target(new.pid)
        if rec.kind == mi.NOTIFY and rec.cls == "library-loaded" and new.activity:
            self._linger_activity(new.activity)
        if rec.kind == mi.EXEC and rec.cls == "stopped":
            if self.tty is not None:
                self.tty.drain()
            for hook in self.stop_hooks:
                try:
                    new = hook(new)
                except Exception:
                    log.exception("stop hook failed")
            self.set_state(new)
            if new.process is ProcessState.STOPPED:
                self._start_refresh(new.generation)
            return
        self.set_state(new)

    def _note_target(self, pid: int) -> None:
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

    def _gdb_pid(self) -> int | None:
        return self._transport.pid if self._transport is not None else None

    def health(self) -> GdbHealth:
        """Whether gdb answers (see ``tuidbg.engine.watchdog``)."""
        return self.watchdog.check()

    def wake_gdb(self) -> None:
        """SIGCONT a stopped gdb."""
        pid = self._gdb_pid()
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

    async def console(self, command: str, timeout: float | None = CMD_TIMEOUT) -> Result:
        """Run a gdb CLI command (as typed in gdb's console); its output also goes to the console."""
        return await self.cmd(f"-interpreter-exec console {mi.quote(command)}", timeout=timeout, quiet=False)

    async def complete(self, text: str) -> list[str]:
        res = await self.cmd(f"-complete {mi.quote(text)}", check=False)
        if res.cls != "done":
            return []
        return [str(m) for m in mi.as_list(res.get("matches"))]

    # -- execution --------------------------------------------------------------------------

    def thread_options(self, frame: int | None = None) -> str:
        """``--thread N [--frame F] `` for the selected thread, or nothing under a CUDA device focus."""
        return self._thread_opt(frame=frame)

    def _thread_opt(self, thread: str | None = None, frame: int | None = None) -> str:
        if self._state.device_focus is not None:
            return ""  # --thread would drop cuda-gdb's focus on the device
        parts = []
        tid = thread or self._state.selected_thread
        if tid:
            parts.append(f"--thread {tid}")
            if frame is not None:
                parts.append(f"--frame {frame}")
        return " ".join(parts) + (" " if parts else "")

    def _require_stopped(self, what: str) -> None:
        st = self._state.process
        if st is ProcessState.RUNNING:
            raise EngineError(f"cannot {what}: the program is running (interrupt it first)")
        if st is not ProcessState.STOPPED:
            raise EngineError(f"cannot {what}: {self.process_description()}")

    def process_description(self) -> str:
        st = self._state
        if st.process is ProcessState.NOT_STARTED:
            return "the program is not running"
        if st.process is ProcessState.EXITED:
            return f"the program {st.exit_description or 'exited'}"
        if st.process is ProcessState.DETACHED:
            return "detached from the process"
        if st.process is ProcessState.GDB_EXITED:
            return f"gdb is not running ({st.gdb_exit})"
        return st.process.value

    async def run(self) -> None:
        """(Re)start the program from the beginning."""
        if self.config.mode == "attach":
            raise EngineError("cannot restart an attached process")
        if self.config.mode == "core":
            raise EngineError("a core file cannot run")
        if self.tty is not None:
            self.tty.drain()
        for ext in self.extensions:  # e.g. drop breakpoints on addresses of the previous process
            await ext.before_run(self)
        await self.cmd("-exec-run", timeout=START_TIMEOUT)

    async def cont(self) -> None:
        self._require_stopped("continue")
        await self.cmd("-exec-continue")

    async def next(self) -> None:
        self._require_stopped("step over")
        await self.cmd(f"-exec-next {self._thread_opt()}".rstrip())

    async def step(self) -> None:
        self._require_stopped("step into")
        await self.cmd(f"-exec-step {self._thread_opt()}".rstrip())

    async def finish(self) -> None:
        self._require_stopped("finish")
        st = self._state
        try:
            await self.cmd(f"-exec-finish {self._thread_opt(frame=st.selected_frame)}".rstrip())
        except MIError as exc:
            if "outermost" in exc.message:
                raise EngineError('"finish" is not meaningful in the outermost frame') from exc
            raise

    async def until(self, location: str | None = None) -> None:
        self._require_stopped("run until")
        cmd = f"-exec-until {self._thread_opt()}".rstrip()
        if location:
            cmd += " " + location
        await self.cmd(cmd)

    async def run_to(self, fullname: str, line: int) -> None:
        """Continue to a source line (a temporary breakpoint there, then continue)."""
        self._require_stopped("run to a line")
        await self.cmd(f"-break-insert -t --source {mi.quote(fullname)} --line {int(line)}")
        await self.cmd("-exec-continue")

    async def interrupt(self) -> None:
        """Stop the running program: -exec-interrupt, or SIGINT to the program if that fails."""
        if self._state.process is not ProcessState.RUNNING:
            return
        if self.mi_async:
            try:
                await self.cmd("-exec-interrupt", timeout=5)
            except Timeout:
                # gdb does not answer: a SIGINT to the program would wait in gdb's hands, and reach the
                # program (and end it) once gdb is gone. The watchdog tells the user; nothing more here.
                raise EngineError("gdb did not answer the interrupt (see the status line)") from None
            except MIError as exc:
                log.info("-exec-interrupt failed (%s); sending SIGINT", exc)
            else:
                try:
                    await asyncio.wait_for(self._wait_not_running(), 2.0)
                    return
                except asyncio.TimeoutError:
                    pass
        self._sigint_program()

    async def _wait_not_running(self) -> None:
        while self._state.process is ProcessState.RUNNING:
            await asyncio.sleep(0.02)

    def _sigint_program(self) -> None:
        pid = self._state.pid or self.config.pid
        if pid:
            try:
                os.kill(pid, signal.SIGINT)
                return
            except ProcessLookupError:
                pass
        if self._transport is not None:
            self._transport.send_signal(signal.SIGINT)

    async def kill(self) -> None:
        if self._state.has_process:
            if self._state.process is ProcessState.RUNNING:
                await self.interrupt()
            await self.console("kill")
            self.set_state(self._state.evolve(process=ProcessState.EXITED, exit_description="killed", threads=(), frames=(), locals=()))

    async def detach(self) -> None:
        if not self._state.has_process:
            return
        if self._state.process is ProcessState.RUNNING:
            await self.interrupt()
        await self.cmd("-target-detach")
        self._detached = True
        self.set_state(self._state.evolve(process=ProcessState.DETACHED, threads=(), frames=(), locals=(), pid=None))

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
            self.abandon(how)
            if self.client is not None:
                try:
                    await asyncio.wait_for(self.client.close(), 3)
                except (asyncio.TimeoutError, Exception):
                    pass
            if self.tty is not None:
                self.tty.close()

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
        kill: gdb is killed, and the program with it."""
        self._abandoned = True
        how = self._resolve_how(how)
        gdb = self._gdb_pid()
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
        if how == "detach":
            for ext in self.extensions:
                try:
                    ext.abandon()
                except Exception:
                    log.exception("extension abandon failed")
        if gdb:
            # kill a live gdb; wait for a dying one (its pipes close before the kernel detaches its tracees)
            rescue.kill_gdb(gdb)
        if target is None:
            return "no program"
        pid, start, was_stopped = target
        if how == "detach":
            return rescue.release(pid, start, leave_stopped=was_stopped, stopped_by_us=stopped_by_us)
        rescue.end_program(pid, start)
        return f"process {pid} ended"

    def write_program_input(self, data: bytes) -> None:
        if self.tty is not None:
            self.tty.write(data)

    # -- refresh after a stop ------------------------------------------------------------------

    def _start_refresh(self, generation: int) -> None:
        if self._refresh_task is not None and not self._refresh_task.done():
            self._refresh_task.cancel()
        self._refresh_task = asyncio.ensure_future(self._refresh(generation))

    async def wait_refreshed(self, timeout: float = 30.0) -> DebuggerState:
        """Wait until the refresh for the current stop is done (tests, benchmarks, dump)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            task = self._refresh_task
            if task is not None and not task.done():
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    raise Timeout("refresh", timeout)
                try:
                    await asyncio.wait_for(asyncio.shield(task), remaining)
                except asyncio.CancelledError:
                    if task is self._refresh_task:
                        raise
                continue
            return self._state

    async def _refresh(self, generation: int) -> None:
        try:
            st = self._state
            tid = st.selected_thread
            # The three queries go out together (gdb answers them in order) and the
            # state changes once, so the UI repaints once per stop, not three times.
            if tid:
                threads, (frames, more), locs = await asyncio.gather(
                    self.fetch_threads(), self.fetch_frames(tid, 0, FRAME_PAGE), self.fetch_locals(tid, 0)
                )
                self.set_state(
                    apply_refresh(
                        self._state, generation, threads=threads, frames=frames, frames_thread=tid,
                        more_frames=more, locals_=locs, locals_key=(tid, 0), done=True,
                    )
                )
            else:
                threads = await self.fetch_threads()
                self.set_state(apply_refresh(self._state, generation, threads=threads, done=True))
            for stage in list(self.refresh_stages):
                if self._state.generation != generation:
                    return
                try:
                    await stage(self, generation)
                except (MIError, Timeout) as exc:
                    log.info("refresh stage failed: %s", exc)
        except asyncio.CancelledError:
            pass
        except GdbExited:
            pass
        except (MIError, Timeout) as exc:
            log.info("refresh failed: %s", exc)
            self._emit_console(mi.MIRecord(mi.LOG, payload=f"tuidbg: could not refresh after the stop: {exc}\n"))

    async def fetch_threads(self) -> tuple[Thread, ...]:
        res = await self.cmd("-thread-info")
        threads = tuple(Thread.from_mi(t) for t in mi.as_list(res.get("threads")) if isinstance(t, dict))
        return threads

    async def fetch_frames(self, tid: str, low: int, count: int) -> tuple[tuple[Frame, ...], bool]:
        """Frames low..low+count-1 of a thread, and whether there are more beyond."""
        high = low + count  # one extra tells whether more exist
        opt = self._thread_opt(tid) if tid else ""
        try:
            res = await self.cmd(f"-stack-list-frames {opt}{low} {high}")
        except MIError as exc:
            if "Not enough frames" in exc.message:
                return (), False
            raise
        frames = tuple(
            f for f in (Frame.from_mi(x, i + low) for i, x in enumerate(mi.as_list(res.get("stack")))) if f is not None
        )
        more = len(frames) > count
        return frames[:count], more

    async def load_more_frames(self) -> None:
        """Extend the selected thread's frame list by one page (the "load more" row)."""
        st = self._state
        if not st.is_stopped or not st.frames_thread or not st.more_frames:
            return
        gen = st.generation
        low = len(st.frames)
        frames, more = await self.fetch_frames(st.frames_thread, low, FRAME_PAGE)
        cur = self._state
        if cur.generation == gen and cur.frames_thread == st.frames_thread and len(cur.frames) == low:
            self.set_state(apply_refresh(cur, gen, frames=cur.frames + frames, frames_thread=st.frames_thread, more_frames=more))

    async def fetch_locals(self, tid: str, frame: int) -> tuple[Variable, ...]:
        res = await self.cmd(
            f"-stack-list-variables {self._thread_opt(tid, frame)}--skip-unavailable --simple-values", check=False
        )
        if res.cls != "done":
            return ()
        out = []
        new_prev: dict[tuple[str, str], str] = {}
        for v in mi.as_list(res.get("variables")):
            if not isinstance(v, dict):
                continue
            name = str(v.get("name", ""))
            value = v.get("value")
            key = (f"{tid}/{frame}", name)
            changed = value is not None and key in self._prev_values and self._prev_values[key] != value
            if value is not None:
                new_prev[key] = value
            out.append(Variable(name=name, value=value, type=v.get("type"), is_arg=v.get("arg") == "1", changed=changed))
        self._prev_values = {k: v for k, v in self._prev_values.items() if k[0] != f"{tid}/{frame}"}
        self._prev_values.update(new_prev)
        return tuple(out)

    async def select_thread(self, tid: str) -> None:
        st = self._state
        if not st.is_stopped:
            raise EngineError(f"cannot select a thread: {self.process_description()}")
        gen = st.generation
        self.set_state(st.evolve(selected_thread=tid, selected_frame=0))
        if st.device_focus is None:
            await self.cmd(f"-thread-select {tid}", check=False)
        frames, more = await self.fetch_frames(tid, 0, FRAME_PAGE)
        self.set_state(apply_refresh(self._state, gen, frames=frames, frames_thread=tid, more_frames=more))
        locs = await self.fetch_locals(tid, 0)
        self.set_state(apply_refresh(self._state, gen, locals_=locs, locals_key=(tid, 0)))
        for stage in self.refresh_stages:
            if getattr(stage, "on_select", False):
                await stage(self, gen)

    async def select_frame(self, level: int) -> None:
        st = self._state
        if not st.is_stopped:
            raise EngineError(f"cannot select a frame: {self.process_description()}")
        gen = st.generation
        tid = st.selected_thread or st.current_thread
        self.set_state(st.evolve(selected_frame=level))
        await self.cmd(f"-stack-select-frame {self._thread_opt(tid)}{int(level)}", check=False)
        if tid:
            locs = await self.fetch_locals(tid, level)
            self.set_state(apply_refresh(self._state, gen, locals_=locs, locals_key=(tid, level)))

    # -- breakpoints --------------------------------------------------------------------------

    async def break_insert(
        self,
        location: str | None = None,
        *,
        file: str | None = None,
        line: int | None = None,
        function: str | None = None,
        address: str | int | None = None,
        condition: str | None = None,
        temporary: bool = False,
        pending: bool = True,
        enabled: bool = True,
        thread: str | None = None,
        ignore_count: int = 0,
    ) -> Breakpoint:
        """Insert a breakpoint at file:line, a function, an address, or a gdb location string.

        Pending (on a library not loaded yet) unless pending=False.
        """
        parts = ["-break-insert"]
        if temporary:
            parts.append("-t")
        if pending:
            parts.append("-f")
        if not enabled:
            parts.append("-d")
        if condition:
            parts += ["-c", mi.quote(condition)]
        if ignore_count:
            parts += ["-i", str(int(ignore_count))]
        if thread:
            parts += ["-p", str(thread)]
        if file is not None and line is not None:
            parts += ["--source", mi.quote(file), "--line", str(int(line))]
        elif function is not None:
            parts += ["--function", mi.quote(function)]
        elif address is not None:
            addr = hex(address) if isinstance(address, int) else str(address)
            parts.append(mi.quote("*" + addr.lstrip("*")))
        elif location:
            parts.append(mi.quote(location))
        else:
            raise ValueError("break_insert needs a location")
        res = await self.cmd(" ".join(parts))
        bkpt = res.get("bkpt")
        bp = Breakpoint.from_mi(bkpt) if isinstance(bkpt, dict) else None
        await self.refresh_breakpoints()
        if bp is None:
            raise MIError("gdb did not return the breakpoint", " ".join(parts))
        return self._state.breakpoint(bp.number) or bp

    async def refresh_breakpoints(self) -> None:
        res = await self.cmd("-break-list")
        table = res.get("BreakpointTable") or {}
        body = mi.as_list(table.get("body")) if isinstance(table, dict) else []
        bps = [Breakpoint.from_mi(b) for b in body if isinstance(b, dict)]
        self.set_state(set_breakpoints(self._state, bps))

    async def break_delete(self, number: str) -> None:
        await self.cmd(f"-break-delete {number}")
        await self.refresh_breakpoints()

    async def break_enable(self, number: str, enabled: bool = True) -> None:
        await self.cmd(f"-break-{'enable' if enabled else 'disable'} {number}")
        await self.refresh_breakpoints()

    async def break_condition(self, number: str, condition: str | None) -> None:
        if condition:
            await self.cmd(f"-break-condition {number} {condition}")
        else:
            await self.cmd(f"-break-condition {number}")
        await self.refresh_breakpoints()

    async def toggle_breakpoint_at(self, fullname: str, line: int) -> Breakpoint | None:
        """Delete the breakpoints on a source line, or insert one there. Returns the new one."""
        existing = [
            b for b in self._state.breakpoints if not b.internal and (fullname, line) in b.source_lines()
        ]
        if existing:
            for b in existing:
                await self.cmd(f"-break-delete {b.number.split('.')[0]}", check=False)
            await self.refresh_breakpoints()
            return None
        return await self.break_insert(file=fullname, line=line)

    # -- data ---------------------------------------------------------------------------------

    async def evaluate(self, expression: str, thread: str | None = None, frame: int | None = None) -> str:
        st = self._state
        if st.is_stopped:
            opt = self._thread_opt(thread or st.selected_thread, st.selected_frame if frame is None else frame)
        else:
            opt = ""
        res = await self.cmd(f"-data-evaluate-expression {opt}{mi.quote(expression)}")
        return str(res.get("value", ""))

    async def var_create(self, expression: str, thread: str | None = None, frame: int | None = None, floating: bool = False) -> VarObj:
        st = self._state
        opt = ""
        if st.is_stopped and not floating:
            opt = self._thread_opt(thread or st.selected_thread, st.selected_frame if frame is None else frame)
        where = "@" if floating else "*"
        res = await self.cmd(f"-var-create {opt}- {where} {mi.quote(expression)}")
        return VarObj.from_mi(res.payload, expression)

    async def var_children(self, name: str, start: int = 0, count: int = CHILDREN_PAGE) -> tuple[list[VarObj], bool]:
        """Children start..start+count-1 of a var object, and whether there are more."""
        res = await self.cmd(f"-var-list-children --all-values {name} {int(start)} {int(start + count)}")
        kids = [VarObj.from_mi(c) for c in mi.as_list(res.get("children")) if isinstance(c, dict)]
        more = res.get("has_more") == "1"
        numchild = mi.to_int(res.get("numchild"), 0) or 0
        if not more and numchild > start + count:
            more = True
        return kids, more

    async def var_update(self, name: str = "*") -> list[dict]:
        res = await self.cmd(f"-var-update --all-values {name}", check=False)
        return [c for c in mi.as_list(res.get("changelist")) if isinstance(c, dict)]

    async def var_delete(self, name: str) -> None:
        await self.cmd(f"-var-delete {name}", check=False)

    async def read_memory(self, address: int, count: int) -> bytes:
        res = await self.cmd(f"-data-read-memory-bytes {address:#x} {int(count)}")
        out = bytearray()
        for block in mi.as_list(res.get("memory")):
            out += bytes.fromhex(str(block.get("contents", "")))
        return bytes(out)


def shell_quote(arg: str) -> str:
    """Quote a program argument for gdb's start-up shell (gdb runs the program through /bin/sh)."""
    return shlex.quote(arg)


_SCOPE_MEANING = {
    0: "classic: any process of the same user may be traced",
    1: "restricted: only descendants may be traced unless the target allows it",
    2: "admin-only: tracing needs CAP_SYS_PTRACE",
    3: "no attach: ptrace attach is disabled until reboot",
}


def attach_failure(pid: int, gdb_message: str) -> str:
    """One line explaining why attaching failed, with what to do about ptrace refusals."""
    low = gdb_message.lower()
    if "not permitted" in low or "eperm" in low or "permission" in low:
        tracer = tracer_of(pid)
        if tracer:
            return f"cannot attach to process {pid}: it is already traced by process {tracer} (a debugger or strace); detach that first"
        scope = ptrace_scope()
        scope_txt = (
            f"kernel.yama.ptrace_scope is {scope} ({_SCOPE_MEANING.get(scope, 'unknown')})"
            if scope is not None
            else "kernel.yama.ptrace_scope is not available here"
        )
        return (
            f"cannot attach to process {pid}: ptrace refused (Operation not permitted); "
            f"{scope_txt}: run as the process's owner with 'sysctl kernel.yama.ptrace_scope=0', "
            "or as root; in a container the tracer needs CAP_SYS_PTRACE (docker run --cap-add=SYS_PTRACE)"
        )
    if "no such process" in low:
        return f"cannot attach to process {pid}: no such process"
    return f"cannot attach to process {pid}: {gdb_message.strip()}"
