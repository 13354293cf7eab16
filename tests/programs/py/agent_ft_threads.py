"""Eight threads in the same Python function at once, taking turns at one line (tests/test_agent_threads8.py).

Every worker enters work(), waits (spinning in Python) until all eight are in it, then spins
until its turn comes: worker k runs the line marked ``turn_hit`` when ``turn == k``, then hands
the turn on and spins until every worker has had its turn, then until ``finish[0]`` is set
(by the test, at a stop). So at every moment all eight threads run Python in work(), and the
marked line runs once per thread, in order 0..7.
"""
import sys
import threading

N = 8
entered = []
lock = threading.Lock()
turn = [0]
finish = [False]
spins = [0] * N


def work(k):
    with lock:
        entered.append(k)
        if len(entered) == N:
            print("all", N, "in work", flush=True)  # (tests wait for this: every thread spins in work() now)
    while len(entered) < N:
        spins[k] += 1
    while turn[0] != k:
        spins[k] += 1
    mine = spins[k] * 0 + k  # MARK:turn_hit
    mine = mine * 1  # MARK:turn_step (a line to step to that does not yet hand the turn on)
    turn[0] = k + 1  # MARK:turn_next
    while turn[0] < N:
        spins[k] += 1
    while not finish[0]:  # all eight spin here until the test says finish
        spins[k] += 1  # MARK:ft_spin
    return mine


def main():
    threads = [threading.Thread(target=work, args=(k,), name="worker-%d" % k) for k in range(N)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    print("done", N, "gil" if gil else "no-gil", flush=True)  # MARK:ft_done


main()
