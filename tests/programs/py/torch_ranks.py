"""A torchrun job (gloo, CPU) that hangs in a barrier because one rank waits elsewhere (the Parallel
Stacks view, pyall, the run groups and rank-limited breakpoints are tried on it).

Usage: torchrun --nproc-per-node N torch_ranks.py READY_DIR [WORKERS]

Every rank has ``step`` (124; 123 in rank 3) and a tensor ``t`` (3 floats; 2 in rank 3) in
``train_step``, writes READY_DIR/rank-R.json ({"rank", "pid"}) and waits in the barrier; rank 2 first
waits in ``wait_for_go`` for a line on the FIFO READY_DIR/go (made here; blocked in the open, the GIL
released), so the others wait in the barrier until it gets one. After the barrier each rank writes
READY_DIR/passed-R (the line ``reached`` runs) and ends. With WORKERS > 0 each rank first starts a
DataLoader with that many workers, which wait for batches of a dataset that sleeps (the benchmark's
48-process job: 16 ranks x 2 workers).
"""

import json
import os
import sys
import time

import torch
import torch.distributed as dist


def write_ready(ready_dir, rank):
    path = os.path.join(ready_dir, "rank-%d.json" % rank)
    with open(path + ".tmp", "w") as f:
        json.dump({"rank": rank, "pid": os.getpid()}, f)
    os.rename(path + ".tmp", path)


def wait_for_go(ready_dir):
    with open(os.path.join(ready_dir, "go")) as f:  # MARK:wait_go
        return f.readline()


def checkpoint(rank):
    return rank  # MARK:checkpoint


def reached(ready_dir, rank):
    with open(os.path.join(ready_dir, "passed-%d" % rank), "w") as f:  # MARK:reached
        f.write("ok")


def train_step(ready_dir, rank):
    step = 123 if rank == 3 else 124
    t = torch.zeros(2 if rank == 3 else 3)
    write_ready(ready_dir, rank)
    if rank == 2:
        wait_for_go(ready_dir)  # MARK:call_wait
    checkpoint(rank)  # MARK:call_checkpoint
    dist.barrier()  # MARK:barrier
    reached(ready_dir, rank)  # MARK:after
    return step, t


class Slow(torch.utils.data.Dataset):
    def __len__(self):
        return 1000

    def __getitem__(self, i):
        time.sleep(1000)  # MARK:slow_item
        return i


def main():
    ready_dir = sys.argv[1]
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 2 and not os.path.exists(os.path.join(ready_dir, "go")):
        try:
            os.mkfifo(os.path.join(ready_dir, "go"))
        except FileExistsError:
            pass
    loader = None
    if workers:
        loader = iter(torch.utils.data.DataLoader(Slow(), num_workers=workers, prefetch_factor=1))
        while len(loader._workers) < workers or not all(w.is_alive() for w in loader._workers):
            time.sleep(0.05)
    train_step(ready_dir, rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
