/* A host-only program for cuda-gdb's host side: a breakpoint, locals, then a SIGTRAP. */
#include <signal.h>
#include <stdio.h>

static int add(int a, int b)
{
    int sum = a + b; /* MARK:add_body */
    return sum;
}

int main(void)
{
    int total = add(1, 2);
    printf("total=%d\n", total);
    fflush(stdout);
    raise(SIGTRAP); /* MARK:trap */
    printf("after trap\n");
    return 3;
}
