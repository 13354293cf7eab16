"""Shared bits of the benchmarks: building programs, timing, printing."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "bench" / "_build"
sys.path.insert(0, str(REPO))


def build(name: str, *flags: str) -> Path:
    src = REPO / "bench" / "programs" / f"{name}.c"
    out = BUILD / name
    BUILD.mkdir(parents=True, exist_ok=True)
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        subprocess.run(["gcc", "-g", "-O0", "-fno-omit-frame-pointer", *flags, str(src), "-o", str(out)], check=True)
    return out


def line_of(path: Path, marker: str) -> int:
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if f"MARK:{marker}" in line:
            return i
    raise SystemExit(f"no MARK:{marker} in {path}")


def summary(samples: list[float]) -> dict:
    s = sorted(samples)
    return {
        "median": statistics.median(s),
        "p90": s[int(len(s) * 0.9) - 1] if len(s) >= 10 else s[-1],
        "min": s[0],
        "n": len(s),
    }


def ms(x: float) -> str:
    return f"{x * 1000:.2f} ms"


class Timer:
    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.elapsed = time.perf_counter() - self.t0
