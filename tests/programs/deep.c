/* A recursion of a given depth that stops in the innermost call (benchmarks, frame paging). */
#include <stdio.h>
#include <stdlib.h>

int stop_here(int depth) {
    return depth + 1; /* MARK:stop_here */
}

int recurse(int n) {
    if (n == 0)
        return stop_here(n);
    return recurse(n - 1) + 1;
}

int main(int argc, char **argv) {
    int depth = argc > 1 ? atoi(argv[1]) : 48;
    int r = 0;
    for (int i = 0; i < 3; i++)
        r += recurse(depth);
    printf("%d\n", r);
    return 0;
}
