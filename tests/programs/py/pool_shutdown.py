"""A multiprocessing Pool of two workers (argv[1]: fork, forkserver or spawn) that computes, then shuts
down as a with-block ends: Pool.__exit__ terminates its workers, with SIGTERM."""
import multiprocessing
import os
import sys


def square(n):
    return n * n  # MARK:pool work


def main():
    how = sys.argv[1] if len(sys.argv) > 1 else "spawn"
    with multiprocessing.get_context(how).Pool(2) as pool:
        got = pool.map(square, range(4))
    print("pool said", got, "in", os.getpid(), flush=True)  # MARK:pool done


if __name__ == "__main__":
    main()
