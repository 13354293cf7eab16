"""Runs until killed, counting in a file; the target of the attach tests (tests/agent/test_agent.py)."""
import sys
import time

out = sys.argv[1]


def tick(n):
    with open(out, "w") as f:
        f.write(str(n))
    return n + 1  # MARK:tick_ret


def main():
    n = 0
    print("ready", flush=True)
    while True:
        n = tick(n)  # MARK:loop
        time.sleep(0.05)


main()
