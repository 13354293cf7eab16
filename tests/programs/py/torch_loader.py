"""A torch DataLoader with two worker processes (forked): each item is made in a worker's __getitem__."""
import os

import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        value = torch.tensor([i * i], dtype=torch.float32)  # MARK:getitem line
        return value


if __name__ == "__main__":
    loader = DataLoader(Squares(), batch_size=1, num_workers=2, multiprocessing_context="fork")
    got = sorted(int(b.item()) for b in loader)
    print("loaded", got, "in", os.getpid(), flush=True)
