/* The native half of tuidbg's demo: a tiny "kernel" library called from Python
 * through ctypes, with a struct and a loop worth stepping through. */
#include <math.h>
#include <stddef.h>

struct stats {
    double sum;
    double sum_sq;
    size_t count;
};

static void accumulate(struct stats *st, double x) {
    st->sum += x;
    st->sum_sq += x * x; /* a good line for a breakpoint */
    st->count += 1;
}

double vm_dot(const double *a, const double *b, size_t n) {
    double acc = 0.0;
    for (size_t i = 0; i < n; i++)
        acc += a[i] * b[i];
    return acc;
}

double vm_stddev(const double *xs, size_t n) {
    struct stats st = {0.0, 0.0, 0};
    for (size_t i = 0; i < n; i++)
        accumulate(&st, xs[i]);
    if (st.count == 0)
        return 0.0;
    double mean = st.sum / (double)st.count;
    return sqrt(st.sum_sq / (double)st.count - mean * mean);
}
