"""Filters: the argument grammar of ``-cuda-info-*`` and ``-cuda-focus-switch``, parsed and checked."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from tuidbg.engine.cuda_model.coords import Dim3
from tuidbg.engine.cuda_model.errors import CudaFilterError
from tuidbg.engine.mi import to_int

SCALAR_KINDS = ("device", "sm", "warp", "lane", "kernel", "grid")
DIM_KINDS = ("block", "thread")
ALL_KINDS = SCALAR_KINDS + DIM_KINDS
PHYSICAL_KINDS = ("device", "sm", "warp", "lane")

_TOKEN_RE = re.compile(r"\s*(?:(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<conv>\$[A-Za-z0-9_]+)|(?P<num>0[xX][0-9A-Fa-f]+|\d+)|(?P<p>[(),])|(?P<bad>\S))")

# What a component may be: an int, "current", "any" (wildcard) or a $convenience variable.
Component = Any


def _fmt_component(v: Component) -> str:
    return str(v)


@dataclass(frozen=True)
class CudaFilter:
    """A parsed, checked filter: ``kernel 1 block (0,0,0)``.

    ``items`` keeps the user's order; ``str()`` gives the canonical text sent to
    cuda-gdb. Dim3 values keep the components given (1 to 3); cuda-gdb fills the
    rest (wildcard in a filter, the current focus in a switch).
    """

    items: tuple[tuple[str, Any], ...] = ()

    def __str__(self) -> str:
        out = []
        for kind, value in self.items:
            if kind in DIM_KINDS:
                out.append(f"{kind} (" + ",".join(_fmt_component(c) for c in value) + ")")
            else:
                out.append(f"{kind} {_fmt_component(value)}")
        return " ".join(out)

    def __bool__(self) -> bool:
        return bool(self.items)

    def get(self, kind: str, default: Any = None) -> Any:
        for k, v in self.items:
            if k == kind:
                return v
        return default

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.items)

    @property
    def is_physical(self) -> bool:
        """Whether cuda-gdb resolves a switch to this in physical order (device/sm/warp/lane given)."""
        return any(k in PHYSICAL_KINDS for k in self.kinds)


def _check_component(kind: str, raw: str) -> Component:
    low = raw.lower()
    if low in ("current", "any"):
        return low
    if raw.startswith("$"):
        return raw
    v = to_int(raw)
    if v is None or v < 0:
        raise CudaFilterError(f"{kind}: {raw!r} is not a valid index (a number ≥ 0, 0x hex, 'current', 'any' or a $variable)")
    if v > 0xFFFFFFFF:
        raise CudaFilterError(f"{kind}: {raw} is too large for a CUDA index")
    return v


def parse_filter(
    text: str | CudaFilter | None,
    *,
    allowed: Sequence[str] = ALL_KINDS,
    what: str = "filter",
) -> CudaFilter:
    """Parse and check a cuda-gdb filter or focus request.

    Accepts what cuda-gdb accepts: ``kernel 1 block (0,0,0)``, ``block 1,0,0``,
    ``block (1, 0)``, ``thread 5``, ``kernel 0x1``, ``kernel current``,
    ``block (any,0,0)``, ``kernel $k``. Raises CudaFilterError with a message
    that says what is wrong: an unknown word, a missing or malformed value, a
    duplicate, a kind this command does not take.
    """
    if isinstance(text, CudaFilter):
        flt = text
        for k in flt.kinds:
            if k not in allowed:
                raise CudaFilterError(f"{what}: '{k}' is not accepted here (use {_or_list(allowed)})")
        return flt
    if text is None or not str(text).strip():
        return CudaFilter()
    toks: list[tuple[str, str]] = []
    for m in _TOKEN_RE.finditer(str(text)):
        if m.group("bad") is not None:
            raise CudaFilterError(f"{what}: unexpected character {m.group('bad')!r} in {str(text).strip()!r}")
        for kind in ("word", "conv", "num", "p"):
            if m.group(kind) is not None:
                toks.append((kind, m.group(kind)))
                break
    items: list[tuple[str, Any]] = []
    seen: set[str] = set()
    i = 0
    n = len(toks)
    while i < n:
        kind_tok, word = toks[i]
        if kind_tok != "word":
            raise CudaFilterError(f"{what}: expected one of {_or_list(allowed)}, got {word!r}")
        word = word.lower()
        if word not in ALL_KINDS:
            raise CudaFilterError(f"{what}: unknown word {word!r} (expected {_or_list(allowed)})")
        if word not in allowed:
            raise CudaFilterError(f"{what}: '{word}' is not accepted here (use {_or_list(allowed)})")
        if word in seen:
            raise CudaFilterError(f"{what}: '{word}' is given twice")
        seen.add(word)
        i += 1
        if word in SCALAR_KINDS:
            # N or (N)
            paren = i < n and toks[i] == ("p", "(")
            if paren:
                i += 1
            if i >= n or toks[i][0] not in ("num", "conv", "word"):
                raise CudaFilterError(f"{what}: '{word}' needs a number (e.g. '{word} 0')")
            if toks[i][0] == "word" and toks[i][1].lower() not in ("current", "any"):
                raise CudaFilterError(f"{what}: '{word}' needs a number, got {toks[i][1]!r}")
            comp = _check_component(word, toks[i][1])
            i += 1
            if paren:
                if i >= n or toks[i] != ("p", ")"):
                    raise CudaFilterError(f"{what}: missing ')' after '{word} ({toks[i - 1][1]}'")
                i += 1
            items.append((word, comp))
            continue
        # dim3: (x,y,z) | x,y,z | x,y | x, with or without parentheses
        paren = i < n and toks[i] == ("p", "(")
        if paren:
            i += 1
        comps: list[Component] = []
        while True:
            if i >= n or toks[i][0] not in ("num", "conv", "word") or (
                toks[i][0] == "word" and toks[i][1].lower() not in ("current", "any")
            ):
                got = toks[i][1] if i < n else "nothing"
                raise CudaFilterError(f"{what}: '{word}' needs an index like (1,0,0), got {got!r}")
            comps.append(_check_component(word, toks[i][1]))
            i += 1
            if i < n and toks[i] == ("p", ","):
                i += 1
                continue
            break
        if paren:
            if i >= n or toks[i] != ("p", ")"):
                raise CudaFilterError(f"{what}: missing ')' in '{word}' index")
            i += 1
        if len(comps) > 3:
            raise CudaFilterError(f"{what}: '{word}' has {len(comps)} components; a CUDA index has at most 3 (x,y,z)")
        items.append((word, tuple(comps)))
    return CudaFilter(tuple(items))


def make_filter(
    *,
    kernel: int | None = None,
    grid: int | None = None,
    block: Dim3 | Sequence[int] | None = None,
    thread: Dim3 | Sequence[int] | None = None,
    device: int | None = None,
    sm: int | None = None,
    warp: int | None = None,
    lane: int | None = None,
) -> CudaFilter:
    """A filter from values (checked like parsed text)."""
    items: list[tuple[str, Any]] = []
    for kind, v in (("kernel", kernel), ("grid", grid), ("device", device), ("sm", sm), ("warp", warp), ("lane", lane)):
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise CudaFilterError(f"{kind} must be a number ≥ 0, not {v!r}")
        items.append((kind, v))
    for kind, v in (("block", block), ("thread", thread)):
        if v is None:
            continue
        comps = (v.x, v.y, v.z) if isinstance(v, Dim3) else tuple(v)
        if not 1 <= len(comps) <= 3 or any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in comps):
            raise CudaFilterError(f"{kind} must be 1 to 3 numbers ≥ 0, not {v!r}")
        items.append((kind, comps))
    return CudaFilter(tuple(items))


def _or_list(words: Sequence[str]) -> str:
    words = list(words)
    if len(words) == 1:
        return f"'{words[0]}'"
    return ", ".join(words[:-1]) + " or " + words[-1]
