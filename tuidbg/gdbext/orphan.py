"""No gdb outlives tuidbg: a thread in gdb that notices tuidbg is gone and sees gdb go too.

When tuidbg dies (``kill -9``, a crash) gdb reads the end of its input and quits as it would at a
``quit``: it detaches the processes it attached to and kills the ones it started. A gdb that does not
read its input then (blocked in the kernel waiting for a process that will never report, a command that
does not end) would live on, holding its processes traced and stopped. This thread, started at the
extension's load (``engine.gdbext_loader``), watches gdb's parent; once tuidbg is gone and gdb has not
quit within ``GRACE`` seconds, it starts tuidbg's rescuer (``tuidbg.engine.orphan``), which kills gdb
and lets every process gdb traced go, mended and running (the ones gdb started die with gdb: gdb has the
kernel kill them then, ``PTRACE_O_EXITKILL``). Standard library only; the thread never touches gdb's
module (gdb is not thread-safe) and blocks every signal (gdb's main thread takes them).
"""

import os
import signal
import subprocess
import threading
import time

POLL = 0.2  # seconds between two looks at gdb's parent
GRACE = 5.0  # seconds gdb has to quit by itself once tuidbg is gone


def watch(parent, rescuer):
    """Start the watch: ``parent`` is tuidbg's PID; ``rescuer`` the command line (a list) that, given gdb's
    PID as its last argument, kills gdb and lets its processes go. Nothing is watched where tuidbg is not
    gdb's parent (a gdb started through another program)."""
    if os.getppid() != int(parent):
        return None
    t = threading.Thread(target=_watch, args=(int(parent), list(rescuer)), name="tuidbg-orphan-watch", daemon=True)
    t.start()
    return t


def _watch(parent, rescuer):
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals))
    except (AttributeError, OSError, ValueError):
        pass
    while os.getppid() == parent:
        time.sleep(POLL)
    time.sleep(GRACE)  # (gdb quits by itself at the end of its input: this process ends meanwhile)
    try:
        subprocess.Popen(rescuer + [str(os.getpid())], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True)
    except OSError:
        os.kill(os.getpid(), signal.SIGKILL)  # (no rescuer: the kernel lets the processes go)
        return
    time.sleep(30)  # (the rescuer kills gdb; should it not, gdb ends here: a gdb left on is worse)
    os.kill(os.getpid(), signal.SIGKILL)
