"""The one switch for the step's fast paths (ARCHITECTURE.md, "A step's key and its line").

A step's key and its line go past Textual's general machinery in several places, each only where the
result is the same as Textual's own way: the key written to gdb by the input thread (``ui.keyplan``),
its rows written by the thread that reads gdb's output (``ui.stoppaint``), a run-control key's action
run as the app receives it (``ui.fastkeys``), the stop's line shown from gdb's record and the stop taken
past the app's queue (``ui.app_source``), and the source pane's rows written to the terminal at once
(``ui.rows_now``, with the rows drawn ahead by ``ui.panes.source_ahead``).

``ENABLED`` False turns every one of them off: each key then takes Textual's way, and each state the
app's queue. tests/ui/test_fastpath_differential.py runs the same keys both ways, in real terminals
under load, and holds the screens equal. The environment variable ``TUIDBG_FAST_PATHS=0`` sets it off
for a tuidbg process (how that test starts its plain twin, and a way to rule the fast paths out when
something looks wrong on the screen).
"""

from __future__ import annotations

import os

ENABLED: bool = os.environ.get("TUIDBG_FAST_PATHS", "1").strip().lower() not in ("0", "off", "no", "false")
