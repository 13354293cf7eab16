"""The CUDA data model without cuda-gdb: filters, coordinates, tables, ranges, exceptions, stops."""

from __future__ import annotations

import dataclasses

import pytest
from helpers import DATA

from tuidbg.engine import cuda_model as m
from tuidbg.engine.cuda_model import CudaError, CudaFilterError, CudaFocus, Dim3, LogicalOrder, ThreadRange, ThreadRanges
from tuidbg.engine.mi import parse_line
from tuidbg.engine.state import Breakpoint, BreakpointLocation

# ---------------------------------------------------------------------------------------------
# filters


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("kernel 1 block (0,0,0)", "kernel 1 block (0,0,0)"),
        ("kernel 1   block (0, 0, 0)", "kernel 1 block (0,0,0)"),
        ("block 1,0,0", "block (1,0,0)"),
        ("block (1,2)", "block (1,2)"),
        ("thread 5", "thread (5)"),
        ("kernel 0x1f", "kernel 31"),
        ("kernel (2)", "kernel 2"),
        ("kernel current block (any,0,0)", "kernel current block (any,0,0)"),
        ("KERNEL 3", "kernel 3"),
        ("device 0 sm 2 warp 1 lane 7", "device 0 sm 2 warp 1 lane 7"),
        ("kernel $k", "kernel $k"),
        ("", ""),
    ],
)
def test_filters_accepted_and_canonical(text, canonical):
    assert str(m.parse_filter(text)) == canonical


@pytest.mark.parametrize(
    "text, message",
    [
        ("blok (1,0,0)", "unknown word 'blok'"),
        ("kernel 0 kernel 1", "'kernel' is given twice"),
        ("kernel", "'kernel' needs a number"),
        ("kernel block 1", "'kernel' needs a number"),
        ("block", "needs an index like (1,0,0)"),
        ("block (1,2,3,4)", "at most 3"),
        ("block (1,0,0", "missing ')'"),
        ("kernel -1", "unexpected character '-'"),
        ("5 kernel", "expected one of"),
        ("kernel 0x1ffffffff", "too large"),
        ("thread (a,0,0)", "needs an index"),
    ],
)
def test_filter_errors_say_what_is_wrong(text, message):
    with pytest.raises(CudaFilterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        m.parse_filter(text)


def test_filter_kinds_a_command_does_not_take():
    with pytest.raises(CudaFilterError, match="'device' is not accepted here"):
        m.parse_filter("device 0", allowed=("kernel",), what="info cuda launch-trace")
    assert m.parse_filter("kernel 2", allowed=("kernel",)).get("kernel") == 2


def test_make_filter_checks_values():
    assert str(m.make_filter(kernel=0, block=Dim3(1, 0, 0), thread=(3,))) == "kernel 0 block (1,0,0) thread (3)"
    assert str(m.make_filter(device=0, sm=2, warp=0, lane=3)) == "device 0 sm 2 warp 0 lane 3"
    with pytest.raises(CudaFilterError):
        m.make_filter(kernel=-1)
    with pytest.raises(CudaFilterError):
        m.make_filter(block=(1, 2, 3, 4))
    with pytest.raises(CudaFilterError):
        m.make_filter(lane=True)
    assert m.make_filter(device=0, lane=1).is_physical and not m.make_filter(kernel=0).is_physical


# ---------------------------------------------------------------------------------------------
# coordinates


def test_dim3_parse():
    assert Dim3.parse("(1,2,3)") == Dim3(1, 2, 3) and str(Dim3(1, 2, 3)) == "(1,2,3)"
    assert Dim3.parse("(4)") == Dim3(4, 0, 0) and Dim3.parse("5,6") == Dim3(5, 6, 0)
    assert Dim3.parse("(invalid,invalid,invalid)") is None and Dim3.parse("*") is None and Dim3.parse(None) is None
    assert Dim3(2, 3, 4).volume == 24


@pytest.mark.parametrize("order", list(LogicalOrder))
def test_logical_order_round_trips(order):
    dim = Dim3(3, 4, 5)
    seen = set()
    for i in range(dim.volume):
        d = order.at(i, dim)
        assert order.index(d, dim) == i
        seen.add(d)
    assert len(seen) == 60


def test_logical_orders_differ_on_3d_and_agree_on_1d():
    dim = Dim3(4, 2, 2)
    assert LogicalOrder.X_FASTEST.at(1, dim) == Dim3(1, 0, 0)
    assert LogicalOrder.Z_FASTEST.at(1, dim) == Dim3(0, 0, 1)
    one = Dim3(256, 1, 1)
    assert all(LogicalOrder.X_FASTEST.at(i, one) == LogicalOrder.Z_FASTEST.at(i, one) for i in range(256))
    assert LogicalOrder.for_version((11, 8)) is LogicalOrder.Z_FASTEST
    assert LogicalOrder.for_version((12, 4)) is LogicalOrder.X_FASTEST and LogicalOrder.for_version(()) is LogicalOrder.X_FASTEST


def test_focus_from_mi_and_text():
    f = CudaFocus.from_mi(
        {"device": "0", "sm": "2", "warp": "0", "lane": "3", "kernel": "0", "grid": "1", "blockIdx": "(1,0,0)", "threadIdx": "(3,0,0)"}
    )
    assert f.has_logical and f.has_physical
    assert f.logical_args() == "kernel 0 block (1,0,0) thread (3,0,0)" and f.physical_args() == "device 0 sm 2 warp 0 lane 3"
    q = CudaFocus.from_mi(
        {"device": "invalid", "sm": "invalid", "warp": "invalid", "lane": "invalid", "kernel": "0", "grid": "invalid", "blockIdx": "(1,0,0)", "threadIdx": "(3,0,0)"}
    )
    assert q.device is None and q.has_logical and not q.has_physical and q.same_thread(f)
    with pytest.raises(CudaError):
        q.physical_args()
    t = CudaFocus.from_text("kernel 0, grid 1, block (1,0,0), thread (3,0,0), device 0, sm 2, warp 0, lane 3\n")
    assert t == f
    assert CudaFocus.from_text("kernel 0, block (1,0,0), thread (3,0,0)") == CudaFocus(kernel=0, block=Dim3(1), thread=Dim3(3))
    assert CudaFocus.from_text("Focus is not set on any active CUDA kernel.\n") is None
    assert CudaFocus.from_mi({"device": "invalid"}) is None
    c = CudaFocus.from_mi({"kernel": "0", "clusterIdx": "(0,1,0)", "blockIdx": "(0,2,0)", "threadIdx": "(0,0,0)"})
    assert c.cluster == Dim3(0, 1, 0)
    assert "block (1,0,0)" in f.label


# ---------------------------------------------------------------------------------------------
# tables


def _payload(line: str) -> dict:
    rec = parse_line(line)
    assert rec.kind == "result", line[:100]
    return rec.payload


def test_parse_table_takes_the_name_from_the_single_key():
    p = _payload('^done,InfoCudaSmsTable={nr_rows="1",nr_cols="3",hdr=[{width="1",alignment="1",col_name="current",colhdr=" "},{width="2",alignment="1",col_name="sm",colhdr="SM"},{width="18",alignment="1",col_name="active_warps_mask",colhdr="Active Warps Mask"}],body=[InfoCudaSmsRow={current="*",sm="0",active_warps_mask="0x0000000000000003"}]}')
    t = m.parse_table(p, "SmsTable")
    assert t.name == "InfoCudaSmsTable" and t.columns == ("current", "sm", "active_warps_mask")
    (sm,) = m.rows(p, m.CudaSM)
    assert sm.current and sm.active_warps == (0, 1)
    with pytest.raises(CudaError, match="expected a KernelsTable"):
        m.parse_table(p, "KernelsTable")
    with pytest.raises(CudaError, match="did not answer with a table"):
        m.parse_table({"value": "auto"})
    with pytest.raises(CudaError, match="did not answer with a table"):
        m.parse_table({"text": "Focus is not set on any active CUDA kernel.\n"})


@pytest.mark.parametrize("name", ["01_no_process_cuda_cmds.mi.txt", "02_filters_and_help.mi.txt"])
def test_observed_118_empty_tables_parse(name):
    n = 0
    for line in (DATA / "cuda-gdb-11.8-observed" / name).read_text().splitlines():
        if line.startswith("^done,") and "Table={" in line:
            t = m.parse_table(_payload(line))
            assert len(t) == 0 and t.columns[0] == "current"
            n += 1
    assert n >= 5


@pytest.mark.parametrize("name", ["tables_12x.mi.txt", "tables_118.mi.txt"])
def test_synthetic_tables_read_by_column_name(name):
    tables = {}
    for line in (DATA / "cuda-gdb-synthetic" / name).read_text().splitlines():
        if line.startswith("^done,"):
            t = m.parse_table(_payload(line))
            tables.setdefault(t.name, []).append(t)
    (dev,) = m.rows({"InfoCudaDevicesTable": {"hdr": [], "body": tables["InfoCudaDevicesTable"][0].rows}}, m.CudaDevice)
    assert dev.name == "NVIDIA A100-SXM4-80GB" and dev.active_sms == (0, 2)
    warps = [m.CudaWarp.from_row(r) for r in tables["InfoCudaWarpsTable"][0].rows]
    assert [w.first_thread for w in warps] == [Dim3(0), Dim3(32)] and warps[0].pc == 0x7FFFD727D1F0 and warps[0].active_lanes == tuple(range(32))
    lanes = [m.CudaLane.from_row(r) for r in tables["InfoCudaLanesTable"][0].rows]
    assert len(lanes) == 32 and lanes[0].current and lanes[0].exception is None and lanes[5].thread == Dim3(5)
    (k,) = [m.CudaKernel.from_row(r) for r in tables["InfoCudaKernelsTable"][0].rows]
    assert k.parent is None and k.block_dim == Dim3(64, 1, 1)
    unc = [t for t in tables["UncoalescedInfoCudaThreadsTable"] if len(t) == 128][0]
    tr = ThreadRanges.from_table(unc, kernel=0, grid_dim=k.grid_dim, block_dim=k.block_dim)
    assert not tr.coalesced and tr.total_threads == 128 and tr[127].warp == 1 and tr[127].lane == 31
    ctx = m.CudaContext.from_row(tables["InfoCudaContextsTable"][0].rows[0])
    assert ctx.context == 0x5555556A2E40 and ctx.state == "active"


def test_kernel_name_with_templates_and_launch():
    k = m.CudaKernel(kernel=1, grid_dim=Dim3(2, 1, 1), block_dim=Dim3(32, 1, 1), invocation="void reduce<float, (op)1>(x=0x1, n=4)")
    assert k.name == "void reduce<float, (op)1>" and k.launch.startswith("void reduce<float, (op)1><<<(2,1,1),(32,1,1)>>>")


ROW_TYPES = (m.CudaDevice, m.CudaSM, m.CudaWarp, m.CudaLane, m.CudaKernel, m.CudaContext, m.BlockRange, m.ThreadRange)


def _row(line: str) -> dict:
    """The first row of a one-row MI table line."""
    (row,) = m.parse_table(_payload(line)).rows
    return dict(row)


@pytest.mark.parametrize("cls", ROW_TYPES, ids=lambda c: c.__name__)
def test_every_row_type_reads_each_field_from_a_column_map(cls):
    fields = {f.name: f for f in dataclasses.fields(cls)}
    required = {n for n, f in fields.items() if f.default is dataclasses.MISSING}
    maps = [cls.CELLS] if hasattr(cls, "CELLS") and cls.CELLS else []
    maps += [getattr(cls, n) for n in ("COALESCED", "UNCOALESCED") if hasattr(cls, n)]
    assert maps
    for cells in maps:
        assert set(cells) <= set(fields) and required <= set(cells), cls.__name__
    # a row with no columns at all still gives a value: each field's empty reading
    empty = cls.from_row({})
    assert empty.current is False


def test_a_missing_column_reads_as_the_fields_empty_value():
    # 13.x dropped the kernels ``parent`` column; the other cells are as 12.x prints them
    k = m.CudaKernel.from_row(_row('^done,InfoCudaKernelsTable={hdr=[],body=[InfoCudaKernelsRow={current=" ",kernel="2",device="0",grid="5",status="Active",sms_mask="0x0000000000000000000000000005",gridDim="(2,1,1)",blockDim="(64,1,1)",invocation="vecAdd(n=128)"}]}'))
    assert (k.kernel, k.current, k.parent, k.device, k.grid, k.status, k.sms_mask) == (2, False, None, 0, 5, "Active", 5)
    d = m.CudaDevice.from_row({"device": "1"})
    assert (d.device, d.name, d.num_sms, d.active_sms_mask, d.current) == (1, "", 0, 0, False)
    w = m.CudaWarp.from_row({"warp": "3"})
    assert (w.warp, w.pc, w.kernel, w.block, w.first_thread) == (3, None, None, None, None)
    lane = m.CudaLane.from_row({"lane": "4"})
    assert (lane.state, lane.pc, lane.thread, lane.exception) == ("", None, None, None)
    assert m.CudaContext.from_row({}) == m.CudaContext(context=0)
    # a coalesced range without its count counts 0; an uncoalesced one is always one block/thread
    assert m.BlockRange.from_row({"from": "(0,0,0)", "to": "(1,0,0)"}).count == 0
    assert m.BlockRange.from_row({"blockIdx": "(1,0,0)"}).count == 1


def test_odd_cells_as_cuda_gdb_prints_them():
    k = m.CudaKernel.from_row(_row('^done,InfoCudaKernelsTable={hdr=[],body=[InfoCudaKernelsRow={current="*",kernel="0",parent="-",device="0",grid="1",status="Active",sms_mask="0x0000000000000000000000000005",gridDim="(2,1,1)",blockDim="(64,1,1)",invocation="vecAdd(a=0x7fffd1a00000, n=128)"}]}'))
    assert k.current and k.parent is None and k.sms_mask == 5 and k.grid_dim == Dim3(2, 1, 1)
    lanes = [m.CudaLane.from_row(_row(f'^done,InfoCudaLanesTable={{hdr=[],body=[InfoCudaLanesRow={{current=" ",lane="1",state=" active ",physical_pc="0x00007fffd727d3a0",threadIdx="(33,0,0)",exception="{e}"}}]}}')) for e in ("None", "Warp Illegal Address", "")]
    assert [ln.exception for ln in lanes] == [None, "Warp Illegal Address", None]
    assert lanes[0].state == "active" and lanes[0].active and not lanes[0].current and lanes[0].pc == 0x7FFFD727D3A0
    # special coordinates: a number or dim3 becomes None, an index 0, a range's end (0,0,0)
    w = m.CudaWarp.from_row({"warp": "invalid", "kernel": "invalid", "blockIdx": "(invalid,invalid,invalid)", "active_lanes_mask": "0xffffffff"})
    assert (w.warp, w.kernel, w.block, w.active_lanes) == (0, None, None, tuple(range(32)))
    r = m.ThreadRange.from_row({"kernel": "*", "from_blockIdx": "*", "from_threadIdx": "(1,0,0)", "to_blockIdx": "(1,0,0)", "to_threadIdx": "(2,0,0)", "count": "current", "line": "-"})
    assert (r.kernel, r.first_block, r.count, r.line, r.filename) == (None, Dim3(), 0, None, "")


def test_a_renamed_column_is_read_from_the_first_name_the_row_has():
    assert m.CudaWarp.from_row({"warp": "0", "active_pc": "0x10"}).pc == 0x10
    assert m.CudaWarp.from_row({"warp": "0", "active_physical_pc": "0x20", "active_pc": "0x10"}).pc == 0x20
    # the first column present is read even when its value is special
    assert m.CudaWarp.from_row({"warp": "0", "active_physical_pc": "invalid", "active_pc": "0x10"}).pc is None
    assert m.CudaLane.from_row({"lane": "0", "pc": "0x30"}).pc == 0x30
    assert m.CudaLane.from_row({"lane": "0", "physical_pc": "0x40", "pc": "0x30"}).pc == 0x40
    assert m.ThreadRange.from_row({"threadIdx": "(0,0,0)", "pc": "0x50"}).pc == 0x50
    assert m.ThreadRange.from_row({"threadIdx": "(0,0,0)", "virtual_pc": "0x60", "pc": "0x50"}).pc == 0x60


def test_range_rows_take_their_shape_from_their_columns():
    unc = m.BlockRange.from_row(_row('^done,UncoalescedInfoCudaBlocksTable={hdr=[],body=[UncoalescedInfoCudaBlocksRow={current=" ",kernel="0",blockIdx="(1,0,0)",state="running",device="0",sm="2"}]}'))
    assert (unc.first, unc.last, unc.count, unc.device, unc.sm, unc.state) == (Dim3(1), Dim3(1), 1, 0, 2, "running")
    co = m.BlockRange.from_row(_row('^done,CoalescedInfoCudaBlocksTable={hdr=[],body=[CoalescedInfoCudaBlocksRow={current="*",kernel="0",from="(0,0,0)",to="(1,0,0)",count="2",state="running"}]}'))
    assert (co.first, co.last, co.count, co.current, co.device, co.sm) == (Dim3(0), Dim3(1), 2, True, None, None)
    one = m.ThreadRange.from_row(_row('^done,UncoalescedInfoCudaThreadsTable={hdr=[],body=[UncoalescedInfoCudaThreadsRow={current=" ",kernel="0",blockIdx="(1,0,0)",threadIdx="(3,0,0)",virtual_pc="0x00007fffd727d1f0",device="0",sm="2",warp="0",lane="3",filename="/home/user/proj/vecadd.cu",line="8"}]}'))
    assert one.single and (one.first_block, one.last_thread, one.sm, one.warp, one.lane, one.location) == (Dim3(1), Dim3(3), 2, 0, 3, "vecadd.cu:8")
    many = m.ThreadRange.from_row(_row('^done,CoalescedInfoCudaThreadsTable={hdr=[],body=[CoalescedInfoCudaThreadsRow={current="*",kernel="0",from_blockIdx="(0,0,0)",from_threadIdx="(0,0,0)",to_blockIdx="(1,0,0)",to_threadIdx="(63,0,0)",count="128",virtual_pc="0x00007fffd727d1f0",filename="/home/user/proj/vecadd.cu",line="8"}]}'))
    assert (many.count, many.last_block, many.last_thread, many.lane) == (128, Dim3(1), Dim3(63), None) and many.blocks_spanned
    # a row with both a thread and a range start is a range (the range columns win)
    both = m.ThreadRange.from_row({"threadIdx": "(5,0,0)", "from_threadIdx": "(1,0,0)", "to_threadIdx": "(2,0,0)", "count": "2"})
    assert (both.first_thread, both.last_thread, both.count) == (Dim3(1), Dim3(2), 2)


# ---------------------------------------------------------------------------------------------
# ranges


def _ranges_in(order: LogicalOrder, grid: Dim3, block: Dim3, cuts: list[int]) -> list[dict]:
    """Coalesced rows for a grid split at the given logical positions (same PC within a piece)."""
    total = grid.volume * block.volume
    bounds = [0] + cuts + [total]
    rows = []
    for n, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        fb, ft = order.at(lo // block.volume, grid), order.at(lo % block.volume, block)
        lb, lt = order.at((hi - 1) // block.volume, grid), order.at((hi - 1) % block.volume, block)
        rows.append(
            {
                "current": " ",
                "kernel": "3",
                "from_blockIdx": str(fb),
                "from_threadIdx": str(ft),
                "to_blockIdx": str(lb),
                "to_threadIdx": str(lt),
                "count": str(hi - lo),
                "virtual_pc": f"0x{0x1000 + 16 * (n % 3):016x}",
                "filename": "/src/k.cu",
                "line": str(10 + n % 3),
            }
        )
    return rows


def test_ranges_locate_focus_page_and_order_inference():
    grid, block = Dim3(4, 3, 2), Dim3(8, 2, 2)
    for order in LogicalOrder:
        rows = _ranges_in(order, grid, block, [5, 40, 41, 300, 700])
        tr = ThreadRanges(rows, kernel=3, grid_dim=grid, block_dim=block, order=LogicalOrder.X_FASTEST)
        assert tr.infer_order() is order
        tr = ThreadRanges(rows, kernel=3, grid_dim=grid, block_dim=block, order=order)
        assert tr.total_threads == grid.volume * block.volume and len(tr) == 6
        for pos, want in ((0, 0), (4, 0), (5, 1), (40, 2), (41, 3), (299, 3), (300, 4), (767, 5)):
            b, t = order.at(pos // block.volume, grid), order.at(pos % block.volume, block)
            assert tr.locate(b, t) == want
            moved = tr.with_focus(CudaFocus(kernel=3, block=b, thread=t))
            assert moved.current_index == want and moved[want].current and sum(r.current for r in moved) == 1
        assert tr.with_focus(CudaFocus(kernel=9, block=Dim3(), thread=Dim3())).current_index is None
        assert tr.page(4, 10) == tr[4:6] and tr.page(-3, 2) == tr[0:2] and tr.page(10, 5) == ()
        assert sum(x[3] for x in tr.summary()) == tr.total_threads
        assert len(tr.where(lambda r: r.line == 10)) == 2


def test_a_million_thread_range_pages_by_block_without_requests():
    grid, block = Dim3(4096, 1, 1), Dim3(256, 1, 1)
    r = ThreadRange(kernel=0, first_block=Dim3(0), first_thread=Dim3(17), last_block=Dim3(4095), last_thread=Dim3(200), count=4096 * 256 - 17 - 55, pc=0x10, line=8)
    order = LogicalOrder.X_FASTEST
    assert r.span(order, grid, block) == r.count and r.block_count(order, grid) == 4096
    first = r.block_pieces(order, grid, block, 0, 2)
    assert [(p.first_block, p.first_thread, p.last_thread, p.count) for p in first] == [
        (Dim3(0), Dim3(17), Dim3(255), 239),
        (Dim3(1), Dim3(0), Dim3(255), 256),
    ]
    last = r.block_pieces(order, grid, block, 4000, 100)
    assert len(last) == 96 and last[-1].first_block == Dim3(4095) and last[-1].last_thread == Dim3(200) and last[-1].count == 201
    assert sum(p.count for p in r.block_pieces(order, grid, block)) == r.count
    assert r.focus_args() == "kernel 0 block (0,0,0) thread (17,0,0)" and r.focus_args("last").endswith("thread (200,0,0)")
    br = m.BlockRange(kernel=0, first=Dim3(2048), last=Dim3(3103), count=1056)
    assert br.blocks(order, grid, 1050, 100) == tuple(Dim3(x) for x in range(3098, 3104))


def test_block_pieces_follow_a_3d_order():
    grid, block = Dim3(2, 2, 1), Dim3(2, 2, 1)
    order = LogicalOrder.Z_FASTEST
    # the whole grid as one range in 11.x order: blocks (0,0),(0,1),(1,0),(1,1)
    r = ThreadRange(kernel=0, first_block=Dim3(0, 0, 0), first_thread=Dim3(0, 0, 0), last_block=Dim3(1, 1, 0), last_thread=Dim3(1, 1, 0), count=16)
    assert [p.first_block for p in r.block_pieces(order, grid, block)] == [Dim3(0, 0), Dim3(0, 1), Dim3(1, 0), Dim3(1, 1)]
    assert [p.first_block for p in r.block_pieces(LogicalOrder.X_FASTEST, grid, block)] == [Dim3(0, 0), Dim3(1, 0), Dim3(0, 1), Dim3(1, 1)]


# ---------------------------------------------------------------------------------------------
# exceptions and stops


def test_decode_exceptions():
    e = m.decode_exception({"reason": "signal-received", "signal-name": "CUDA_EXCEPTION_10", "signal-meaning": "Device Illegal Address", "exception_name": "Device Illegal Address", "device": "0"})
    assert e.scope == "device" and e.device == 0 and e.code == 10 and not e.precise and e.from_stop_fields
    lane = m.decode_exception({"pc": "0x555555c08620", "filename": "k.cu", "line": "17", "signal-name": "CUDA_EXCEPTION_1"})
    assert lane.name == "Lane Illegal Address" and lane.scope == "lane" and lane.pc == 0x555555C08620 and lane.line == 17
    imprecise = m.decode_exception({"signal-name": "CUDA_EXCEPTION_14", "signal-meaning": "Warp Illegal Address"})
    assert imprecise.scope == "warp" and not imprecise.precise and "imprecise" in imprecise.describe()
    unknown = m.decode_exception({"signal-name": "CUDA_EXCEPTION_17"})
    assert unknown.code == 17 and unknown.name == "CUDA exception"
    assert m.decode_exception({"signal-name": "SIGSEGV"}) is None and m.decode_exception({}) is None


def test_errorpc_values():
    assert m.parse_errorpc("(void (*)(void)) 0x7fffd727d390 <vecAdd(int const*, int const*, int*, int)+416>") == (
        0x7FFFD727D390,
        "vecAdd(int const*, int const*, int*, int)+416",
    )
    assert m.parse_errorpc("(void (*)(void)) 0x10 <void red<float>(float*)+8>") == (0x10, "void red<float>(float*)+8")
    assert m.parse_errorpc("0x20") == (0x20, None)
    assert m.parse_errorpc("void") == (None, None) and m.parse_errorpc("") == (None, None)


FOCUS = {"device": "0", "sm": "0", "warp": "0", "lane": "0", "kernel": "0", "grid": "1", "blockIdx": "(0,0,0)", "threadIdx": "(0,0,0)"}


@pytest.mark.parametrize(
    "payload, kind",
    [
        ({"CudaFocus": FOCUS, "reason": "breakpoint-hit", "bkptno": "1"}, m.STOP_BREAKPOINT),
        ({"CudaFocus": FOCUS, "reason": "breakpoint-hit", "bkptno": "7"}, m.STOP_KERNEL_ENTRY),  # not a user breakpoint
        ({"CudaFocus": FOCUS, "frame": {"arch": "m68k"}}, m.STOP_KERNEL_ENTRY),  # no reason at all
        ({"CudaFocus": FOCUS, "reason": "end-stepping-range"}, m.STOP_STEP),
        ({"CudaFocus": FOCUS, "reason": "signal-received", "signal-name": "SIGINT"}, m.STOP_SIGNAL),
        ({"CudaFocus": FOCUS, "reason": "signal-received", "signal-name": "CUDA_EXCEPTION_14"}, m.STOP_EXCEPTION),
        ({"reason": "signal-received", "signal-name": "CUDA_EXCEPTION_10"}, m.STOP_EXCEPTION),  # device-wide, no focus
        ({"reason": "breakpoint-hit", "bkptno": "1"}, m.STOP_HOST),
        ({"CudaFocus": FOCUS, "reason": "watchpoint-trigger"}, m.STOP_OTHER),
    ],
)
def test_classify_stops(payload, kind):
    assert m.classify_stop(payload, {"1", "2"}) == kind


def test_is_device_frame():
    assert m.is_device_frame({"arch": "m68k"}) and not m.is_device_frame({"arch": "i386:x86-64"}) and not m.is_device_frame({})


# ---------------------------------------------------------------------------------------------
# breakpoints, settings


def _loc(number, enabled, line, func="vecAdd(int const*, int const*, int*, int)"):
    return BreakpointLocation(number=number, enabled=enabled, addr="0x1", func=func, file="v.cu", fullname="/p/v.cu", line=line)


def test_kernel_breakpoint_views():
    stub_only = Breakpoint(number="1", addr="<MULTIPLE>", locations=(_loc("1.1", False, 7),))
    v = m.kernel_breakpoint_view(stub_only)
    assert v.pending_on_device and v.shown == ()
    loaded = Breakpoint(number="1", addr="<MULTIPLE>", locations=(_loc("1.1", False, 7), _loc("1.2", True, 8)))
    v = m.kernel_breakpoint_view(loaded)
    assert [x.number for x in v.shown] == ["1.2"] and v.source_lines() == [("/p/v.cu", 8)]
    both_enabled = Breakpoint(number="1", addr="<MULTIPLE>", locations=(_loc("1.1", True, 7), _loc("1.2", True, 8)))
    assert [x.number for x in m.kernel_breakpoint_view(both_enabled).shown] == ["1.1", "1.2"]
    other_func = Breakpoint(number="2", addr="<MULTIPLE>", locations=(_loc("2.1", False, 3, "f(int)"), _loc("2.2", True, 9, "g(int)")))
    assert [x.number for x in m.kernel_breakpoint_view(other_func).shown] == ["2.1", "2.2"]
    single = Breakpoint(number="3", addr="0x10", func="main", file="m.c", fullname="/p/m.c", line=4)
    assert m.kernel_breakpoint_view(single).source_lines() == [("/p/m.c", 4)]
    assert m.kernel_breakpoint_view(Breakpoint(number="4", addr="<PENDING>", pending="foo")).shown == ()


def test_check_option():
    assert m.check_option("break_on_launch", "Application", ["break_on_launch"]) == "application"
    with pytest.raises(CudaError, match="not one of"):
        m.check_option("api_failures", "loud", ["api_failures"])
    with pytest.raises(CudaError, match="compute-sanitizer"):
        m.check_option("memcheck", "on", ["break_on_launch"])
    with pytest.raises(CudaError, match="unknown CUDA setting"):
        m.check_option("coalescing", "off", ["coalescing"])
