"""A breakpoint on a second thread while the main thread runs the same code (tests/agent/test_agent.py)."""
import threading


def work(k, rounds):
    s = 0
    for j in range(rounds):  # MARK:work_loop
        s += j * k  # MARK:work_body
        s -= 1  # MARK:work_next
    return s


def main():
    t = threading.Thread(target=work, args=(7, 3), name="worker-7")
    t.start()
    n = 0
    while t.is_alive():  # the main thread runs work() too, with k == 1, until the worker is done
        n += work(1, 50)
    t.join()
    print("done", flush=True)


main()
