/* Instruction-level debugging (tests/test_native.py): built -O2 -g, so the disassembly mixes
   source lines with instructions that do not follow them in order; a pointer local to an array
   whose bytes the memory view reads; a call to a function in a stripped shared library. */
#include <stdio.h>
#include <stdlib.h>

extern int stripped_mix(int a, int b);

static unsigned char table[64];

__attribute__((noinline)) int checksum(const unsigned char *p, int n) {
    int sum = 0; /* MARK:checksum_start */
    for (int i = 0; i < n; i++) /* MARK:checksum_loop */
        sum = sum * 31 + p[i]; /* MARK:checksum_add */
    return sum;
}

__attribute__((noinline)) void fill(unsigned char *p, int n, int seed) {
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(seed + i * 7);
}

int main(int argc, char **argv) {
    unsigned char *ptr = table;
    int seed = argc > 1 ? atoi(argv[1]) : 3;
    fill(ptr, 64, seed);
    int c = checksum(ptr, 64); /* MARK:after_fill */
    int m = stripped_mix(c, seed);
    printf("%d %d\n", c, m);
    return 0;
}
