"""Command line: ``tuidbg run|attach|core ...``.

Bad input never shows a traceback: it prints one line, ``tuidbg: <what is
wrong>``, on stderr and exits with code 2.
"""

from __future__ import annotations

import os
import sys

from tuidbg import __version__
from tuidbg.launch import (
    UsageError,
    check_core,
    check_files,
    check_pid,
    find_gdb,
    program_target,
    python_target,
)

EXIT_USAGE = 2
START_SWITCH_S = 0.0005  # the GIL's switch interval while the screen's code is imported beside gdb's start (run_ui)
# What the completion script offers for an option's value (shtab.FILE and shtab.DIRECTORY, written
# out: building the parser must not import shtab; tuidbg.completion makes the script).
FILE = {"bash": "_shtab_compgen_files", "zsh": "_files"}
DIRECTORY = {"bash": "_shtab_compgen_dirs", "zsh": "_files -/"}
# ... and shell functions of tuidbg's own (tuidbg.completion.PREAMBLE: builtins only, no Python at Tab)
THEMES = {"bash": "_tuidbg_themes", "zsh": "_tuidbg_themes"}
KEYMAPS = {"bash": "_tuidbg_keymaps", "zsh": "_tuidbg_keymaps"}
PROFILES = {"bash": "_tuidbg_profiles", "zsh": "_tuidbg_profiles"}
PIDS = {"bash": "_tuidbg_pids", "zsh": "_tuidbg_pids"}

# Options every subcommand takes: (flags, argparse kwargs).
_VALUE_OPTS = {"-ex", "-x", "--gdb", "--theme", "--keymap", "--python", "--cwd", "--config", "--profile", "--children"}
_FLAG_OPTS = {"--cuda", "--nx", "--debuginfod", "--gdb-demangles", "--no-agent", "--break-on-failure", "--break-on-exception", "--fresh",
              "--stop-at-entry", "--no-stop-at-entry"}


class UIOptions:
    """What the command line asks of the UI. (Not a dataclass: ``tuidbg dump`` imports this module
    and is timed end to end against py-spy; importing dataclasses costs it milliseconds.)"""

    def __init__(self, theme: str | None = None, keymap: str | None = None, config: str | None = None,
                 break_on_exception: bool = False, break_on_failure: bool = False,
                 messages: list[str] | None = None, profile_config=None) -> None:
        self.theme = theme
        self.keymap = keymap
        self.config = config
        self.break_on_exception = break_on_exception
        self.break_on_failure = break_on_failure
        self.messages = messages if messages is not None else []
        # tuidbg run: NAME -> the session configuration of `tuidbg run --profile NAME` (the palette's profiles)
        self.profile_config = profile_config



def _add_common(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("gdb")
    g.add_argument("-ex", dest="ex", action="append", default=[], metavar="CMD",
                   help="gdb command to run after gdb starts, before the program runs (repeatable)")
    g.add_argument("-x", dest="x_files", action="append", default=[], metavar="FILE",
                   help="gdb command file to source at start-up (repeatable)").complete = FILE
    g.add_argument("--gdb", metavar="PATH", help="the gdb to use (any gdb or cuda-gdb)").complete = FILE
    g.add_argument("--cuda", action="store_true", help="use cuda-gdb (found on PATH or in /usr/local/cuda/bin)")
    g.add_argument("--nx", action="store_true", help="do not read any gdbinit file")
    g.add_argument("--debuginfod", action="store_true",
                   help="let gdb download debug info from debuginfod servers (off by default: no network)")
    g.add_argument("--gdb-demangles", action="store_true",
                   help="let gdb demangle C++ names as it reads symbols (slower start with large C++ libraries"
                        " such as libtorch; by default tuidbg demangles the names it shows)")
    u = p.add_argument_group("interface")
    u.add_argument("--theme", metavar="NAME",
                   help="colour theme (tuidbg-dark, tuidbg-light, tuidbg-high-contrast, tuidbg-ansi, …)").complete = THEMES
    u.add_argument("--keymap", metavar="NAME", help="key map: default, vscode or vim (or a .toml file)").complete = KEYMAPS
    u.add_argument("--config", metavar="FILE", help="config file (default $XDG_CONFIG_HOME/tuidbg/config.toml)").complete = FILE


def _add_fresh(p) -> None:
    p.add_argument("--fresh", action="store_true",
                   help="start without the breakpoints, watches and layout remembered from the last run of this "
                   "program in this directory (kept in $XDG_STATE_HOME/tuidbg)")


def version_text() -> str:
    """``tuidbg X.Y.Z``, then the gdb (and cuda-gdb, when there is one) that tuidbg would run, with their versions."""
    from tuidbg.gdbversion import version_text as text

    return text(__version__, _cuda_gdb_or_none())


def _cuda_gdb_or_none() -> str | None:
    try:
        return find_gdb(None, True)
    except UsageError:
        return None


def build_parser() -> argparse.ArgumentParser:
    import argparse  # (here, not at the top: `tuidbg dump PID` does without it)

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # one line, exit 2, no usage dump
            raise UsageError(message)

    class _VersionAction(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            print(version_text())
            parser.exit()

    parser = _Parser(
        prog="tuidbg",
        description="A terminal debugger for Python, C++ and CUDA in one stack, driving gdb or cuda-gdb.",
    )
    parser.add_argument("--version", action=_VersionAction, nargs=0,
                        help="print the versions of tuidbg and of the gdb it finds, then exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    run = sub.add_parser(
        "run",
        help="start a program (or a Python script or module) under the debugger",
        description="Start a program under the debugger. Forms:\n"
        "  tuidbg run [options] -- PROGRAM ARGS\n"
        "  tuidbg run [options] -m MODULE ARGS\n"
        "  tuidbg run [options] script.py ARGS\n"
        "Python targets run with python3 from PATH, or --python PATH.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="tuidbg run [options] (-- PROGRAM | -m MODULE | script.py) [ARGS ...]",
    )
    _add_common(run)
    _add_fresh(run)
    run.add_argument("--profile", metavar="NAME",
                     help="start as profile NAME of .tuidbg.toml (in this folder or one above) says: program, "
                     "arguments, environment, gdb, breakpoints; options given here win").complete = PROFILES
    run.add_argument("--python", metavar="PATH", help="Python interpreter for script.py and -m targets").complete = FILE
    run.add_argument("--cwd", metavar="DIR", help="working directory of the program").complete = DIRECTORY
    run.add_argument("--no-agent", action="store_true",
                     help="do not load tuidbg's Python agent (no Python breakpoints or stepping)")
    run.add_argument("--break-on-exception", action="store_true",
                     help="stop on uncaught Python exceptions")
    run.add_argument("--break-on-failure", action="store_true",
                     help="under pytest: stop at a failing test with its frames")
    entry = run.add_mutually_exclusive_group()
    entry.add_argument("--stop-at-entry", dest="stop_at_entry", action="store_true",
                       help="stop at the program's entry (main; a Python program's first line) even with breakpoints set "
                       "(by default it stops there only when no breakpoint or exception stop is set)")
    entry.add_argument("--no-stop-at-entry", dest="stop_at_entry", action="store_false",
                       help="do not stop at the entry: run to the first breakpoint (or the end)")
    run.set_defaults(stop_at_entry=None)
    run.add_argument("--children", choices=("python", "all", "none"), default="python",
                     help="which child processes stay under the debugger: python (default: children that run "
                     "Python, such as multiprocessing and DataLoader workers, and forks of the program), all, or none")
    # (for the help and the shell's completion: split_run_argv takes the program and its arguments off first)
    run.add_argument("program", nargs="*", metavar="PROGRAM ARGS", help="the program (after --), script.py or -m MODULE, "
                     "then its arguments").complete = FILE
    run.set_defaults(func=cmd_run)

    attach = sub.add_parser(
        "attach",
        help="attach to a running process (quitting detaches; it keeps running)",
        description="Attach to a running process. Without PID, pick one from a list (Python processes first). "
        "Quitting detaches and leaves the process running.",
    )
    _add_common(attach)
    _add_fresh(attach)
    attach.add_argument("pid", nargs="*", metavar="PID",
                        help="process ID; several are debugged together in one session (quitting detaches them all)"
                        ).complete = PIDS
    attach.add_argument("--children", action="store_true",
                        help="each PID with its descendants: a torchrun launcher's ranks, a DataLoader's workers")
    attach.add_argument("--list", action="store_true", help="print the processes one could attach to, then exit")
    attach.add_argument("--no-agent", action="store_true",
                        help="do not load tuidbg's Python agent into the process (Python frames and locals are "
                        "still read from memory; no Python breakpoints or stepping)")
    attach.add_argument("--remote", metavar="HOST:PORT",
                        help="PID is a process of another node: attach through the gdbserver --multi HOST:PORT running "
                        "there (start it there with: gdbserver --multi HOST:PORT); Python stacks are read over gdb's "
                        "remote protocol; no Python agent (no Python breakpoints or stepping)")
    attach.set_defaults(func=cmd_attach)

    core = sub.add_parser("core", help="open a core file", description="Open a core file of EXE post mortem.")
    _add_common(core)
    core.add_argument("exe", metavar="EXE", help="the executable that dumped core").complete = FILE
    core.add_argument("corefile", metavar="CORE", help="the core file").complete = FILE
    core.set_defaults(func=cmd_core)

    from tuidbg.dump import add_dump_parser, add_view_parser  # tuidbg dump PID... [--json], tuidbg view FILE...

    add_dump_parser(sub, complete_pids=PIDS)
    add_view_parser(sub, complete_files=FILE)
    from tuidbg.completion import add_completion_parser  # tuidbg completion bash|zsh

    add_completion_parser(sub, parser)
    return parser


def split_run_argv(argv: list[str]) -> tuple[list[str], list[str], str | None]:
    """Split ``run`` arguments into (tuidbg options, target argv, module).

    Options end at ``--``, at ``-m MODULE`` or at the first word that is not an
    option: everything after belongs to the program, ``-k``-style flags included.
    """
    opts: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            return opts, argv[i + 1 :], None
        if tok == "-m":
            if i + 1 >= len(argv):
                raise UsageError("-m needs a module name")
            return opts, argv[i + 2 :], argv[i + 1]
        if tok.startswith("-m") and len(tok) > 2 and not tok.startswith("--"):
            return opts, argv[i + 1 :], tok[2:]
        name = tok.split("=", 1)[0]
        if name in _VALUE_OPTS:
            if "=" in tok:
                opts.append(tok)
                i += 1
            else:
                if i + 1 >= len(argv):
                    raise UsageError(f"{tok} needs a value")
                opts += [tok, argv[i + 1]]
                i += 2
            continue
        if tok in _FLAG_OPTS or tok in ("-h", "--help"):
            opts.append(tok)
            i += 1
            continue
        if tok.startswith("-") and tok != "-":
            raise UsageError(f"unknown option {tok} (put the program after --: tuidbg run [options] -- PROGRAM ARGS)")
        return opts, argv[i:], None
    return opts, [], None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv == ["--version"]:  # (timed against gdb --version: no argparse)
            print(version_text())
            return 0
        if argv[:1] == ["dump"]:
            # `tuidbg dump PID` is timed end to end against py-spy: its plain forms skip argparse
            from tuidbg.dump import cmd_dump, parse_plain

            args = parse_plain(argv[1:])
            if args is not None:
                return cmd_dump(args)
        return _main(argv)
    except UsageError as exc:
        print(f"tuidbg: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("tuidbg: interrupted", file=sys.stderr)
        return 130


SUBCOMMANDS = ("run", "attach", "core", "dump", "view", "completion")


def hoist_options(argv: list[str]) -> list[str]:
    """``tuidbg --gdb X -ex CMD run -- ./a.out`` (gdb's habit: options first) means
    ``tuidbg run --gdb X -ex CMD -- ./a.out``: shared options before the subcommand move after it."""
    before: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok in SUBCOMMANDS:
            return [tok] + before + argv[i + 1 :] if before else argv
        name = tok.split("=", 1)[0]
        if name in _VALUE_OPTS and "=" not in tok:
            if i + 1 >= len(argv):
                raise UsageError(f"{tok} needs a value")
            before += [tok, argv[i + 1]]
            i += 2
        elif name in _VALUE_OPTS or tok in _FLAG_OPTS:
            before.append(tok)
            i += 1
        else:
            break
    if before:
        word = argv[i] if i < len(argv) else ""
        if not word:
            raise UsageError(f"{' '.join(before)}: which command? (tuidbg run|attach|core|dump [options] ...)")
        raise UsageError(f"{word!r} is not a tuidbg command; the forms are tuidbg run|attach|core|dump [options] ...")
    return argv


def _main(argv: list[str]) -> int:
    parser = build_parser()
    argv = hoist_options(argv)
    if argv and argv[0] == "run":
        args = run_args(argv[1:], parser)
    else:
        args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    return args.func(args)


def run_args(argv: list[str], parser=None):
    """The parsed arguments of ``tuidbg run ARGV`` (the program's own arguments in ``.target``)."""
    parser = parser or build_parser()
    opts, target, module = split_run_argv(argv)
    args = parser.parse_args(["run"] + opts)
    args.target = target
    args.module = module
    return args


def _session_config(args, mode: str):
    from tuidbg.engine.session import SessionConfig

    check_files(args.x_files, "-x")
    from tuidbg.engine.mi import takes_more_lines

    for command in args.ex:
        why = takes_more_lines(command)
        if why:
            raise UsageError(f"-ex {why}")
    gdb = find_gdb(args.gdb, args.cuda)
    return SessionConfig(
        mode=mode,
        gdb=gdb,
        cuda=bool(args.cuda),
        ex=list(args.ex),
        x_files=[os.path.abspath(p) for p in args.x_files],
        nx=bool(args.nx),
        debuginfod=bool(args.debuginfod),
        gdb_demangles=bool(args.gdb_demangles),
    )


def _ui_options(args) -> UIOptions:
    return UIOptions(theme=args.theme, keymap=args.keymap, config=args.config,
                     break_on_exception=bool(getattr(args, "break_on_exception", False)),
                     break_on_failure=bool(getattr(args, "break_on_failure", False)))


def cmd_run(args) -> int:
    cfg = run_config(args)
    return run_ui(cfg, run_ui_options(args, cfg))


def run_ui_options(args, current) -> UIOptions:
    """``tuidbg run``'s screen options on the session ``current``: a profile picked there keeps its --nx etc."""
    ui = _ui_options(args)

    def profile_config(name: str):
        cfg = run_config(run_args(["--profile", name]))
        cfg.nx, cfg.debuginfod, cfg.gdb_demangles = current.nx, current.debuginfod, current.gdb_demangles
        return cfg

    ui.profile_config = profile_config
    return ui


def run_config(args):
    """The session configuration of ``tuidbg run`` (a profile applied); UsageError for bad input."""
    env: dict[str, str] = {}
    if args.profile:
        from tuidbg import profiles

        env = profiles.apply(profiles.load(args.profile), args)
    cwd = os.path.abspath(args.cwd) if args.cwd else None
    if cwd and not os.path.isdir(cwd):
        raise UsageError(f"--cwd {args.cwd}: no such directory")
    cfg = _session_config(args, "run")
    if args.module is not None:
        target = python_target(args.python, None, args.module, args.target, cwd)
    elif not args.target:
        raise UsageError("nothing to run: give a program after --, a script.py, or -m MODULE")
    else:
        target = program_target(args.target, args.python, cwd)
    cfg.program = target.program
    cfg.args = target.args
    cfg.cwd = cwd
    cfg.program_env.update(env)
    cfg.python_target = target.python
    cfg.agent = target.python and not args.no_agent
    cfg.break_on_exception = bool(args.break_on_exception)
    cfg.break_on_failure = bool(args.break_on_failure)
    cfg.children = getattr(args, "children", None) or "python"
    cfg.stop_at_entry = getattr(args, "stop_at_entry", None)  # (None: when nothing else stops it, engine.entry)
    if cfg.stop_at_entry and cfg.python_target and not cfg.agent:
        raise UsageError("--stop-at-entry on a Python program needs the agent (no --no-agent): it stops at the first line")
    if (cfg.break_on_exception or cfg.break_on_failure) and not cfg.agent:
        raise UsageError("--break-on-exception and --break-on-failure need a Python program and the agent (no --no-agent)")
    _remember(cfg, args)
    return cfg


def _remember(cfg, args) -> None:
    """Where this program's breakpoints, watches and layout are remembered (tuidbg.engine.remember)."""
    from tuidbg.engine import remember

    program = remember.program_identity(cfg)
    if program is not None:
        cfg.remember = remember.state_file(os.getcwd(), program)
        cfg.fresh_state = bool(args.fresh)


def cmd_attach(args) -> int:
    if getattr(args, "remote", None):
        return run_ui(remote_attach_config(args), _ui_options(args))
    if args.list:
        from tuidbg.picker import format_process_list

        print(format_process_list())
        return 0
    if not args.pid:
        if not sys.stdin.isatty() or not sys.stdout.isatty():
            raise UsageError("attach needs a PID when not run in a terminal (tuidbg attach --list shows candidates)")
        from tuidbg.ui.picker import pick_process

        picked = pick_process()
        if picked is None:
            return 1
        args.pid = [str(picked)]
    return run_ui(attach_config(args), _ui_options(args))


def attach_config(args):
    """The session configuration of ``tuidbg attach PID... [--children]`` (args.pid given); UsageError for
    bad input."""
    pids = attach_pids(args.pid, args.children)
    pid = pids[0]
    cfg = _session_config(args, "attach")
    cfg.pid = pid
    cfg.more_pids = pids[1:]
    cfg.children = "python" if args.children else "none"  # (and the children they start from now on)
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        cfg.python_target = os.path.basename(exe).startswith("python")
    except OSError:
        pass
    cfg.agent = cfg.python_target and not args.no_agent
    _remember(cfg, args)
    return cfg


def attach_pids(texts: list[str], children: bool) -> list[int]:
    """The processes of ``tuidbg attach PID... [--children]``, each once, each PID checked (one clear line
    for one that cannot be attached to); with ``children``, each one's descendants after it (those
    that ended meanwhile left out)."""
    pids: list[int] = []
    for text in texts:
        pid = check_pid(text)
        if pid not in pids:
            pids.append(pid)
        if not children:
            continue
        from tuidbg.procread.proc import descendants

        for child in descendants(pid):
            try:
                child = check_pid(str(child))
            except UsageError as exc:
                if "zombie" in str(exc) or "no process" in str(exc):
                    continue
                raise
            if child not in pids:
                pids.append(child)
    return pids


def remote_attach_config(args):
    """``attach --remote HOST:PORT PID``: the session configuration (nothing of this machine's /proc
    is read for PID, which names a process of the other node; tuidbg.engine.remote)."""
    from tuidbg.engine import remote

    try:
        remote.parse_address(args.remote)
    except remote.BadAddress as exc:
        raise UsageError(str(exc)) from None
    if args.list:
        raise UsageError("--list shows this machine's processes: not with --remote (run tuidbg attach --list on the node)")
    if getattr(args, "children", False):
        raise UsageError("--children reads this machine's process tree: not with --remote (give the node's PIDs)")
    text = args.pid if isinstance(args.pid, str) else " ".join(args.pid or [])
    if not text:
        raise UsageError("attach --remote needs the PID of the process on the other node")
    if not text.isdigit() or int(text) <= 0:
        raise UsageError(f"{text!r} is not a process ID (attach --remote takes one)")
    cfg = _session_config(args, "attach")
    cfg.pid = int(text)
    cfg.remote = args.remote
    cfg.agent = False  # (it connects back over a local socket; the session says so in its console)
    return cfg


def cmd_core(args) -> int:
    exe, core = check_core(args.exe, args.corefile)
    cfg = _session_config(args, "core")
    cfg.program = exe
    cfg.core = core
    cfg.load_gdbext = True
    return run_ui(cfg, _ui_options(args))


async def start_session(cfg):
    """Start gdb and, for attach and core, the target; raise UsageError with gdb's reason."""
    from tuidbg.engine.errors import EngineError, StartupError
    from tuidbg.engine.debugger import new_session

    session = new_session(cfg)
    try:
        # run: the program's symbols load inside the UI (which shows gdb reading
        # them); attach and core report their failures here, before any screen.
        await session.start(load=cfg.mode != "run")
        if cfg.mode == "attach" and cfg.more_pids:
            # (the screen shows the first process while gdb attaches to the others: a torchrun job's 49
            # take it ~10 s; bench/many_ranks.py)
            await session.first_process_shown()
        elif cfg.mode in ("attach", "core"):
            await session.launch()
    except (StartupError, EngineError) as exc:
        await _close_quietly(session)
        raise UsageError(str(exc)) from None
    return session


async def _close_quietly(session) -> None:
    """close() is bounded (and abandons gdb when it must); the timeout is a last resort."""
    import asyncio

    try:
        await asyncio.wait_for(session.close(), 20)
    except (Exception, asyncio.CancelledError):
        session.abandon()


def run_ui(cfg, ui: UIOptions) -> int:
    import asyncio
    import importlib

    from tuidbg import config as tconfig

    settings = tconfig.load_settings(ui.config)  # bad config: UsageError before gdb starts
    theme = tconfig.resolve_theme_name(ui.theme or settings.theme)
    keymap = tconfig.load_keymap(ui.keymap or settings.keymap, settings.keys)
    importlib.import_module("tuidbg.engine.debugger")  # (the session's modules: see go())

    async def go() -> int:
        # The screen's code is imported (a quarter of a second of Python, in a thread) while gdb starts and
        # answers the session's set-up (the loop talks to gdb meanwhile; gdb runs on the other core), and, for
        # run, while gdb loads and starts the program: on 2 cores these overlap the program's own start and
        # gdb's reading of its libraries' symbols (bench/torch_first_stop.py, bench/cold_start.py). The
        # session's modules are imported before (the thread would slow the start of gdb).
        terminal = sys.stdin.isatty() and sys.stdout.isatty()
        # The loop waits on gdb's answers while the thread imports: each answer waits for the GIL, up to the
        # switch interval (5 ms by default: the session's 25-odd set-up commands took 20-70 ms each on a loaded
        # machine). The screen sets 0.1 ms once it runs (TuidbgApp.on_mount); 0.5 ms until then.
        sys.setswitchinterval(min(sys.getswitchinterval(), START_SWITCH_S))
        ui_import = asyncio.ensure_future(asyncio.to_thread(importlib.import_module, "tuidbg.ui.app")) if terminal else None
        try:
            session = await start_session(cfg)
        except BaseException:
            if ui_import is not None:
                await asyncio.gather(ui_import, return_exceptions=True)  # (a thread is not cancelled)
            raise
        if not terminal:
            await _close_quietly(session)  # detaches an attached process
            raise UsageError(
                "the debugger's screen needs a terminal (run it in one, e.g. ssh -t or tmux); "
                "for the stacks of a process without one, use: tuidbg dump PID"
            )
        try:  # (until the screen runs, nothing else would end the program started here)
            if cfg.mode == "run":
                # What the program prints and where it stops meanwhile wait for the screen (DebugSession's
                # backlogs and state); so does the launch's failure, for the screen to report.
                session.begin_launch()
            await ui_import
            from tuidbg.ui.app import TuidbgApp
            from tuidbg.ui.terminal import TerminalGuard

            app = TuidbgApp(session, theme=theme, keymap=keymap, settings=settings, ui_options=ui)
            guard = TerminalGuard()
            # SIGTERM/SIGHUP/SIGQUIT/SIGINT: quit as q does (run: kill the program; attach: detach), in time.
            guard.install(asyncio.get_running_loop(), app.quit_on_signal, lambda: app.session.abandon())
            app.after_signal_close = guard.leave_if_hung_up
        except BaseException:  # an import that fails, Ctrl-C meanwhile
            await _close_quietly(session)
            raise
        try:
            await app.run_async()
        finally:
            await _close_quietly(app.session)
            if guard.signalled:
                guard.restore()  # (Textual did; again by hand in case the exit was cut short)
        if guard.signalled:
            return 128 + guard.signalled
        problems = app.start_problems()  # (the program could not start, a -ex failed: named on the screen too)
        for line in problems:
            print(f"tuidbg: {line}", file=sys.stderr)
        return EXIT_USAGE if problems else app.return_code or 0

    return asyncio.run(go())
