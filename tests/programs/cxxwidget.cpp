// A C++ library built without debug info (-g0), as libtorch is: gdb knows its functions only from
// the ELF symbol table. Loaded late by cxxhost.c (dlopen). Used by tests/engine/test_cxx_names.py.
#include <cstdio>

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

int entry(int n) {
    Widget w{n};
    const Widget &c = w;
    int r = c.poke(1) + w.poke(2.0) + hidden(n);
    return r + static_cast<int>(twice<float>(1.5f));
}
}  // namespace ns

extern "C" int widget_entry(int n) { return ns::entry(n); }
