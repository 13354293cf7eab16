"""A training loop that tuidbg attaches to (``attach --children``): it waits until DIR/go appears, then
runs one epoch over a torch DataLoader with two forked workers (new workers every epoch, as DataLoader
makes them without persistent_workers), writes DIR/epoch-N with what it loaded, and waits again.

Usage: torch_epochs.py DIR -- writes DIR/ready-PID.json first."""
import json
import os
import sys
import time

from torch.utils.data import DataLoader

from torch_loader import Squares  # (the same dataset as the run --children test: this file's folder is on sys.path)


def main(d):
    with open(os.path.join(d, "ready-%d.json" % os.getpid()), "w") as f:
        json.dump({"pid": os.getpid()}, f)
    epoch = 0
    while True:
        go = os.path.join(d, "go")
        if not os.path.exists(go):
            time.sleep(0.02)
            continue
        os.unlink(go)
        loader = DataLoader(Squares(), batch_size=1, num_workers=2, multiprocessing_context="fork")
        got = sorted(int(b.item()) for b in loader)
        epoch += 1
        with open(os.path.join(d, "epoch-%d" % epoch), "w") as f:
            json.dump(got, f)


if __name__ == "__main__":
    main(sys.argv[1])
