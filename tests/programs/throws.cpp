// finish out of C++ frames that throw (tests/engine/test_finish_throw.py): fail() throws, mid() lets it
// through, main() catches it; handles() throws and catches inside itself, then returns.
#include <cstdio>
#include <stdexcept>

__attribute__((noinline)) void fail(int x) {
    if (x > 0) throw std::runtime_error("bad");  // MARK:throw
}

__attribute__((noinline)) int mid(int x) {
    fail(x);
    return x + 1;
}

__attribute__((noinline)) int handles(int x) {
    int got = 0;  // MARK:handles_start
    try {
        fail(x);
    } catch (const std::exception &) {
        got = 7;  // MARK:handles_catch
    }
    return got + x;
}

int main(int argc, char **) {
    int n = handles(argc);  // MARK:call_handles
    try {
        mid(argc);
    } catch (const std::exception &e) {  // MARK:main_catch
        std::printf("caught %s %d\n", e.what(), n);
    }
    return 0;
}
