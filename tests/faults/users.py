"""Local users that a fault test makes (the tests run as root) and removes after it, also when it fails;
and running a program as one of them."""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Iterator

import pytest

needs_root = pytest.mark.skipif(os.geteuid() != 0 or not all(shutil.which(t) for t in ("useradd", "userdel", "setpriv")),
                                reason="needs root, useradd, userdel and setpriv (a second local user)")


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int

    def run(self, argv: list[str]) -> list[str]:
        """``argv`` as this user (its uid and group, no other groups, no capabilities)."""
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--", *argv]


def _admin(argv: list[str]) -> None:
    """useradd/userdel, again while another one holds /etc/passwd's lock (other tests make users too)."""
    deadline = time.monotonic() + 30
    while True:
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode == 0:
            return
        if "lock" not in r.stderr or time.monotonic() > deadline:
            raise RuntimeError(f"{' '.join(argv)}: {r.stderr.strip()}")
        time.sleep(0.1)


def _processes_of(uid: int) -> list[int]:
    """The live processes (not zombies) running as ``uid``."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid != uid:
                    continue
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            if stat[stat.rfind(b")") + 2 :][:1] != b"Z":
                out.append(int(name))
    return out


@contextlib.contextmanager
def local_user() -> Iterator[User]:
    """A new local user with a group of its own and no home; removed at the end, with any process the
    test started as it (every one of that uid's: the user is the test's alone)."""
    name = "tdbg" + secrets.token_hex(4)
    _admin(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", name])
    try:
        pw = pwd.getpwnam(name)
        yield User(name, pw.pw_uid, pw.pw_gid)
    finally:
        uid = pwd.getpwnam(name).pw_uid
        deadline = time.monotonic() + 10
        while (left := _processes_of(uid)) and time.monotonic() < deadline:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.05)
        _admin(["userdel", name])
