"""Overhead of tuidbg's Python agent, and the latency of one Python step.

For each interpreter, each workload runs (best of --repeat):

- ``none``: the plain interpreter, no debugger (the baseline), run the way tuidbg runs
  programs (address space randomization off, output to a terminal, TERM=dumb);
- ``agent, no bp``: under tuidbg (gdb + the agent, as ``tuidbg run`` starts it), no
  Python breakpoint;
- ``agent, bp never hit``: the same with a Python breakpoint in a function that never
  runs. The ratio is this against ``none``.

The workloads (bench/agent_workload.py) time themselves, so interpreter and gdb start-up
are left out: ``loop`` (a CPU-bound pure-Python loop, one call), ``calls`` (recursive
fib: a function call every few bytecodes, the worst case for settrace) and ``pytest``
(a small generated test suite; only interpreters that can import pytest).

Step latency: stopped at a Python breakpoint in a loop, the time from ``step_over()`` to
the stop being refreshed in the session's state (``wait_stop``), over --steps steps.

    .venv/bin/python bench/agent_overhead.py [--python PATH ...] [--repeat 3] [--steps 40] [--compare-global]

Goals (issue 5): <= 1.05x on 3.12+, <= 1.5x on <= 3.11 with a breakpoint that never runs;
the same on scripts/build-cpython314.sh's 3.14 and free-threaded 3.14t (issue 16), which the
default run includes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pty
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from helpers import CPYTHON314_CACHE, DEBIAN_PY311, cpython314, line_of, pyenv_python  # noqa: E402

from tuidbg.engine import pyagent  # noqa: E402
from tuidbg.engine.debugger import new_session
from tuidbg.engine.session import SessionConfig  # noqa: E402

WORKLOAD = REPO / "bench" / "agent_workload.py"
SIZES = {"loop": "3000000", "calls": "30", "pytest": "0"}

PYTEST_FILE = '''
import pytest


def work(n):
    d = {}
    for i in range(n):
        d[str(i)] = sorted([i % 7, i % 5, i % 3])
    return sum(len(v) for v in d.values())


@pytest.mark.parametrize("n", range(300))
def test_work(n):
    assert work(50 + n % 50) >= 150


class TestStrings:
    @pytest.mark.parametrize("k", range(200))
    def test_format(self, k):
        text = ", ".join("%d:%s" % (i, chr(97 + i % 26)) for i in range(k % 40))
        assert text.count(":") == k % 40
'''


def interpreters(paths: list[str]) -> list[Path]:
    if paths:
        return [Path(p) for p in paths]
    out = [pyenv_python(m) for m in ("3.9", "3.10", "3.11", "3.12", "3.13", "3.14")]
    # scripts/build-cpython314.sh's 3.14 and its free-threaded 3.14t, measured in the same run
    out += [cpython314("3.14"), cpython314("3.14t")]
    out = [p for p in out if p is not None]
    if DEBIAN_PY311.exists():
        out.append(DEBIAN_PY311)
    return out


def origin(py: Path) -> str:
    """Where an interpreter comes from, for the table: debian, pyenv, or the 3.14 builds (t: free-threaded)."""
    if str(py).startswith("/usr/bin"):
        return "debian"
    if str(py).startswith(str(CPYTHON314_CACHE)):
        return "build-3.14t (no GIL)" if py.name.endswith("t") else "build-3.14"
    return "pyenv"


def pytest_libs(tmp: Path) -> Path:
    """pytest and its pure-Python dependencies from the venv running this script, for any interpreter."""
    import pytest

    site = Path(pytest.__file__).resolve().parent.parent
    out = tmp / "pytest-libs"
    out.mkdir(exist_ok=True)
    for name in ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py.py"):
        if (site / name).exists() and not (out / name).exists():
            (out / name).symlink_to(site / name)
    return out


def has_pytest(python: Path, env: dict[str, str]) -> bool:
    return subprocess.run([str(python), "-c", "import pytest"], capture_output=True, env=env).returncode == 0


def elapsed(text: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of the work."""
    m = re.search(r"ELAPSED ([0-9.]+) ([0-9.]+)", text)
    if not m:
        raise RuntimeError(f"no timing in the workload's output: {text[-500:]!r}")
    return float(m.group(1)), float(m.group(2))


def run_plain(python: Path, args: list[str], pythonpath: str | None) -> tuple[float, float]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    # Run it as tuidbg runs programs: address space randomization off (layout alone moves these timings
    # by 10%), output to a terminal (pytest does more for a terminal than for a pipe), TERM=dumb.
    env["TERM"] = "dumb"
    setarch = ["setarch", os.uname().machine, "-R"] if shutil.which("setarch") else []
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([*setarch, str(python), str(WORKLOAD), *args], stdin=subprocess.DEVNULL,
                                stdout=slave, stderr=slave, env=env)
        os.close(slave)
        out = bytearray()
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the program closed its end
                break
            if not chunk:
                break
            out += chunk
        rc = proc.wait(timeout=600)
    finally:
        os.close(master)
    text = out.decode("utf-8", "replace")
    if rc != 0:
        raise RuntimeError(text[-2000:])
    return elapsed(text)


async def run_agent(python: Path, args: list[str], pythonpath: str | None, env: dict[str, str] | None = None,
                    breakpoint: bool = True) -> tuple[float, float, str]:
    out = bytearray()
    program_env = dict(env or {})
    if pythonpath:
        program_env["PYTHONPATH"] = pythonpath
    s = new_session(SessionConfig(mode="run", program=str(python), args=[str(WORKLOAD), *args], nx=True,
                                   agent=True, python_target=True, program_env=program_env))
    s.on_program_output(out.extend)
    await s.start()
    try:
        ctl = pyagent.controller(s)
        if breakpoint:
            await ctl.add_breakpoint(str(WORKLOAD), line_of(WORKLOAD, "cold"))
        await s.launch()
        st = await ctl.wait_stop(600)
        if st.exit_code != 0:
            raise RuntimeError(f"workload under the agent: {st.exit_description}: {bytes(out)[-2000:]!r}")
        if ctl.info.backend is None:
            raise RuntimeError(f"the agent did not run: {ctl.info}")
        cpu, wall = elapsed(bytes(out).decode("utf-8", "replace"))
        return cpu, wall, str(ctl.info.backend)
    finally:
        await s.close()


STEP_PROG = '''
def body(i):
    x = i + 1  # MARK:s1
    y = x * 2
    z = y - 3
    return z


total = 0
for i in range(100000):
    total += body(i)
print(total)
'''


async def step_latency(python: Path, steps: int, prog: Path) -> list[float]:
    s = new_session(SessionConfig(mode="run", program=str(python), args=[str(prog)], nx=True, agent=True,
                                   python_target=True))
    await s.start()
    try:
        ctl = pyagent.controller(s)
        await ctl.add_breakpoint(str(prog), line_of(prog, "s1"))
        await s.launch()
        await ctl.wait_stop(60)
        await ctl.delete_all_breakpoints()
        times = []
        for _ in range(steps):
            t = time.perf_counter()
            await ctl.step_over()
            st = await ctl.wait_stop(60)
            times.append(time.perf_counter() - t)
            if st.python.stop is None:
                raise RuntimeError(f"a step ended somewhere else: {st.stop}")
        return times
    finally:
        await s.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", action="append", default=[], help="interpreter(s) to measure (default: all found)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--workloads", default="loop,calls,pytest")
    ap.add_argument("--compare-global", action="store_true",
                    help="on <= 3.11 also measure the agent without its frame filter (every thread traced)")
    args = ap.parse_args()
    kinds = [k for k in args.workloads.split(",") if k]
    tmp = Path(tempfile.mkdtemp(prefix="tuidbg-bench-"))
    (tmp / "test_bench_suite.py").write_text(PYTEST_FILE)
    prog = tmp / "steps.py"
    prog.write_text(STEP_PROG)
    libs = str(pytest_libs(tmp)) if "pytest" in kinds else ""  # (loop and calls need no pytest)
    print(f"tuidbg agent overhead; host {os.uname().nodename}, {os.cpu_count()} CPUs; best of {args.repeat}; "
          "CPU seconds of the work (wall in brackets)")
    print(f"{'python':<22} {'workload':<8} {'none':>16} {'agent, no bp':>16} {'agent, bp never hit':>22} "
          f"{'ratio':>7}  backend")
    rows = []
    for py in interpreters(args.python):
        version = subprocess.run([str(py), "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                                 capture_output=True, text=True).stdout.strip()
        label = f"{version} {origin(py)}"
        for kind in kinds:
            wargs = [kind, SIZES[kind]]
            pp = None
            if kind == "pytest":
                pp = libs
                if not has_pytest(py, dict(os.environ, PYTHONPATH=libs)):
                    print(f"{label:<22} {kind:<8}   (pytest does not import with this interpreter here: "
                          "it needs exceptiongroup and tomli before 3.11, not on this machine)")
                    continue
                wargs.append(str(tmp / "test_bench_suite.py"))
            base = nobp = agent = (float("inf"), float("inf"))
            backend = ""
            for _ in range(args.repeat):  # interleaved, so drifting machine load hits all alike
                base = min(base, run_plain(py, wargs, pp))
                nobp = min(nobp, asyncio.run(run_agent(py, wargs, pp, breakpoint=False))[:2])
                cpu, wall, backend = asyncio.run(run_agent(py, wargs, pp))
                agent = min(agent, (cpu, wall))
            ratio = agent[0] / base[0]
            rows.append((label, kind, base, agent, ratio))
            print(f"{label:<22} {kind:<8} {base[0]:>7.3f} [{base[1]:>6.3f}] {nobp[0]:>7.3f} [{nobp[1]:>6.3f}] "
                  f"{agent[0]:>12.3f} [{agent[1]:>6.3f}] {ratio:>6.2f}x  {backend}", flush=True)
            if args.compare_global and "framefilter" in backend:
                glob = min(asyncio.run(run_agent(py, wargs, pp, {"TUIDBG_AGENT_FRAMEFILTER": "0"}))[:2]
                           for _ in range(args.repeat))
                print(f"{label:<22} {kind:<8} {'':>16} {'':>16} {glob[0]:>12.3f} [{glob[1]:>6.3f}] "
                      f"{glob[0] / base[0]:>6.2f}x  settrace, frame filter off", flush=True)
        if args.steps:
            t = asyncio.run(step_latency(py, args.steps, prog))
            ms = sorted(x * 1000 for x in t)
            p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
            print(f"{label:<22} {'step':<8} median {statistics.median(ms):.1f} ms, p90 {p90:.1f} ms, "
                  f"min {ms[0]:.1f} ms over {len(ms)} steps", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
