/* Called from tests/programs/py/native_eval.py through ctypes: native_point is where the tests' native
   breakpoint stops (PyDLL: the calling thread keeps the GIL; CDLL: it releases it around the call). */

#include <stdlib.h>

volatile int native_seen;
volatile long worker_ran; /* counted up by a Python thread: it held the GIL then */

int native_point(int n)
{
    native_seen = n; /* MARK:native_point */
    return n * 2;
}

/* (through CDLL) wait until the Python worker thread has run a while, holding the GIL (and keeping it,
   as nobody else asks for it: the agent's thread has done what the last resume gave it to do), then
   the breakpoint */
int native_wait_then_point(int n)
{
    worker_ran = 0;
    while (worker_ran < 200000)
        ;
    return native_point(n);
}

/* (through PyDLL) the tests stop in malloc here, where Python must not run */
int native_alloc(int n)
{
    native_seen = 99;
    void *p = malloc(n);
    native_seen = 0;
    free(p);
    return n;
}

volatile int release_spin; /* the test sets it through gdb */

/* (through PyDLL) spins in C, holding the GIL, until released: where ctrl+c stops it */
int native_spin(int n)
{
    while (!release_spin)
        ;
    return n;
}
