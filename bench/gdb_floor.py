#!/usr/bin/env python3
"""The floor under ``tuidbg run``'s first Python stop (issue 31): gdb alone running the same 5-line script.

``tuidbg run --python PY small.py`` has gdb start PY, read its symbols (pyenv's interpreters keep their debug
info) and run it to the script's first line; pudb runs the script in PY itself. This measures, in rounds (the
commands take turns, rotated each round): ``PY small.py``; ``gdb -nx -q -batch -ex run --args PY small.py``
(gdb's start, its reading of PY and its libraries, the run to the end: no tuidbg, no agent, no screen);
``PY -c "import pudb.debugger"`` (pudb's own import, the larger part of its start to the first stop). The
script and PY are cold_start.py's (PY: the peers' venv Python, where pudb is installed).

Usage: .venv/bin/python bench/gdb_floor.py [--rounds 9]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold_start import SMALL, loadavg, peers_python  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    a = ap.parse_args()
    py = str(peers_python())
    work = tempfile.mkdtemp(prefix="bench-gdb-floor-")
    Path(work, "small.py").write_text(SMALL)
    cmds = {
        "python small.py": [py, "small.py"],
        "gdb -batch -ex run --args python small.py": ["gdb", "-nx", "-q", "-batch", "-ex", "run", "--args", py, "small.py"],
        "python -c 'import pudb.debugger'": [py, "-c", "import pudb.debugger"],
    }
    names = list(cmds)
    times: dict[str, list[float]] = {k: [] for k in names}
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {loadavg()}; {a.rounds} rounds")
    for r in range(a.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for k in order:
            t0 = time.perf_counter()
            p = subprocess.run(cmds[k], cwd=work, capture_output=True)
            if p.returncode != 0:
                raise SystemExit(f"{k}: exit {p.returncode}: {p.stderr.decode(errors='replace')[-500:]}")
            times[k].append((time.perf_counter() - t0) * 1000)
    print("| command | median ms | min | max |\n|---|---|---|---|")
    for k in names:
        v = times[k]
        print(f"| `{k}` | {statistics.median(v):,.0f} | {min(v):,.0f} | {max(v):,.0f} |")
    print(f"load average after: {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
