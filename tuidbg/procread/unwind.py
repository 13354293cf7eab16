"""Call frame information (CFI) of an ELF file, for unwinding x86-64 stacks without a debugger.

``Cfi(image)`` reads ``.eh_frame`` (the tables the C++ runtime unwinds exceptions with; every
x86-64 object has them, stripped or not) and finds a code address's frame description through
``.eh_frame_hdr``'s sorted table (binary search over the file's bytes; without that section, a
table built once from ``.eh_frame``). ``Cfi.row(pc)`` runs the CIE's and the FDE's CFA program
up to ``pc`` and gives the row: how to compute the canonical frame address (CFA) and where each
register the function saved lies. Rows are cached per address (the same return addresses
recur in every thread). ``.debug_frame`` is not read: the files this reads for (libraries,
executables, the vDSO) carry ``.eh_frame``.

Supported: DW_CFA_advance_loc*/set_loc, def_cfa/_sf/_register/_offset/_offset_sf/_expression,
offset/_extended/_sf, val_offset/_sf, register, expression, val_expression, restore/_extended,
undefined, same_value, remember_state/restore_state, GNU_args_size,
GNU_negative_offset_extended; augmentations 'z', 'L', 'P', 'R', 'S' (signal frames), 'B' and
'G' (ignored); pointer encodings absptr, (s)data2/4/8, (s)leb128 with pcrel, datarel (from
``.eh_frame_hdr``), textrel, funcrel, and indirect for the personality (read, not followed).
DWARF expressions: the stack operations that CFI uses (``eval_expr``).

``Image`` is an ELF file's bytes (a file mapped, or the vDSO read from the process) with
its section and segment headers. Standard library only. Addresses here are the file's own
(link-time) addresses; the caller subtracts the load bias.
"""

import struct

_U8 = struct.Struct("<B").unpack_from
_U16 = struct.Struct("<H").unpack_from
_I16 = struct.Struct("<h").unpack_from
_U32 = struct.Struct("<I").unpack_from
_I32 = struct.Struct("<i").unpack_from
_U64 = struct.Struct("<Q").unpack_from
_I64 = struct.Struct("<q").unpack_from
_PAIR = struct.Struct("<ii").unpack_from

RA = 16  # x86-64's return address column
MASK = (1 << 64) - 1


class CfiError(Exception):
    """The file's CFI is malformed, or uses what this reader does not know."""


class Image(object):
    """An ELF64 little-endian file's bytes and headers: ``sections`` {name: (addr, offset, size,
    type, link, entsize)}, ``loads`` [(p_offset, p_vaddr, p_filesz)], ``etype``."""

    def __init__(self, data):
        self.data = data
        if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise CfiError("not a 64-bit little-endian ELF file")
        self.etype = _U16(data, 0x10)[0]
        phoff = _U64(data, 0x20)[0]
        shoff = _U64(data, 0x28)[0]
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        self.loads = []
        for i in range(phnum if phentsize >= 56 else 0):
            p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
            if p_type == 1:
                self.loads.append((p_offset, p_vaddr, p_filesz))
        self.sections = {}
        self.section_list = []
        if shoff and shentsize >= 64 and shnum and shoff + shnum * shentsize <= len(data):
            raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
            _n, _t, _f, _a, stroff, strsize = raw[shstrndx][:6] if shstrndx < shnum else (0, 0, 0, 0, 0, 0)
            for name, stype, _flags, addr, off, size, link, _info, _align, entsize in raw:
                end = data.find(b"\0", stroff + name) if strsize else -1
                nm = bytes(data[stroff + name:end]).decode("ascii", "replace") if end >= 0 else ""
                entry = (addr, off, size, stype, link, entsize)
                self.section_list.append(entry)
                if nm and nm not in self.sections:
                    self.sections[nm] = entry

    def section_bytes(self, name):
        s = self.sections.get(name)
        if s is None or s[3] == 8:  # SHT_NOBITS
            return None
        return self.data[s[1]:s[1] + s[2]]

    def build_id(self):
        """The GNU build ID, as hex, or None."""
        note = self.section_bytes(".note.gnu.build-id")
        if note is None or len(note) < 16:
            return None
        namesz, descsz, ntype = struct.unpack_from("<III", note, 0)
        if ntype != 3:
            return None
        start = 12 + ((namesz + 3) & ~3)
        return bytes(note[start:start + descsz]).hex()


def uleb(data, pos):
    result = shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return result, pos


def sleb(data, pos):
    result, end = uleb(data, pos)
    if data[end - 1] & 0x40:  # (the sign: bit 6 of the last byte)
        result -= 1 << (7 * (end - pos))
    return result, end


class _Cie(object):
    __slots__ = ("code_align", "data_align", "ra", "fde_enc", "lsda_enc", "signal", "aug_z", "initial")


class Cfi(object):
    """The CFI of one ELF image. ``row(pc)`` -> (cfa rule, {reg: rule}, signal frame) or None."""

    def __init__(self, image):
        self.image = image
        self._rows = {}
        self._cies = {}
        self._fdes = {}  # FDE offset -> (start, end, cie, instructions start, end)
        self._sorted = None
        eh = image.sections.get(".eh_frame")
        if eh is None or eh[3] == 8:
            raise CfiError("no .eh_frame")
        self.eh_addr, self.eh_off, self.eh_size = eh[0], eh[1], eh[2]
        self.data = image.data
        hdr = image.sections.get(".eh_frame_hdr")
        self._table = None
        if hdr is not None and hdr[2] >= 12:
            h_addr, h_off = hdr[0], hdr[1]
            d = self.data
            version, ptr_enc, count_enc, table_enc = d[h_off], d[h_off + 1], d[h_off + 2], d[h_off + 3]
            if version == 1 and table_enc == 0x3B and count_enc != 0xFF:
                _p, pos = self._pointer(h_off + 4, ptr_enc, h_addr - h_off, h_addr)
                count, pos = self._pointer(pos, count_enc, h_addr - h_off, h_addr)
                if pos + 8 * count <= h_off + hdr[2]:
                    self._table = (pos, count, h_addr)  # entries: (initial loc, FDE address), datarel sdata4

    # -- pointers ------------------------------------------------------------------------------

    def _pointer(self, pos, enc, delta, datarel=0, func=0):
        """(value, next pos) of the pointer at file offset ``pos`` encoded as ``enc``; ``delta``:
        link address minus file offset (for pcrel)."""
        d = self.data
        fmt = enc & 0x0F
        if enc == 0xFF:
            return None, pos
        if fmt == 0x00 or fmt == 0x04:
            v, n = _U64(d, pos)[0], pos + 8
        elif fmt == 0x0C:
            v, n = _I64(d, pos)[0], pos + 8
        elif fmt == 0x03:
            v, n = _U32(d, pos)[0], pos + 4
        elif fmt == 0x0B:
            v, n = _I32(d, pos)[0], pos + 4
        elif fmt == 0x02:
            v, n = _U16(d, pos)[0], pos + 2
        elif fmt == 0x0A:
            v, n = _I16(d, pos)[0], pos + 2
        elif fmt == 0x01:
            v, n = uleb(d, pos)
        elif fmt == 0x09:
            v, n = sleb(d, pos)
        else:
            raise CfiError("pointer encoding %#x" % enc)
        app = enc & 0x70
        if app == 0x10:
            v += pos + delta
        elif app == 0x30:
            v += datarel
        elif app == 0x20:
            v += self.image.sections.get(".text", (0,))[0]
        elif app == 0x40:
            v += func
        elif app != 0:
            raise CfiError("pointer encoding %#x" % enc)
        return v & MASK, n

    # -- CIEs and FDEs -------------------------------------------------------------------------

    def _length(self, off):
        """(where the entry's content starts, its length) of the CIE or FDE at ``off`` (32- or 64-bit length)."""
        length = _U32(self.data, off)[0]
        if length == 0xFFFFFFFF:
            return off + 12, _U64(self.data, off + 4)[0]
        return off + 4, length

    def _cie(self, off):
        cie = self._cies.get(off)
        if cie is not None:
            return cie
        d = self.data
        pos, length = self._length(off)
        end = pos + length
        pos += 4  # CIE id (0)
        version = d[pos]
        pos += 1
        zero = d.find(b"\0", pos)
        aug = bytes(d[pos:zero]).decode("ascii", "replace")
        pos = zero + 1
        if "eh" in aug:
            pos += 8
        cie = _Cie()
        cie.code_align, pos = uleb(d, pos)
        cie.data_align, pos = sleb(d, pos)
        if version == 1:
            cie.ra = d[pos]
            pos += 1
        else:
            cie.ra, pos = uleb(d, pos)
        cie.fde_enc = 0
        cie.lsda_enc = 0xFF
        cie.signal = False
        cie.aug_z = aug.startswith("z")
        if cie.aug_z:
            alen, pos = uleb(d, pos)
            after = pos + alen
            delta = self.eh_addr - self.eh_off
            for ch in aug[1:]:
                if ch == "L":
                    cie.lsda_enc = d[pos]
                    pos += 1
                elif ch == "R":
                    cie.fde_enc = d[pos]
                    pos += 1
                elif ch == "P":
                    enc = d[pos]
                    _v, pos = self._pointer(pos + 1, enc & 0x7F, delta)
                elif ch == "S":
                    cie.signal = True
                elif ch in "BG":
                    pass
                else:
                    break  # unknown: the length lets us skip the rest
            pos = after
        elif aug and aug != "eh":
            raise CfiError("CIE augmentation %r" % aug)
        cie.initial = (pos, end)
        self._cies[off] = cie
        return cie

    def _fde(self, off):
        """(start, end, cie, instructions start, end) of the FDE at file offset ``off``, or None for a CIE."""
        got = self._fdes.get(off)
        if got is not None:
            return got
        d = self.data
        pos, length = self._length(off)
        if length == 0:
            return None
        end = pos + length
        cie_ptr = _U32(d, pos)[0]
        if cie_ptr == 0:
            return None
        cie = self._cie(pos - cie_ptr)
        pos += 4
        delta = self.eh_addr - self.eh_off
        start, pos = self._pointer(pos, cie.fde_enc, delta)
        size, pos = self._pointer(pos, cie.fde_enc & 0x0F, delta)
        if cie.aug_z:
            alen, pos = uleb(d, pos)
            pos += alen
        got = (start, start + size, cie, pos, end)
        self._fdes[off] = got
        return got

    def find(self, pc):
        """The FDE that covers link address ``pc``, or None."""
        if self._table is not None:
            pos, count, h_addr = self._table
            d = self.data
            lo, hi = 0, count
            while lo < hi:  # the last entry whose initial location is <= pc
                mid = (lo + hi) >> 1
                if (_I32(d, pos + 8 * mid)[0] + h_addr) & MASK <= pc:
                    lo = mid + 1
                else:
                    hi = mid
            if lo == 0:
                return None
            fde_addr = (_PAIR(d, pos + 8 * (lo - 1))[1] + h_addr) & MASK
            fde = self._fde(fde_addr - self.eh_addr + self.eh_off)
            return fde if fde is not None and fde[0] <= pc < fde[1] else None
        if self._sorted is None:
            self._sorted = self._scan()
        import bisect

        i = bisect.bisect_right(self._sorted[0], pc) - 1
        if i < 0:
            return None
        fde = self._sorted[1][i]
        return fde if fde[0] <= pc < fde[1] else None

    def _scan(self):
        d = self.data
        pos, end = self.eh_off, self.eh_off + self.eh_size
        fdes = []
        while pos + 4 <= end:
            length = _U32(d, pos)[0]
            if length == 0:
                break
            size = length + 4 if length != 0xFFFFFFFF else _U64(d, pos + 4)[0] + 12
            fde = self._fde(pos)
            if fde is not None and fde[1] > fde[0]:
                fdes.append(fde)
            pos += size
        fdes.sort(key=lambda f: f[0])
        return [f[0] for f in fdes], fdes

    # -- rows ----------------------------------------------------------------------------------

    def row(self, pc):
        """(cfa, rules, signal) for link address ``pc``: cfa is ('r', reg, offset) or ('e', expr);
        rules {reg: ('o', off) | ('v', off) | ('r', reg) | ('e', expr) | ('E', expr) | ('u',) | ('s',)};
        None when no FDE covers ``pc``."""
        got = self._rows.get(pc, False)
        if got is not False:
            return got
        fde = self.find(pc)
        if fde is None:
            got = None
        else:
            start, _end, cie, ins, ins_end = fde
            state = [("r", 7, 8), {}]
            self._run(cie, cie.initial[0], cie.initial[1], state, None, 0, None)
            initial = dict(state[1])
            self._run(cie, ins, ins_end, state, initial, start, pc)
            got = (state[0], state[1], cie.signal, cie.ra)
        self._rows[pc] = got
        return got

    def _run(self, cie, pos, end, state, initial, loc, pc):
        d = self.data
        ca, da = cie.code_align, cie.data_align
        stack = []
        rules = state[1]
        while pos < end:
            op = d[pos]
            pos += 1
            hi, low = op & 0xC0, op & 0x3F
            if hi == 0x40:
                loc += low * ca
                if pc is not None and loc > pc:
                    return
                continue
            if hi == 0x80:
                off, pos = uleb(d, pos)
                rules[low] = ("o", off * da)
                continue
            if hi == 0xC0:
                _restore(rules, initial, low)
                continue
            if op == 0x00:
                continue
            if op in (0x01, 0x02, 0x03, 0x04):
                if op == 0x01:
                    new, pos = self._pointer(pos, cie.fde_enc, self.eh_addr - self.eh_off)
                elif op == 0x02:
                    new, pos = loc + d[pos] * ca, pos + 1
                elif op == 0x03:
                    new, pos = loc + _U16(d, pos)[0] * ca, pos + 2
                else:
                    new, pos = loc + _U32(d, pos)[0] * ca, pos + 4
                loc = new
                if pc is not None and loc > pc:
                    return
            elif op in (0x05, 0x11, 0x14, 0x15, 0x2F):  # offset_extended(_sf), val_offset(_sf), GNU negative
                reg, pos = uleb(d, pos)
                if op in (0x11, 0x15):
                    off, pos = sleb(d, pos)
                else:
                    off, pos = uleb(d, pos)
                off = -off * da if op == 0x2F else off * da
                rules[reg] = ("v" if op in (0x14, 0x15) else "o", off)
            elif op == 0x06:
                reg, pos = uleb(d, pos)
                _restore(rules, initial, reg)
            elif op == 0x07:
                reg, pos = uleb(d, pos)
                rules[reg] = ("u",)
            elif op == 0x08:
                reg, pos = uleb(d, pos)
                rules[reg] = ("s",)
            elif op == 0x09:
                reg, pos = uleb(d, pos)
                reg2, pos = uleb(d, pos)
                rules[reg] = ("r", reg2)
            elif op == 0x0A:
                stack.append((state[0], dict(rules)))
            elif op == 0x0B:
                if not stack:
                    raise CfiError("DW_CFA_restore_state without remember_state")
                cfa, saved = stack.pop()
                # (the CFA rule is restored too, as GCC and LLVM expect)
                state[0] = cfa
                rules.clear()
                rules.update(saved)
            elif op in (0x0C, 0x12):
                reg, pos = uleb(d, pos)
                if op == 0x0C:
                    off, pos = uleb(d, pos)
                else:
                    off, pos = sleb(d, pos)
                    off *= da
                state[0] = ("r", reg, off)
            elif op == 0x0D:
                reg, pos = uleb(d, pos)
                old = state[0]
                state[0] = ("r", reg, old[2] if old[0] == "r" else 0)
            elif op in (0x0E, 0x13):
                if op == 0x0E:
                    off, pos = uleb(d, pos)
                else:
                    off, pos = sleb(d, pos)
                    off *= da
                old = state[0]
                if old[0] != "r":
                    raise CfiError("DW_CFA_def_cfa_offset after an expression")
                state[0] = ("r", old[1], off)
            elif op == 0x0F:
                n, pos = uleb(d, pos)
                state[0] = ("e", bytes(d[pos:pos + n]))
                pos += n
            elif op in (0x10, 0x16):
                reg, pos = uleb(d, pos)
                n, pos = uleb(d, pos)
                rules[reg] = ("e" if op == 0x10 else "E", bytes(d[pos:pos + n]))
                pos += n
            elif op == 0x2E:
                _n, pos = uleb(d, pos)
            else:
                raise CfiError("CFA instruction %#x" % op)


def _restore(rules, initial, reg):
    if initial is not None and reg in initial:
        rules[reg] = initial[reg]
    else:
        rules.pop(reg, None)


# ---------------------------------------------------------------------------------------------
# DWARF expressions (the subset CFI uses: PLT entries, signal trampolines, realigned stacks)


def eval_expr(expr, regs, read_u64, push=None):
    """The value of DWARF expression ``expr`` (bytes): ``regs`` the frame's registers by DWARF
    number (None: unknown), ``read_u64(addr)`` memory; ``push``: a value on the stack first
    (the CFA, for DW_CFA_expression). CfiError for what it cannot evaluate."""
    st = [] if push is None else [push]
    pos, end = 0, len(expr)
    while pos < end:
        op = expr[pos]
        pos += 1
        if 0x30 <= op <= 0x4F:  # lit0..lit31
            st.append(op - 0x30)
        elif 0x70 <= op <= 0x8F or op == 0x92:  # breg0..31, bregx
            if op == 0x92:
                reg, pos = uleb(expr, pos)
            else:
                reg = op - 0x70
            off, pos = sleb(expr, pos)
            v = regs[reg] if reg < len(regs) else None
            if v is None:
                raise CfiError("expression needs register %d, unknown here" % reg)
            st.append((v + off) & MASK)
        elif op == 0x08:
            st.append(expr[pos])
            pos += 1
        elif op == 0x09:
            st.append(struct.unpack_from("<b", expr, pos)[0] & MASK)
            pos += 1
        elif op == 0x0A:
            st.append(_U16(expr, pos)[0])
            pos += 2
        elif op == 0x0B:
            st.append(_I16(expr, pos)[0] & MASK)
            pos += 2
        elif op == 0x0C:
            st.append(_U32(expr, pos)[0])
            pos += 4
        elif op == 0x0D:
            st.append(_I32(expr, pos)[0] & MASK)
            pos += 4
        elif op in (0x0E, 0x0F):
            st.append(_U64(expr, pos)[0])
            pos += 8
        elif op == 0x10:
            v, pos = uleb(expr, pos)
            st.append(v & MASK)
        elif op == 0x11:
            v, pos = sleb(expr, pos)
            st.append(v & MASK)
        elif op == 0x12:
            st.append(st[-1])
        elif op == 0x13:
            st.pop()
        elif op == 0x14:
            st.append(st[-2])
        elif op == 0x16:
            st[-1], st[-2] = st[-2], st[-1]
        elif op == 0x06:
            st.append(read_u64(st.pop()))
        elif op == 0x23:
            v, pos = uleb(expr, pos)
            st.append((st.pop() + v) & MASK)
        elif op == 0x1F:  # neg
            st.append(-st.pop() & MASK)
        elif op == 0x20:  # not
            st.append(~st.pop() & MASK)
        elif op in _BINARY:
            b, a = st.pop(), st.pop()
            st.append(_BINARY[op](a, b) & MASK)
        else:
            raise CfiError("DWARF expression operation %#x" % op)
    if not st:
        raise CfiError("empty DWARF expression")
    return st[-1]


def _signed(v):
    return v - (1 << 64) if v >> 63 else v


_BINARY = {
    0x1A: lambda a, b: a & b,
    0x1C: lambda a, b: a - b,
    0x1E: lambda a, b: a * b,
    0x21: lambda a, b: a | b,
    0x22: lambda a, b: a + b,
    0x24: lambda a, b: a << b if b < 64 else 0,
    0x25: lambda a, b: a >> b if b < 64 else 0,
    0x26: lambda a, b: _signed(a) >> min(b, 63),
    0x27: lambda a, b: a ^ b,
    0x29: lambda a, b: int(a == b),
    0x2A: lambda a, b: int(_signed(a) >= _signed(b)),
    0x2B: lambda a, b: int(_signed(a) > _signed(b)),
    0x2C: lambda a, b: int(_signed(a) <= _signed(b)),
    0x2D: lambda a, b: int(_signed(a) < _signed(b)),
    0x2E: lambda a, b: int(a != b),
}
