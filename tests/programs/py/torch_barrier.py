"""A torchrun job (gloo, CPU) in which one rank skips the barrier the others wait in: a hang.

Usage: torchrun --nproc-per-node N torch_barrier.py READY_DIR ODD_RANK -- each rank writes
READY_DIR/rank-R.json ({"rank", "pid"}) just before it waits; rank ODD_RANK waits for a writer of
the FIFO READY_DIR/release instead of waiting in the barrier, so the others wait until they are
killed, or until something is written there: then it goes to the barrier too, and the job ends. When
READY_DIR/fail exists, rank ODD_RANK fails instead (exit code 3): the launcher then ends the others
with SIGTERM.
"""

import json
import os
import sys

import torch.distributed as dist


def write_ready(ready_dir, rank):
    path = os.path.join(ready_dir, "rank-%d.json" % rank)
    with open(path + ".tmp", "w") as f:
        json.dump({"rank": rank, "pid": os.getpid()}, f)
    os.rename(path + ".tmp", path)


def skip_barrier(ready_dir):
    with open(os.path.join(ready_dir, "release")) as fifo:  # MARK:skip_barrier
        said = fifo.read()
    return said  # MARK:released


def step(ready_dir, odd):
    rank = dist.get_rank()  # MARK:get_rank
    if rank == odd and not os.path.exists(os.path.join(ready_dir, "release")):
        os.mkfifo(os.path.join(ready_dir, "release"), 0o600)
    write_ready(ready_dir, rank)
    if rank == odd and os.path.exists(os.path.join(ready_dir, "fail")):
        sys.exit(3)
    if rank == odd:
        skip_barrier(ready_dir)  # MARK:call_skip
    dist.barrier()  # MARK:barrier
    print("rank", rank, "passed the barrier", flush=True)  # MARK:after_barrier


def main():
    dist.init_process_group("gloo")
    step(sys.argv[1], int(sys.argv[2]))


if __name__ == "__main__":
    main()
