"""Where the suite's time went, printed at the end of every run (CI's log too): the slowest tests
(wall and CPU) and the total per test folder, so that growth is seen before it hurts (issue 28).

Each test's CPU time is its process's own (``RUSAGE_SELF``) plus that of the children it waited for
(``RUSAGE_CHILDREN``: gdb and, through gdb, the programs it debugged; tuidbg processes a test started):
what the test cost the machine's cores, whatever ran beside it. Under pytest-xdist each worker
measures its own tests and the numbers travel to the controller with the test's report
(``user_properties``), where the summary is printed.
"""

from __future__ import annotations

import resource
from collections import defaultdict

import pytest

SLOWEST = 25
_CPU_START = pytest.StashKey[float]()


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    item.stash[_CPU_START] = _cpu()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when == "teardown":
        start = item.stash.get(_CPU_START, None)
        if start is not None:
            report.user_properties.append(("cpu", _cpu() - start))


def _folder(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return path.rsplit("/", 1)[0] if "/" in path else path


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    wall: dict[str, float] = defaultdict(float)  # nodeid -> setup + call + teardown
    cpu: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for rep in reports:
            nodeid = getattr(rep, "nodeid", None)
            when = getattr(rep, "when", None)
            if not nodeid or when not in ("setup", "call", "teardown"):
                continue
            wall[nodeid] += getattr(rep, "duration", 0.0) or 0.0
            for key, value in getattr(rep, "user_properties", ()):
                if key == "cpu":
                    cpu[nodeid] = value
    if not wall:
        return
    tr = terminalreporter
    tr.write_sep("=", f"where the time went: the {SLOWEST} slowest tests (wall, CPU)")
    for nodeid, seconds in sorted(wall.items(), key=lambda kv: -kv[1])[:SLOWEST]:
        c = cpu.get(nodeid)
        tr.write_line(f"{seconds:7.1f}s {'' if c is None else f'{c:6.1f}s':>7}  {nodeid}")
    folders: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for nodeid, seconds in wall.items():
        f = folders[_folder(nodeid)]
        f[0] += seconds
        f[1] += cpu.get(nodeid, 0.0)
        f[2] += 1
    tr.write_sep("-", "per folder: tests, wall (summed over workers), CPU")
    for folder, (w, c, n) in sorted(folders.items(), key=lambda kv: -kv[1][0]):
        tr.write_line(f"{n:5d} {w:8.1f}s {c:8.1f}s  {folder}")
    total_w = sum(f[0] for f in folders.values())
    total_c = sum(f[1] for f in folders.values())
    tr.write_line(f"{len(wall):5d} {total_w:8.1f}s {total_c:8.1f}s  (all)")
