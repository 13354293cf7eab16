"""tuidbg.gdbext.cxxnames: demangling, and finding what a breakpoint's C++ name means in an ELF file.

The ELF files are real ones, compiled here (tests/programs/cxxwidget.cpp without debug info); the
expected names are what c++filt, a separate implementation of the demangler, prints.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from helpers import PROGRAMS, compile_c

from tuidbg.gdbext import cxxnames as C


def cxxfilt(name: str) -> str:
    return subprocess.run(["c++filt", name], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def widget(tmp_path_factory):
    d = tmp_path_factory.mktemp("cxxnames")
    return compile_c(PROGRAMS / "cxxwidget.cpp", d / "libcxxwidget.so", "-g0", shared=True, cxx=True)


def test_demangle_is_what_cxxfilt_says():
    assert shutil.which("c++filt")
    for mangled in [
        "_ZN2at6native5randnEN3c108ArrayRefIlEESt8optionalINS1_10ScalarTypeEES4_INS1_6LayoutEES4_INS1_6DeviceEES4_IbE",
        "_ZNK2ns6Widget4pokeEi",
        "_ZN2ns5twiceIfEET_S1_",
        "_ZN2ns12_GLOBAL__N_16hiddenEi",
        "_ZNSt6vectorIiSaIiEE9push_backERKi",
        "_Z3fooi.isra.0",
    ]:
        assert C.demangle(mangled) == cxxfilt(mangled)


def test_demangle_leaves_other_names_and_keeps_suffixes():
    assert C.demangle("PyObject_Call") == "PyObject_Call"
    assert C.demangle("ns::entry(int)") == "ns::entry(int)"
    assert C.demangle("_Znot_a_name") == "_Znot_a_name"
    assert C.demangle("") == ""
    assert C.demangle("_ZNK2ns6Widget4pokeEi@plt") == "ns::Widget::poke(int) const@plt"
    assert C.demangle_text("call   0x1139 <_ZN2ns5entryEi+12>") == "call   0x1139 <ns::entry(int)+12>"
    assert C.demangle_text("jmp    0x1139 <main+4>") == "jmp    0x1139 <main+4>"


@pytest.mark.parametrize(
    "demangled, name, params",
    [
        ("float ns::twice<float>(float)", "ns::twice<float>", "(float)"),
        ("ns::Widget::poke(int) const", "ns::Widget::poke", "(int) const"),
        ("ns::(anonymous namespace)::hidden(int)", "ns::(anonymous namespace)::hidden", "(int)"),
        ("ns::Widget::operator<(ns::Widget const&) const", "ns::Widget::operator<", "(ns::Widget const&) const"),
        ("std::vector<int, std::allocator<int> >::operator[](unsigned long)",
         "std::vector<int, std::allocator<int> >::operator[]", "(unsigned long)"),
        ("operator new(unsigned long)", "operator new", "(unsigned long)"),
        ("c10::impl::wrap<at::Tensor (c10::ArrayRef<long>)>::call(int)",
         "c10::impl::wrap<at::Tensor (c10::ArrayRef<long>)>::call", "(int)"),
        ("foo(int) [clone .isra.0]", "foo", "(int)"),
        ("main", "main", ""),
    ],
)
def test_split_function(demangled, name, params):
    assert C.split_function(demangled) == (name, params)


def test_what_is_a_function_name():
    for loc in ["file.c:12", "*0x1234", "12", "-source a.c -line 3", "/abs/path.cpp:4", "-qualified foo"]:
        assert C.NameSpec.parse(loc) is None, loc
    spec = C.NameSpec.parse("'ns::Widget::poke(int) const'")
    assert spec.components == ["ns", "Widget", "poke"] and spec.params == "(int)const"
    assert C.NameSpec.parse("-function ns::entry").components == ["ns", "entry"]


def test_matching_is_gdbs_wild_matching():
    spec = C.NameSpec.parse("Widget::poke")
    assert spec.matches("ns::Widget::poke(int) const")
    assert not spec.matches("ns::Gadget::poke(int)")
    assert not spec.matches("ns::Widget::poker(int)")
    assert C.NameSpec.parse("poke(double)").matches("ns::Widget::poke(double)")
    assert not C.NameSpec.parse("poke(double)").matches("ns::Widget::poke(int) const")
    # without template arguments: every instantiation; with them: that one
    assert C.NameSpec.parse("ns::twice").matches("float ns::twice<float>(float)")
    assert C.NameSpec.parse("ns::twice<float>").matches("float ns::twice<float>(float)")
    assert not C.NameSpec.parse("ns::twice<int>").matches("float ns::twice<float>(float)")


def test_functions_matching_in_a_real_library(widget):
    specs = {t: C.NameSpec.parse(t) for t in [
        "ns::Widget::poke", "Widget::poke(int) const", "hidden", "ns::twice", "ns::Widget::~Widget", "ns::entry",
        "Widget", "no_such_function", "ns::tagged", "tagged[abi:xy]", "ns::takes(const char*)", "gfunc",
        "foo::foo", "ns::Widget::~Widget(void)",
    ]}
    found = C.functions_matching(str(widget), list(specs.values()))
    got = {t: [C.demangle(m) for m in found[s]] for t, s in specs.items()}
    assert got == {
        "ns::Widget::poke": ["ns::Widget::poke(double)", "ns::Widget::poke(int) const"],
        "Widget::poke(int) const": ["ns::Widget::poke(int) const"],
        "hidden": ["ns::(anonymous namespace)::hidden(int)"],
        "ns::twice": ["float ns::twice<float>(float)"],
        "ns::Widget::~Widget": ["ns::Widget::~Widget()"],  # D1 and D2: one address, one breakpoint
        "ns::entry": ["ns::entry(int)"],
        "Widget": [],  # a class, not a function
        "no_such_function": [],
        "ns::tagged": ["ns::tagged[abi:cxx11][abi:xy](int)"],  # ABI tags: as gdb, with or without them
        "tagged[abi:xy]": ["ns::tagged[abi:cxx11][abi:xy](int)"],
        "ns::takes(const char*)": ["ns::takes(char const*)"],  # the parameters as the demangler spells them
        "gfunc": ["gfunc(G)"],  # outside any namespace, a class's name right after the function's
        "foo::foo": ["foo::foo(int)"],  # a function named as its namespace, not a constructor
        "ns::Widget::~Widget(void)": ["ns::Widget::~Widget()"],
    }
    # every name found is a defined function of the library, by nm
    nm = subprocess.run(["nm", "--defined-only", str(widget)], capture_output=True, text=True, check=True).stdout
    funcs = {line.split()[2] for line in nm.splitlines() if line.split()[1] in "TtWw"}
    assert all(m in funcs for ms in found.values() for m in ms)
    assert C.has_debug_info(str(widget)) is False


def test_a_file_that_is_not_elf_matches_nothing(tmp_path):
    f = tmp_path / "not-elf.so"
    f.write_bytes(b"not an ELF file at all")
    spec = C.NameSpec.parse("ns::entry")
    assert C.functions_matching(str(f), [spec]) == {spec: []}
    assert C.functions_matching(str(tmp_path / "missing.so"), [spec]) == {spec: []}
    assert C.has_debug_info(str(f)) is False
    # not known to lack debug info either: gdb's own demangling for such a file
    assert C.lacks_debug_info(str(f)) is False and C.lacks_debug_info(str(tmp_path / "missing.so")) is False


def test_a_separate_debug_file_counts(widget, tmp_path):
    lib = tmp_path / "libw.so"
    lib.write_bytes(widget.read_bytes())
    assert C.lacks_debug_info(str(lib))
    dbg = tmp_path / "libw.debug"
    dbg.write_bytes(b"")  # where gdb looks for the file .gnu_debuglink names: beside the library
    subprocess.run(["objcopy", "--add-gnu-debuglink=libw.debug", "libw.so"], check=True, cwd=tmp_path)
    assert C.has_debug_info(str(lib)) and not C.lacks_debug_info(str(lib))
