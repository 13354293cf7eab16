/* The program behind the snapshot tests and the README screenshots. */
#include <stdio.h>

struct vec {
    double x;
    double y;
    const char *name;
};

static double dot(const struct vec *a, const struct vec *b) {
    double result = a->x * b->x + a->y * b->y;
    return result; /* MARK:dot_return */
}

static double norm2(const struct vec *a) {
    return dot(a, a); /* MARK:norm2 */
}

int main(void) {
    struct vec u = {1.5, 2.0, "u"};
    struct vec v = {3.0, -1.0, "v"};
    int samples[4] = {3, 1, 4, 1};
    double d = dot(&u, &v);
    double n = norm2(&u); /* MARK:main_norm2 */
    printf("dot=%g norm2=%g first=%d\n", d, n, samples[0]);
    return 0;
}
