/* A loop at the bottom of a 50-frame stack, for stepping benchmarks. */
#include <stdlib.h>

volatile long sink;

void work(int depth) {
    if (depth > 0) {
        work(depth - 1);
        return;
    }
    for (long i = 0;; i++) {
        sink += i; /* MARK:loop_a */
        sink ^= i << 1;
    }
}

int main(int argc, char **argv) {
    work(argc > 1 ? atoi(argv[1]) : 48);
    return 0;
}
