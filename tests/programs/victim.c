/* A long-running process for the fault tests: it must survive whatever happens to its debugger.
 * It sleeps in a loop; SIGUSR1 makes it call cold() once (a place to put a breakpoint that is not
 * reached until the test asks), and every call prints a line, so a test sees it still answer. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static volatile sig_atomic_t poked = 0;
static int calls = 0;

static void on_usr1(int sig) { (void)sig; poked = 1; }

__attribute__((noinline)) int cold(int n) {
    calls += n;  /* MARK:cold */
    return calls;
}

int main(void) {
    signal(SIGUSR1, on_usr1);
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("ready %d\n", (int)getpid());
    for (;;) {
        if (poked) {
            poked = 0;
            printf("cold %d\n", cold(1));
        }
        usleep(20000);
    }
}
