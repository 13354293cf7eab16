/* Test program for tuidbg's engine and UI tests.
 * Modes (argv[1]): normal (default), busy, segv, sleep, output, escapes.
 * Lines the tests need are found by the MARK comments, never by number. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct point {
    int x;
    int y;
    const char *label;
};

volatile int keep_running = 1;
static int worker_ids[2] = {1, 2};
unsigned char big_buffer[400000]; /* printed whole, it is a multi-MB MI line */

int leaf(int v) {
    int doubled = v * 2; /* MARK:leaf_body */
    return doubled;
}

int middle(int v) {
    int r = leaf(v + 1); /* MARK:middle_call */
    return r + 1;        /* MARK:middle_after */
}

void *worker(void *arg) {
    int id = *(int *)arg;
    while (keep_running) /* MARK:worker_loop */
        usleep(1000);
    return (void *)(long)id;
}

void busy(void) {
    volatile unsigned long counter = 0;
    printf("busy\n"); /* (tests wait for this: the loop comes next) */
    for (;;)
        counter++; /* MARK:busy_loop */
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "normal";
    pthread_t threads[2];
    struct point pt = {3, 4, "origin"};
    int numbers[5] = {1, 2, 3, 4, 5};

    setvbuf(stdout, NULL, _IONBF, 0);
    if (strcmp(mode, "busy") == 0)
        busy();
    if (strcmp(mode, "segv") == 0) {
        int *volatile p = NULL;
        *p = 42; /* MARK:segv */
    }
    if (strcmp(mode, "sleep") == 0) {
        printf("sleeping %d\n", (int)getpid());
        for (;;)
            sleep(1000);
    }
    if (strcmp(mode, "escapes") == 0) {
        printf("\033[2J\033[H\033]0;HACKED TITLE\007\033[?1049h");
        printf("bad utf8: \xff\xfe end\n");
        printf("after escapes\n");
        return 0;
    }
    if (strcmp(mode, "output") == 0) {
        int n = argc > 2 ? atoi(argv[2]) : 1000;
        for (int i = 0; i < n; i++)
            printf("line %d of program output\n", i);
        return 0;
    }
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, worker, &worker_ids[i]);
    printf("hello from main\n"); /* MARK:main_hello */
    int result = middle(pt.x); /* MARK:main_call */
    printf("result=%d sum=%d\n", result, numbers[0] + numbers[4]);
    keep_running = 0;
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    return 7; /* MARK:main_return */
}
