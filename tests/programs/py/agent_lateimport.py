"""Imports a module only after a while (tests/agent/test_agent.py: breakpoints kept until the file is loaded)."""
import importlib
import sys
import time

sys.path.insert(0, sys.argv[1])
time.sleep(0.2)
mod = importlib.import_module("agent_latemod")
print("late", mod.late(21), flush=True)  # MARK:call_late
