"""cuda-gdb sessions: set-up, CUDA state after each stop, focus, device views, warp watch.

The data model (frozen values, filter parsing, coordinate arithmetic) lives in
``tuidbg.engine.cuda_model`` and is re-exported here; this package talks to
cuda-gdb: ``extension`` (``CudaExtension`` and its hooks) is made of ``refresh``
(after each stop), ``tables`` (on demand), ``focusing`` and ``watch`` (settings, warp
watch, breakpoints), over ``base``; ``workaround`` handles cuda-gdb 11.8's Python. A pane uses it like this::

    from tuidbg.engine import cuda

    snap = cuda.snapshot(state)          # CudaSnapshot or None (not cuda-gdb)
    snap.focus, snap.kernels, snap.blocks, snap.threads.page(0, 50)
    ext = cuda.get(session)              # the CudaExtension of a session
    await ext.switch_focus("block (1,0,0) thread (3,0,0)")
    rows = await ext.expand_block(kernel=0, block=Dim3(1, 0, 0))
    watch = await ext.warp_watch("i * 2")

Everything a stop brings is in the process's ``state.cuda`` (``CudaView``): the
``snapshot`` (CudaSnapshot), the ``focus`` (CudaFocus, or None while the focus is
on a host thread) and the last ``warp_watch``.

Requests stay bounded: the refresh after a stop reads the devices, the kernels,
the coalesced blocks and threads of one kernel and the 32 lanes of the focused
warp; everything else (another kernel, a block's threads one by one, an SM's
warps) is read when a pane expands it, one bounded request each. A kernel whose
thread table was larger than ``auto_rows_limit`` ranges is listed per block on
later stops. Never ``--thread`` while the focus is on the device: cuda-gdb drops
the focus on any host thread switch.
"""

from tuidbg.engine import cuda_model as _model
from tuidbg.engine.cuda_model import *  # noqa: F401,F403 (the data model is part of this API: its __all__)
from tuidbg.engine.cuda.base import AUTO_ROWS_LIMIT, BIG_TABLE_TIMEOUT, device_focus, focus, snapshot
from tuidbg.engine.cuda.extension import CudaExtension, get
from tuidbg.engine.cuda.focusing import FocusSwitch
from tuidbg.engine.cuda.workaround import PYTHON_NONE_PROBE, WORKAROUND_118, configure, needs_unwinder_workaround, probe_python_none

__all__ = [*_model.__all__, "AUTO_ROWS_LIMIT", "BIG_TABLE_TIMEOUT", "CudaExtension", "FocusSwitch", "PYTHON_NONE_PROBE", "WORKAROUND_118", "configure", "device_focus", "focus", "get", "needs_unwinder_workaround", "probe_python_none", "snapshot"]
