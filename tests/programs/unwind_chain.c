/* A known call chain in every thread, for tuidbg dump --native's unwinder (tests/cli/test_dump_native.py).
 * Built with -O2 -fomit-frame-pointer: no frame-pointer chain to follow, only the CFI of .eh_frame.
 *
 * NTHREADS threads each run chain_a -> chain_b -> chain_c -> aligned_frame -> wait_here, which blocks
 * reading a pipe that is never written; aligned_frame realigns its stack (a 64-byte aligned local: its
 * CFA is rbp-based). The main thread runs main_chain -> raise(SIGUSR1); the handler runs
 * in_handler -> wait_here: a signal frame between the handler and the code it interrupted (glibc's
 * __restore_rt, whose CFI gives the CFA and the registers as DWARF expressions).
 * Prints "ready" once every thread is about to block. Usage: unwind_chain [NTHREADS [nocfi]]
 *
 * With "nocfi" the threads call chain_a through no_cfi_call, assembly without CFI (no FDE covers
 * it): an unwinder that only reads .eh_frame stops there; gdb goes on by analysing its prologue. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static int pipefd[2];
static volatile int sink;
static int started;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static void arrived(void) {
    pthread_mutex_lock(&lock);
    started++;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
}

NOINLINE void wait_here(int main_thread) {
    char c;
    if (!main_thread)
        arrived();
    else {
        printf("ready\n");
        fflush(stdout);
    }
    while (read(pipefd[0], &c, 1) != 0) /* never returns: nothing writes the pipe */
        sink++;
    sink++;
}

NOINLINE void aligned_frame(int n) {
    _Alignas(64) volatile char buf[192];
    buf[0] = (char)n;
    wait_here(0);
    sink += buf[0];
}

NOINLINE void chain_c(int n) { aligned_frame(n + 1); sink++; }
NOINLINE void chain_b(int n) { chain_c(n + 1); sink++; }
NOINLINE void chain_a(int n) { chain_b(n + 1); sink++; }

/* void no_cfi_call(void (*fn)(int), int arg): calls fn(arg) with a frame-pointer frame and no CFI */
void no_cfi_call(void (*fn)(int), int arg);
__asm__(".text\n"
        ".globl no_cfi_call\n"
        ".type no_cfi_call, @function\n"
        "no_cfi_call:\n"
        "  push %rbp\n"
        "  mov %rsp, %rbp\n"
        "  mov %rdi, %rax\n"
        "  mov %esi, %edi\n"
        "  call *%rax\n"
        "  pop %rbp\n"
        "  ret\n"
        ".size no_cfi_call, .-no_cfi_call\n");

static int no_cfi;

static void *thread_main(void *arg) {
    if (no_cfi)
        no_cfi_call(chain_a, (int)(long)arg);
    else
        chain_a((int)(long)arg);
    return NULL;
}

NOINLINE void in_handler(int sig) { wait_here(sig); sink++; }

static void on_usr1(int sig) { in_handler(sig); }

NOINLINE void main_chain(int n) {
    pthread_mutex_lock(&lock);
    while (started < n)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    raise(SIGUSR1);
    sink++;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 3;
    no_cfi = argc > 2 && argv[2][0] == 'n';
    pthread_t t;
    if (pipe(pipefd) != 0)
        return 1;
    signal(SIGUSR1, on_usr1);
    for (int i = 0; i < n; i++)
        pthread_create(&t, NULL, thread_main, (void *)(long)i);
    main_chain(n);
    return sink == 12345;
}
