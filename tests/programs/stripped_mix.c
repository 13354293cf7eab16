/* A shared library with no debug information and no symbol table beyond its exports
   (tests/test_native.py strips it): stepping into it has no source, only instructions. */
int stripped_mix(int a, int b) {
    int x = a;
    for (int i = 0; i < 8; i++)
        x = (x << 3) ^ (x >> 5) ^ (b + i);
    return x;
}
