"""MI (gdb >= 13: gdb.MICommand) and console (older gdb, e.g. cuda-gdb 11.8) commands."""

import json
import sys

import gdb

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


_registered = []


def register():
    if _registered:
        return
    _registered.append(_InfoCommand())
    if hasattr(gdb, "MICommand"):

        class _MIInfo(gdb.MICommand):
            def __init__(self):
                super(_MIInfo, self).__init__("-tuidbg-info")

            def invoke(self, argv):
                return _info()

        _registered.append(_MIInfo())
