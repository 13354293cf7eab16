/* Calls write(2) directly: "break write" stops inside libc, which has no source here. */
#include <unistd.h>

int main(void) {
    return write(1, "raw write\n", 10) == 10 ? 0 : 1;
}
