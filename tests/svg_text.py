"""The text of a Textual SVG screenshot, row by row (to say what differs when a snapshot fails)."""

from __future__ import annotations

import difflib
import html
import re

_TEXT = re.compile(r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>')


def svg_rows(svg: str) -> list[str]:
    rows: dict[float, list[tuple[float, str]]] = {}
    for m in _TEXT.finditer(svg):
        rows.setdefault(float(m.group(2)), []).append((float(m.group(1)), html.unescape(m.group(3))))
    return ["".join(t for _, t in sorted(parts)).rstrip() for _, parts in sorted(rows.items())]


def svg_diff(expected: str, actual: str) -> str:
    """A unified diff of the screen text; empty when only colours or styles differ."""
    return "\n".join(difflib.unified_diff(svg_rows(expected), svg_rows(actual), "expected", "actual", lineterm=""))


_CELL = re.compile(r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)" textLength="([\d.]+)"[^>]*>(.*?)</text>')


def screen_text(app) -> list[str]:
    """The rows of the app's screen as the terminal shows them: each piece of text at its column (a run
    of blanks is drawn as a background only, with no text, so ``svg_rows`` closes it up)."""
    svg = app.export_screenshot()
    width = app.size.width
    pieces = [(float(x), float(y), float(n), html.unescape(t).replace("\xa0", " ")) for x, y, n, t in _CELL.findall(svg)]
    cell = min((n / len(t) for _, _, n, t in pieces if t and len(t) == len(t.encode("utf-16-le")) // 2), default=12.2)
    rows: dict[float, list[str]] = {}
    for x, y, _, t in pieces:
        row = rows.setdefault(y, [" "] * width)
        col = round(x / cell)
        for i, ch in enumerate(t):
            if 0 <= col + i < width:
                row[col + i] = ch
    return ["".join(r).rstrip() for _, r in sorted(rows.items())]
