"""Text from gdb or the program is data: make it safe and short before it is shown.

- Control characters and escape sequences become visible (``\\x1b``), never
  reach the terminal, never act as markup.
- Invalid UTF-8 is replaced.
- C++ template arguments fold to ``<…>`` until expanded.
- Long values are cut with a marker.
"""

from __future__ import annotations

import re

_CTRL_RE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\x80-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(m: re.Match) -> str:
    ch = m.group(0)
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def visible(text: str, tab_size: int = 4) -> str:
    """A single display line: tabs expanded, every other control character spelled out."""
    if "\t" in text:
        text = text.expandtabs(tab_size)
    return _CTRL_RE.sub(_visible, text)


def decode_output(data: bytes) -> str:
    return data.decode("utf-8", "replace")


class LineAssembler:
    """Turns chunks of program output into lines.

    ``\\r\\n`` and ``\\n`` end lines; a lone ``\\r`` returns to the start of the
    line, so progress bars show their last state instead of piling up. Bytes are
    decoded incrementally, so a UTF-8 character split across chunks survives.
    """

    def __init__(self, max_partial: int = 1 << 16) -> None:
        import codecs

        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.partial = ""
        self.max_partial = max_partial

    def feed(self, data: bytes) -> list[str]:
        text = self._decoder.decode(data)
        if not text:
            return []
        text = text.replace("\r\n", "\n")
        parts = text.split("\n")
        lines = []
        parts[0] = self.partial + parts[0]
        for p in parts[:-1]:
            lines.append(_apply_cr(p))
        self.partial = parts[-1]
        if len(self.partial) > self.max_partial:
            lines.append(_apply_cr(self.partial))
            self.partial = ""
        return lines

    @property
    def current(self) -> str:
        """The line being written (no newline yet), as it looks now."""
        return _apply_cr(self.partial)


def _apply_cr(line: str) -> str:
    if "\r" not in line:
        return line
    segments = [s for s in line.split("\r")]
    # What a terminal shows: later segments overwrite the start of earlier ones.
    shown = ""
    for seg in segments:
        if len(seg) >= len(shown):
            shown = seg
        else:
            shown = seg + shown[len(seg) :]
    return shown


def fold_templates(name: str) -> str:
    """``f<a, b<c>>::g<d>(x)`` -> ``f<…>::g<…>(x)``: template arguments folded."""
    out = []
    depth = 0
    i = 0
    n = len(name)
    while i < n:
        ch = name[i]
        if ch == "<":
            # operator<, operator<<, operator<= are not templates
            if name.endswith("operator", 0, i) or (i > 0 and name[i - 1] == "<") or (i + 1 < n and name[i + 1] in "<="):
                if depth == 0:
                    out.append(ch)
                i += 1
                continue
            if depth == 0:
                out.append("<…>")
            depth += 1
        elif ch == ">" and depth > 0:
            if i > 0 and name[i - 1] == "-":  # ->
                i += 1
                continue
            depth -= 1
        elif depth == 0:
            out.append(ch)
        i += 1
    return "".join(out)


def truncate(text: str, limit: int) -> tuple[str, bool]:
    """Cut to ``limit`` characters; the flag says something was cut."""
    if len(text) <= limit:
        return text, False
    return text[: max(0, limit - 1)] + "…", True


def shorten_path(path: str, limit: int) -> str:
    """Keep the file name and as much of the end of the folder as fits."""
    if len(path) <= limit:
        return path
    base = path.rsplit("/", 1)[-1]
    if len(base) + 2 >= limit:
        return "…" + base[-(limit - 1) :]
    return "…" + path[-(limit - 1) :]
