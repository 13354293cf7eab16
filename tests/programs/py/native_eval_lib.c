/* Called from tests/programs/py/native_eval.py through ctypes: native_point is where the tests' native
   breakpoint stops (PyDLL: the calling thread keeps the GIL; CDLL: it releases it around the call). */
#include <stdio.h>

volatile int native_seen;

int native_point(int n)
{
    native_seen = n; /* MARK:native_point */
    return n * 2;
}
