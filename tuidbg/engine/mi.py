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

import pygdbmi.gdbmiparser as _pygdbmi_parser
from pygdbmi.gdbescapes import unescape
from pygdbmi.gdbmiparser import parse_response

# pygdbmi formats every parsed value for a debug log line (``fmt_green(val)``)
# even when its logger is off; that is 40% of its parse time on a stack list.
# Its logger stays at ERROR, so the formatted text is never used.
_pygdbmi_parser.fmt_green = lambda value: value  # type: ignore[assignment]
# Likewise its logger.debug calls (10 per value) cost a level check each: skip them.
_pygdbmi_parser.logger.debug = lambda *args, **kwargs: None  # type: ignore[method-assign]

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
_NAME_RE = re.compile(r"[A-Za-z_][\w.-]*")
_SKELETON_BAD = re.compile(r"[^n=,{}\[\]\x00]")


def _valid_results(results: str) -> bool:
    """Whether ``,name=value,...`` follows the MI output grammar.

    pygdbmi loops forever on some malformed input (a value that does not start
    with a quote, brace or bracket; a line cut inside a list), so a line reaches
    it only after this check. Strings become \x00 and names ``n`` first (regex,
    C speed), so the walk below is over a short skeleton of one-character tokens.
    """
    if "\x00" in results:
        return False
    skeleton = _CSTRING_RE.sub("\x00", results)
    if '"' in skeleton:
        return False  # an unterminated string
    skeleton = _NAME_RE.sub("n", skeleton)
    skeleton = "".join(skeleton.split())
    if _SKELETON_BAD.search(skeleton):
        return False
    # results := ("," result)+ ; result := n "=" value ; value := \x00 | tuple | list
    stack = ["top"]  # "top", "{", "[r" (list of results), "[v" (list of values)
    i, n = 0, len(skeleton)
    expect_sep = True  # at top level a result list starts with ","
    while i < n:
        t = skeleton[i]
        ctx = stack[-1]
        if expect_sep:
            if t == ",":
                expect_sep = False
            elif (t == "}" and ctx == "{") or (t == "]" and ctx[0] == "["):
                stack.pop()
            else:
                return False
            i += 1
            continue
        if ctx != "[v":
            if t != "n" or skeleton[i + 1 : i + 2] != "=":
                return False
            i += 2
            if i >= n:
                return False
        v = skeleton[i]
        i += 1
        if v == "\x00":
            expect_sep = True
        elif v == "{":
            if skeleton[i : i + 1] == "}":
                i += 1
                expect_sep = True
            else:
                stack.append("{")
        elif v == "[":
            if skeleton[i : i + 1] == "]":
                i += 1
                expect_sep = True
            else:
                stack.append("[r" if skeleton[i : i + 2] == "n=" else "[v")
        else:
            return False
    return expect_sep and stack == ["top"]


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
