"""GDB/MI line parsing and command quoting.

``parse_line`` turns one line of gdb's stdout into an :class:`MIRecord`. It uses
pygdbmi's ``parse_response`` for the MI grammar, wrapped so that no line can
raise: real cuda-gdb 11.8 answers some commands with a bare string result
(``^done,"Focus is not set on any active CUDA kernel.\\n"``) that makes pygdbmi
raise ``TypeError``, BFD warnings and other non-MI text arrive on the same
stream, and a line may be truncated or hold random bytes. pygdbmi reports both
``*`` (exec) and ``=`` (notify) records as "notify"; the prefix character is
kept here so the two stay apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pygdbmi.gdbescapes import unescape
from pygdbmi.gdbmiparser import parse_response

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

_PREFIX_RE = re.compile(r"(\d*)([\^*=+~@&])")
_CLASS_RE = re.compile(r"[a-zA-Z][a-zA-Z0-9_-]*")

# Text records longer than this keep only a prefix of the raw line (the payload is
# what matters; a 5 MB raw copy in every record would double memory).
_RAW_KEEP = 4096


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


def parse_line(line: str) -> MIRecord | None:
    """Parse one line (without its newline). Never raises.

    Returns None for an empty line.
    """
    try:
        return _parse(line)
    except Exception as exc:  # the parser must never raise into the engine
        return MIRecord(TEXT, payload=line, raw=_raw(line), error=f"{type(exc).__name__}: {exc}")


def _parse(line: str) -> MIRecord | None:
    line = line.rstrip("\r\n")
    if not line.strip():
        return None
    if line.rstrip() == "(gdb)":
        return MIRecord(PROMPT, raw=line)
    m = _PREFIX_RE.match(line)
    if m is None:
        return MIRecord(TEXT, payload=line, raw=_raw(line))
    token = int(m.group(1)) if m.group(1) else None
    prefix = m.group(2)
    kind = _PREFIX_KIND[prefix]
    rest = line[m.end() :]

    if kind in STREAM_KINDS:
        if len(rest) >= 2 and rest[0] == '"' and rest.endswith('"'):
            try:
                return MIRecord(kind, payload=unescape(rest[1:-1]), token=token, raw=_raw(line))
            except Exception as exc:
                return MIRecord(TEXT, payload=line, raw=_raw(line), error=f"bad c-string: {exc}")
        return MIRecord(TEXT, payload=line, raw=_raw(line), error="stream record without a c-string")

    cm = _CLASS_RE.match(rest)
    if cm is None:
        return MIRecord(TEXT, payload=line, raw=_raw(line), error="record without a class")
    cls = cm.group(0)
    after = rest[cm.end() :]
    if after == "":
        return MIRecord(kind, cls=cls, payload={}, token=token, raw=_raw(line))
    if not after.startswith(","):
        return MIRecord(TEXT, payload=line, raw=_raw(line), error="garbage after the record class")

    # cuda-gdb 11.x: ^done,"some text\n" (a bare string where MI wants name=value).
    if after.startswith(',"'):
        body = after[1:]
        if body.endswith('"') and len(body) >= 2:
            try:
                text = unescape(body[1:-1])
            except Exception as exc:
                return MIRecord(TEXT, payload=line, raw=_raw(line), error=f"bad bare string: {exc}")
            return MIRecord(kind, cls=cls, payload={"text": text}, token=token, raw=_raw(line))
        return MIRecord(TEXT, payload=line, raw=_raw(line), error="unterminated bare string")

    if not _valid_results(after):
        return MIRecord(TEXT, payload=line, raw=_raw(line), error="malformed or truncated MI record")

    # pygdbmi does not know status (+) records; it parses them when spelled as notify.
    parse_text = line if prefix != "+" else line[: m.start(2)] + "=" + line[m.end(2) :]
    parsed = parse_response(parse_text)
    ptype = parsed.get("type")
    if ptype not in ("result", "notify"):
        return MIRecord(TEXT, payload=line, raw=_raw(line), error="pygdbmi did not recognise the record")
    payload = parsed.get("payload")
    if payload is None:
        payload = {}
    if not isinstance(payload, dict):
        return MIRecord(TEXT, payload=line, raw=_raw(line), error="results are not a tuple")
    return MIRecord(kind, cls=cls, payload=payload, token=token, raw=_raw(line))


_CSTRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_SKELETON_TOKEN = re.compile(r'\s*(?:(?P<name>[A-Za-z_][\w.-]*)|(?P<str>\x00)|(?P<p>[=,{}\[\]])|(?P<bad>.))', re.S)


def _valid_results(results: str) -> bool:
    """Whether ``,name=value,...`` follows the MI output grammar.

    pygdbmi loops forever on some malformed input (a value that does not start
    with a quote, brace or bracket; a line cut inside a list), so a line reaches
    it only after this check. Strings are replaced by a marker first, so the
    walk is over the skeleton only.
    """
    if "\x00" in results:
        return False
    skeleton = _CSTRING_RE.sub("\x00", results)
    if '"' in skeleton:
        return False  # an unterminated string
    toks: list[str] = []
    for m in _SKELETON_TOKEN.finditer(skeleton):
        if m.group("bad") is not None:
            return False
        if m.group("name") is not None:
            toks.append("n")
        elif m.group("str") is not None:
            toks.append("s")
        else:
            toks.append(m.group("p"))
    # results := ("," result)+ ; result := n "=" value ; value := s | tuple | list
    stack: list[str] = []  # "{" or "[r" (list of results) or "[v" (list of values) or "top"
    i, n = 0, len(toks)
    expect = "sep"  # at top level a result list starts with ","
    stack.append("top")
    while i < n:
        t = toks[i]
        ctx = stack[-1]
        if expect == "sep":
            if t == ",":
                expect = "item"
                i += 1
                continue
            if t == "}" and ctx == "{":
                stack.pop()
            elif t == "]" and ctx in ("[r", "[v"):
                stack.pop()
            else:
                return False
            i += 1
            expect = "sep"
            continue
        # expect an item: a result in top/{/[r, a value in [v
        if ctx in ("top", "{", "[r"):
            if t != "n" or i + 1 >= n or toks[i + 1] != "=":
                return False
            i += 2
        if i >= n:
            return False
        v = toks[i]
        i += 1
        if v == "s":
            expect = "sep"
        elif v == "{":
            if i < n and toks[i] == "}":
                i += 1
                expect = "sep"
            else:
                stack.append("{")
                expect = "item"
        elif v == "[":
            if i < n and toks[i] == "]":
                i += 1
                expect = "sep"
            else:
                is_results = i + 1 < n and toks[i] == "n" and toks[i + 1] == "="
                stack.append("[r" if is_results else "[v")
                expect = "item"
        else:
            return False
    return expect == "sep" and stack == ["top"]


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
