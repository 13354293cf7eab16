"""The stack walker run from tuidbg's own process, over MI memory reads.

For a gdb without Python (cuda-gdb-minimal, a gdb built --without-python), or
when tuidbg's gdb extension did not load. The walker (``tuidbg/gdbext/
cpython_walk.py``) is synchronous; here it runs in a worker thread whose
``Target`` calls turn into MI commands on the session's event loop:

- memory: ``-data-read-memory-bytes`` (4 KiB pages, cached for one walk);
- symbols: ``-data-evaluate-expression (unsigned long)&NAME``;
- object files and sections: ``info symbol`` and ``info files``;
- threads: ``-thread-info`` (the LWP, and the pthread_t in "Thread 0x... (LWP n)");
- native frames: ``-stack-list-frames --thread N``, and ``$sp`` of the eval-loop frames.

No DWARF offsets here (gdb's type information is not reachable over MI in a
useful form): the built-in tables and _Py_DebugOffsets are used.
"""

from __future__ import annotations

import asyncio
import re
import weakref
from typing import Any

from tuidbg.engine import mi
from tuidbg.engine.errors import MIError
from tuidbg.gdbext import cpython_walk as W
from tuidbg.gdbext.cxxnames import demangle

_INFO_FILES_LINE = re.compile(r"^\s*(0x[0-9a-fA-F]+) - (0x[0-9a-fA-F]+) is (\S+)(?: in (.+?))?\s*$")
_SYMBOLS_FROM = re.compile(r'Symbols from "(.+)"\.')
_INFO_SYMBOL = re.compile(r" in section \S+(?: of (.+))?$")
_TARGET_ID = re.compile(r"Thread (0x[0-9a-fA-F]+)")
_LWP = re.compile(r"LWP (\d+)")
_NUMBER = re.compile(r"^\s*(?:\([^)]*\)\s*)?(-?(?:0x[0-9a-fA-F]+|\d+))")
FRAME_CHUNK = 256


class MITarget(W.Target):
    """Target over MI. Every method is called from the walker's worker thread."""

    def __init__(self, session, loop: asyncio.AbstractEventLoop, timeout: float = 30.0) -> None:
        self.session = session
        self.loop = loop
        self.timeout = timeout
        self._symbols: dict[str, int | None] = {}
        self._info_files: list[tuple[int, int, str, str | None]] | None = None
        self._exec_file: str | None = None
        self.commands = 0

    def _cmd(self, command: str, check: bool = False):
        self.commands += 1
        fut = asyncio.run_coroutine_threadsafe(self.session.cmd(command, check=check), self.loop)
        return fut.result(self.timeout + 5)

    def _console(self, command: str) -> str:
        res = self._cmd(f"-interpreter-exec console {mi.quote(command)}")
        return res.console_text() if res.cls == "done" else ""

    # -- memory and symbols --------------------------------------------------------------------

    def read(self, addr: int, size: int) -> bytes:
        res = self._cmd(f"-data-read-memory-bytes {addr:#x} {int(size)}")
        if res.cls != "done":
            raise W.ReadError(addr, size, str(res.get("msg", "")))
        out = bytearray()
        expect = addr
        for block in mi.as_list(res.get("memory")):
            begin = mi.to_int(block.get("begin"), 0) or 0
            offset = mi.to_int(block.get("offset"), 0) or 0
            if begin + offset != expect:
                raise W.ReadError(addr, size, "part of the range is unreadable")
            data = bytes.fromhex(str(block.get("contents", "")))
            out += data
            expect += len(data)
        if len(out) != size:
            raise W.ReadError(addr, size, "part of the range is unreadable")
        return bytes(out)

    def symbol(self, name: str) -> int | None:
        if name in self._symbols:
            return self._symbols[name]
        res = self._cmd(f"-data-evaluate-expression {mi.quote(f'(unsigned long)&{name}')}")
        val = None
        if res.cls == "done":
            m = _NUMBER.match(str(res.get("value", "")))
            if m:
                val = int(m.group(1), 0) or None
        self._symbols[name] = val
        return val

    def _load_info_files(self) -> None:
        if self._info_files is not None:
            return
        text = self._console("info files")
        m = _SYMBOLS_FROM.search(text)
        self._exec_file = m.group(1) if m else self.session.config.program
        rows = []
        for line in text.splitlines():
            lm = _INFO_FILES_LINE.match(line)
            if lm:
                rows.append((int(lm.group(1), 16), int(lm.group(2), 16), lm.group(3), lm.group(4) or self._exec_file))
        self._info_files = rows

    def objfile_of(self, addr: int) -> str | None:
        self._load_info_files()
        text = self._console(f"info symbol {addr:#x}").strip()
        m = _INFO_SYMBOL.search(text.splitlines()[0] if text else "")
        if m and m.group(1):
            return m.group(1).strip()
        return self._exec_file

    def sections(self, name: str, want=None) -> list[tuple[int, int, str | None]]:
        self._load_info_files()
        return [(a, b, obj) for a, b, sec, obj in (self._info_files or []) if sec == name]

    # -- threads and native frames ---------------------------------------------------------------

    def threads(self) -> list[W.GdbThread]:
        res = self._cmd("-thread-info")
        out = []
        for t in mi.as_list(res.get("threads")):
            if not isinstance(t, dict):
                continue
            tid = str(t.get("id", ""))
            target_id = str(t.get("target-id", ""))
            lm = _LWP.search(target_id)
            pm = _TARGET_ID.search(target_id)
            lwp = int(lm.group(1)) if lm else None
            if lwp is None:
                pm2 = re.search(r"process (\d+)", target_id)
                lwp = int(pm2.group(1)) if pm2 else None
            out.append(W.GdbThread(tid, lwp, int(pm.group(1), 16) if pm else None, t.get("name")))
        return out

    def pthread_of(self, gthread: W.GdbThread) -> int | None:
        res = self._cmd(f"-data-evaluate-expression --thread {gthread.num} $fs_base")
        if res.cls != "done":
            return None
        m = _NUMBER.match(str(res.get("value", "")))
        return int(m.group(1), 0) if m else None

    def _sp(self, tid: str, level: int) -> int | None:
        res = self._cmd(f"-data-evaluate-expression --thread {tid} --frame {level} $sp")
        if res.cls != "done":
            return None
        m = _NUMBER.search(str(res.get("value", "")).split()[-1] if res.get("value") else "")
        if m is None:
            m = re.search(r"0x[0-9a-fA-F]+", str(res.get("value", "")))
            return int(m.group(0), 16) if m else None
        return int(m.group(1), 0)

    def native_frames(self, gthread: W.GdbThread):
        tid = gthread.num
        low = 0
        while True:
            res = self._cmd(f"-stack-list-frames --thread {tid} {low} {low + FRAME_CHUNK - 1}")
            if res.cls != "done":
                return
            frames = [f for f in mi.as_list(res.get("stack")) if isinstance(f, dict)]
            if not frames:
                return
            for i, f in enumerate(frames):
                level = mi.to_int(f.get("level"), low + i)
                name = demangle(str(f.get("func") or ""))
                yield W.NativeFrame(level, name=name, get_sp=_sp_getter(self, tid, level))
            if len(frames) < FRAME_CHUNK:
                return
            low += FRAME_CHUNK


def _sp_getter(target: MITarget, tid: str, level: int):
    return lambda: target._sp(tid, level)


# One located interpreter per session, kept while the process and its loaded libraries stay the same
# (a session of several processes reads the selected one's: a runtime found in one never reads another).
_INTERPRETERS: "weakref.WeakKeyDictionary[Any, tuple[Any, W.Interpreter]]" = weakref.WeakKeyDictionary()


def _libraries_key(session) -> tuple:
    st = session.state
    return (session.config.program, st.selected_inferior, st.pid, tuple(sorted(lib.id for lib in st.libraries)))


async def walk(session, *, thread: str | None = None, max_frames: int | None = None, native: Any = "all",
               native_depth: int | None = None, runtime_from: str = "auto",
               locals_of: tuple[str, int] | None = None, max_items: int = 10, max_str: int = 200) -> dict:
    """The same result dict as ``-tuidbg-pystack --json`` (or ``-tuidbg-pylocals`` with ``locals_of``)."""
    loop = asyncio.get_running_loop()
    key = _libraries_key(session)

    def run() -> dict:
        cached = _INTERPRETERS.get(session)
        try:
            if runtime_from == "auto" and cached is not None and cached[0] == key:
                interp = cached[1]
            else:
                target = MITarget(session, loop)
                interp = W.Interpreter(target, runtime_from)
                if runtime_from == "auto":
                    _INTERPRETERS[session] = (key, interp)
            if locals_of is not None:
                return W.locals_result(interp, None, locals_of[0], locals_of[1], max_items, max_str)
            _w, recs = W.walk(
                interp.target, interp, None, thread=thread, max_frames=max_frames or W.DEFAULT_MAX_FRAMES,
                native=native, native_depth=native_depth or 100000,
            )
        except W.NoPython as exc:
            return {"v": 1, "status": "no-python", "reason": str(exc)}
        except W.WalkError as exc:
            return {"v": 1, "status": "error", "reason": str(exc)}
        except W.ReadError as exc:
            return {"v": 1, "status": "error", "reason": f"cannot read the program's memory: {exc}"}
        except (MIError, ValueError) as exc:
            return {"v": 1, "status": "error", "reason": str(exc)}
        res = W.result_dict(interp, recs)
        res["status"] = "ok"
        return res

    return await asyncio.to_thread(run)


async def tasks(session, *, current: bool = False, locals_of: tuple[int, int] | None = None,
                max_items: int = 10, max_str: int = 200) -> dict:
    """The same result dict as ``-tuidbg-pytasks --json`` (``--current``; ``--locals``: ``locals_of``,
    (frame address, code address))."""
    from tuidbg.gdbext import cpython_tasks as T

    loop = asyncio.get_running_loop()
    key = _libraries_key(session)

    def run() -> dict:
        cached = _INTERPRETERS.get(session)
        try:
            if cached is not None and cached[0] == key:
                interp = cached[1]
            else:
                interp = W.Interpreter(MITarget(session, loop))
                _INTERPRETERS[session] = (key, interp)
            w = W.Walker(interp)
            if locals_of is not None:
                rec = W.PyThreadRec(0, 0, 0, None)
                rec.frames.append(W.PyFrameRec("?", None, "?", None, False, locals_of[1], locals_of[0]))
                fmt = W.ValueFormatter(w, max_items=max_items, max_str=max_str)
                return {"v": 1, "status": "ok", "locals": W.locals_rows(fmt, rec, 0)}
            recs = w.thread_states()
            w.map_threads(recs, interp.target.threads())
            reader = T.TaskReader(w, recs)
            if current:
                return {"v": 1, "status": "ok", "current": [{"addr": a, "name": n, "frame": f} for a, n, f in reader.current()]}
            for r in recs:
                w.walk_frames(r, anchors=False)
            return T.tasks_dict(interp, reader.read())
        except W.NoPython as exc:
            return {"v": 1, "status": "no-python", "reason": str(exc)}
        except W.WalkError as exc:
            return {"v": 1, "status": "error", "reason": str(exc)}
        except W.ReadError as exc:
            return {"v": 1, "status": "error", "reason": f"cannot read the program's tasks: {exc}"}
        except (MIError, ValueError) as exc:
            return {"v": 1, "status": "error", "reason": str(exc)}

    return await asyncio.to_thread(run)
