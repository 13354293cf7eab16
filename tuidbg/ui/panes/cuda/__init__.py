"""The CUDA pane: devices, kernels, blocks and threads, the focused warp, cuda-gdb's focus.

Everything shown comes from the engine's CUDA snapshot (``cuda.snapshot(state)``)
or from bounded engine requests made when a row is expanded; nothing is invented.

Views (one at a time, switched with keys):

- **threads**: the blocks and threads of a kernel as cuda-gdb coalesces them,
  one row per range with its count and PC/source line. A range expands into its
  per-block pieces (computed locally, a page at a time, "load more" rows), a
  piece or a one-block range into the threads of that block (one bounded
  request), a block into its ranges (one bounded request). A filter
  (``kernel 1 block (0,0,0)``) asks cuda-gdb for the filtered tables.
- **devices**: device → SM → warp → lane, each level read when expanded.
- **kernels**: id, device, grid, status, dims, invocation; Enter shows that
  kernel's blocks and threads.
- **warp**: the lanes of the focused warp, and the warp watch (an expression
  evaluated in every lane, shown side by side, with per-lane errors).

Rows are drawn with the line API from a lazy tree: a million-thread grid's
ranges are converted only when they scroll into view. Enter on a thread (or a
range, block, warp, lane) asks cuda-gdb to switch its focus there; the pane
shows the focus cuda-gdb granted, or cuda-gdb's error. The stop (kernel
breakpoint, kernel entry, CUDA exception with its lanes and error PC) and the
``break_on_launch``/``api_failures``/``memcheck`` settings are shown on top.

Text from gdb is never markup: rows are built from plain segments and every
string goes through ``visible()``.

The app sets ``pane.source`` (its ``SessionBridge``) and calls ``pane.update_state(state)`` on every
state change (cheap when nothing CUDA changed); focus switches go through the
engine, which updates frames and locals in the state, so the source and stack
panes follow through the app's normal state flow.

The modules: ``tree`` (the lazy tree of rows and the door the rows see of the pane), ``items``
(the rows), ``rows`` (the scroll view), ``views`` (each view's tree), ``requests`` (what the pane
asks cuda-gdb) and ``pane`` (the controller that puts them together).
"""

from tuidbg.ui.panes.cuda.pane import CudaInput, CudaPane
from tuidbg.ui.panes.cuda.rows import CudaRows
from tuidbg.ui.panes.cuda.tree import fmt_ints

__all__ = ["CudaInput", "CudaPane", "CudaRows", "fmt_ints"]
