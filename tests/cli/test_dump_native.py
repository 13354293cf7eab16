"""``tuidbg dump --native PID`` without gdb (tuidbg/procread/native.py): the same native stacks as
gdb's, frame for frame, the Python frames exact and in the same places; gdb when the unwinder
cannot, saying why; the process left running and untraced.

gdb is the oracle. Where it knows more than a symbol table (debug info: frames of inlined
functions, frames that a tail call left, DWARF names), the comparison allows exactly that: a
run of gdb frames at one address is one frame, gdb frames missing here must be in a file with
debug info, and a name that differs must be another symbol at the same address (readelf says).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from functools import lru_cache
from pathlib import Path

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, compile_c, line_of, run_tuidbg, wait_asleep, wait_released
from pystack_helpers import PY_PROGRAMS, env_with, interpreter_params, read_json, resolve, tracer_pid

pytestmark = [pytest.mark.slow, requires_gdb]

CHAIN_SRC = PROGRAMS / "unwind_chain.c"
MIX = PY_PROGRAMS / "native_mix.py"
SIGNAL_FRAME = "<signal handler called>"


@pytest.fixture(scope="module")
def chain_prog(build_dir) -> Path:
    # -fomit-frame-pointer: no frame-pointer chain to follow, only the CFI
    return compile_c(CHAIN_SRC, build_dir / "unwind_chain", "-O2", "-fomit-frame-pointer", "-pthread")


def _dump(pid, *opts) -> dict:
    res = run_tuidbg("dump", "--native", "--json", *opts, str(pid), timeout=300)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert len(doc["processes"]) == 1 and doc["processes"][0]["pid"] == pid
    return doc["processes"][0]


def _assert_running_untraced(proc):
    wait_released(proc.pid)
    assert proc.poll() is None, "the process died"
    for tid in os.listdir(f"/proc/{proc.pid}/task"):
        status = Path(f"/proc/{proc.pid}/task/{tid}/status").read_text()
        assert re.search(r"^TracerPid:\s+0$", status, re.M), (tid, status)
        state = re.search(r"^State:\s+(\S)", status, re.M).group(1)
        assert state not in "tT", (tid, state)
    assert tracer_pid(proc.pid) == 0


def _start_chain(prog, cleanup, *args):
    proc = subprocess.Popen([str(prog), *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    cleanup.append(proc)
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    wait_asleep(proc.pid)  # (from the print to the blocking read)
    return proc


# ---------------------------------------------------------------------------------------------
# Comparing with gdb


def _debug_file(path: str) -> str | None:
    note = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", note)
    debug = m and f"/usr/lib/debug/.build-id/{m.group(1)[:2]}/{m.group(1)[2:]}.debug"
    return debug if debug and os.path.exists(debug) else None


@lru_cache(maxsize=None)
def _symbols(path: str) -> dict[str, set[int]]:
    """{name without @VERSION: {values}} of every function symbol of ``path`` and of its separate debug file."""
    out: dict[str, set[int]] = {}
    for f in filter(None, (path, _debug_file(path))):
        text = subprocess.run(["readelf", "-sW", f], capture_output=True, text=True).stdout
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 8 and parts[0].endswith(":") and parts[3] in ("FUNC", "IFUNC"):
                out.setdefault(parts[7].split("@", 1)[0], set()).add(int(parts[1], 16))
    return out


@lru_cache(maxsize=None)
def _has_debug_info(path: str) -> bool:
    sections = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    return ".debug_info" in sections or _debug_file(path) is not None


def _same_name(direct: dict, gdb: dict) -> bool:
    a, b = direct["function"], gdb["function"]
    if a == b:
        return True
    if a == "??" or b == "??" or a == SIGNAL_FRAME or b == SIGNAL_FRAME:
        return False
    if "." in a and a.split(".", 1)[0] == b.split(".", 1)[0]:
        return True  # a GCC clone (f.constprop.0, f.isra.0, f.part.0, f.cold): gdb names some by their source name
    syms = _symbols(direct["library"])
    return bool(syms.get(a, set()) & syms.get(b, set()))


def _row(f: dict):
    return ("py", f["qualname"] or f["function"], f["file"], f["line"], f["entry"]) if f["kind"] == "python" \
        else ("c", f["addr"])


def _compare_thread(direct: dict, gdb: dict, libraries: dict[str, str]) -> None:
    """``direct`` and ``gdb`` (a thread's entries) are the same stack, up to what debug info adds."""
    d_native = [f for f in direct["frames"] if f["kind"] == "native"]
    g_native = [f for f in gdb["frames"] if f["kind"] == "native"]
    # a run of gdb frames at one address (inlined functions) is one frame: its outermost one
    g_native = [f for i, f in enumerate(g_native) if i + 1 == len(g_native) or g_native[i + 1]["addr"] != f["addr"]]
    d_addrs = [f["addr"] for f in d_native]
    assert len(set(d_addrs)) == len(d_addrs), d_addrs
    extra = [f for f in g_native if f["addr"] not in d_addrs]
    for f in extra:  # tail-call frames gdb rebuilt from debug info
        lib = libraries.get(f["addr"])
        assert lib is not None and _has_debug_info(lib), ("a frame gdb found and this reader did not", f, d_addrs)
    g_kept = [f for f in g_native if f["addr"] in d_addrs]
    assert [f["addr"] for f in g_kept] == d_addrs, (d_addrs, [f["addr"] for f in g_native])
    for d, g in zip(d_native, g_kept):
        if g["function"] != "??":
            assert _same_name(d, g), (d, g)
        else:
            assert d["function"] == "??", (d, g)
    # the Python frames: the same ones, in the same places among the native frames
    keep = set(d_addrs)
    g_rows = []
    for f in gdb["frames"]:
        r = _row(f)
        if r[0] == "c" and (r[1] not in keep or (g_rows and g_rows[-1] == r)):
            continue
        g_rows.append(r)
    assert [_row(f) for f in direct["frames"]] == g_rows
    assert direct.get("notes") == gdb.get("notes")


def _libraries(pid: int, report: dict) -> dict[str, str]:
    """{addr: the file mapped there} for every native frame address of ``report``."""
    maps = []
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/"):
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            maps.append((lo, hi, parts[5]))
    out = {}
    for t in report["threads"]:
        for f in t["frames"]:
            if f["kind"] == "native":
                a = int(f["addr"], 16)
                out[f["addr"]] = next((p for lo, hi, p in maps if lo <= a < hi), None)
    return out


def _compare(pid: int, direct: dict, gdb: dict) -> None:
    assert direct["reader"] == "memory" and "fallback" not in direct, direct.get("fallback")
    assert gdb["reader"] == "gdb"
    assert [(t["id"], t["tid"], t["name"], t["main"]) for t in direct["threads"]] == \
        [(t["id"], t["tid"], t["name"], t["main"]) for t in gdb["threads"]]
    libraries = _libraries(pid, gdb)
    for d, g in zip(direct["threads"], gdb["threads"]):
        _compare_thread(d, g, libraries)


def _names(thread: dict) -> list[str]:
    return [f["function"] for f in thread["frames"] if f["kind"] == "native"]


# ---------------------------------------------------------------------------------------------
# A C program: CFI only (no frame pointers), a realigned frame, a signal frame


def test_c_program_same_stacks_as_gdb(chain_prog, cleanup):
    proc = _start_chain(chain_prog, cleanup, "3")
    direct = _dump(proc.pid)
    _assert_running_untraced(proc)
    gdb = _dump(proc.pid, "--via-gdb")
    _assert_running_untraced(proc)
    assert direct["note"] == gdb["note"] == "no CPython runtime in this process"
    _compare(proc.pid, direct, gdb)
    threads = {t["tid"]: t for t in direct["threads"]}
    assert len(threads) == 4
    main = _names(threads[proc.pid])
    # the handler's frames, the signal frame, then the code the signal interrupted, down to main
    i = main.index("wait_here")
    assert main[i:i + 3] == ["wait_here", "in_handler", SIGNAL_FRAME], main
    assert main[-2:] == ["main_chain", "main"], main
    for tid, t in threads.items():
        if tid != proc.pid:
            names = _names(t)
            i = names.index("wait_here")
            assert names[i:i + 6] == ["wait_here", "aligned_frame", "chain_c", "chain_b", "chain_a", "thread_main"]
            assert names[-1] in _aliases_of("clone3"), names


def test_frame_without_cfi_falls_back_to_gdb(chain_prog, cleanup):
    """no_cfi_call has no FDE: the direct unwinder stops there, says so, and gdb reads the process."""
    proc = _start_chain(chain_prog, cleanup, "2", "nocfi")
    report = _dump(proc.pid)
    _assert_running_untraced(proc)
    assert report["reader"] == "gdb"
    assert re.fullmatch(r"the native stack of thread \d+ was cut short: no unwind information for 0x[0-9a-f]+ in "
                        + re.escape(str(chain_prog)), report["fallback"]), report["fallback"]
    for t in report["threads"]:
        if t["tid"] != proc.pid:  # the right stacks still, through the frame without CFI
            names = _names(t)
            i = names.index("wait_here")
            assert names[i:i + 7] == ["wait_here", "aligned_frame", "chain_c", "chain_b", "chain_a", "no_cfi_call",
                                      "thread_main"], names
    # and without it, the same program is read directly
    proc.kill()
    proc.wait(10)
    proc = _start_chain(chain_prog, cleanup, "2")
    assert _dump(proc.pid)["reader"] == "memory"
    _assert_running_untraced(proc)


def test_text_output_same_as_gdb_but_names(chain_prog, cleanup):
    proc = _start_chain(chain_prog, cleanup, "2")
    res = run_tuidbg("dump", "--native", str(proc.pid), timeout=120)
    assert res.returncode == 0, res.stderr
    _assert_running_untraced(proc)
    assert f"Thread 1 (LWP {proc.pid}) \"unwind_chain\" [main thread]:" in res.stdout
    assert re.search(r"#\d+ +0x[0-9a-f]{16} in aligned_frame from " + re.escape(str(chain_prog)), res.stdout), res.stdout
    assert f"in {SIGNAL_FRAME} from " in res.stdout
    assert "2 threads: " in res.stdout  # (the two workers' identical stacks, grouped)


# ---------------------------------------------------------------------------------------------
# Debian's stripped python3.11: Python frames in place of the eval loop, C through ctypes


def test_python_threads_same_stacks_as_gdb(tmp_path, cleanup):
    interp = resolve("debian-3.11", tmp_path)
    ready = tmp_path / "ready.json"
    proc = subprocess.Popen([str(interp.exe), str(MIX), "4", str(ready)], env=env_with(interp.env),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    cleanup.append(proc)
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "native_mix.py did not get ready"
        time.sleep(0.02)
    wait_asleep(proc.pid)
    expect = read_json(ready)

    direct = _dump(proc.pid)
    _assert_running_untraced(proc)
    gdb = _dump(proc.pid, "--via-gdb")
    _assert_running_untraced(proc)
    _compare(proc.pid, direct, gdb)
    assert direct["python"] == gdb["python"] and direct["python"].startswith("3.11")

    threads = {t["tid"]: t for t in direct["threads"]}
    assert set(threads) == {expect["main"]} | {lwp for _fn, lwp, _frames in expect["threads"]}
    for fn, lwp, frames in expect["threads"]:
        t = threads[lwp]
        py = [[f["function"], f["file"], f["line"]] for f in reversed(t["frames"]) if f["kind"] == "python"]
        assert py == frames + [[fn, str(MIX), line_of(MIX, fn)]], (py, frames)
        names = _names(t)
        innermost_py = next(i for i, f in enumerate(t["frames"]) if f["kind"] == "python")
        below = [f["function"] for f in t["frames"][:innermost_py] if f["kind"] == "native"]
        if fn == "in_ctypes":  # pause() called through libffi
            assert below[0] in _aliases_of("pause") and "ffi_call" in below, below
        else:
            assert below[0] in _aliases_of("clock_nanosleep"), below
        assert names[-1] in _aliases_of("clone3"), names
    main = threads[expect["main"]]
    assert [f["function"] for f in main["frames"] if f["kind"] == "python"] == ["main", "<module>"]


def _aliases_of(name: str) -> set[str]:
    libc = next(p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6")
                if os.path.exists(p))
    syms = _symbols(libc)
    values = syms.get(name, set())
    return {n for n, v in syms.items() if v & values}


ALL = ["pyenv-3.9", "pyenv-3.10", "pyenv-3.11", "pyenv-3.12", "pyenv-3.13", "debian-3.11", "stripped-3.12",
       "stripped-3.13", "cpython-3.14", "cpython-3.14-stripped", "cpython-3.14t"]


@pytest.mark.parametrize("name", interpreter_params(ALL))
def test_every_interpreter_same_stacks_as_gdb(build_dir, tmp_path, cleanup, name):
    """Each interpreter's eval loop and thread states (3.9/3.10 name their thread by pthread_t; 3.14's
    free-threaded build): read directly, the same merged stacks as gdb's."""
    interp = resolve(name, build_dir)
    ready = tmp_path / "ready.json"
    proc = subprocess.Popen([str(interp.exe), str(MIX), "2", str(ready)], env=env_with(interp.env),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    cleanup.append(proc)
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "native_mix.py did not get ready"
        time.sleep(0.02)
    wait_asleep(proc.pid)
    expect = read_json(ready)
    direct = _dump(proc.pid)
    _assert_running_untraced(proc)
    gdb = _dump(proc.pid, "--via-gdb")
    _compare(proc.pid, direct, gdb)
    threads = {t["tid"]: t for t in direct["threads"]}
    for fn, lwp, frames in expect["threads"]:
        py = [[f["function"], f["file"], f["line"]] for f in reversed(threads[lwp]["frames"]) if f["kind"] == "python"]
        assert py == frames + [[fn, str(MIX), line_of(MIX, fn)]]
    _assert_running_untraced(proc)


def _stacks_each_way(pid: int) -> dict:
    """Every thread's native stack, unwound (in one stop) with the stack read in one window from its pointer
    up, with a window that ends inside the stack, and a page at a time (procread/native.py, STACK_WINDOW)."""
    from tuidbg.procread.freeze import Freeze
    from tuidbg.procread.native import STACK_WINDOW, Unwinder
    from tuidbg.procread.target import ProcTarget

    target = ProcTarget(pid)
    try:
        with Freeze(pid, 5.0) as fz:
            target.tids = fz.tids
            unwinder = Unwinder(target)
            out = {}
            for window in (STACK_WINDOW, 4096, 0):
                stacks = {tid: unwinder.stack(tid, window=window) for tid in fz.tids}
                out[window] = {tid: ([(f.pc, f.sp, f.name, f.library, f.offset) for f in s.frames], s.cut)
                               for tid, s in stacks.items()}
            return out
    finally:
        target.close()


@pytest.mark.parametrize("name", interpreter_params(["pyenv-3.10", "debian-3.11"]))
def test_a_stack_read_at_once_unwinds_as_read_page_by_page(tmp_path, cleanup, name):
    interp = resolve(name, tmp_path)
    ready = tmp_path / "ready.json"
    deep = tmp_path / "deep.json"
    procs = [subprocess.Popen([str(interp.exe), str(MIX), "4", str(ready)], env=env_with(interp.env),
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE),
             # (3.10: six C frames a Python call; 5,000 calls deep is more stack than the window)
             subprocess.Popen([str(interp.exe), str(PY_PROGRAMS / "deep_sleep.py"), "5000", str(deep)],
                              env=env_with(interp.env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)]
    cleanup.extend(procs)
    from pystack_helpers import wait_for_files

    wait_for_files([ready, deep], procs)
    for proc in procs:
        each = _stacks_each_way(proc.pid)
        whole = each[max(each)]
        assert len(whole) >= 2 and all(cut is None and len(frames) > 3 for frames, cut in whole.values()), whole
        assert each[4096] == whole and each[0] == whole
        _assert_running_untraced(proc)
    deepest = max(frames[-1][1] - frames[0][1] for frames, _cut in _stacks_each_way(procs[1].pid)[0].values())
    if name == "pyenv-3.10":
        assert deepest > (1 << 20)  # (the window's fallback to page reads was taken)


def _reference_names(elf) -> tuple[list[int], list[tuple[int, int, str]]]:
    """The function names of ``elf`` as the reader chose them before names were decoded lazily: the best symbol of
    each start (LOCAL, GLOBAL, WEAK; then the largest; then the first), every name decoded, ``@VERSION`` cut."""
    from tuidbg.procread import native

    table = native._table(elf.image, ".symtab")
    if table is None:
        debug = native._debug_file(elf)
        table = native._table(debug.image, ".symtab") if debug is not None else None
    if table is None:
        table = native._table(elf.image, ".dynsym")
    best = {}
    for start, size, rank, name_off, strs in table or ():
        old = best.get(start)
        if old is None or (rank, -size) < (old[0], -old[1]):
            best[start] = (rank, size, name_off, strs)
    starts = sorted(best)
    entries = []
    for s in starts:
        _rank, size, off, strs = best[s]
        name = bytes(strs[off:strs.find(b"\0", off)]).decode("utf-8", "replace")
        entries.append((s, size, name.split("@", 1)[0]))
    return starts, entries


def test_the_names_of_frames_are_the_best_symbols_decoded_when_asked():
    """procread.native picks each start's best symbol with a sort and decodes a name when a frame asks: the same
    names, at every function's start, inside it, at its end and past it, as picking and decoding them all."""
    from tuidbg.procread import native

    libs = [p for p in ("/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6",
                        "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "/usr/bin/python3.11")
            if os.path.exists(p)]
    assert libs
    for path in libs:
        elf = native._open(path)
        starts, entries = _reference_names(elf)
        assert len(entries) > 50, path
        fresh = native._File(path, elf.image)
        for start, size, name in entries:
            for addr in {start, start + max(size, 1) - 1, start + size, start + size + 1}:
                i = __import__("bisect").bisect_right(starts, addr) - 1
                s, sz, nm = entries[i]
                want = None if i < 0 or (sz and addr >= s + sz) else nm
                assert fresh.symbol(addr) == want, (path, hex(addr), want)
        assert fresh.symbol(starts[0] - 1) is None
