/* C++ frames with long template arguments: Wrapper<std::vector<int>, Foo<3>>::run calls target. */
#include <vector>

template <int N>
struct Foo {
    int scale() const { return N; }
};

int target(int k) {
    return k * 2; /* MARK:target */
}

template <class C, class F>
struct Wrapper {
    C items;
    F foo;
    int run(int k) { return target(k + static_cast<int>(items.size()) * foo.scale()); }
};

int main() {
    Wrapper<std::vector<int>, Foo<3>> w{{1, 2, 3}, {}};
    return w.run(1) == 20 ? 0 : 1;
}
