"""C++ names where gdb reads symbols without demangling them (tuidbg's default, for speed on libtorch).

A real C++ library built without debug info (tests/programs/cxxwidget.cpp at -g0, as libtorch is),
loaded late by a C program (cxxhost.c, dlopen), under real gdb: breakpoints on its C++ names work as
with gdb's own demangling (pending ones, ones made once it is loaded, overloads, a destructor, an
anonymous namespace, tbreak), frames, breakpoints and disassembly show demangled names, and the
console's ``bt`` too.
"""

from __future__ import annotations

import subprocess

import pytest
from conftest import requires_gdb
from helpers import PROGRAMS, compile_c, wait_for, wait_stopped

from tuidbg.engine import native, remember
from tuidbg.engine.records import cxx_added_for
from tuidbg.engine.state import ProcessState
from tuidbg.ui.panes.tables import bp_where

pytestmark = [requires_gdb]


@pytest.fixture(scope="module")
def widget(tmp_path_factory):
    d = tmp_path_factory.mktemp("cxx")
    lib = compile_c(PROGRAMS / "cxxwidget.cpp", d / "libcxxwidget.so", "-g0", shared=True, cxx=True)
    host = compile_c(PROGRAMS / "cxxhost.c", d / "cxxhost", "-ldl")
    return host, lib


@pytest.fixture(scope="module")
def widget_g(tmp_path_factory):
    """The same library with debug info."""
    d = tmp_path_factory.mktemp("cxxg")
    lib = compile_c(PROGRAMS / "cxxwidget.cpp", d / "libcxxwidget.so", shared=True, cxx=True)
    host = compile_c(PROGRAMS / "cxxhost.c", d / "cxxhost", "-ldl")
    return host, lib


def _user(st):
    return [b for b in st.breakpoints if not b.internal]


async def _start(make_session, widget, **kw):
    host, lib = widget
    return await make_session(mode="run", program=str(host), args=[str(lib)], **kw)


async def test_a_pending_breakpoint_on_a_cpp_name_stops_there_with_demangled_names(make_session, widget):
    s = await _start(make_session, widget)
    res = await s.console("show tuidbg-lazy-demangle")
    assert res.console_text().strip().endswith("on")
    parent = await s.break_insert(function="ns::Widget::poke")
    assert parent.is_pending
    await s.launch()
    st = await wait_stopped(s)
    assert st.process == ProcessState.STOPPED
    # both overloads got a breakpoint of their own, each labelled with its demangled name
    children = [b for b in _user(st) if b.number != parent.number]
    assert sorted(b.label for b in children) == ["ns::Widget::poke(double)", "ns::Widget::poke(int) const"]
    assert all(not b.is_pending and b.enabled and b.cxx_added for b in children)
    # shown in the Breakpoints pane with the user's one, which says where it is
    added = cxx_added_for(st.breakpoints)
    assert added == {b.number: parent.number for b in children}
    mine = next(b for b in st.breakpoints if b.number == parent.number)
    assert bp_where(mine, added) == f"ns::Widget::poke (at {', '.join(sorted(added, key=int))})"
    assert sorted(bp_where(b, added) for b in children) == [
        f"ns::Widget::poke(double) (for {parent.number})", f"ns::Widget::poke(int) const (for {parent.number})"]
    # remembered for the next run: the user's breakpoint, not the added ones
    saved = remember.RememberExtension(s.config).snapshot(s.state)["breakpoints"]
    assert [b.get("location") for b in saved] == ["ns::Widget::poke"]
    names = [f.func for f in st.frames]
    assert names[:3] == ["ns::Widget::poke(int) const", "ns::entry(int)", "widget_entry"]
    assert names[3] == "main"
    # the disassembly of the stop names the function as gdb's demangling would
    pc = int(st.frames[0].addr, 16)
    rows = await native.disassemble(s, pc, pc + 8, source=False)
    assert rows and rows[0].func == "ns::Widget::poke(int) const"
    # the console's backtrace too
    bt = (await s.console("bt")).console_text()
    assert "ns::Widget::poke(int) const" in bt and "ns::entry(int)" in bt and "_ZNK2ns6Widget" not in bt
    await s.cont()
    st = await wait_stopped(s)
    assert st.frames[0].func == "ns::Widget::poke(double)"


async def test_the_added_breakpoints_follow_the_users_one(make_session, widget):
    s = await _start(make_session, widget)
    out = bytearray()
    s.on_program_output(out.extend)
    parent = await s.break_insert(function="ns::Widget::poke")
    stop = await s.break_insert(location="ns::entry")
    await s.launch()
    st = await wait_stopped(s)
    assert st.frames[0].func == "ns::entry(int)"
    await s.refresh_breakpoints()
    children = [b for b in _user(s.state) if b.label.startswith("ns::Widget::poke(")]
    assert len(children) == 2
    # disabled with the user's breakpoint: the next stop is entry's second call, not poke
    await s.break_enable(parent.number, False)
    assert all(not b.enabled for b in _user(s.state) if b.number in {c.number for c in children})
    await s.cont()
    st = await wait_stopped(s)
    assert st.frames[0].func == "ns::entry(int)"
    await wait_for(lambda: b"entry(1) = 12" in out, what="the first call's output")
    # a condition is copied to them too, and deleting the user's breakpoint deletes them
    await s.break_condition(parent.number, "1 == 0")
    await s.break_enable(parent.number, True)
    assert {b.condition for b in _user(s.state) if b.number in {c.number for c in children}} == {"1 == 0"}
    # a condition that cannot be read at a function without debug info: the added ones are off
    await s.break_condition(parent.number, "x == 3")
    assert not any(b.enabled for b in _user(s.state) if b.number in {c.number for c in children})
    await s.break_delete(parent.number)
    assert [b.label for b in _user(s.state)] == ["ns::entry", "ns::entry(int)"]
    for b in _user(s.state):
        await s.break_delete(b.number)
    await s.cont()
    st = await wait_stopped(s)
    assert st.process == ProcessState.EXITED and st.exit_code == 0


async def test_breakpoints_made_once_the_library_is_loaded(make_session, widget):
    s = await _start(make_session, widget)
    await s.break_insert(location="ns::entry")
    await s.launch()
    await wait_stopped(s)
    # the library is loaded now: these resolve at once, from its symbol table
    tb = await s.break_insert(location="hidden", temporary=True)
    dtor = await s.break_insert(location="ns::Widget::~Widget")
    twice = await s.break_insert(location="ns::twice<float>")
    await s.refresh_breakpoints()
    labels = sorted(b.label for b in _user(s.state) if b.number not in (tb.number, dtor.number, twice.number))
    assert labels == [
        "float ns::twice<float>(float)",
        "ns::(anonymous namespace)::hidden(int)",
        "ns::Widget::~Widget()",  # one breakpoint: the D1 and D2 destructors are one function here
        "ns::entry",
        "ns::entry(int)",
    ]
    await s.cont()
    st = await wait_stopped(s)
    assert st.frames[0].func == "ns::(anonymous namespace)::hidden(int)"
    await s.refresh_breakpoints()
    # tbreak: the first hit ends it, the user's and the added one
    assert "hidden" not in " ".join(b.label for b in _user(s.state))
    await s.cont()
    st = await wait_stopped(s)
    assert st.frames[0].func == "float ns::twice<float>(float)"
    await s.cont()
    st = await wait_stopped(s)
    assert st.frames[0].func == "ns::Widget::~Widget()"
    await s.cont()
    st = await wait_stopped(s)
    assert st.frames[0].func == "ns::entry(int)"  # the second call: no hidden() stop this time
    await s.cont()
    st = await wait_stopped(s)
    assert st.frames[0].func == "float ns::twice<float>(float)"


async def test_gdb_demangles_when_asked(make_session, widget):
    s = await _start(make_session, widget, gdb_demangles=True)
    res = await s.console("show tuidbg-lazy-demangle")
    assert res.console_text().strip().endswith("off")
    parent = await s.break_insert(function="ns::Widget::poke")
    await s.launch()
    st = await wait_stopped(s)
    assert st.frames[0].func == "ns::Widget::poke(int) const@plt"  # (gdb's own also has the PLT stubs)
    await s.refresh_breakpoints()
    # gdb's own: one breakpoint with its locations (no added ones)
    assert [b.number for b in _user(s.state)] == [parent.number]


async def test_a_library_with_debug_info_is_read_with_gdbs_demangling(make_session, widget_g):
    # DWARF names C++ functions through the demangler: such a library is read as gdb always does,
    # and gdb resolves the breakpoint itself, with its source lines (nothing added)
    s = await _start(make_session, widget_g)
    parent = await s.break_insert(function="ns::Widget::poke")
    await s.launch()
    st = await wait_stopped(s)
    assert st.frames[0].func == "ns::Widget::poke(int) const@plt"  # (gdb's own: the PLT stub first)
    await s.cont()
    st = await wait_stopped(s)
    assert st.frames[0].func == "ns::Widget::poke" and st.frames[0].file.endswith("cxxwidget.cpp")
    assert st.frames[1].func == "ns::entry"
    await s.refresh_breakpoints()
    assert [b.number for b in _user(s.state)] == [parent.number]
    assert not s.state.breakpoints[0].is_pending
    res = await s.cmd('-data-evaluate-expression "ns::twice<float>(2.5f)"')
    assert res.get("value") == "5"
    res = await s.console("show demangle-style")
    assert '"auto"' in res.console_text()  # (between reads, gdb's own)


async def test_attached_the_loaded_library_was_read_without_demangling_and_breaks_by_name(make_session, widget, cleanup):
    host, lib = widget
    proc = subprocess.Popen([str(host), str(lib), "loop"], stdout=subprocess.PIPE)
    cleanup.append(proc)
    assert proc.stdout.readline() == b"widget 1 done\n"  # (the library is loaded)
    s = await make_session(mode="attach", pid=proc.pid)
    await s.launch()
    await wait_stopped(s)
    parent = await s.break_insert(location="Widget::poke(double)")
    await s.refresh_breakpoints()
    added = cxx_added_for(s.state.breakpoints)
    assert list(added.values()) == [parent.number]
    await s.cont()
    st = await wait_stopped(s)
    assert st.frames[0].func == "ns::Widget::poke(double)" and st.frames[1].func == "ns::entry(int)"
    await s.close()
    # detached: it runs on, and its output goes on
    assert proc.poll() is None
    assert proc.stdout.readline().startswith((b"entry(", b"widget "))


async def test_delete_with_no_number_takes_them_all_and_gdb_lives_on(make_session, widget):
    s = await _start(make_session, widget)
    await s.break_insert(location="ns::entry")
    await s.launch()
    await wait_stopped(s)
    await s.break_insert(location="ns::Widget::poke")
    await s.refresh_breakpoints()
    assert len(_user(s.state)) == 5  # entry and its added one, poke and its two
    await s.console("delete")  # (each added one goes after the command, not inside gdb's own loop)
    await s.refresh_breakpoints()
    assert _user(s.state) == []
    await s.cont()
    st = await wait_stopped(s)
    assert st.process == ProcessState.EXITED and st.exit_code == 0


async def test_a_console_break_with_a_condition_gives_it_to_the_added_ones(make_session, widget):
    s = await _start(make_session, widget)
    await s.console("break ns::Widget::poke if $_streq(\"never\", \"ever\")")
    await s.launch()
    st = await wait_stopped(s)
    # (gdb keeps a pending breakpoint's condition with its text: the added ones have it, and never stop)
    assert st.process == ProcessState.EXITED and st.exit_code == 0, st.frames[:1]
    await s.refresh_breakpoints()
    added = [b for b in _user(s.state) if b.cxx_added]
    assert len(added) == 2 and {b.condition for b in added} == {'$_streq("never", "ever")'}
