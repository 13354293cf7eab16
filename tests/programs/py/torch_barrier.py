"""A torchrun job (gloo, CPU) in which one rank skips the barrier the others wait in: a hang.

Usage: torchrun --nproc-per-node N torch_barrier.py READY_DIR ODD_RANK -- each rank writes
READY_DIR/rank-R.json ({"rank", "pid"}) just before it waits; rank ODD_RANK sleeps instead of
waiting in the barrier, so the others wait until they are killed. When READY_DIR/fail exists, rank
ODD_RANK fails instead (exit code 3): the launcher then ends the others with SIGTERM.
"""

import json
import os
import sys
import time

import torch.distributed as dist


def write_ready(ready_dir, rank):
    path = os.path.join(ready_dir, "rank-%d.json" % rank)
    with open(path + ".tmp", "w") as f:
        json.dump({"rank": rank, "pid": os.getpid()}, f)
    os.rename(path + ".tmp", path)


def skip_barrier():
    while True:
        time.sleep(1000)  # MARK:skip_barrier


def step(ready_dir, odd):
    rank = dist.get_rank()  # MARK:get_rank
    write_ready(ready_dir, rank)
    if rank == odd and os.path.exists(os.path.join(ready_dir, "fail")):
        sys.exit(3)
    if rank == odd:
        skip_barrier()  # MARK:call_skip
    else:
        dist.barrier()  # MARK:barrier


def main():
    dist.init_process_group("gloo")
    step(sys.argv[1], int(sys.argv[2]))


if __name__ == "__main__":
    main()
