"""The Textual front end.

Textual paces screen updates at ``TEXTUAL_FPS`` (60 by default): an update right after an idle
time goes out at once, and the next one waits one to two frames (16-33 ms at 60). A step paints
its line at once, then the other panes when the stop's refresh is in (``app_source``): at 60
frames a second that second update came about 25 ms later (bench/ui_python_step.py: key -> every
pane 49 ms, against 24 ms before the early line); at 240, 4-8 ms (23 ms). Set here,
before Textual is imported, unless the user set it; taken out of the environment again once
Textual has read it (gdb and the program inherit tuidbg's environment).
"""

import os as _os
import sys as _sys

FPS = "240"

if "textual" not in _sys.modules and "TEXTUAL_FPS" not in _os.environ:
    _os.environ["TEXTUAL_FPS"] = FPS
    try:
        import textual.constants  # noqa: F401  (reads TEXTUAL_FPS once)
    finally:
        del _os.environ["TEXTUAL_FPS"]
