"""GDB/MI line parsing and command quoting.

``parse_line`` turns one line of gdb's stdout into an :class:`MIRecord`. No line can
make it raise: real cuda-gdb 11.8 answers some commands with a bare string result
(``^done,"Focus is not set on any active CUDA kernel.\\n"``), BFD warnings and other
non-MI text arrive on the same stream, and a line may be truncated or hold random
bytes. ``*`` (exec) and ``=`` (notify) records keep their own kinds.

Its time is linear in the line's length, whatever the line holds (issue 9): gdb's
answer to ``output`` of a big array, or a 100,000-frame stack, is one line of many MB.
The values are those pygdbmi's ``parse_response`` and ``unescape`` gave, which this
module used until then (tests/mi_reference.py keeps that parser as the oracle of the
differential tests): the same dicts, a repeated name in a tuple becomes a list (gdb bug
22217), the names of a list of results are dropped, the same whitespace handling. It
no longer calls them: pygdbmi's ``unescape`` is quadratic on a long string with no
escape in its tail (its regex starts with a lazy ``.*?`` that ``finditer`` starts again
at every position: 8.6 s for a 20,000-character console line), and its
``parse_response`` steps through the line in Python one character at a time (0.2 to
0.7 s per MB) and recurses once per nesting level. Here a regex reads one token
(a separator, a name, a short string, a bracket) per step, long strings are found
with ``str.find``, and the nesting is a list, bounded at ``_MAX_DEPTH`` levels (a
deeper line is text with an error, so no consumer of a record meets Python's
recursion limit).

No C call runs long (the longest: a slice of one string, the regex between its first
and last escape), so a huge line parsed in a worker thread (the client does that above
256 KB) leaves the event loop its turns: it stood still at most ~35 ms on a 10 MB line
(bench/mi_parse.py, bench/RESULTS.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# Record kinds.
RESULT = "result"  # ^done / ^running / ^error / ^exit / ^connected
EXEC = "exec"  # *running / *stopped
NOTIFY = "notify"  # =thread-created, =breakpoint-modified, ...
STATUS = "status"  # +download
CONSOLE = "console"  # ~"..."  gdb CLI output
TARGET = "target"  # @"..."  target output (remote targets)
LOG = "log"  # &"..."  gdb's log: echoed commands, warnings, errors
PROMPT = "prompt"  # (gdb)
TEXT = "text"  # anything that is not MI (BFD warnings, a crashing gdb's message)

STREAM_KINDS = (CONSOLE, TARGET, LOG)

_PREFIX_KIND = {
    "^": RESULT,
    "*": EXEC,
    "=": NOTIFY,
    "+": STATUS,
    "~": CONSOLE,
    "@": TARGET,
    "&": LOG,
}

# A token has at most 20 digits (tuidbg numbers its commands from 1): a line of
# millions of digits is text, and int() never sees it (quadratic before Python 3.11,
# refused over 4300 digits since).
_PREFIX_RE = re.compile(r"(\d{0,20})([\^*=+~@&])")
_CLASS_RE = re.compile(r"[a-zA-Z][a-zA-Z0-9_-]*")
_SPACE_TO_END = re.compile(r"\s*\Z")

# Records longer than this keep only a prefix of the raw line (the payload is
# what matters; a 5 MB raw copy in every record would double memory).
_RAW_KEEP = 4096

# Tuples and lists nested deeper than this make the line text with an error. gdb's
# deepest records (symbol tables, frame filters' elided frames) have a few levels.
_MAX_DEPTH = 256


@dataclass(frozen=True)
class MIRecord:
    """One line of gdb output.

    ``payload`` is a dict for result and async records (empty when the record
    has no results), a str for stream and text records. ``error`` says why a
    line that looked like MI could not be parsed (it is then a TEXT record).
    """

    kind: str
    cls: str = ""
    payload: Any = None
    token: int | None = None
    raw: str = field(default="", repr=False)
    error: str = ""

    @property
    def text(self) -> str:
        return self.payload if isinstance(self.payload, str) else ""

    @property
    def results(self) -> dict:
        return self.payload if isinstance(self.payload, dict) else {}


def _raw(line: str) -> str:
    return line if len(line) <= _RAW_KEEP else line[:_RAW_KEEP] + "…"


class _Malformed(ValueError):
    """A line that looks like MI but breaks its grammar."""


def parse_line(line: str) -> MIRecord | None:
    """Parse one line (without its newline). Never raises.

    Returns None for an empty line.
    """
    try:
        return _parse(line)
    except Exception as exc:  # the parser must never raise into the engine
        return _text(line, f"{type(exc).__name__}: {exc}"[:200])


def _text(line: str, error: str = "") -> MIRecord:
    return MIRecord(TEXT, payload=line, raw=_raw(line), error=error)


def _parse(line: str) -> MIRecord | None:
    if line[-1:] in ("\r", "\n"):
        line = line.rstrip("\r\n")
    if not line or line.isspace():
        return None
    if line.startswith("(gdb)") and _SPACE_TO_END.match(line, 5):
        return MIRecord(PROMPT, raw=_raw(line))
    m = _PREFIX_RE.match(line)
    if m is None:
        return _text(line)
    token = int(m.group(1)) if m.group(1) else None
    kind = _PREFIX_KIND[m.group(2)]
    pos = m.end()
    end = len(line)

    if kind in STREAM_KINDS:
        if end - pos >= 2 and line[pos] == '"' and line[-1] == '"':
            try:
                text = _unescape(line, pos + 1, end - 1)
            except ValueError as exc:
                return _text(line, f"bad c-string: {exc}")
            return MIRecord(kind, payload=text, token=token, raw=_raw(line))
        return _text(line, "stream record without a c-string")

    cm = _CLASS_RE.match(line, pos)
    if cm is None:
        return _text(line, "record without a class")
    cls = cm.group(0)
    pos = cm.end()
    if pos == end:
        return MIRecord(kind, cls=cls, payload={}, token=token, raw=_raw(line))
    if line[pos] != ",":
        return _text(line, "garbage after the record class")

    # cuda-gdb 11.x: ^done,"some text\n" (a bare string where MI wants name=value).
    if line.startswith(',"', pos):
        if end - pos >= 3 and line[-1] == '"':
            try:
                text = _unescape(line, pos + 2, end - 1)
            except ValueError as exc:
                return _text(line, f"bad bare string: {exc}")
            return MIRecord(kind, cls=cls, payload={"text": text}, token=token, raw=_raw(line))
        return _text(line, "unterminated bare string")

    # gdb never sends a NUL (it writes \000) and the transport splits lines at "\n".
    if line.find("\x00", pos) >= 0 or line.find("\n", pos) >= 0:
        return _text(line, "malformed or truncated MI record")
    try:
        payload = _parse_results(line, pos)
    except _Malformed as exc:
        return _text(line, str(exc) or "malformed or truncated MI record")
    except ValueError as exc:  # a bad escape in a string
        return _text(line, f"bad c-string: {exc}")
    return MIRecord(kind, cls=cls, payload=payload, token=token, raw=_raw(line))


# -- c-strings ---------------------------------------------------------------------------------
#
# gdb's printchar (gdb/utils.c) writes \\ and \" , \n \b \t \f \r \e \a, and any other
# byte that is not printable as \NNN (octal); a UTF-8 character is then a run of such
# escapes. A run that is not valid UTF-8 stays as written (pygdbmi did the same).

_ESCAPE_RE = re.compile(r'\\(?:([0-7]{3}(?:\\[0-7]{3})*)|(.))|"')
_OCTAL_RE = re.compile(r"[0-7]{3}")
_OCTAL_BYTE = {f"{i:03o}": i for i in range(256)}
_CHAR_ESCAPES = {
    "'": "'",
    "\\": "\\",
    "a": "\a",
    "b": "\b",
    "e": "\033",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    '"': '"',
}


def _octal_bytes(run: str) -> bytes:
    """The bytes of ``NNN\\NNN\\NNN...`` (the first escape's backslash already read).

    Each escape is 4 characters, so the run is converted in chunks at escape boundaries:
    a 10 MB run never becomes a list of millions of 3-character strings at once.
    """
    out = bytearray()
    for i in range(0, len(run), 16384):
        try:
            out += bytes(map(_OCTAL_BYTE.__getitem__, _OCTAL_RE.findall(run, i, i + 16384)))
        except KeyError as exc:
            raise ValueError(f"octal escape \\{exc.args[0]} is over 255") from None
    return bytes(out)


def _unescape_one(m: re.Match) -> str:
    octal, char = m.group(1, 2)
    if octal is not None:
        data = _octal_bytes(octal)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return "\\" + octal
    if char is not None:
        try:
            return _CHAR_ESCAPES[char]
        except KeyError:
            raise ValueError(f"unknown escape \\{char}") from None
    raise ValueError("unescaped quote")


def _unescape(line: str, start: int, end: int) -> str:
    """The text of the c-string body ``line[start:end]`` (without its quotes). Raises ValueError."""
    first = line.find("\\", start, end)
    if first < 0:
        if line.find('"', start, end) >= 0:
            raise ValueError("unescaped quote")
        return line[start:end]
    # The regex runs from the first backslash to the end of the last escape (at most 4
    # characters); the text around it is checked at memchr speed (gdb's escapes are often
    # at the ends only: \"...\" around a value, \n after console text).
    last = min(line.rfind("\\", start, end) + 4, end)
    if line.find('"', start, first) >= 0 or line.find('"', last, end) >= 0:
        raise ValueError("unescaped quote")
    text = line[start:first]
    text += _ESCAPE_RE.sub(_unescape_one, line[first:last])  # += grows a lone str in place
    text += line[last:end]
    return text


def _string_end(line: str, pos: int) -> int:
    """The index of the quote that closes the c-string whose body starts at ``pos``, or -1."""
    while True:
        q = line.find('"', pos)
        if q < 0 or line[q - 1] != "\\":
            return q
        # Escaped only after an odd run of backslashes; the run starts after ``pos - 1``,
        # which is a quote (the opening one or an escaped one).
        seg = line[pos:q]
        if (len(seg) - len(seg.rstrip("\\"))) % 2 == 0:
            return q
        pos = q + 1


# -- results -----------------------------------------------------------------------------------
#
# results := ("," result)+ ; result := name "=" value ; value := c-string | tuple | list
# tuple := "{}" | "{" result ("," result)* "}" ; list := "[]" | "[" value ("," value)* "]"
#        | "[" result ("," result)* "]"
# One token: an optional comma, an optional name with its "=", then a short string without
# escapes, or a quote (a longer or escaped string, read with str.find), or a bracket.
# Whitespace between tokens is allowed (pygdbmi's keys keep some of it, see below).

_FAST_TOKEN = re.compile(r'(,?)(?:([A-Za-z_][\w.-]*)=)?(?:"([^"\\]{0,4096})"|(["{\[}\]]))')
# With whitespace around the comma (gdb writes none), the spaces and the comma are read first:
# one regex with \s* on both sides of an optional comma backtracks quadratically on a long run.
_SPACED_TOKEN = re.compile(r'(?:([A-Za-z_][\w.-]*)(\s*)=\s*)?(?:"([^"\\]{0,4096})"|(["{\[}\]]))')
_SPACE = re.compile(r"\s*")
_PYGDBMI_SPACE = " \t\r\n"


def _parse_results(line: str, pos: int) -> dict:
    """The results of a record from ``line[pos]`` (a comma) to the end. Raises _Malformed."""
    top: dict = {}
    cur: Any = top
    stack: list = []  # the enclosing containers: (container, is_list, named)
    is_list = False
    named = True  # tuples hold results; a list, what its first element is
    opened = False  # the current container was just opened (no element yet)
    fast = _FAST_TOKEN.match
    end = len(line)
    while pos < end:
        m = fast(line, pos)
        if m is not None:
            comma, key, text, sym = m.groups()
        else:
            start = _SPACE.match(line, pos).end()
            comma = line.startswith(",", start)
            after = _SPACE.match(line, start + 1).end() if comma else start
            m = _SPACED_TOKEN.match(line, after)
            if m is None:
                if not comma and start == end:
                    break  # spaces at the end of the line
                raise _Malformed("malformed or truncated MI record")
            key, space, text, sym = m.groups()
            if key is not None:
                # pygdbmi's key: from the first character that is not its whitespace
                # (space, tab, CR, LF) to the "=".
                spaces = line[start + 1 : after] if comma else line[pos:start]
                key = spaces.lstrip(_PYGDBMI_SPACE) + key + space
        pos = m.end()
        if sym == "}" or sym == "]":
            if comma or key is not None or not stack or (sym == "]") != is_list:
                raise _Malformed("malformed or truncated MI record")
            cur, is_list, named = stack.pop()
            opened = False
            continue
        if bool(comma) == opened:  # a comma between elements, none after the opening bracket
            raise _Malformed("malformed or truncated MI record")
        if is_list:
            if opened:
                named = key is not None
            elif (key is not None) != named:
                raise _Malformed("malformed or truncated MI record")
        elif key is None:
            raise _Malformed("malformed or truncated MI record")
        if text is not None:
            value: Any = text
        elif sym == '"':
            q = _string_end(line, pos)
            if q < 0:
                raise _Malformed("malformed or truncated MI record")
            value = _unescape(line, pos, q)
            pos = q + 1
        else:
            value = {} if sym == "{" else []
        if is_list:
            cur.append(value)
        elif key in cur:  # gdb bug 22217: a repeated name; pygdbmi makes a list
            old = cur[key]
            if isinstance(old, list):
                old.append(value)
            else:
                cur[key] = [old, value]
        else:
            cur[key] = value
        if text is None and sym != '"':
            if len(stack) >= _MAX_DEPTH:
                raise _Malformed(f"MI record nested deeper than {_MAX_DEPTH} levels")
            stack.append((cur, is_list, named))
            cur, is_list, named, opened = value, sym == "[", True, True
        else:
            opened = False
    if stack:
        raise _Malformed("malformed or truncated MI record")
    return top


def quote(s: str) -> str:
    """Quote a string as an MI c-string argument."""
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    out = out.replace("\r", "\\r")
    return f'"{out}"'


def as_list(value: Any) -> list:
    """MI values that may be one item or a list of items (gdb bug 22217 duplicates)."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    return [value]


def to_int(value: Any, default: int | None = None) -> int | None:
    """An MI number: decimal, or hex with 0x."""
    if value is None:
        return default
    s = str(value).strip()
    try:
        if s[:2].lower() == "0x":
            return int(s, 16)
        return int(s, 10)
    except ValueError:
        return default


def exit_code(value: Any) -> int | None:
    """gdb prints exit codes in octal (``exit-code="012"`` is 10)."""
    if value is None:
        return None
    try:
        return int(str(value), 8)
    except ValueError:
        return to_int(value)


# gdb CLI commands that read the lines after them (a block up to "end", an interactive prompt): sent over
# MI, gdb would take the next MI commands for those lines and answer none of them.
_BLOCK_ALWAYS = {"if", "while", "define", "document", "commands", "command", "while-stepping", "ws",
                 "stepping", "actions"}
_BLOCK_WHEN_BARE = {"python", "py", "python3", "guile", "gu", "compile", "python-interactive", "pi", "guile-repl",
                    "gr", "shell", "!"}
_INTERACTIVE = {"python-interactive", "pi", "guile-repl", "gr", "shell", "!"}


def takes_more_lines(command: str) -> str | None:
    """Why the gdb CLI ``command`` cannot be sent as one line (it reads more lines), or None."""
    words = command.strip().split(None, 1)
    if not words:
        return None
    word = words[0]
    rest = words[1].strip() if len(words) > 1 else ""
    if word == "compile" and rest in ("code", "code -raw", "code -r", "-raw", "-r"):
        rest = ""  # (compile code without its code: a block)
    if word in _BLOCK_ALWAYS or (word in _BLOCK_WHEN_BARE and not rest):
        what = "an interactive prompt" if word in _INTERACTIVE else "the lines of a block (up to 'end')"
        return (f"'{command.strip()}' reads {what} after it, which one line cannot give: put the commands in a "
                f"file and give it with -x (or 'source FILE' in the console)")
    return None
