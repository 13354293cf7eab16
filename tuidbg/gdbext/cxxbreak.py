"""C++ libraries without debug info read without demangling, and breakpoints on their functions.

Two thirds of gdb's time on libtorch_cpu.so (530,000 symbols, no DWARF) is demangling every C++
name as it reads them. With ``set tuidbg-lazy-demangle on`` (tuidbg's default), gdb reads each
shared library *without* DWARF under ``set demangle-style none``, three times faster, and every
other object file (the program, libraries with debug info, whose DWARF names gdb computes with the
demangler) as before. Which one gdb reads next is known: after each object file, gdb reads the
next library of its list whose symbols are not read yet, so the style is chosen for that one as
the previous one arrives (``_on_new_objfile``); the first one of a batch, the library a dlopen
names, as dlopen is called (``_DlopenHook``). Libraries loaded another way (the program's own at
its start) get gdb's own style for the first of their batch.

gdb then knows such a library's functions by their mangled names only, and
``break at::native::randn`` finds nothing there. This module finds what gdb would have found, in
each such library as gdb loads it (before the program goes on), and in those already loaded when
the breakpoint is made: for every function the location names, it adds a breakpoint on the
function's mangled name (``-function _ZN...``), "for" the user's one.

The user's breakpoint stays as gdb made it (pending, if nothing else has the name); each added one
copies its settings (enabled, condition, ignore count, thread, commands, temporary), follows its
changes, and goes with it when it is deleted; a temporary one that is hit takes the user's with it.
A frame filter demangles the names in the console's ``bt``; tuidbg's front end demangles what it
shows (``cxxnames.demangle``).
"""

import os
import re

import gdb

from .cxxnames import NameSpec, demangle, functions_matching, lacks_debug_info

# user's breakpoint number -> [NameSpec, {mangled name: added breakpoint's number}]
_parents = {}
_child_of = {}  # added breakpoint's number -> the user's breakpoint's number
_plain = set()  # the object files gdb read without demangling
_state = {"adding": False, "connected": False, "lazy": False, "own_style": "auto", "hook": None}


def active():
    return _state["lazy"]


class _LazyDemangle(gdb.Parameter):
    """Whether gdb reads C++ libraries without debug info without demangling their names."""

    set_doc = "Set whether gdb reads C++ libraries without debug info without demangling."
    show_doc = "Show whether gdb reads C++ libraries without debug info without demangling."

    def __init__(self):
        super(_LazyDemangle, self).__init__("tuidbg-lazy-demangle", gdb.COMMAND_DATA, gdb.PARAM_BOOLEAN)
        self.value = False

    def get_set_string(self):
        if self.value and not _state["lazy"]:
            _state["own_style"] = gdb.parameter("demangle-style") or "auto"
            if _state.get("hook") is None:
                _state["hook"] = _DlopenHook()
        elif not self.value and _state["lazy"]:
            gdb.execute("set demangle-style " + _state["own_style"])
        _state["lazy"] = bool(self.value)
        return ""

    def get_show_string(self, svalue):
        return "tuidbg reads C++ libraries without debug info without demangling: " + svalue


def register():
    if _state["connected"]:
        return
    ev = gdb.events
    _LazyDemangle()
    ev.new_objfile.connect(_on_new_objfile)
    ev.breakpoint_created.connect(_on_created)
    ev.breakpoint_modified.connect(_on_modified)
    ev.breakpoint_deleted.connect(_on_deleted)
    # a stop the user sees, or the end of the program, between a dlopen's entry and gdb's read of
    # what it loads (or a dlopen that loads nothing): gdb's own style again
    ev.stop.connect(_own_style)
    ev.exited.connect(_own_style)
    if hasattr(gdb, "frame_filters"):
        register_frame_filter()
    _state["connected"] = True


_ARG0 = {"i386:x86-64": "$rdi", "aarch64": "$x0"}


class _DlopenHook(gdb.Breakpoint):
    """The first library of a dlopen: its style is chosen at dlopen's entry, from its path (the others
    of the batch, its dependencies, one by one as the previous one arrives: ``_on_new_objfile``). It
    never stops the program."""

    def __init__(self):
        super(_DlopenHook, self).__init__("dlopen", internal=True)
        self.silent = True

    def stop(self):
        try:
            if active():
                reg = _ARG0.get(gdb.selected_frame().architecture().name())
                ptr = gdb.parse_and_eval("(const char *)" + reg) if reg is not None else None
                path = ptr.string() if ptr is not None and int(ptr) else ""
                # None (gdb's own style) unless this is a file that is not loaded yet
                _choose_style(path if path and os.path.isabs(path) and not _loaded(path) else None)
        except Exception:  # (never stop the program here)
            _own_style()
        return False


def _loaded(path):
    real = os.path.realpath(path)
    return any(o.is_valid() and o.filename and os.path.realpath(o.filename) == real for o in gdb.objfiles())


_SOLIB_ROW = re.compile(r"^(?:0x[0-9a-fA-F]+\s+0x[0-9a-fA-F]+\s+|\s+)(Yes \(\*\)|Yes|No)\s+(.+)$")


def _next_unread(after):
    """The library gdb reads after the object file ``after``: the next one of its list whose symbols
    are not read (``after`` itself counts as not read yet while gdb announces it); None if none."""
    rows = []
    for line in gdb.execute("info sharedlibrary", to_string=True).splitlines():
        m = _SOLIB_ROW.match(line)
        if m:
            rows.append((m.group(1), m.group(2).strip()))
    start = 0
    for i, (_read, path) in enumerate(rows):
        if path == after:
            start = i + 1
            break
    for read, path in rows[start:]:
        if read == "No":
            return path
    return None


def _debug_dirs():
    try:
        return tuple(d for d in (gdb.parameter("debug-file-directory") or "").split(os.pathsep) if d)
    except (gdb.error, RuntimeError):
        return ("/usr/lib/debug",)


def _choose_style(path):
    """Before gdb reads ``path`` (or, with None, whatever comes next): no demangling for a library
    known to have no debug info."""
    want = _state["own_style"]
    if path is not None and lacks_debug_info(path, _debug_dirs()):
        want = "none"
    if gdb.parameter("demangle-style") != want:
        gdb.execute("set demangle-style " + want)


def _own_style(_event=None):
    try:
        if active() and gdb.parameter("demangle-style") != _state["own_style"]:
            gdb.execute("set demangle-style " + _state["own_style"])
    except Exception:
        pass


def _spec_of(bp):
    if bp.number in _child_of or not bp.visible or bp.type != gdb.BP_BREAKPOINT:
        return None
    return NameSpec.parse(bp.location or "")


def _libraries():
    """The object files whose functions gdb knows only by their mangled names."""
    return [o.filename for o in gdb.objfiles() if o.is_valid() and o.filename in _plain]


def _add(numbers, paths):
    """Add what the user's breakpoints ``numbers`` name in the libraries at ``paths``."""
    entries = [(n, _parents[n]) for n in numbers if n in _parents]
    specs = [entry[0] for _n, entry in entries]
    for path in paths:
        found = functions_matching(path, specs)
        for number, (spec, children) in entries:
            parent = _breakpoint(number) if found[spec] else None
            for mangled in found[spec] if parent is not None else ():
                if mangled in children:
                    continue  # (gdb adds this library's copy of it to the breakpoint itself)
                child = _make(parent, mangled)
                if child is not None:
                    children[mangled] = child.number
                    _child_of[child.number] = number


def _quiet_trampolines(numbers):
    """Of the user's breakpoints ``numbers`` that tuidbg found the function of (a child added by its
    mangled name), gdb's own locations on a PLT stub go off: not finding the function under its
    demangled name in the library that has it (read without demangling), gdb took the stub a library
    that calls it has, and each call stopped twice, at the stub, then at the function."""
    for number in numbers:
        entry = _parents.get(number)
        bp = _breakpoint(number) if entry and entry[1] else None
        for loc in (getattr(bp, "locations", None) or ()) if bp is not None else ():
            try:
                if loc.enabled and _is_trampoline(loc.address):
                    loc.enabled = False
            except (gdb.error, RuntimeError, AttributeError):
                pass


def _is_trampoline(addr):
    try:
        text = gdb.execute("info symbol %#x" % addr, to_string=True)
    except gdb.error:
        return False
    return "@plt" in text or " section .plt" in text


def _make(parent, mangled):
    _state["adding"] = True
    try:
        # an explicit location ("-function _Z..."): how the front end tells an added one
        child = gdb.Breakpoint(function=mangled, type=gdb.BP_BREAKPOINT, temporary=parent.temporary)
    except (gdb.error, RuntimeError):
        return None
    finally:
        _state["adding"] = False
    _copy(parent, child)
    return child


def _copy(parent, child):
    extra = _cli_condition(parent)
    for attr in ("enabled", "silent", "thread", "ignore_count", "condition", "commands"):
        want = None
        try:
            want = getattr(parent, attr)
            if attr == "condition" and want is None:
                want = extra
            if getattr(child, attr) != want:
                setattr(child, attr, want)
        except Exception as exc:
            if attr == "condition":
                # a condition that does not parse at this function (no debug info: no argument names)
                # must not leave a breakpoint that stops every time: off, and said why
                try:
                    child.enabled = False
                    gdb.write("tuidbg: breakpoint %d (for %d) disabled: its condition %r: %s\n"
                              % (child.number, parent.number, want, exc), gdb.STDERR)
                except Exception:
                    pass


_PENDING_IF = re.compile(r"<PENDING>\s+.*?\sif\s+(.+)$")


def _cli_condition(bp):
    """The condition of a console ``break NAME if COND`` while it is pending: gdb keeps it with the
    location's text until the location resolves (``bp.condition`` is None until then)."""
    if not bp.pending or bp.condition is not None:
        return None
    try:
        text = gdb.execute("info breakpoints %d" % bp.number, to_string=True)
    except gdb.error:
        return None
    for line in text.splitlines():
        if line.split(None, 1)[:1] == [str(bp.number)]:
            m = _PENDING_IF.search(line)
            return m.group(1).strip() if m else None
    return None


def _breakpoint(number):
    for bp in gdb.breakpoints():
        if bp.number == number:
            return bp
    return None


def _on_new_objfile(event):
    if not active():
        return
    obj = event.new_objfile
    if getattr(obj, "owner", None) is not None:
        return  # (a separate debug file, read with its library)
    path = obj.filename
    try:
        plain = gdb.parameter("demangle-style") == "none"
        _own_style()  # (the added breakpoints' lookups may read other files' debug info)
        if plain:
            _plain.add(path)
            if _parents:
                _add(list(_parents), [path])
        else:
            _plain.discard(path)
        _quiet_trampolines(list(_parents))
        _choose_style(_next_unread(path))
    except Exception as exc:  # (never let a library's load fail because of this)
        gdb.write("tuidbg: C++ names in %s: %s\n" % (path, exc), gdb.STDERR)
        _own_style()


def _on_created(bp):
    if _state["adding"] or not active():
        return
    spec = _spec_of(bp)
    if spec is None:
        return
    _parents[bp.number] = [spec, {}]
    number, location = bp.number, bp.location
    # After the command that made it: a breakpoint made while gdb makes another is taken by MI's
    # -break-insert for its answer. (gdb runs posted events before it reads the next command.)
    gdb.post_event(lambda: _add_now(number, location))


def _add_now(number, location):
    try:
        _add([number], _libraries())
        _quiet_trampolines([number])
    except Exception as exc:
        gdb.write("tuidbg: C++ breakpoint %s: %s\n" % (location, exc), gdb.STDERR)


def _on_modified(bp):
    entry = _parents.get(bp.number)
    if entry is None:
        return
    for number in list(entry[1].values()):
        child = _breakpoint(number)
        if child is not None:
            _copy(bp, child)
    _quiet_trampolines([bp.number])  # (gdb may have found another location for it)


def _on_deleted(bp):
    # (deleting another breakpoint from here would pull it from under gdb's own loop over them:
    # "delete" with no number crashes; so after the command, by number)
    number = bp.number
    entry = _parents.pop(number, None)
    if entry is not None:
        numbers = list(entry[1].values())
        for n in numbers:
            _child_of.pop(n, None)
        if numbers:
            gdb.post_event(lambda: _delete(numbers))
        return
    parent_number = _child_of.pop(number, None)
    if parent_number is None:
        return
    entry = _parents.get(parent_number)
    if entry is not None:
        for mangled, n in list(entry[1].items()):
            if n == number:
                del entry[1][mangled]
        parent = _breakpoint(parent_number)
        if parent is not None and parent.temporary and bp.hit_count > 0:
            gdb.post_event(lambda: _delete([parent_number]))  # a tbreak: the first hit ends it


def _delete(numbers):
    for n in numbers:
        bp = _breakpoint(n)
        if bp is not None:
            try:
                bp.delete()
            except (gdb.error, RuntimeError):
                pass


# -- the console's backtraces -------------------------------------------------------------------


class _Demangled(object):
    """A frame decorator's stand-in: the function's name demangled, all else as gdb's decorator says."""

    def __init__(self, base):
        self._base = base

    def function(self):
        name = self._base.function()
        if isinstance(name, int):  # no debug info: gdb prints the symbol at this address
            try:
                found = self._base.inferior_frame().name()
            except (gdb.error, RuntimeError, AttributeError):
                found = None
            if found and found.startswith("_Z"):
                return demangle(found)
        elif isinstance(name, str) and name.startswith("_Z"):
            return demangle(name)
        return name

    def __getattr__(self, attr):
        return getattr(self._base, attr)


class _DemangleFilter(object):
    """``bt`` in the console shows C++ names as gdb would with its own demangling on (a frame filter:
    gdb's MI answers to tuidbg are not filtered, since tuidbg never asks for that)."""

    name = "tuidbg-demangle"
    enabled = True
    priority = -100  # (after any other filter, on what it made)

    def filter(self, frames):
        if not _plain:
            return frames
        return (_Demangled(f) for f in frames)


def register_frame_filter():
    gdb.frame_filters[_DemangleFilter.name] = _DemangleFilter()
