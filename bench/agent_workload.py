"""Workloads for bench/agent_overhead.py: run as `python agent_workload.py KIND N [PYTEST_DIR]`.

Prints ``ELAPSED <cpu seconds> <wall seconds>`` measured around the work only
(interpreter start-up and the agent's start-up are not part of it). CPU time is
this process's (``time.process_time``): the workloads are single-threaded, and it
is far less disturbed than wall time by other jobs on a shared machine.
"""
import sys
import time


def never_called():
    return 42  # MARK:cold (the benchmark's breakpoint: set, never hit)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def loop(n):
    s = 0
    for i in range(n):
        s += i * i % 7
        if s > 1 << 40:
            s = 0
    return s


def main():
    kind, n = sys.argv[1], int(sys.argv[2])
    c, t = time.process_time(), time.perf_counter()
    if kind == "loop":
        loop(n)
    elif kind == "calls":
        fib(n)
    elif kind == "pytest":
        import pytest

        rc = pytest.main(["-q", "-p", "no:cacheprovider", "--no-header", sys.argv[3]])
        if rc != 0:
            raise SystemExit("pytest workload failed: %s" % rc)
    else:
        raise SystemExit("unknown workload " + kind)
    print("ELAPSED %.6f %.6f" % (time.process_time() - c, time.perf_counter() - t), flush=True)


main()
