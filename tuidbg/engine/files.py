"""Reading a file that a program, gdb, a dump or a state file names: the one way tuidbg does it.

Such a name may be anything: a FIFO (opening it waits for a writer forever), ``/dev/zero`` (reading
it never ends), a directory, a 1 GB sparse file, a file on a hung network mount. So a file is read
only when it is a regular file, only up to a cap in bytes, and never in the caller's thread:

- it is opened with ``O_NONBLOCK`` (opening a FIFO or a device then returns at once) and ``O_NOCTTY``,
  and ``fstat`` of that descriptor decides: anything but a regular file is refused, and so is a file
  whose size is over the cap (before any byte is read); a file that grows while read is cut at
  the cap and refused too;
- the open and the read run in a daemon thread of their own; the caller waits for it at most
  ``timeout`` seconds (``read_bytes``, from plain code: the UI's handlers, the CLI) or awaits it
  (``read_bytes_async``, from the engine's asyncio code). A read that does not finish in time
  (a hung mount) is abandoned to its thread, and the caller gets ``Unreadable`` saying so; a second
  read of the same file meanwhile waits for the first one's thread instead of starting another, and
  no more than ``MAX_PENDING`` threads are ever left waiting on the file system.

Every refusal is an ``Unreadable`` (an ``OSError``) whose text is one line naming the file and the
reason, for the status line, a notice or a CLI error. The caps, and why each is what it is, are
below; callers pick theirs.
"""

from __future__ import annotations

import concurrent.futures
import os
import stat
import threading

MiB = 1024 * 1024

# A source file shown in the source view, the disassembly's mixed-in lines, a breakpoint's line text:
# the largest generated C++ file of a PyTorch build is ~25 MB; a source view of a bigger file is of no use.
SOURCE_CAP = 64 * MiB
# A dump of `tuidbg dump --json` (view, --merge): a node of 8 ranks x 100 threads x 200 frames is
# ~30 MB; json.loads holds about 8x a file's size, so 256 MB is ~2 GB at the peak.
DUMP_CAP = 256 * MiB
# A remembered-state file (tuidbg.engine.remember): ~250 bytes a breakpoint, so 4 MB is ~15,000
# breakpoints; one thousand is already more than anyone sets.
STATE_CAP = 4 * MiB
# A TOML file of settings, a theme, a keymap, a launch profile: a few KB.
CONFIG_CAP = 1 * MiB

TIMEOUT = 10.0  # for the engine's and the CLI's reads
UI_TIMEOUT = 2.0  # how long a UI handler waits (the screen does not move meanwhile)
MAX_PENDING = 16  # reads left waiting on a file system that does not answer


class Unreadable(OSError):
    """A file tuidbg will not (or cannot) read; ``str()`` is one line: ``PATH: why``."""

    def __init__(self, path: str, why: str, err: int | None = None) -> None:
        super().__init__(why)
        self.path = path
        self.why = why
        self.errno = err  # the system's error number, when the system refused (ENOENT: no such file)
        self.pending: concurrent.futures.Future | None = None  # a read that outlasted its wait: still going

    def __str__(self) -> str:
        return f"{self.path}: {self.why}"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"


def _size(n: int) -> str:
    return f"{n // MiB} MB" if n >= MiB else f"{n // 1024} KB" if n >= 1024 else f"{n} bytes"


def _open_regular(path: str) -> tuple[int, os.stat_result]:
    """A descriptor of ``path`` and its ``fstat``, if it is a regular file (opening cannot block)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise Unreadable(path, exc.strerror or str(exc), exc.errno) from None
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise Unreadable(path, exc.strerror or str(exc)) from None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise Unreadable(path, f"{_kind(st.st_mode)}, not a regular file")
    return fd, st


def read_now(path: str, cap: int) -> bytes:
    """The bytes of the regular file ``path`` (at most ``cap``), read in this thread: for a worker
    thread (``read_bytes`` runs it in one), or a file tuidbg made itself in a folder of its own."""
    fd, st = _open_regular(path)
    try:
        if st.st_size > cap:
            raise Unreadable(path, f"larger than {_size(cap)} ({_size(st.st_size)})")
        chunks = []
        got = 0
        while True:
            chunk = os.read(fd, min(1 * MiB, cap + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
            if got > cap:
                raise Unreadable(path, f"larger than {_size(cap)} (it grew while read)")
        return b"".join(chunks)
    except Unreadable:
        raise
    except OSError as exc:
        raise Unreadable(path, exc.strerror or str(exc)) from None
    finally:
        os.close(fd)


def head_now(path: str, n: int) -> bytes:
    """The first ``n`` bytes of the regular file ``path``, whatever its size, read in this thread."""
    fd, _st = _open_regular(path)
    try:
        return os.read(fd, n)
    except OSError as exc:
        raise Unreadable(path, exc.strerror or str(exc)) from None
    finally:
        os.close(fd)


_lock = threading.Lock()
_pending: dict[tuple[str, int, bool], concurrent.futures.Future] = {}


def _start(path: str, cap: int, head: bool = False) -> concurrent.futures.Future:
    """The read of ``path`` under way in a thread (a new one, or the same read not finished yet)."""
    key = (path, cap, head)
    with _lock:
        fut = _pending.get(key)
        if fut is not None:
            return fut
        if len(_pending) >= MAX_PENDING:
            raise Unreadable(path, f"not read: {MAX_PENDING} reads are still waiting on a file system that does not answer")
        fut = concurrent.futures.Future()
        _pending[key] = fut

    def work() -> None:
        try:
            data = head_now(path, cap) if head else read_now(path, cap)
        except BaseException as exc:  # (handed to the caller, whatever it is)
            with _lock:
                _pending.pop(key, None)
            fut.set_exception(exc)
        else:
            with _lock:
                _pending.pop(key, None)
            fut.set_result(data)

    threading.Thread(target=work, name="tuidbg-read", daemon=True).start()
    return fut


def pending() -> int:
    """How many reads are under way (left to their threads, or still reading)."""
    with _lock:
        return len(_pending)


def _late(path: str, timeout: float, fut: concurrent.futures.Future) -> Unreadable:
    exc = Unreadable(path, f"not read within {timeout:g} s (a file system that does not answer?)")
    exc.pending = fut
    return exc


def _wait(fut: concurrent.futures.Future, path: str, timeout: float) -> bytes:
    try:
        return fut.result(timeout)
    except concurrent.futures.TimeoutError:
        raise _late(path, timeout, fut) from None


def read_bytes(path: str, cap: int, timeout: float = TIMEOUT) -> bytes:
    """The regular file ``path``, read in a thread of its own; waits for it at most ``timeout`` s.
    ``Unreadable`` (one line) for anything else (see the module's docstring)."""
    path = os.fspath(path)
    return _wait(_start(path, cap), path, timeout)


def read_text(path: str, cap: int, timeout: float = TIMEOUT) -> str:
    """``read_bytes`` as UTF-8 text (undecodable bytes replaced)."""
    return read_bytes(path, cap, timeout).decode("utf-8", "replace")


def read_head(path: str, n: int, timeout: float = TIMEOUT) -> bytes:
    """The first ``n`` bytes of the regular file ``path`` (a program's ELF magic or ``#!`` line),
    whatever its size; refused, like ``read_bytes``, when it is not a regular file."""
    path = os.fspath(path)
    return _wait(_start(path, n, head=True), path, timeout)


async def read_bytes_async(path: str, cap: int, timeout: float = TIMEOUT) -> bytes:
    """``read_bytes`` for asyncio code: the loop goes on while the thread reads."""
    import asyncio  # (here: the CLI's commands that read files run no loop)

    path = os.fspath(path)
    cfut = _start(path, cap)
    fut = asyncio.wrap_future(cfut)
    try:
        return await asyncio.wait_for(asyncio.shield(fut), timeout)
    except asyncio.TimeoutError:
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())  # (retrieved when it ends)
        raise _late(path, timeout, cfut) from None


async def read_text_async(path: str, cap: int, timeout: float = TIMEOUT) -> str:
    return (await read_bytes_async(path, cap, timeout)).decode("utf-8", "replace")
