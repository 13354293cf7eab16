"""The rescuer of a gdb that outlived tuidbg: ``python -m tuidbg.engine.orphan GDB_PID``.

gdb's watch thread (``tuidbg.gdbext.orphan``) starts it when tuidbg is gone and gdb has not quit by
itself. It notes the processes gdb traces, kills gdb, and lets each of them go as tuidbg's own close does
when gdb cannot be asked to (``rescue``): the code under gdb's breakpoints written back, a stop continued,
untraced. The processes gdb started die with gdb (``PTRACE_O_EXITKILL``), as gdb's own quit would have them.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from tuidbg.engine import rescue


def traced_by(tracer: int) -> list[rescue.ProcInfo]:
    """The processes (thread groups) ``tracer`` traces: one of their threads at least."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/status") as f:
                    traced = any(line.startswith("TracerPid:") and int(line.split()[1]) == tracer for line in f)
            except (OSError, ValueError):
                continue
            if traced:
                info = rescue.proc_info(pid)
                if info is not None:
                    out.append(info)
                break
    return out


def rescue_from(gdb: int) -> list[str]:
    """Kill gdb and let its processes go; what became of each."""
    procs = traced_by(gdb)
    try:
        os.kill(gdb, signal.SIGKILL)
    except OSError:
        pass
    deadline = time.monotonic() + 10
    while not rescue.has_ended(gdb) and time.monotonic() < deadline:  # (its tracees detached as it exits)
        time.sleep(0.02)
    said = []
    for p in procs:
        if not rescue.same_process(p.pid, p.start_time):
            said.append(f"process {p.pid} ended")
            continue
        rescue.restore_code(p.pid)
        said.append(rescue.release(p.pid, p.start_time, stopped_by_us=True))
    return said


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].isdigit():
        print("usage: python -m tuidbg.engine.orphan GDB_PID", file=sys.stderr)
        return 2
    for line in rescue_from(int(argv[0])):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
