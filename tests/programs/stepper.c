/* A loop of calls that never ends, for the step keys' differential test
 * (tests/ui/test_fastpath_differential.py): every step, until and finish lands on a line in this file
 * or in stepper_lib.c, and a continue stops at the next call of accumulate. */
#include <stdio.h>

int scale(int v); /* stepper_lib.c */

static int add(int a, int b) {
    int sum = a + b;
    return sum;
}

static int accumulate(int *acc, int i) {
    int v = scale(i); /* MARK:accumulate_body */
    *acc = add(*acc, v);
    if (*acc > 1000000)
        *acc = 0;
    return *acc;
}

int main(void) {
    int acc = 0;
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("stepper ready\n");
    for (long i = 0;; i++) {
        accumulate(&acc, (int)(i % 7));
        if (i % 3 == 0)
            acc += 1;
    }
    return 0;
}
