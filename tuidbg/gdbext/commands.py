"""MI (gdb >= 13: gdb.MICommand) and console (older gdb, e.g. cuda-gdb 11.8) commands."""

import json
import os
import sys

import gdb

from .pythonexe import is_python_program

VERSION = 1


def _info():
    return {
        "gdbext": str(VERSION),
        "python": "%d.%d.%d" % sys.version_info[:3],
        "micommand": "1" if hasattr(gdb, "MICommand") else "0",
    }


class _InfoCommand(gdb.Command):
    """tuidbg-info: print tuidbg's gdb extension facts as JSON."""

    def __init__(self):
        super(_InfoCommand, self).__init__("tuidbg-info", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        gdb.write(json.dumps(_info()) + "\n")


class _ExecLetsGo(gdb.Function):
    """$_tuidbg_exec_lets_go(): 1 in a process other than the first that has just become a program other
    than Python (the condition of tuidbg's ``catch exec``: only those stop, to be let go stopped)."""

    def __init__(self):
        super(_ExecLetsGo, self).__init__("_tuidbg_exec_lets_go")

    def invoke(self):
        inf = gdb.selected_inferior()
        if inf.num == 1:
            return 0
        path = gdb.current_progspace().filename or ""
        if not path and inf.pid:
            try:
                path = os.readlink("/proc/%d/exe" % inf.pid)
            except OSError:
                return 0
        return 0 if is_python_program(path) else 1


_registered = []


def register():
    if _registered:
        return
    _registered.append(_InfoCommand())
    _registered.append(_ExecLetsGo())
    if hasattr(gdb, "MICommand"):

        class _MIInfo(gdb.MICommand):
            def __init__(self):
                super(_MIInfo, self).__init__("-tuidbg-info")

            def invoke(self, argv):
                return _info()

        _registered.append(_MIInfo())
