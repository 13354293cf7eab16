/* Loads libcxxwidget.so (argv[1]) after it starts and calls into it twice: breakpoints on the
   library's C++ names are pending until then. With a second argument "loop", it goes on calling it
   every 50 ms (for an attach). Used by tests/engine/test_cxx_names.py. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    int (*entry)(int) = (int (*)(int))dlsym(lib, "widget_entry");
    int loop = argc > 2 && strcmp(argv[2], "loop") == 0;
    for (int i = 1; i <= 2 || loop; i++) {
        printf("entry(%d) = %d\n", i, entry(i)); /* MARK:host_call */
        fflush(stdout);
        if (loop)
            usleep(50000);
    }
    return 0;
}
