// A C++ library built without debug info (-g0), as libtorch is: gdb knows its functions only from
// the ELF symbol table. Loaded late by cxxhost.c (dlopen). Used by tests/engine/test_cxx_names.py.
#include <cstdio>
#include <string>

namespace ns {
struct Widget {
    int v;
    int poke(int x) const;
    int poke(double x);
    ~Widget();
};
int Widget::poke(int x) const { return v + x; }
int Widget::poke(double x) { return v + static_cast<int>(x) * 2; }
Widget::~Widget() { std::printf("widget %d done\n", v); }

template <typename T> T twice(T t) { return t * 2; }
template float twice<float>(float);

namespace {
int hidden(int a) { return a + 1; }
}

std::string __attribute__((abi_tag("xy"))) tagged(int n) { return std::string(static_cast<size_t>(n), 'x'); }
int takes(const char *s) { return s[0]; }

int entry(int n) {
    Widget w{n};
    const Widget &c = w;
    int r = c.poke(1) + w.poke(2.0) + hidden(n);
    return r + static_cast<int>(twice<float>(1.5f));
}
}  // namespace ns

struct G {
    int g;
};
int gfunc(G v) { return v.g; }  // (outside any namespace, a class by value first: _Z5gfunc1G)

namespace foo {
int foo(int v) { return v + 1; }  // (a function named as its namespace: not a constructor)
}

extern "C" int widget_entry(int n) {
    return ns::entry(n) + static_cast<int>(ns::tagged(1).size()) + ns::takes("a") + gfunc(G{1}) + foo::foo(1) - 101;
}
