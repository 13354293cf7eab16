"""A torch DataLoader with worker processes (forked; argv[1] of them, 2 by default): each of its four
items is made in a worker's __getitem__."""
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        value = torch.tensor([i * i], dtype=torch.float32)  # MARK:getitem line
        return value


if __name__ == "__main__":
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    loader = DataLoader(Squares(), batch_size=1, num_workers=workers, multiprocessing_context="fork")
    got = sorted(int(b.item()) for b in loader)
    print("loaded", got, "in", os.getpid(), flush=True)
