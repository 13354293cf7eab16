"""Turning what the user typed into something gdb can debug, with one-line errors.

Every check here raises ``UsageError`` with a message meant for the user; the
CLI prints it as ``tuidbg: <message>`` and exits with code 2.
"""

from __future__ import annotations

import os

from tuidbg.procread.proc import ptrace_scope, tracer_of


class UsageError(Exception):
    """Bad input from the user; the message is one line."""


ELF_MAGIC = b"\x7fELF"


class Target:
    """What to run: the program, its arguments, whether it is a Python program, a short name for it.

    (Here, as everywhere in this module, nothing costly is imported at the top: ``tuidbg dump``
    imports this module and is timed end to end against py-spy.)"""

    def __init__(self, program: str, args: list[str] | None = None, python: bool = False, description: str = "") -> None:
        self.program = program
        self.args = args if args is not None else []
        self.python = python
        self.description = description

    def __repr__(self) -> str:
        return f"Target({self.program!r}, {self.args!r}, python={self.python!r}, description={self.description!r})"


def _which(name: str) -> str | None:
    """``shutil.which(name)`` for a name without a slash, without importing shutil (``tuidbg --version``
    finds gdb and cuda-gdb with it: bench/cold_start.py)."""
    for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(d, name)
        if os.access(path, os.F_OK | os.X_OK) and not os.path.isdir(path):
            return path
    return None


def find_gdb(gdb: str | None, cuda: bool) -> str:
    """The gdb (or cuda-gdb) to run, as an absolute path."""
    if gdb:
        path = _which(gdb) if os.sep not in gdb else gdb
        if not path or not os.path.exists(path):
            raise UsageError(f"--gdb {gdb}: no such program")
        if not os.access(path, os.X_OK) or os.path.isdir(path):
            raise UsageError(f"--gdb {gdb}: not an executable file")
        return os.path.abspath(path)
    if cuda:
        path = _which("cuda-gdb")
        if path is None:
            for cand in ("/usr/local/cuda/bin/cuda-gdb", "/opt/cuda/bin/cuda-gdb"):
                if os.access(cand, os.X_OK):
                    path = cand
                    break
        if path is None:
            raise UsageError(
                "--cuda: cuda-gdb not found on PATH or in /usr/local/cuda/bin; install the CUDA toolkit's "
                "debugger (Debian: apt-get install nvidia-cuda-gdb, from the non-free component) or pass --gdb PATH"
            )
        return path
    path = _which("gdb")
    if path is None:
        raise UsageError(
            "gdb is not installed: install it with 'apt-get install gdb' (Debian/Ubuntu), "
            "'dnf install gdb' (Fedora/RHEL) or 'conda install -c conda-forge gdb'"
        )
    return path


def _head(path: str, n: int) -> bytes | None:
    """The first bytes of a regular file (a FIFO or a device named as the program: None, at once)."""
    from tuidbg.engine import files

    try:
        return files.read_head(path, n)
    except files.Unreadable:
        return None


def _is_elf(path: str) -> bool:
    return _head(path, 4) == ELF_MAGIC


# ELF e_machine values: the ones this machine's kernel runs, and names for the message.
_EM_NAMES = {3: "i386", 62: "x86-64", 40: "32-bit ARM", 183: "aarch64", 243: "RISC-V", 21: "64-bit PowerPC",
             22: "s390", 8: "MIPS"}
_EM_RUNS_HERE = {"x86_64": {62, 3}, "amd64": {62, 3}, "aarch64": {183, 40}, "arm64": {183, 40}}


def _foreign_elf(path: str) -> str | None:
    """The architecture of an ELF executable this machine cannot run (an aarch64 binary on x86-64), else None."""
    import platform

    runs = _EM_RUNS_HERE.get(platform.machine().lower())
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if runs is None or len(head) < 20 or head[:4] != ELF_MAGIC or head[5] not in (1, 2):
        return None
    machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    if machine in runs:
        return None
    return _EM_NAMES.get(machine, f"machine {machine}")


def _shebang(path: str) -> list[str] | None:
    head = _head(path, 256)
    if head is None:
        return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    return line.split() if line else None


def _resolve_executable(name: str) -> str:
    if os.sep in name:
        path = name
    else:
        found = _which(name)
        if found is None:
            if os.path.exists(name):
                raise UsageError(f"{name}: not on PATH; to run the file in this directory, write ./{name}")
            raise UsageError(f"{name}: program not found")
        path = found
    if not os.path.exists(path):
        raise UsageError(f"{name}: no such file")
    if os.path.isdir(path):
        raise UsageError(f"{name}: is a directory, not a program")
    if not os.access(path, os.X_OK):
        raise UsageError(f"{name}: not executable (chmod +x it, or run it through its interpreter)")
    return os.path.abspath(path)


def resolve_python(python: str | None, cwd: str | None = None) -> str:
    """The real interpreter behind ``python3`` (or --python): pyenv shims and wrappers are scripts gdb cannot debug."""
    name = python or "python3"
    path = _resolve_executable(name) if (os.sep in name or _which(name)) else None
    if path is None:
        raise UsageError(
            f"{name}: no Python interpreter found on PATH; pass --python PATH"
            if not python
            else f"--python {python}: no such program"
        )
    if _is_elf(path):
        return path
    # A shim or wrapper: ask it which interpreter it runs (sys.executable keeps venv paths).
    import subprocess

    try:
        out = subprocess.run(
            [path, "-c", "import sys; print(sys.executable)"],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=cwd,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise UsageError(f"{name}: cannot run it to find the interpreter ({exc})") from exc
    real = out.stdout.strip().splitlines()[-1] if out.returncode == 0 and out.stdout.strip() else ""
    if not real or not _is_elf(real):
        raise UsageError(f"{name} ({path}) is not a Python interpreter gdb can run; pass --python PATH")
    return real


def python_target(python: str | None, script: str | None, module: str | None, args: list[str], cwd: str | None) -> Target:
    interp = resolve_python(python, cwd)
    if module is not None:
        if not module:
            raise UsageError("-m needs a module name")
        return Target(interp, ["-m", module] + args, python=True, description=f"python -m {module}")
    assert script is not None
    where = os.path.join(cwd, script) if cwd and not os.path.isabs(script) else script
    if not os.path.exists(where):
        raise UsageError(f"{script}: no such file")
    if os.path.isdir(where) and not os.path.exists(os.path.join(where, "__main__.py")):
        raise UsageError(f"{script}: is a directory without __main__.py")
    return Target(interp, [script] + args, python=True, description=f"python {script}")


def program_target(argv: list[str], python: str | None, cwd: str | None) -> Target:
    """``tuidbg run -- PROGRAM ARGS`` (or ``tuidbg run ./a.out``)."""
    if not argv or not argv[0]:
        raise UsageError("nothing to run: give a program after --, a script.py, or -m MODULE")
    name, args = argv[0], argv[1:]
    if name.endswith(".py") and not (os.access(name, os.X_OK) and _is_elf(name)):
        return python_target(python, name, None, args, cwd)
    path = _resolve_executable(name)
    foreign = _foreign_elf(path)
    if foreign:
        import platform

        raise UsageError(f"{name} is an executable for {foreign}; this machine ({platform.machine()}) cannot run it")
    if _is_elf(path):
        return Target(path, args, python=_looks_like_python(path), description=os.path.basename(path))
    bang = _shebang(path)
    if bang:
        interp, rest = bang[0], bang[1:]
        if os.path.basename(interp) == "env" and rest:
            interp, rest = rest[0], rest[1:]
        if os.path.basename(interp).startswith("python"):
            real = resolve_python(python or interp, cwd)
            return Target(real, rest + [path] + args, python=True, description=f"python {os.path.basename(path)}")
        raise UsageError(
            f"{name} is a script for {interp}, not a program; debug its interpreter: "
            f"tuidbg run -- {interp} {name} ..."
        )
    raise UsageError(f"{name}: not an executable gdb can run (not ELF)")


def _looks_like_python(path: str) -> bool:
    base = os.path.basename(path)
    return base.startswith("python") or base.startswith("pypy")


def check_pid(text: str) -> int:
    try:
        pid = int(text, 10)
    except ValueError:
        raise UsageError(f"{text!r} is not a process ID (a positive number)") from None
    if pid <= 0:
        raise UsageError(f"{text!r} is not a process ID (a positive number)")
    if not os.path.exists(f"/proc/{pid}"):
        raise UsageError(f"no process with ID {pid}")
    if pid == os.getpid():
        raise UsageError("tuidbg cannot attach to itself")
    try:
        with open(f"/proc/{pid}/status") as f:
            status = f.read()
        if "\nState:\tZ" in status:
            raise UsageError(f"process {pid} is a zombie (it has exited); there is nothing to attach to")
    except OSError:
        pass
    tracer = tracer_of(pid)
    if tracer:
        raise UsageError(f"process {pid} is already traced by process {tracer} (a debugger or strace); detach that first")
    if ptrace_scope() == 3:
        raise UsageError(
            "ptrace attach is disabled on this machine (kernel.yama.ptrace_scope is 3, until reboot); "
            "start the program under tuidbg instead: tuidbg run -- PROGRAM"
        )
    return pid


def check_core(exe: str, core: str) -> tuple[str, str]:
    for label, path in (("executable", exe), ("core file", core)):
        if not os.path.exists(path):
            raise UsageError(f"{path}: no such file ({label})")
        if os.path.isdir(path):
            raise UsageError(f"{path}: is a directory, not a {label}")
        if not os.access(path, os.R_OK):
            raise UsageError(f"{path}: not readable ({label})")
    if not _is_elf(exe):
        raise UsageError(f"{exe}: not an ELF executable")
    from tuidbg.engine import files

    try:
        head = files.read_head(core, 18)
    except files.Unreadable as exc:
        raise UsageError(f"{core}: cannot read it ({exc.why})") from None
    if head[:4] != ELF_MAGIC or len(head) < 18 or int.from_bytes(head[16:18], "little") != 4:
        raise UsageError(f"{core}: not an ELF core file")
    return os.path.abspath(exe), os.path.abspath(core)


def check_files(paths: list[str], what: str) -> None:
    for p in paths:
        if not os.path.isfile(p):
            raise UsageError(f"{what} {p}: no such file")
