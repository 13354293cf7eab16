"""Exceptions raised and caught, and one nobody catches (tests/agent/test_agent.py)."""
import sys


def lookup(d, key):
    return d[key]  # MARK:raise_keyerror


def parse(text):
    raise ValueError("bad input: " + text)  # MARK:raise_valueerror


def main():
    try:
        lookup({}, "missing")  # MARK:call_lookup
    except KeyError:
        print("caught KeyError", flush=True)  # MARK:handler
    if len(sys.argv) > 1 and sys.argv[1] == "segv":
        import ctypes

        ctypes.string_at(0)  # MARK:segv
    parse("xyz")  # MARK:call_parse


main()
