"""Which lines have code: for code objects in memory and for files not imported yet."""

import os
import stat
import sys

_HAS_CO_LINES = sys.version_info >= (3, 10)

_canon_cache = {}


def canon(filename, base=None):
    """The real absolute path of a code object's file name, or None for <string>-like names."""
    try:
        return _canon_cache[filename]
    except KeyError:
        pass
    if not filename or filename.startswith("<"):
        out = None
    else:
        path = filename
        if not os.path.isabs(path):
            path = os.path.join(base or os.getcwd(), path)
        try:
            out = os.path.realpath(path)
        except (OSError, ValueError):
            out = os.path.abspath(path)
    if len(_canon_cache) > 50000:
        _canon_cache.clear()
    _canon_cache[filename] = out
    return out


def code_lines(code):
    """Line numbers of the instructions of one code object (not of the code nested in it)."""
    if _HAS_CO_LINES:
        return frozenset(line for _start, _end, line in code.co_lines() if line is not None)
    import dis

    return frozenset(line for _off, line in dis.findlinestarts(code) if line is not None)


def nested_codes(code):
    """code and every code object nested in it."""
    stack = [code]
    while stack:
        c = stack.pop()
        yield c
        for const in c.co_consts:
            if hasattr(const, "co_code"):
                stack.append(const)


_file_cache = {}
MAX_SOURCE = 64 * 1024 * 1024  # (tuidbg's own cap on a source file: tuidbg.engine.files.SOURCE_CAP)


def file_lines(path):
    """All lines of a source file that have code (compiled by this interpreter), or None if unreadable."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SOURCE:
        return None  # (a FIFO would hold this thread in open() for good, /dev/zero in read())
    key = (st.st_mtime_ns, st.st_size)
    hit = _file_cache.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    try:
        import tokenize

        with tokenize.open(path) as f:
            source = f.read()
        top = compile(source, path, "exec", dont_inherit=True)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    lines = set()
    for c in nested_codes(top):
        lines |= code_lines(c)
    lines = frozenset(lines)
    _file_cache[path] = (key, lines)
    return lines


def resolve_line(path, line):
    """(line with code at or after ``line``, message) for a breakpoint request; (None, why) if none."""
    lines = file_lines(path)
    if lines is None:
        if not os.path.exists(path):
            return None, "no such file (yet): the breakpoint waits until the file is loaded"
        return None, "cannot compile the file; the breakpoint waits until its code is loaded"
    if line in lines:
        return line, None
    later = [n for n in lines if n > line]
    if not later:
        return None, "no code at or after line %d" % line
    new = min(later)
    return new, "line %d has no code; moved to line %d" % (line, new)
