"""The main thread blocked in C (a read of stdin) while Python may run on another thread: the attach
tests of issue 30 (tests/ui/test_ui_python_inactive.py). With the argument ``worker``, a second
thread runs Python code in a loop until the main thread reads a line."""
import sys
import threading


def work(n):
    total = 0
    for i in range(n):
        total += i  # MARK:work_body
    return total


def worker(stop):
    while not stop.is_set():
        work(1000)  # MARK:worker_loop
        stop.wait(0.01)


def main():
    stop = threading.Event()
    if "worker" in sys.argv[1:]:
        threading.Thread(target=worker, args=(stop,), name="worker", daemon=True).start()
    print("ready", flush=True)
    line = sys.stdin.readline()  # MARK:blocked
    stop.set()
    print("got", line.strip(), flush=True)


main()
