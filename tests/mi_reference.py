"""The MI line parser as it was before issue 9, kept as the oracle of the differential tests.

This is ``tuidbg.engine.mi.parse_line`` of commit fca9b6d (pygdbmi's ``unescape`` and
``parse_response`` behind a regex pre-check), unchanged but for the names. It is quadratic on a
long stream record (pygdbmi's ``unescape``) and slow on big result records, so tests give it
short lines only. The new parser must give the same record for every line gdb can send.
"""

from __future__ import annotations

import re

import pygdbmi.gdbmiparser as _pygdbmi_parser
from pygdbmi.gdbescapes import unescape
from pygdbmi.gdbmiparser import parse_response

from tuidbg.engine import mi
from tuidbg.engine.mi import MIRecord

_pygdbmi_parser.fmt_green = lambda value: value  # type: ignore[assignment]
_pygdbmi_parser.logger.debug = lambda *args, **kwargs: None  # type: ignore[method-assign]
_pygdbmi_parser.logger.warn = lambda *args, **kwargs: None  # type: ignore[method-assign]  # deprecated; its logger is off

_PREFIX_KIND = {"^": mi.RESULT, "*": mi.EXEC, "=": mi.NOTIFY, "+": mi.STATUS, "~": mi.CONSOLE, "@": mi.TARGET, "&": mi.LOG}
_PREFIX_RE = re.compile(r"(\d*)([\^*=+~@&])")
_CLASS_RE = re.compile(r"[a-zA-Z][a-zA-Z0-9_-]*")
_RAW_KEEP = 4096


def _raw(line: str) -> str:
    return line if len(line) <= _RAW_KEEP else line[:_RAW_KEEP] + "…"


def old_parse_line(line: str) -> MIRecord | None:
    try:
        return _parse(line)
    except Exception as exc:
        return MIRecord(mi.TEXT, payload=line, raw=_raw(line), error=f"{type(exc).__name__}: {exc}")


def _parse(line: str) -> MIRecord | None:
    line = line.rstrip("\r\n")
    if not line.strip():
        return None
    if line.rstrip() == "(gdb)":
        return MIRecord(mi.PROMPT, raw=line)
    m = _PREFIX_RE.match(line)
    if m is None:
        return MIRecord(mi.TEXT, payload=line, raw=_raw(line))
    token = int(m.group(1)) if m.group(1) else None
    prefix = m.group(2)
    kind = _PREFIX_KIND[prefix]
    rest = line[m.end() :]

    if kind in mi.STREAM_KINDS:
        if len(rest) >= 2 and rest[0] == '"' and rest.endswith('"'):
            try:
                return MIRecord(kind, payload=unescape(rest[1:-1]), token=token, raw=_raw(line))
            except Exception as exc:
                return MIRecord(mi.TEXT, payload=line, raw=_raw(line), error=f"bad c-string: {exc}")
        return MIRecord(mi.TEXT, payload=line, raw=_raw(line), error="stream record without a c-string")

    cm = _CLASS_RE.match(rest)
    if cm is None:
        return MIRecord(mi.TEXT, payload=line, raw=_raw(line), error="record without a class")
    cls = cm.group(0)
    after = rest[cm.end() :]
    if after == "":
        return MIRecord(kind, cls=cls, payload={}, token=token, raw=_raw(line))
    if not after.startswith(","):
        return MIRecord(mi.TEXT, payload=line, raw=_raw(line), error="garbage after the record class")

    if after.startswith(',"'):
        body = after[1:]
        if body.endswith('"') and len(body) >= 2:
            try:
                text = unescape(body[1:-1])
            except Exception as exc:
                return MIRecord(mi.TEXT, payload=line, raw=_raw(line), error=f"bad bare string: {exc}")
            return MIRecord(kind, cls=cls, payload={"text": text}, token=token, raw=_raw(line))
        return MIRecord(mi.TEXT, payload=line, raw=_raw(line), error="unterminated bare string")

    if not _valid_results(after):
        return MIRecord(mi.TEXT, payload=line, raw=_raw(line), error="malformed or truncated MI record")

    parse_text = line if prefix != "+" else line[: m.start(2)] + "=" + line[m.end(2) :]
    parsed = parse_response(parse_text)
    ptype = parsed.get("type")
    if ptype not in ("result", "notify"):
        return MIRecord(mi.TEXT, payload=line, raw=_raw(line), error="pygdbmi did not recognise the record")
    payload = parsed.get("payload")
    if payload is None:
        payload = {}
    if not isinstance(payload, dict):
        return MIRecord(mi.TEXT, payload=line, raw=_raw(line), error="results are not a tuple")
    return MIRecord(kind, cls=cls, payload=payload, token=token, raw=_raw(line))


_CSTRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_NAME_RE = re.compile(r"[A-Za-z_][\w.-]*")
_SKELETON_BAD = re.compile(r"[^n=,{}\[\]\x00]")


def _valid_results(results: str) -> bool:
    if "\x00" in results:
        return False
    skeleton = _CSTRING_RE.sub("\x00", results)
    if '"' in skeleton:
        return False
    skeleton = _NAME_RE.sub("n", skeleton)
    skeleton = "".join(skeleton.split())
    if _SKELETON_BAD.search(skeleton):
        return False
    stack = ["top"]
    i, n = 0, len(skeleton)
    expect_sep = True
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
