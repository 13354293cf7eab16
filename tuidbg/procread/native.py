"""Native stacks of a stopped process without gdb: ``tuidbg dump --native``'s direct reader.

``Unwinder(target)`` unwinds each thread from its registers (``regs``, PTRACE_GETREGS) with
the CFI of the ELF file mapped at each address (``unwind.Cfi``: ``.eh_frame_hdr`` +
``.eh_frame``; the vDSO read from the process's memory), and names each frame from the
file's symbols: its ``.symtab``, else the ``.symtab`` of its separate debug file
(``/usr/lib/debug/.build-id/xx/yyyy.debug``, or ``.gnu_debuglink``), else ``.dynsym``; a
symbol with a size names only the addresses it covers ("??" past its end, as gdb says).
Parsed files (CFI rows, symbols) are cached per file, across threads and processes.

A stack ends cleanly at its outermost frame: the return address column undefined (``_start``,
``clone3``), a return address of 0, or the executable's ``main`` (as gdb's ``backtrace``, which
does not go past main either). A signal trampoline's frame (its CIE says 'S') is named
``<signal handler called>``, as gdb names it. Anything else ends it early and ``Stack.cut`` says why
(no mapped file or no FDE at an address, a CFA that does not grow, memory that cannot be
read, CFI this reader does not understand): ``tuidbg dump`` then reads that process through
gdb, whose unwinder has more tricks (prologue analysis, frame pointers).

How these frames differ from gdb's, for the same stack (the addresses are the same):

- names: gdb prefers debug info (DWARF) where there is some, and demangles C++ names; this
  reader takes the symbol table (LOCAL names first where several name one address: glibc's
  ``__clock_nanosleep`` where gdb says ``__GI___clock_nanosleep``), versioned names without
  their ``@VERSION``, GCC's clones by their symbols (``pymain_run_python.constprop.0`` where
  gdb may say ``pymain_run_python``), and does not demangle (C++ frames keep their ``_Z...``
  names: ``tuidbg dump`` demangles them, as gdb would);
- no inline frames and no tail-call frames (gdb shows a function inlined into another, and one
  that a tail call left, as frames of their own when debug info says so: glibc's ``read`` is
  two frames at one address there, one here), no file and line (no DWARF line tables are read);
- ``library`` is the mapped file of every frame (gdb says it only for frames it cannot name).
"""

import bisect
import mmap
import os
import struct

from tuidbg.gdbext.cpython_mem import ReadError
from tuidbg.gdbext.elfsyms import open_regular

from .regs import registers
from .unwind import MASK, RA, CfiError, Cfi, Image, eval_expr

MAX_FRAMES = 100000
# A thread's stack is read in one go, from the page of its stack pointer up: the used stack, to the end of its
# mapping (/proc/PID/maps: a read of /proc/PID/mem would go on through the guard page below the next thread's
# stack, which it reads as zeros) or this many bytes; the rest, a page at a time. (One read where 64 threads took
# 3-4 page reads each: tuidbg dump --native, bench/dump_native.py.)
STACK_WINDOW = 1 << 20
SIGNAL_FRAME = "<signal handler called>"  # a signal trampoline's frame, named as gdb names it
DEBUG_DIR = "/usr/lib/debug"
_files = {}  # (path, mtime, size) -> _File (or None: not ELF, or unreadable)
_U64 = struct.Struct("<Q").unpack_from
_SYM = struct.Struct("<IBBHQQ")


class Frame(object):
    __slots__ = ("level", "pc", "sp", "name", "library", "offset")

    def __init__(self, level, pc, sp, name, library, offset):
        self.level = level
        self.pc = pc  # the frame's address: its pc (frame 0) or the return address into it
        self.sp = sp  # its stack pointer
        self.name = name  # the function, or None
        self.library = library  # the file mapped there, or None
        self.offset = offset  # pc minus the load bias (the file's own address)


class Stack(object):
    __slots__ = ("frames", "cut")

    def __init__(self, frames, cut):
        self.frames = frames
        self.cut = cut  # None: ended at the outermost frame; else why the unwind stopped


class _File(object):
    """One ELF file: its image, CFI and symbols (each read on first use)."""

    def __init__(self, path, image):
        self.path = path
        self.image = image
        self._cfi = None
        self._cfi_error = None
        self._syms = None

    def cfi(self):
        if self._cfi is None and self._cfi_error is None:
            try:
                self._cfi = Cfi(self.image)
            except (CfiError, struct.error, IndexError, ValueError) as exc:
                self._cfi_error = str(exc) or "unreadable CFI"
        if self._cfi is None:
            raise CfiError("%s: %s" % (self.path, self._cfi_error))
        return self._cfi

    def symbol(self, addr):
        """The name of the function at link address ``addr``, or None."""
        if self._syms is None:
            try:
                self._syms = _symbols(self)
            except (struct.error, IndexError, ValueError, CfiError):
                self._syms = ([], [])  # (a malformed symbol table: no names, the frames still)
        starts, entries = self._syms
        i = bisect.bisect_right(starts, addr) - 1
        if i < 0:
            return None
        start, size, name = entries[i]
        if size and addr >= start + size:
            return None
        if not isinstance(name, str):  # (decoded on first use: a stack names a few dozen of thousands)
            strs, off = name
            end = strs.find(b"\0", off)
            name = bytes(strs[off:end]).decode("utf-8", "replace").split("@", 1)[0]
            entries[i] = (start, size, name)
        return name


def _open(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (path, st.st_mtime, st.st_size)
    if key in _files:
        return _files[key]
    got = None
    try:
        with open_regular(path) as f:  # (maps may name a FIFO now: never an open that waits)
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        got = _File(path, Image(data))
    except (OSError, ValueError, CfiError, struct.error, IndexError):
        got = None
    _files[key] = got
    return got


def _symbols(elf):
    """(sorted starts, [(start, size, name)]) of the functions of ``elf``: the best symbol table."""
    img = elf.image
    table = _table(img, ".symtab")
    if table is None:
        debug = _debug_file(elf)
        if debug is not None:
            table = _table(debug.image, ".symtab")
    if table is None:
        table = _table(img, ".dynsym")
    if table is None:
        return [], []
    strs = table[0][4]
    # The best symbol of each start: LOCAL before GLOBAL before WEAK, then the largest, then the first in the
    # table: sorted by (start, rank, -size, index), the first of each start kept (a dict built from the last to
    # the first keeps the first). Names are decoded when a frame asks (_File.symbol).
    order = sorted([(start, rank, -size, i, size, name_off) for i, (start, size, rank, name_off, _s) in enumerate(table)])
    best = {e[0]: e for e in reversed(order)}
    starts = list(reversed(best))
    entries = [(e[0], e[4], (strs, e[5])) for e in reversed(best.values())]
    return starts, entries


def _table(img, section):
    """[(start, size, rank, name offset, string table)] of the defined functions of a symbol section."""
    sec = img.sections.get(section)
    if sec is None or sec[3] == 8 or not sec[2]:
        return None
    data = img.data[sec[1]:sec[1] + sec[2]]
    link = img.section_list[sec[4]] if sec[4] < len(img.section_list) else None
    if link is None:
        return None
    strs = img.data[link[1]:link[1] + link[2]]
    ent = sec[5] or 24
    if ent != 24:
        return None
    out = []
    for st_name, st_info, _other, shndx, value, size in _SYM.iter_unpack(data):
        if not shndx or not st_name or (st_info & 0xF) not in (2, 10) or not value:  # FUNC, GNU_IFUNC
            continue
        bind = st_info >> 4
        rank = 0 if bind == 0 else (1 if bind == 1 else 2)  # LOCAL, GLOBAL, WEAK
        out.append((value, size, rank, st_name, strs))
    return out or None


def _debug_file(elf):
    """The separate debug file of ``elf`` (by build ID, else .gnu_debuglink), or None."""
    bid = elf.image.build_id()
    if bid and len(bid) > 2:
        got = _open(os.path.join(DEBUG_DIR, ".build-id", bid[:2], bid[2:] + ".debug"))
        if got is not None:
            return got
    link = elf.image.section_bytes(".gnu_debuglink")
    if link:
        name = bytes(link[:link.find(b"\0")]).decode("utf-8", "replace") if b"\0" in link else ""
        if name:
            d = os.path.dirname(os.path.realpath(elf.path))
            for cand in (os.path.join(DEBUG_DIR, d.lstrip("/"), name), os.path.join(d, ".debug", name)):
                got = _open(cand)
                if got is not None:
                    return got
    return None


class Unwinder(object):
    """The native stacks of the threads of a stopped process (``target``: its ``ProcTarget``)."""

    def __init__(self, target):
        self.target = target
        self._ranges = []  # sorted [(start, end, _File or None, bias, path)]
        self._starts = []
        self._maps = []  # sorted [(start, end)] of every mapping, anonymous ones too (the stacks)
        self._map_starts = []
        self._load()

    def _load(self):
        t = self.target
        by_path = {}
        for m in t.maps:
            by_path.setdefault(m.path, []).append(m)
        for path, maps in by_path.items():
            elf = _open(path)
            bias = _bias(elf.image, maps) if elf is not None else None
            for m in maps:
                self._ranges.append((m.start, m.end, elf if bias is not None else None, bias or 0, path))
        vdso = None
        for lo, hi, name in _all_maps(t.pid):
            self._maps.append((lo, hi))
            if name == "[vdso]":
                vdso = (lo, hi)
        self._maps.sort()
        self._map_starts = [m[0] for m in self._maps]
        if vdso is not None:
            try:
                img = Image(t.read(vdso[0], vdso[1] - vdso[0]))
                loads = img.loads
                bias = vdso[0] - (loads[0][1] & ~0xFFF) if loads else vdso[0]
                self._ranges.append((vdso[0], vdso[1], _File("[vdso]", img), bias, "[vdso]"))
            except (ReadError, CfiError, struct.error, IndexError):
                pass
        self._ranges.sort(key=lambda r: r[0])
        self._starts = [r[0] for r in self._ranges]

    def _where(self, pc):
        i = bisect.bisect_right(self._starts, pc) - 1
        if i >= 0 and pc < self._ranges[i][1]:
            return self._ranges[i]
        return None

    def stack(self, tid, max_frames=MAX_FRAMES, window=STACK_WINDOW):
        """The ``Stack`` of stopped thread ``tid`` (regs.Unsupported if its registers cannot be read). ``window``: the
        bytes read at once from the stack pointer's page up (0: a page at a time, as every read past the window;
        tests/cli/test_dump_native.py holds that both give the same stacks)."""
        regs = registers(tid)
        pages = {}
        read = self.target.read
        base = regs[7] & ~0xFFF
        read_upto = getattr(self.target, "read_upto", None)
        i = bisect.bisect_right(self._map_starts, base) - 1
        end = min(self._maps[i][1], base + window) if i >= 0 and base < self._maps[i][1] else base
        stack = read_upto(base, end - base) if end > base and read_upto is not None else b""
        stack_end = base + len(stack)

        def read_u64(addr):
            if base <= addr and addr + 8 <= stack_end:
                return _U64(stack, addr - base)[0]
            page = addr & ~0xFFF
            if (addr & 0xFFF) > 0xFF8:
                return _U64(read(addr, 8))[0]
            buf = pages.get(page)
            if buf is None:
                buf = pages[page] = read(page, 0x1000)
            return _U64(buf, addr & 0xFFF)[0]

        frames = []
        signal_below = True  # frame 0's pc is exact (as after a signal frame)
        prev_cfa = None
        while True:
            pc = regs[RA]
            level = len(frames)
            where = self._where(pc)
            lookup = pc if signal_below else pc - 1
            if where is None:
                frames.append(Frame(level, pc, regs[7], None, None, None))
                return Stack(frames, "no file mapped at %#x" % pc)
            _s, _e, elf, bias, path = where
            off = (lookup - bias) & MASK
            name = elf.symbol(off) if elf is not None else None
            frames.append(Frame(level, pc, regs[7], name, path, (pc - bias) & MASK))
            if level + 1 >= max_frames:
                return Stack(frames, "more than %d frames" % max_frames)
            if elf is None:
                return Stack(frames, "%s is not an ELF file this reader can read" % path)
            if name == "main" and path == self.target.exe:
                return Stack(frames, None)  # (gdb's backtrace stops at main too: past it, the C runtime's start)
            try:
                row = elf.cfi().row(off)
                if row is None:
                    return Stack(frames, "no unwind information for %#x in %s" % (pc, path))
                if row[2]:
                    frames[-1].name = SIGNAL_FRAME
                regs, cfa = _step(row, regs, read_u64)
            except ReadError as exc:
                return Stack(frames, "cannot read the stack of frame %d: %s" % (level, exc))
            except (CfiError, struct.error, IndexError, ValueError, KeyError) as exc:
                return Stack(frames, "cannot unwind frame %d (%#x in %s): %s" % (level, pc, path, exc))
            if regs is None:
                return Stack(frames, None)  # the return address is undefined: the outermost frame
            if regs[RA] == 0:
                return Stack(frames, None)
            if not row[2] and not signal_below and prev_cfa is not None and cfa <= prev_cfa:
                return Stack(frames, "the frame address does not grow at frame %d (%#x in %s)" % (level, pc, path))
            prev_cfa = cfa
            signal_below = row[2]


def _step(row, regs, read_u64):
    """(the caller's registers, the CFA), or (None, cfa) at the outermost frame."""
    cfa_rule, rules, _signal, ra = row
    if cfa_rule[0] == "r":
        base = regs[cfa_rule[1]] if cfa_rule[1] < len(regs) else None
        if base is None:
            raise CfiError("the CFA needs register %d, unknown here" % cfa_rule[1])
        cfa = (base + cfa_rule[2]) & MASK
    else:
        cfa = eval_expr(cfa_rule[1], regs, read_u64)
    new = list(regs)
    new[7] = cfa
    for reg, rule in rules.items():
        if reg >= len(new):
            continue
        kind = rule[0]
        if kind == "o":
            new[reg] = read_u64((cfa + rule[1]) & MASK)
        elif kind == "v":
            new[reg] = (cfa + rule[1]) & MASK
        elif kind == "r":
            new[reg] = regs[rule[1]] if rule[1] < len(regs) else None
        elif kind == "e":
            new[reg] = read_u64(eval_expr(rule[1], regs, read_u64, cfa))
        elif kind == "E":
            new[reg] = eval_expr(rule[1], regs, read_u64, cfa)
        elif kind == "u":
            new[reg] = None
    if ra != RA:
        new[RA] = new[ra] if ra < len(new) else None
    if new[RA] is None:
        return None, cfa
    return new, cfa


def _bias(img, maps):
    if img.etype == 2:
        return 0  # ET_EXEC: at its link addresses
    if not img.loads:
        return None
    p_offset, p_vaddr, _size = img.loads[0]
    page = p_offset & ~0xFFF
    for m in maps:
        if m.offset == page:
            return m.start - (p_vaddr & ~0xFFF)
    return None


def _all_maps(pid):
    """[(start, end, name)] of every mapping of the process (name: a path, ``[stack]``, ``[vdso]``, or "")."""
    out = []
    try:
        with open("/proc/%d/maps" % pid) as f:
            for line in f:
                parts = line.split(None, 5)
                lo, _, hi = parts[0].partition("-")
                out.append((int(lo, 16), int(hi, 16), parts[5].strip() if len(parts) > 5 else ""))
    except (OSError, ValueError, IndexError):
        return out
    return out
