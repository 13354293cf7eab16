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
