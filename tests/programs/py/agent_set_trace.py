"""tuidbg.breakpoint() and breakpoint() in a program (tests/agent/test_agent.py)."""
import sys

import tuidbg


def f(x):
    y = x * 3
    tuidbg.breakpoint()  # MARK:tuidbg_breakpoint
    z = y + 1  # MARK:after_tuidbg_breakpoint
    breakpoint()  # MARK:builtin_breakpoint
    return z  # MARK:after_builtin


print("value", f(int(sys.argv[1]) if len(sys.argv) > 1 else 2), flush=True)
print("survived", flush=True)
