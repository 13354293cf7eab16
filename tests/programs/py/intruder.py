"""What a process outside a tuidbg session tries against the Python agent's folder and socket
(tests/faults/test_agent_gate.py runs it as another user, or as tuidbg's user but not debugged).

Usage:
  intruder.py probe FOLDER NAME...   list FOLDER; read each FOLDER/NAME; connect to each that is a socket
                                     and see what the other end does when nothing is sent
  intruder.py flood SOCKET N BIG     open N connections at once and hold them; the first BIG of them send
                                     16 MB without a newline; then see which the other end closed

Prints one JSON object on stdout. "closed": the other end closed the connection without a word;
"held": it was still open after the wait; "answered": it sent something; otherwise the error's name
(EACCES: the system refused).
"""

import errno
import json
import os
import socket
import sys
import time

WAIT = 15.0


def error_name(exc):
    return errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno else type(exc).__name__


def outcome(s, deadline):
    """What the other end did with a connection: closed it, answered, or still holds it at ``deadline``."""
    s.settimeout(max(0.01, deadline - time.monotonic()))
    try:
        data = s.recv(4096)
    except socket.timeout:
        return "held"
    except OSError:
        return "closed"  # (a reset: closed with data of ours unread)
    return "answered" if data else "closed"


def connect(path):
    """A connection, waiting for room in the listener's queue (a Unix socket's connect with a timeout
    fails at once with EAGAIN when the queue is full)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def send_big(s, size):
    """Up to ``size`` bytes without a newline; how many went before the other end stopped taking them."""
    chunk = b"x" * (1 << 20)
    sent = 0
    s.settimeout(5)
    try:
        while sent < size:
            s.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    return sent


def probe(folder, names):
    out = {}
    try:
        out["list"] = sorted(os.listdir(folder))
    except OSError as exc:
        out["list"] = error_name(exc)
    for name in names:
        path = os.path.join(folder, name)
        got = {}
        try:
            with open(path, "rb") as f:
                got["read"] = len(f.read())
        except OSError as exc:
            got["read"] = error_name(exc)
        if name.endswith(".sock"):
            try:
                s = connect(path)
            except OSError as exc:
                got["connect"] = error_name(exc)
            else:
                got["connect"] = outcome(s, time.monotonic() + WAIT)
                s.close()
        out[name] = got
    return out


def flood(path, n, big):
    conns = []
    refused = []
    for _ in range(n):
        try:
            conns.append(connect(path))
        except OSError as exc:
            refused.append(error_name(exc))
    sent = [send_big(s, 16 << 20) for s in conns[:big]]
    deadline = time.monotonic() + WAIT
    seen = [outcome(s, deadline) for s in conns]
    for s in conns:
        s.close()
    return {"refused": refused, "sent": sent, "outcomes": {k: seen.count(k) for k in set(seen)}}


def main():
    what = sys.argv[1]
    if what == "probe":
        result = probe(sys.argv[2], sys.argv[3:])
    else:
        result = flood(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
