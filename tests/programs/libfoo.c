/* A shared library loaded late (ctypes / dlopen): pending breakpoints must hit in it. */
int foo_add(int a, int b) {
    int sum = a + b; /* MARK:foo_add_body */
    return sum;
}
