"""Prints what a program started by `tuidbg run` sees of its environment (tests/agent/test_agent.py)."""
import os
import sys

print("PYTHONPATH=%s" % os.environ.get("PYTHONPATH"), flush=True)
print("TUIDBG_VARS=%s" % sorted(k for k in os.environ if k.startswith("TUIDBG_AGENT")), flush=True)
print("USER_SITECUSTOMIZE=%s" % getattr(sys.modules.get("sitecustomize"), "MARK", None), flush=True)
print("BOOT_ON_PATH=%s" % any(p.rstrip("/").endswith("agent/boot") for p in sys.path), flush=True)
x = 1  # MARK:env_bp
