"""A debugged program that crowds tuidbg's agent socket from its own process (tests/faults/test_agent_gate.py).

Run by tuidbg with its children kept, it has the socket's path in its environment. Usage: crowd.py DIR --
writes DIR/ready, waits for DIR/go, then from this process (which tuidbg admits: gdb traces it) opens 50
connections that say nothing, one whose first line is 32 MB without a newline, and one more that says
nothing; writes what the socket did with them to DIR/result.json. Then it opens one more that says
nothing and stops itself with SIGUSR2 (gdb holds it); once continued, it writes to DIR/result2.json
whether that one was still open and whether it was closed later, and calls tick() every 20 ms.
"""

import json
import os
import signal
import socket
import sys
import time

DIR = sys.argv[1]


def tick(n):
    return n + 1  # MARK:tick line


def closed_by_then(s, deadline):
    s.settimeout(max(0.01, deadline - time.monotonic()))
    try:
        return s.recv(4096) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


def main():
    path = os.environ["TUIDBG_AGENT_SOCKET"]
    with open(os.path.join(DIR, "ready"), "w") as f:
        f.write(str(os.getpid()))
    while not os.path.exists(os.path.join(DIR, "go")):
        time.sleep(0.02)
    idle = []
    for _ in range(50):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        idle.append(s)
    big = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    big.connect(path)
    big.settimeout(10)
    sent = 0
    chunk = b"x" * (1 << 20)
    try:
        while sent < 32 << 20:
            big.sendall(chunk, socket.MSG_NOSIGNAL)  # (no SIGPIPE: gdb would stop the program for it)
            sent += len(chunk)
    except OSError:
        pass
    last = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # (alone now: it waits for the hello's timeout)
    last.connect(path)
    deadline = time.monotonic() + 30
    result = {"big_sent": sent, "big_closed": closed_by_then(big, deadline),
              "idle_closed": sum(closed_by_then(s, deadline) for s in idle),
              "last_closed": closed_by_then(last, deadline)}
    with open(os.path.join(DIR, "result.json.tmp"), "w") as f:
        json.dump(result, f)
    os.rename(os.path.join(DIR, "result.json.tmp"), os.path.join(DIR, "result.json"))
    # A connection that says nothing while gdb holds the process stopped (SIGUSR2 stops it under gdb):
    # the time stopped does not count against it; it is closed once it has run that long.
    late = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    late.connect(path)
    signal.signal(signal.SIGUSR2, lambda *_: None)
    os.kill(os.getpid(), signal.SIGUSR2)
    late.setblocking(False)
    try:
        open_after_stop = late.recv(1) != b""
    except BlockingIOError:
        open_after_stop = True
    result = {"late_open_after_stop": open_after_stop, "late_closed": closed_by_then(late, time.monotonic() + 30)}
    with open(os.path.join(DIR, "result2.json.tmp"), "w") as f:
        json.dump(result, f)
    os.rename(os.path.join(DIR, "result2.json.tmp"), os.path.join(DIR, "result2.json"))
    n = 0
    while True:
        n = tick(n)
        time.sleep(0.02)


if __name__ == "__main__":
    main()
