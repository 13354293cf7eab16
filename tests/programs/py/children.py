"""A parent and its children, started one way or another: argv[1] is a multiprocessing start method
(fork, forkserver, spawn), "subprocess" (a Python child started as a new program) or "shell" (a
child that is not Python: /bin/sh, then /bin/true). Each child computes square(n) and exits."""

import multiprocessing
import os
import subprocess
import sys


def square(n):
    result = n * n  # MARK:child line
    return result


def work(n, q):
    q.put((os.getpid(), square(n)))


def main():
    how = sys.argv[1] if len(sys.argv) > 1 else "fork"
    n_children = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    if how == "subprocess":
        out = subprocess.run([sys.executable, __file__, "child", "3"], capture_output=True, text=True, check=True)
        print("subprocess said", out.stdout.strip(), flush=True)
    elif how == "shell":
        subprocess.run(["/bin/sh", "-c", "/bin/true; exit 7"], check=False)
        print("shell done", flush=True)
    elif how == "child":
        print("square", square(int(sys.argv[2])), flush=True)
        return
    else:
        ctx = multiprocessing.get_context(how)
        q = ctx.Queue()
        procs = [ctx.Process(target=work, args=(i + 2, q)) for i in range(n_children)]
        for p in procs:
            p.start()
        got = sorted(q.get()[1] for _ in procs)
        for p in procs:
            p.join()
        print("children said", got, [p.exitcode for p in procs], flush=True)
    print("parent done", flush=True)  # MARK:parent line


if __name__ == "__main__":
    main()
