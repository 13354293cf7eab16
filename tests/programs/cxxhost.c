/* Loads libcxxwidget.so (argv[1]) after it starts and calls into it twice: breakpoints on the
   library's C++ names are pending until then. Used by tests/engine/test_cxx_names.py. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    int (*entry)(int) = (int (*)(int))dlsym(lib, "widget_entry");
    for (int i = 1; i <= 2; i++)
        printf("entry(%d) = %d\n", i, entry(i)); /* MARK:host_call */
    return 0;
}
