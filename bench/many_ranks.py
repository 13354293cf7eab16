"""Many ranks interactively (issue 33): ``tuidbg attach --children`` of a torchrun job, in a real
terminal (tmux, 80x24), against ``tuidbg dump --children`` of the same job in the same run.

The job: tests/programs/py/torch_ranks.py under .venv-torch (torch 2.13 CPU, gloo, loopback only),
R ranks each with W DataLoader workers (asleep in the dataset's ``__getitem__``); rank 2 waits on a
FIFO, the other ranks in the barrier: a hang. Configurations (``--configs``): 8x0 (9 processes with the
launcher), 16x0 (17), 16x2 (49: 16 ranks, their 32 workers, the launcher). For each, every round:

- ``dump``: ``tuidbg dump --children --json ROOT``, start to exit (it stops each process for its own read,
  reads every thread's Python stack, lets it go); its JSON made into the parallel stacks tree
  (``engine.python.parallel.tree_from_dump``: the tree the tab shows) is timed with it.
- ``first screen``: ``tuidbg attach --children ROOT`` started in tmux, until the screen shows the attach
  stop whole (the status line "stopped: attached", the Python frames pane's first frame).
- ``stop -> tab``: with the Parallel Stacks tab shown (p), the job continued (c) until the tab says they
  run, then ctrl+c: from the key to the tab showing the whole tree of that stop (its summary names every
  process: "49 processes, ..."). This includes gdb stopping every process and the stacks read.
- memory: tuidbg's and gdb's VmRSS once the tree is shown (and, for 16 ranks, 16 plain ``gdb -p``, one
  per rank, each after ``thread apply all bt``: their sum), then q, d (detach): how long quitting takes,
  and every process runs on untraced.

Goals (issue 33): first screen within 10 s and the tab within 2 s of a stop for 49 processes; the tab
costs no more than 1.5x the dump.

Usage: .venv/bin/python bench/many_ranks.py [--configs 8x0,16x0,16x2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, ms, summary

TORCH_PY = REPO / ".venv-torch" / "bin" / "python"
PROG = REPO / "tests" / "programs" / "py" / "torch_ranks.py"
TUIDBG = REPO / ".venv" / "bin" / "tuidbg"
POLL = 0.02  # (each screen read is a tmux process: reading faster takes CPU from gdb, on 2 cores)


def free_port() -> int:
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        return sk.getsockname()[1]


def start_job(ranks: int, workers: int, ready: Path) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.Popen([str(TORCH_PY), "-m", "torch.distributed.run", "--nproc-per-node", str(ranks), "--master-addr",
                          "127.0.0.1", "--master-port", str(free_port()), str(PROG), str(ready), str(workers)],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                         start_new_session=True)
    deadline = time.monotonic() + 600
    while not all((ready / f"rank-{r}.json").exists() for r in range(ranks)):
        if p.poll() is not None:
            raise SystemExit(f"the job ended: {p.stderr.read().decode()[-2000:]}")
        if time.monotonic() > deadline:
            raise SystemExit("the job did not get ready in 600 s")
        time.sleep(0.2)
    return p


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    while todo:
        q = todo.pop()
        out.append(q)
        todo.extend(kids.get(q, []))
    return out


def status_of(pid: int, field: str) -> str:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def _exe(pid: int) -> str:
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return ""


def rss_mib(pid: int) -> float:
    v = status_of(pid, "VmRSS")
    return int(v.split()[0]) / 1024 if v else 0.0


def time_dump(root: int, nprocs: int) -> tuple[float, dict]:
    from tuidbg.engine.python import parallel

    t0 = time.perf_counter()
    out = subprocess.run([str(TUIDBG), "dump", "--children", "--json", str(root)], capture_output=True, text=True)
    doc = json.loads(out.stdout)
    tree = parallel.tree_from_dump(doc)
    t = time.perf_counter() - t0
    if tree.processes != nprocs:
        raise SystemExit(f"the dump read {tree.processes} processes, not {nprocs}: {out.stderr[-1000:]}")
    return t, {"summary": parallel.summary(tree), "shape": parallel.shape(tree.roots)}


class Term:
    def __init__(self, sock: str) -> None:
        self.sock = sock

    def tmux(self, *args: str, check: bool = True) -> str:
        return subprocess.run(["tmux", "-L", self.sock, "-f", "/dev/null", *args], capture_output=True, text=True,
                              check=check).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "m", check=False)

    def until(self, pred, timeout: float, what: str) -> float:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            s = self.screen()
            if pred(s):
                return time.perf_counter()
            time.sleep(POLL)
        raise SystemExit(f"tuidbg did not show {what} in {timeout:.0f} s:\n{self.screen()}")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "m", *keys)


def time_tuidbg(root: int, nprocs: int, sock: str) -> dict:
    term = Term(sock)
    cmd = f"TERM=xterm-256color {TUIDBG} attach --nx --fresh --children {root}"
    t0 = time.perf_counter()
    term.tmux("new-session", "-d", "-s", "m", "-x", "80", "-y", "24", cmd)
    res: dict = {}
    try:
        t1 = term.until(lambda s: "stopped: attached" in s and "Python frames" in s and re.search(r"▶ 0 ", s), 120,
                        "the attach stop")
        res["first screen"] = t1 - t0
        whole = re.compile(rf"^ ?{nprocs} processes, \d+ Python threads", re.M)
        # (the tab's first paint of the attach stop: every process attached, its agent loaded, stacks read)
        term.keys("p")
        t2 = term.until(lambda s: bool(whole.search(s)), 120, "the tree of the attach stop")
        res["tab after the attach"] = t2 - t0  # (every process attached, its agent loaded, its stacks read)
        samples = []
        for _ in range(3):
            deadline = time.perf_counter() + 120
            while True:  # (c is refused while gdb still loads the agent into the processes: again until it runs)
                term.keys("c")
                try:
                    term.until(lambda s: f"{nprocs} processes running" in s, 2, "the job running")
                    break
                except SystemExit:
                    if time.perf_counter() > deadline:
                        raise
            time.sleep(0.3)
            t3 = time.perf_counter()
            term.keys("C-c")
            samples.append(term.until(lambda s: bool(whole.search(s)), 60, "the tree of the interrupt's stop") - t3)
        res["stop -> tab"] = summary(samples)["median"]
        res["stop -> tab samples"] = samples
        screen = term.screen()
        me = int(term.tmux("display-message", "-p", "-t", "m", "#{pane_pid}").strip())
        gdbs = [p for p in descendants(me) if _exe(p) == "gdb"]
        res["tuidbg MiB"] = rss_mib(me)
        res["gdb MiB"] = sum(rss_mib(p) for p in gdbs)
        res["screen"] = screen
        t4 = time.perf_counter()
        term.keys("q")
        term.until(lambda s: "Detach" in s, 30, "the quit dialog")
        term.keys("d")
        while subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "has-session", "-t", "m"],
                             capture_output=True).returncode == 0:
            if time.perf_counter() - t4 > 180:
                raise SystemExit("tuidbg did not quit in 180 s")
            time.sleep(0.1)
        res["quit"] = time.perf_counter() - t4
    finally:
        term.tmux("kill-server", check=False)
    return res


def plain_gdbs(pids: list[int]) -> tuple[float, float]:
    """(the sum of VmRSS of a plain gdb -p on each process after thread apply all bt, the total wall time)."""
    total = 0.0
    t0 = time.perf_counter()
    for pid in pids:
        out = subprocess.run(["gdb", "-nx", "-q", "-batch", "-p", str(pid), "-ex", "set debuginfod enabled off",
                              "-ex", "thread apply all bt", "-ex",
                              "python import re; print('RSS=%s' % re.search(r'VmRSS:\\s+(\\d+)', "
                              "open('/proc/self/status').read()).group(1))"],
                             capture_output=True, text=True, stdin=subprocess.DEVNULL)
        m = re.search(r"RSS=(\d+)", out.stdout)
        if m is None:
            raise SystemExit(f"gdb -p {pid} said no RSS:\n{out.stdout[-500:]}{out.stderr[-500:]}")
        total += int(m.group(1)) / 1024
    return total, time.perf_counter() - t0


def untraced(pids: list[int]) -> bool:
    return all(status_of(p, "TracerPid") in ("0", "") and not status_of(p, "State").startswith(("T", "t"))
               for p in pids)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="8x0,16x0,16x2")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if not TORCH_PY.exists():
        raise SystemExit(f"no {TORCH_PY}: run scripts/setup.sh")
    for config in args.configs.split(","):
        ranks, workers = (int(x) for x in config.split("x"))
        tmp = Path(tempfile.mkdtemp(prefix="many-ranks-"))
        job = start_job(ranks, workers, tmp)
        try:
            pids = descendants(job.pid)
            nprocs = len(pids)
            print(f"== {ranks} ranks x {workers} workers: {nprocs} processes", flush=True)
            dumps, tabs, firsts, quits, mems = [], [], [], [], []
            time_dump(job.pid, nprocs)  # (warm: the page cache, the dump's imports)
            for r in range(args.rounds):
                t, d = time_dump(job.pid, nprocs)
                dumps.append(t)
                res = time_tuidbg(job.pid, nprocs, f"many-ranks-{os.getpid()}-{r}")
                tabs.extend(res["stop -> tab samples"])
                firsts.append(res["first screen"])
                quits.append(res["quit"])
                mems.append((res["tuidbg MiB"], res["gdb MiB"]))
                if not untraced(pids):
                    raise SystemExit("a process is still traced or stopped after tuidbg quit")
                summ = re.search(r"\d+ processes, [^\n]*", res["screen"])
                print(f"round {r + 1} (load {os.getloadavg()[0]:.1f}): dump {ms(t)} ({d['summary']}); first screen "
                      f"{ms(res['first screen'])}, tab after "
                      f"the attach {ms(res['tab after the attach'])}, stop -> tab "
                      + " ".join(ms(x) for x in res["stop -> tab samples"])
                      + f" ({summ.group(0) if summ else '?'}); quit {ms(res['quit'])}; tuidbg {res['tuidbg MiB']:.0f} MiB,"
                      f" gdb {res['gdb MiB']:.0f} MiB", flush=True)
            md, mt = summary(dumps)["median"], summary(tabs)["median"]
            print(f"  dump --children median {ms(md)}; stop -> tab median {ms(mt)} ({mt / md:.2f}x the dump); first screen "
                  f"median {ms(summary(firsts)['median'])}; quit median {ms(summary(quits)['median'])}")
            print(f"  memory: tuidbg {sorted(m[0] for m in mems)[len(mems) // 2]:.0f} MiB, gdb "
                  f"{sorted(m[1] for m in mems)[len(mems) // 2]:.0f} MiB")
            if ranks == 16:
                rank_pids = [json.loads((tmp / f"rank-{r}.json").read_text())["pid"] for r in range(ranks)]
                rss, wall = plain_gdbs(rank_pids)
                print(f"  16 x plain gdb -p (one per rank, thread apply all bt): {rss:.0f} MiB in all, {wall:.1f} s",
                      flush=True)
        finally:
            for p in reversed(descendants(job.pid)):
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
            job.wait()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
