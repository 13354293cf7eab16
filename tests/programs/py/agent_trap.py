"""A SIGTRAP break-in, then Python steps from that native stop (tests/agent/test_agent.py)."""
import os
import signal


def inner(n):
    os.kill(os.getpid(), signal.SIGTRAP)  # MARK:trap
    n += 1  # MARK:after_trap
    return n  # MARK:inner_ret


def outer():
    total = inner(1)  # MARK:outer_call
    total += 10  # MARK:outer_after
    print("total", total, flush=True)


outer()
outer()
