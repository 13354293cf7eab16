"""The main thread blocked in C while Python may run on another thread: the attach tests of issue 30
(tests/ui/test_ui_python_inactive.py, tests/ui/test_ui_attach_blocked_main.py). With the argument
``worker``, a second thread runs Python code in a loop until the line is read. The main thread blocks in
a read of stdin, or (``join``) in joining a thread that reads it, or (``lock``) in acquiring a lock that
such a thread releases once it has read it. With ``held``, the main thread reads stdin in C holding the GIL
(a ``ctypes.PyDLL`` call keeps it), so that no thread can run Python until the line comes. With ``phdr``
(and ``join``), the thread reads the line inside glibc's ``dl_iterate_phdr``, in its callback: it holds the
loader's lock until the line comes."""
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


def read_in_a_thread(join):
    got = []
    held = threading.Lock()
    held.acquire()

    def reader():
        got.append(sys.stdin.readline())
        held.release()

    inside = threading.Event()
    if "phdr" in sys.argv[1:]:
        import ctypes

        @ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
        def in_dl_iterate_phdr(info, size, data):
            inside.set()
            reader()
            return 1  # (no further object)

        def reader_in_phdr():
            ctypes.CDLL(None).dl_iterate_phdr(in_dl_iterate_phdr, None)

    t = threading.Thread(target=reader_in_phdr if "phdr" in sys.argv[1:] else reader, name="reader")
    t.start()
    if "phdr" in sys.argv[1:]:
        inside.wait()
    print("ready", flush=True)
    if join:
        t.join()
    else:
        held.acquire()
    return got[0]


def held_read():
    """A read of stdin that keeps the GIL (a ctypes.PyDLL function), and the buffer it reads into."""
    import ctypes
    import functools

    buf = ctypes.create_string_buffer(256)
    return functools.partial(ctypes.PyDLL(None).read, 0, buf, 255), buf


def main():
    stop = threading.Event()
    buf = None
    if "worker" in sys.argv[1:]:
        threading.Thread(target=worker, args=(stop,), name="worker", daemon=True).start()
    if "join" in sys.argv[1:] or "lock" in sys.argv[1:]:
        line = read_in_a_thread("join" in sys.argv[1:])
    else:
        read, buf = held_read() if "held" in sys.argv[1:] else (sys.stdin.readline, None)
        print("ready", flush=True)
        line = read()  # MARK:blocked
    stop.set()  # MARK:after_read
    if buf is not None:
        line = buf.value.decode()
    print("got", line.strip(), flush=True)


main()
