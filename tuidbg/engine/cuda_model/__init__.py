"""The CUDA data model: what cuda-gdb's ``-cuda-*`` MI commands report, as frozen values.

Pure code, no I/O: ``tuidbg.engine.cuda`` sends the commands and keeps the
results in the debugger state; this package turns MI payloads into values, parses
and checks filter strings, does the coordinate arithmetic that lets a pane show a
million-thread grid in pages, and decodes CUDA exceptions from ``*stopped``.

Who owns what (each module imports only those above it in this list):

- ``errors``: CudaError, CudaFilterError.
- ``coords``: Dim3, LogicalOrder (x-fastest in 12.x+, z-fastest in 11.x),
  CudaFocus, ``bits`` of a mask, and the reading of special coordinates
  (``invalid``, ``*``, ``current`` → None).
- ``filters``: the ``kernel 1 block (0,0,0)`` grammar: CudaFilter,
  parse_filter, make_filter, the kinds (ALL_KINDS...).
- ``mitable``: MITable, parse_table, ``rows``, and how a row becomes a value:
  TableRow (``from_row``, the one constructor of every row type), Cell and
  the cell conversions, with the rules for missing columns and odd values.
- ``tables``: the rows of the device, SM, warp, lane, kernel and context
  tables (CudaDevice ... CudaContext), each a field → column map.
- ``ranges``: BlockRange, ThreadRange (rows of the blocks and threads tables,
  each with a coalesced and an uncoalesced map) and ThreadRanges, the lazy
  threads table with its paging, locating and order inference.
- ``stops``: CudaException, decode_exception, parse_errorpc, classify_stop and
  the STOP_* kinds, is_device_frame.
- ``breakpoints``: KernelBreakpointView, kernel_breakpoint_view.
- ``snapshot``: CudaCaps, CudaSettings, check_option (with CUDA_MI_COMMANDS and
  OPTION_VALUES), LaneValue, WarpWatch, and CudaSnapshot, what the panes read.

Rules that hold for every cuda-gdb version seen (11.8 captured, 12.x/13.x from
the source) are stated where they apply: reading tables in ``mitable``, special
coordinates and the logical order in ``coords``.

This module re-exports the names the rest of tuidbg, the tests and the
benchmarks import from ``tuidbg.engine.cuda_model``; others are imported from
their submodule.
"""

from __future__ import annotations

from tuidbg.engine.cuda_model.breakpoints import KernelBreakpointView, kernel_breakpoint_view
from tuidbg.engine.cuda_model.coords import CudaFocus, Dim3, LogicalOrder, bits
from tuidbg.engine.cuda_model.errors import CudaError, CudaFilterError
from tuidbg.engine.cuda_model.filters import ALL_KINDS, CudaFilter, make_filter, parse_filter
from tuidbg.engine.cuda_model.mitable import MITable, parse_table, rows
from tuidbg.engine.cuda_model.ranges import BlockRange, ThreadRange, ThreadRanges
from tuidbg.engine.cuda_model.snapshot import (
    CUDA_MI_COMMANDS,
    OPTION_VALUES,
    CudaCaps,
    CudaSettings,
    CudaSnapshot,
    LaneValue,
    WarpWatch,
    check_option,
)
from tuidbg.engine.cuda_model.stops import (
    EXCEPTION_NAMES,
    STOP_BREAKPOINT,
    STOP_EXCEPTION,
    STOP_HOST,
    STOP_KERNEL_ENTRY,
    STOP_OTHER,
    STOP_SIGNAL,
    STOP_STEP,
    CudaException,
    classify_stop,
    decode_exception,
    exception_scope,
    is_device_frame,
    parse_errorpc,
)
from tuidbg.engine.cuda_model.tables import CudaContext, CudaDevice, CudaKernel, CudaLane, CudaSM, CudaWarp

__all__ = [
    "ALL_KINDS",
    "CUDA_MI_COMMANDS",
    "EXCEPTION_NAMES",
    "OPTION_VALUES",
    "STOP_BREAKPOINT",
    "STOP_EXCEPTION",
    "STOP_HOST",
    "STOP_KERNEL_ENTRY",
    "STOP_OTHER",
    "STOP_SIGNAL",
    "STOP_STEP",
    "BlockRange",
    "CudaCaps",
    "CudaContext",
    "CudaDevice",
    "CudaError",
    "CudaException",
    "CudaFilter",
    "CudaFilterError",
    "CudaFocus",
    "CudaKernel",
    "CudaLane",
    "CudaSM",
    "CudaSettings",
    "CudaSnapshot",
    "CudaWarp",
    "Dim3",
    "KernelBreakpointView",
    "LaneValue",
    "LogicalOrder",
    "MITable",
    "ThreadRange",
    "ThreadRanges",
    "WarpWatch",
    "bits",
    "check_option",
    "classify_stop",
    "decode_exception",
    "exception_scope",
    "is_device_frame",
    "kernel_breakpoint_view",
    "make_filter",
    "parse_errorpc",
    "parse_filter",
    "parse_table",
    "rows",
]
