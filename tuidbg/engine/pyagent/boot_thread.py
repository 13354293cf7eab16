"""Loading the agent at attach through a thread of its own (``tuidbg attach``, issue 30 item 13): for
CPython 3.9-3.11 and a free-threaded build, beside the main thread's pending call.

Why: before 3.12 a pending call runs only in the main thread, and a free-threaded 3.14's PEP 768 request
runs only in the thread state it is written into. A program whose main thread is blocked in C (a join, a
lock, a read) would run neither until that thread's next Python line, however busy its other threads are.

How: gdb makes the program start a native thread (an inferior call of ``pthread_create``) whose start
routine, a few instructions in a page of their own, does what any C library's thread does to call Python:

    pthread_detach(pthread_self());
    s = PyGILState_Ensure();      /* its own thread state; waits for the GIL like any thread */
    PyRun_SimpleString(source);   /* the boot statement (inject._boot_code): never raises */
    PyGILState_Release(s);        /* the thread state deleted; the thread ends */

Python runs there only through the interpreter's public API, in a thread that holds no lock and is in
no allocator: it takes the GIL when its holder drops it between two bytecodes (the holder is asked after
the switch interval, CPython's ``take_gil``), or at once when nobody holds it (every thread blocked in C).
Where a thread keeps the GIL in C, the new thread waits for it as any thread would, and the breakpoints
say that they wait. Until the agent says hello the load can be voided (``inject._cancel_injection``
writes ``pass`` over the source).

The one inferior call that the program sees, ``pthread_create``, runs while every thread of the process
is inside none of the code that holds the locks it takes (the allocator's, the dynamic loader's, the
thread stacks', glibc's internal ones; checked in each thread's C frames), with only the calling thread
running: another thread that forked during the call made gdb 13 give the call up and exit, and the
program crashed on the call's made-up frame. Where a thread is in such code, or the process has over
``MAX_THREADS`` threads, the other ways are used. x86-64 only (elsewhere the pending call is used).
"""

from __future__ import annotations

import logging
import re
import struct

from tuidbg.engine import mi
from tuidbg.engine.errors import EngineError, MIError
from tuidbg.engine.pyagent.base import AgentBase, ProcLink

log = logging.getLogger("tuidbg.engine")

PAGE = 4096
# The data page (after the code's): pthread_create's thread id, the gate, the gate's sleep, the source.
TID, GATE, SLEEP, SRC_OFFSET = 0, 8, 16, 32
# The gate: closed while gdb prepares; open (the program stopped: the load happens once it runs on);
# cancelled (tuidbg let go first: nothing runs); claimed by whichever of the thread and the main
# thread's pending call took the load first (the other one then does nothing).
GATE_CLOSED, GATE_OPEN, GATE_CANCELLED, GATE_CLAIMED, GATE_DONE = 0, 1, 2, 3, 4
FRAME_DEPTH = 64
# A process of more threads than this loads the agent the other ways (each thread's frames are read first)
MAX_THREADS = 256
# The main thread waits for the thread's boot at most this many 10 ms sleeps (5 s): a boot that needs
# something the main thread holds (a module it is importing) goes on once it has gone on.
MAIN_WAITS = 500
# The thread gives up at a gate still closed after this many 10 ms sleeps of the program running (gdb
# opens it while the program is stopped, right after the call: closed later, gdb died in between).
CLOSED_WAITS = 500

# The thread's start routine and the pending call's function (x86-64, System V; the stack 16-byte
# aligned at each call). The routine waits at the gate while it is closed; once it holds the GIL it
# claims the load (``lock cmpxchg``: open -> claimed), runs the boot and says done, unless the main
# thread's pending call claimed it first. The pending call claims it the same way (a main thread that
# runs Python loads the agent before its next line, as a pending call alone did); where the thread has
# it, the main thread waits for the boot's end without the GIL (``PyEval_SaveThread``): its next line
# comes after the agent is in place either way, as when it ran the boot itself. Each callee is called
# through its absolute address in the table after the code (``call [rip+disp32]``).
_CALLEES = ("pthread_self", "pthread_detach", "nanosleep", "PyGILState_Ensure", "PyRun_SimpleString",
            "PyGILState_Release", "PyEval_SaveThread", "PyEval_RestoreThread", "Py_IsInitialized")
_CLAIM = (
    b"\xb8" + struct.pack("<i", GATE_OPEN),  # mov eax, GATE_OPEN
    b"\xb9" + struct.pack("<i", GATE_CLAIMED),  # mov ecx, GATE_CLAIMED
    ("data", b"\xf0\x0f\xb1\x0d", GATE),  # lock cmpxchg [gate], ecx    (ZF: claimed here)
)
_DONE = (
    b"\xb9" + struct.pack("<i", GATE_DONE),  # mov ecx, GATE_DONE
    ("data", b"\x89\x0d", GATE),  # mov [gate], ecx
)
_X86_64 = (
    b"\x53",  # push rbx
    b"\x41\x54",  # push r12
    b"\x48\x83\xec\x08",  # sub rsp, 8
    b"\x48\x89\xfb",  # mov rbx, rdi                 (the source)
    ("call", 0),  # pthread_self()
    b"\x48\x89\xc7",  # mov rdi, rax
    ("call", 1),  # pthread_detach(self)
    b"\x41\xbc" + struct.pack("<i", CLOSED_WAITS),  # mov r12d, CLOSED_WAITS
    ("label", "wait"),
    ("data", b"\x8b\x05", GATE),  # mov eax, [gate]
    b"\x85\xc0",  # test eax, eax
    ("jump", b"\x75", "open"),  # jnz open
    b"\x41\xff\xcc",  # dec r12d
    ("jump", b"\x74", "out"),  # jz out                      (gdb gone before it opened the gate)
    ("data", b"\x48\x8d\x3d", SLEEP),  # lea rdi, [sleep]
    b"\x31\xf6",  # xor esi, esi
    ("call", 2),  # nanosleep(&sleep, NULL)
    ("jump", b"\xeb", "wait"),  # jmp wait
    ("label", "open"),
    b"\x83\xf8" + bytes([GATE_OPEN]),  # cmp eax, GATE_OPEN
    ("jump", b"\x75", "out"),  # jne out                     (cancelled, or claimed already)
    ("call", 8),  # Py_IsInitialized()           (0 once the program ends: Py_FinalizeEx says so first)
    b"\x85\xc0",  # test eax, eax
    ("jump", b"\x74", "out"),  # jz out                      (its interpreter is going: no thread state of
    #                                                         ours, PyGILState_Ensure would find none)
    ("call", 3),  # PyGILState_Ensure()
    b"\x41\x89\xc4",  # mov r12d, eax                (its state)
    *_CLAIM,
    ("jump", b"\x75", "release"),  # jne release           (the pending call had it)
    b"\x48\x89\xdf",  # mov rdi, rbx
    ("call", 4),  # PyRun_SimpleString(source)
    *_DONE,
    ("label", "release"),
    b"\x44\x89\xe7",  # mov edi, r12d
    ("call", 5),  # PyGILState_Release(state)
    ("label", "out"),
    b"\x31\xc0",  # xor eax, eax
    b"\x48\x83\xc4\x08",  # add rsp, 8
    b"\x41\x5c",  # pop r12
    b"\x5b",  # pop rbx
    b"\xc3",  # ret
    ("label", "pending"),  # int pending(void *source): run by the main thread, with the GIL
    b"\x53",  # push rbx
    b"\x41\x54",  # push r12
    b"\x48\x83\xec\x08",  # sub rsp, 8
    *_CLAIM,
    ("jump", b"\x75", "lost"),  # jne lost
    ("call", 4),  # PyRun_SimpleString(source)    (rdi: the source still)
    *_DONE,
    ("jump", b"\xeb", "done"),  # jmp done
    ("label", "lost"),
    b"\x83\xf8" + bytes([GATE_CLAIMED]),  # cmp eax, GATE_CLAIMED      (eax: the gate, from cmpxchg)
    ("jump", b"\x75", "done"),  # jne done                  (done already, or cancelled)
    ("call", 6),  # PyEval_SaveThread()           (the thread's boot under way: wait without the GIL)
    b"\x48\x89\xc3",  # mov rbx, rax
    b"\x41\xbc" + struct.pack("<i", MAIN_WAITS),  # mov r12d, MAIN_WAITS
    ("label", "booting"),
    ("data", b"\x8b\x05", GATE),  # mov eax, [gate]
    b"\x83\xf8" + bytes([GATE_CLAIMED]),  # cmp eax, GATE_CLAIMED
    ("jump", b"\x75", "back"),  # jne back
    b"\x41\xff\xcc",  # dec r12d
    ("jump", b"\x74", "back"),  # jz back                  (bounded: see MAIN_WAITS)
    ("data", b"\x48\x8d\x3d", SLEEP),  # lea rdi, [sleep]
    b"\x31\xf6",  # xor esi, esi
    ("call", 2),  # nanosleep(&sleep, NULL)
    ("jump", b"\xeb", "booting"),  # jmp booting
    ("label", "back"),
    b"\x48\x89\xdf",  # mov rdi, rbx
    ("call", 7),  # PyEval_RestoreThread(state)
    ("label", "done"),
    b"\x31\xc0",  # xor eax, eax                 (0: a pending call that fails ends the main thread)
    b"\x48\x83\xc4\x08",  # add rsp, 8
    b"\x41\x5c",  # pop r12
    b"\x5b",  # pop rbx
    b"\xc3",  # ret
)

# Frames where a thread may hold a lock that pthread_create takes, or be half-way through something it
# needs: the allocator, the dynamic loader (dlopen, dl_iterate_phdr), glibc's internal locks, thread
# creation and exit, fork, a signal handler. Matched on the name without glibc's aliasing prefixes
# (``__GI___dl_iterate_phdr``, ``__libc_malloc``, ``_int_free``: ``_bare``).
CREATE_UNSAFE = re.compile(
    r"^(?:malloc|free|cfree|calloc|realloc|reallocarray|memalign|posix_memalign|aligned_alloc|valloc|pvalloc)$"
    r"|^(?:malloc_|tcache_|arena_|sysmalloc|unlink_chunk|int_(?:malloc|free|realloc|memalign)|ptmalloc_|mtrim|munmap_chunk|mremap_chunk)"
    r"|^dl"
    r"|^(?:lll_lock_wait_private|lll_lock_wake_private)$"
    r"|(?i:fork)|^pthread_create|^allocate_stack$|^nptl_|^pthread_exit$"
    r"|^<signal handler called>$"
)
_PREFIX = re.compile(r"^(?:__GI_)?_*(?:libc_)?_*")
# glibc's own code, where a frame without a name may be any of the above
_LIBC = re.compile(r"/(?:libc|libpthread|ld-linux[\w-]*)[.-][\w.]*so")


def _bare(func: str) -> str:
    return func if func.startswith("<") else _PREFIX.sub("", func)


def _size(ins) -> int:
    if isinstance(ins, bytes):
        return len(ins)
    sizes = {"call": 6, "label": 0, "jump": 2}
    return sizes[ins[0]] if ins[0] in sizes else len(ins[1]) + 4


def pending_offset() -> int:
    """Where the pending call's function is in the code page."""
    at = 0
    for ins in _X86_64:
        if ins == ("label", "pending"):
            return at
        at += _size(ins)
    raise AssertionError("no pending label")


def start_routine() -> bytes:
    """The code page's instructions (the start routine at its start, the pending call's function at
    ``pending_offset()``; the data page follows it), without the callees' table (``callee_table``)."""
    at, labels = 0, {}
    for ins in _X86_64:
        if isinstance(ins, tuple) and ins[0] == "label":
            labels[ins[1]] = at
        at += _size(ins)
    table = (at + 7) & ~7
    out = b""
    for ins in _X86_64:
        end = len(out) + _size(ins)
        if isinstance(ins, bytes):
            out += ins
        elif ins[0] == "call":
            out += b"\xff\x15" + struct.pack("<i", table + 8 * ins[1] - end)
        elif ins[0] == "data":
            out += ins[1] + struct.pack("<i", PAGE + ins[2] - end)
        elif ins[0] == "jump":
            out += ins[1] + struct.pack("<b", labels[ins[2]] - end)
    return out.ljust(table, b"\xcc")


def callee_table(addrs: dict[str, int]) -> bytes:
    return b"".join(struct.pack("<Q", addrs[name]) for name in _CALLEES)


def unsafe_frame(frames) -> str | None:
    """The first frame (as ``func (frame N)``) where pthread_create must not be called, else None."""
    for f in frames:
        func = f.func or ""
        if CREATE_UNSAFE.search(_bare(func)) or (func in ("", "??") and _LIBC.search(f.library or "")):
            return f"{func or '??'} (frame {f.level})"
    return None


class BootThread(AgentBase):
    """Part of ``PyAgent`` (see the module's docstring)."""

    async def _inject_thread(self, source: str, link: ProcLink, main_too: bool) -> None:
        """Start the booting thread in the selected process, and with ``main_too`` queue the main thread's
        pending call beside it (raises EngineError, the process untouched, where it cannot)."""
        s = self._session()
        code = source.encode() + b"\0"
        if len(code) > PAGE - SRC_OFFSET:
            raise EngineError(f"the agent's boot statement is {len(code)} bytes, over one page")
        r = await s.cmd('-data-evaluate-expression "(long)$rip"', check=False)
        if r.cls != "done":
            raise EngineError("its start routine is x86-64 machine code, and this is not x86-64")
        addrs = {}
        for name in (*_CALLEES, "pthread_create", "Py_IsInitialized", "Py_AddPendingCall", "mmap", "mprotect"):
            r = await s.cmd(f'-data-evaluate-expression "(long)&{name}"', check=False)
            addr = mi.to_int(r.get("value")) if r.cls == "done" else None
            if not addr:
                raise EngineError(f"it has no {name}")
            addrs[name] = addr
        tid = await self._creating_thread(link)
        old = await self._scheduler_locking()
        await s.cmd("-gdb-set unwindonsignal on", check=False)
        await s.cmd("-gdb-set scheduler-locking on", check=False)
        on = f"-data-evaluate-expression --thread {tid} --frame 0 "
        try:
            # (plain reads and system calls: only the calling thread runs)
            r = await s.cmd(on + mi.quote("((int(*)(void))Py_IsInitialized)()"), timeout=30)
            if mi.to_int(r.get("value")) != 1:
                raise EngineError("its interpreter is not initialized (or is finalizing)")
            r = await s.cmd(on + mi.quote(
                "(long)((void*(*)(void*,unsigned long,int,int,int,long))mmap)(0,8192,3,34,-1,0)"), timeout=30)
            page = mi.to_int(r.get("value"))
            if page is None or page <= 0:
                raise EngineError(f"mmap in the program failed ({r.get('value')})")
            data = page + PAGE
            await s.cmd(f"-data-write-memory-bytes {page:#x} {(start_routine() + callee_table(addrs)).hex()}")
            sleep = struct.pack("<qq", 0, 10_000_000)  # (10 ms: the gate is opened while the program is stopped)
            await s.cmd(f"-data-write-memory-bytes {data + SLEEP:#x} {sleep.hex()}")
            await s.cmd(f"-data-write-memory-bytes {data + SRC_OFFSET:#x} {code.hex()}")
            r = await s.cmd(on + mi.quote(f"((int(*)(void*,unsigned long,int))mprotect)((void*){page:#x},4096,5)"),
                            timeout=30)
            if mi.to_int(r.get("value")) != 0:
                raise EngineError("mprotect in the program failed")
            # Only the calling thread runs during the call (scheduler-locking stays on): a thread of the
            # program that forked meanwhile (a pool replacing a worker) made gdb 13 fail in the middle of the
            # call and end (exit 1), the thread left in the call's made-up frame, and the program crashed.
            # None of the locks pthread_create takes (the allocator's, the thread stacks', the loader's) is
            # held by a stopped thread: _creating_thread found every thread outside the code that takes them.
            # (gdb says nothing at the call's end: the stop stays what is shown, as for native_eval's calls)
            user = [b.number for b in s.state.breakpoints if b.enabled and not b.internal and b.number]
            if user:
                await s.cmd("-break-disable " + " ".join(user))
            before = s.state
            self._transient_native += 1
            s.set_state(before.with_python(transient=True))
            try:
                async with self._only_this_process():
                    r = await s.cmd(on + mi.quote(
                        f"((int(*)(void*,void*,void*,void*))pthread_create)((void*){data:#x},(void*)0,"
                        f"(void*){page:#x},(void*){data + SRC_OFFSET:#x})"), timeout=30)
            finally:
                self._transient_native -= 1
                self._back_at_the_stop(before)
                if user:
                    await s.cmd("-break-enable " + " ".join(user), check=False)
            if mi.to_int(r.get("value")) != 0:
                raise EngineError(f"pthread_create in the program failed (error {r.get('value')})")
            if main_too:
                # (a moment's lock at most, and a plain read of the runtime)
                r = await s.cmd(on + mi.quote(f"((int(*)(void*,void*))Py_AddPendingCall)((void*){page + pending_offset():#x},"
                                              f"(void*){data + SRC_OFFSET:#x})"), timeout=30)
                if mi.to_int(r.get("value")) != 0:
                    log.info("no pending call beside the booting thread in %s: its queue is full", link.pid)
            # (the program is stopped: the load happens once it runs on)
            await s.cmd(f"-data-write-memory-bytes {data + GATE:#x} {struct.pack('<i', GATE_OPEN).hex()}")
            link.injection = ("thread", data, self._inferior_of(link))
        except MIError as exc:
            raise EngineError(f"the call in thread {tid} failed: {exc.message}") from exc
        finally:
            await s.cmd(f"-gdb-set scheduler-locking {old}", check=False)
            await s.cmd("-gdb-set unwindonsignal off", check=False)

    async def _creating_thread(self, link: ProcLink) -> str:
        """The thread of the selected process that calls pthread_create (its main thread first), once every
        thread of the process is found outside the code that holds a lock pthread_create takes: only the
        calling thread runs during the call, so a stopped thread's lock would never be released."""
        s = self._session()
        iid = self._inferior_of(link)
        r = await s.cmd(f"-list-thread-groups {iid}" if iid else "-thread-info", check=False)
        threads = [t for t in mi.as_list(r.get("threads")) if isinstance(t, dict)] if r.cls == "done" else []
        if not threads:
            raise EngineError("its threads cannot be listed")
        if len(threads) > MAX_THREADS:
            raise EngineError(f"it has {len(threads)} threads, over {MAX_THREADS} to look through")
        pid = link.pid

        def main_first(t) -> int:
            return 0 if f"LWP {pid})" in str(t.get("target-id", "")) else 1

        ordered = sorted(threads, key=main_first)
        for t in ordered:
            tid = str(t.get("id", ""))
            try:
                frames = (await s.fetch_frames(tid, 0, FRAME_DEPTH))[0]
            except MIError as exc:
                raise EngineError(f"the frames of thread {tid} cannot be read: {exc.message}") from exc
            bad = unsafe_frame(frames)
            if bad is not None:
                raise EngineError(f"thread {tid} is in {bad}, which may hold a lock that pthread_create takes")
        return str(ordered[0].get("id", ""))
