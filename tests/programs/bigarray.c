/* Big arrays for the long-line tests (issue 9): `output/x big_array` with `print elements
 * unlimited` is one MI console record of about 3 MB. No two neighbours are equal, so gdb
 * never folds a run into "<repeats N times>". */
#include <stdio.h>

#define N (512 * 1024)

unsigned char big_array[N];

int main(void) {
    for (int i = 0; i < N; i++)
        big_array[i] = (unsigned char)(i * 7 + i / 256);
    puts("filled"); /* MARK:filled */
    return big_array[N - 1] == 0;
}
