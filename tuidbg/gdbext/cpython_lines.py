"""CPython line tables: bytecode offset -> line, per version.

3.9's ``co_lnotab``, 3.10's PEP 626 ``co_linetable`` and the 3.11+ location table
(``Objects/locations.md``), decoded as the interpreter itself does.

Standard library only, Python 3.6 syntax.
"""

import bisect


def _varint(data, i):
    b = data[i]
    i += 1
    val = b & 63
    shift = 0
    while b & 64:
        b = data[i]
        i += 1
        shift += 6
        val |= (b & 63) << shift
    return val, i


def _svarint(data, i):
    v, i = _varint(data, i)
    if v & 1:
        return -(v >> 1), i
    return v >> 1, i


def line_ranges(kind, table, firstlineno):
    """Decode a line table into (starts, ends, lines), byte offsets into the bytecode.

    ``kind`` is 'lnotab' (3.9), 'pep626' (3.10) or 'locations' (3.11+). A line of None
    means "no line" for that range.
    """
    starts, ends, lines = [], [], []
    n = len(table)
    if kind == "lnotab":
        # pairs (bytecode increment, signed line increment); a range runs until the next
        # entry that moves the bytecode offset
        addr = 0
        line = firstlineno
        i = 0
        while i + 1 < n:
            a = table[i]
            d = table[i + 1]
            if d >= 128:
                d -= 256
            if a:
                starts.append(addr)
                ends.append(addr + a)
                lines.append(line)
                addr += a
            line += d
            i += 2
        starts.append(addr)
        ends.append(1 << 62)
        lines.append(line)
        return starts, ends, lines
    if kind == "pep626":
        addr = 0
        line = firstlineno
        i = 0
        while i + 1 < n:
            sdelta = table[i]
            ldelta = table[i + 1]
            if ldelta >= 128:
                ldelta -= 256
            end = addr + sdelta
            if ldelta == -128:
                cur = None
            else:
                line += ldelta
                cur = line
            if end > addr:
                starts.append(addr)
                ends.append(end)
                lines.append(cur)
            addr = end
            i += 2
        return starts, ends, lines
    # 3.11+ location table (Objects/locations.md)
    addr = 0
    line = firstlineno
    i = 0
    while i < n:
        first = table[i]
        i += 1
        if not first & 0x80:
            break  # not at an entry start: a damaged table
        code = (first >> 3) & 15
        length = ((first & 7) + 1) * 2
        cur = None
        if code == 15:
            cur = None
        elif code == 14:
            d, i = _svarint(table, i)
            line += d
            cur = line
            _, i = _varint(table, i)
            _, i = _varint(table, i)
            _, i = _varint(table, i)
        elif code == 13:
            d, i = _svarint(table, i)
            line += d
            cur = line
        elif code >= 10:
            line += code - 10
            cur = line
            i += 2
        else:
            cur = line
            i += 1
        starts.append(addr)
        ends.append(addr + length)
        lines.append(cur)
        addr += length
    return starts, ends, lines


def line_at(ranges, addr):
    starts, ends, lines = ranges
    k = bisect.bisect_right(starts, addr) - 1
    if k < 0 or addr >= ends[k]:
        return None
    return lines[k]
