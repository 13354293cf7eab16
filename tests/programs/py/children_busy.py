"""Two children (multiprocessing's fork), each stopping at one line twice, each with a second thread that
hands it numbers through a queue of one. An evaluation at a stop in one child that takes two numbers needs
that thread to run, while the other child is due to stop at the same line (the two wait for each other
just before it)."""

import multiprocessing
import os
import queue
import threading


def hand_out(ticks):
    n = 0
    while True:
        ticks.put(n)  # (waits while the queue is full)
        n += 1


def work(k, both):
    ticks = queue.Queue(maxsize=1)
    threading.Thread(target=hand_out, args=(ticks,), daemon=True).start()
    total = 0
    both.wait()
    for i in range(2):
        value = k * 10 + i
        total += value  # MARK:busy line
    os.write(1, b"child %d total %d\n" % (k, total))  # (one write: the two children's lines never mix)


def main():
    ctx = multiprocessing.get_context("fork")
    both = ctx.Barrier(2)
    procs = [ctx.Process(target=work, args=(k, both)) for k in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    print("parent done", [p.exitcode for p in procs], flush=True)


if __name__ == "__main__":
    main()
