"""The pure parts of issue 33 on hand-made states: which process is which rank (engine.ranks), the
parallel stacks tree and its rows (engine.python.parallel: the dump's grouping and order, folds, the
threads without Python), the tree made from a dump's JSON equal to the live one, pyall's grouping by
value (engine.crossrank), and pybreak's qualifiers. The live checks are in test_many_ranks.py and
tests/ui/test_ui_parallel.py."""

from __future__ import annotations

import pytest

from tuidbg.engine import crossrank, ranks
from tuidbg.engine.errors import EngineError
from tuidbg.engine.pyagent.console import split_qualifiers
from tuidbg.engine.python import parallel
from tuidbg.engine.python.model import PyFrame, PyStack, PyThread
from tuidbg.engine.records import Thread
from tuidbg.engine.state import DebuggerState, Inferior, ProcessState

S = ProcessState.STOPPED
F = "/job/train.py"
LINES = {"<module>": 90, "main": 80, "loop": 60, "train_step": 40, "barrier": 20, "wait": 10, "inner": 5}


def frames(*names: str, at: dict | None = None) -> tuple[PyFrame, ...]:
    """Innermost first, from the outermost given last."""
    at = at or {}
    return tuple(PyFrame(index=i, function=n, file=F, line=at.get(n, LINES[n]), qualname=n) for i, n in enumerate(names))


def rank(i: int, pid: int, stack_frames, extra_threads: int = 2, ppid: int = 10, world: int = 8) -> Inferior:
    threads = (PyThread(tid=None, frames=stack_frames, lwp=pid),)
    gdb_threads = tuple(Thread(id=f"{pid}.{k}", target_id=f"Thread 0x1 (LWP {pid + k})") for k in range(1 + extra_threads))
    return Inferior(id=f"i{i + 2}", pid=pid, ppid=ppid, process=S, cmdline=("python", "train.py"),
                    role_env=(("RANK", str(i)), ("WORLD_SIZE", str(world))), threads=gdb_threads,
                    python=_view(PyStack(status="ok", threads=threads)))


def _view(stack):
    from tuidbg.engine.state import PythonView

    return PythonView(stack=stack, stack_read=True)


COMMON = ("train_step", "loop", "main", "<module>")


def job() -> DebuggerState:
    """8 ranks: rank 3 in wait (another branch), the 7 others in the barrier; a launcher with no Python read."""
    infs = [Inferior(id="i1", pid=10, process=S, cmdline=("torchrun",), threads=(Thread(id="1"),),
                     python=_view(None))]
    for r in range(8):
        fr = frames("wait", *COMMON, at={"train_step": 41}) if r == 3 else frames("barrier", *COMMON)
        infs.append(rank(r, 100 + r, fr))
    return DebuggerState(inferiors=tuple(infs), selected_inferior="i1")


def test_ranks_lists_both_ways_and_the_words_for_processes():
    assert ranks.parse_ranks("0,2-5") == (0, 2, 3, 4, 5)
    assert ranks.parse_ranks(" 3 ") == (3,)
    assert ranks.format_ranks([0, 1, 2, 4, 5, 6, 7]) == "0-2,4-7"
    assert ranks.format_ranks([0, 1, 3]) == "0,1,3"
    for bad in ("", "x", "3-1", "1-"):
        with pytest.raises(EngineError):
            ranks.parse_ranks(bad)
    st = job()
    assert ranks.describe(st, [f"i{r + 2}" for r in range(8) if r != 3]) == "rank 0-2,4-7"
    assert ranks.short_names(st, ["i5"]) == "rank 3 · 1 proc"
    assert ranks.select(st, "0,2-3") == ("i2", "i4", "i5")
    assert ranks.select(st, "rank 3") == ("i5",)
    assert ranks.select(st, "ranks") == tuple(f"i{r + 2}" for r in range(8))
    assert ranks.select(st, "launcher") == ("i1",)
    assert ranks.select(st, "pid 103") == ("i5",)
    assert len(ranks.select(st, "all")) == 9
    with pytest.raises(EngineError, match="no live rank 9"):
        ranks.select(st, "9")
    with pytest.raises(EngineError, match="names no live process"):
        ranks.select(st, "workers")


def test_a_worker_forked_from_its_rank_is_not_the_rank():
    st = job()
    worker = Inferior(id="w1", pid=500, ppid=103, process=S, cmdline=("python", "train.py"),
                      role_env=(("RANK", "3"), ("WORLD_SIZE", "8")))
    st = DebuggerState(inferiors=st.inferiors + (worker,), selected_inferior="i1")
    assert ranks.rank_of(worker, st) is None and ranks.role_kind(worker, st) == "worker"
    assert ranks.rank_of(st.find("i5"), st) == 3
    assert ranks.select(st, "3") == ("i5",) and ranks.select(st, "workers") == ("w1",)
    assert ranks.describe(st, ["i5", "w1"]) == "rank 3 + 1 worker of rank 3".replace("1 worker", "worker 500")


def test_the_tree_of_a_job_the_odd_branch_first_with_its_counts():
    st = job()
    t = parallel.tree(st)
    assert t.processes == 8 and t.threads == 8  # (the launcher: no Python at this stop)
    # <module> > main > loop > train_step:40 (7 ranks) / train_step:41 (rank 3), fewest processes first
    assert [(n.frame["function"], len(n.processes)) for n in t.roots] == [("<module>", 8)]
    loop = t.roots[0].children[0].children[0]
    assert [(c.frame["line"], c.iids) for c in loop.children] == [
        (41, ("i5",)), (40, tuple(f"i{r + 2}" for r in range(8) if r != 3))]
    rows = parallel.rows(t, st)
    assert [r.prefix + r.text for r in rows[:7]] == [
        "<module>  train.py:90", "main  train.py:80", "loop  train.py:60",
        "├ train_step  train.py:41", "│ wait  train.py:10",
        "└ train_step  train.py:40", "  barrier  train.py:20"]
    assert rows[3].label == "rank 3 · 1 proc" and rows[5].label == "rank 0-2,4-7 · 7 procs"
    assert rows[0].label == "rank 0-7 · 8 procs"
    # the threads that run no Python: 2 more in each rank, and the launcher's one (whose stack is None)
    nopy = [r for r in rows if r.kind == "no-python"]
    assert len(nopy) == 1 and nopy[0].text == "17 threads run no Python", nopy
    # rows name their members' threads (process, gdb id, LWP) for Enter
    assert parallel.first_thread(rows[3], "i5") == (None, 103)


def test_a_long_common_trunk_is_folded_and_opens():
    deep = ("inner", "barrier", "train_step", "loop", "main", "<module>")
    infs = [rank(r, 100 + r, frames(*deep)) for r in range(2)] + [rank(2, 102, frames("wait", *COMMON))]
    st = DebuggerState(inferiors=tuple(infs), selected_inferior="i2")
    t = parallel.tree(st)
    rows = parallel.rows(t, st)
    texts = [r.prefix + r.text for r in rows if r.kind != "no-python"]
    # <module> .. train_step is shared by all three: folded between its first and last frames
    assert texts[:3] == ["<module>  train.py:90", "… 2 frames (main → loop)", "train_step  train.py:40"], texts
    fold = rows[1]
    assert fold.kind == "fold" and fold.hidden == 2
    opened = parallel.rows(t, st, opened=frozenset({fold.key}))
    assert [r.text for r in opened[:4]] == ["<module>  train.py:90", "main  train.py:80", "loop  train.py:60",
                                             "train_step  train.py:40"]
    # closing the branch point hides what is under it
    shut = parallel.rows(t, st, closed=frozenset({rows[2].key}))
    assert not any("barrier" in r.text or "wait" in r.text for r in shut)


def test_the_tree_from_a_dump_is_the_live_tree():
    """tuidbg dump --json of the same processes (its Python frames) gives the same tree."""
    st = job()
    doc = {"format": "tuidbg-dump", "version": 1, "processes": []}
    for inf in st.inferiors:
        threads = []
        if inf.python.stack is not None:
            for t in inf.python.stack.threads:
                threads.append({"id": "1", "tid": t.lwp, "frames": [
                    {"kind": "python", "function": f.function, "qualname": f.qualname, "file": f.file, "line": f.line}
                    for f in t.frames]})
        for k in range(len(inf.threads) - len(threads)):
            threads.append({"id": str(k + 2), "tid": 9000 + k, "frames": []})
        doc["processes"].append({"pid": inf.pid, "env": dict(inf.role_env), "threads": threads})
    live, dumped = parallel.tree(st), parallel.tree_from_dump(doc)
    assert parallel.shape(live.roots) == parallel.shape(dumped.roots)
    assert sum(n for _p, n in live.no_python) == sum(n for _p, n in dumped.no_python)


def test_pyall_answers_grouped_by_value_largest_first_with_the_odd_one_named():
    st = job()
    a = crossrank.Across("step", crossrank.Where("train_step", F))
    for r in range(8):
        a.answers.append(crossrank.Answer(f"i{r + 2}", "value", "123" if r == 3 else "124", "int", "memory"))
    a.answers.append(crossrank.Answer("i1", "absent"))
    assert a.groups() == [("124", tuple(f"i{r + 2}" for r in range(8) if r != 3), "memory"), ("123", ("i5",), "memory")]
    lines = a.lines(st)
    assert lines == [
        "pyall step in train_step (train.py):",
        "  step = 124  ×7  (rank 0-2,4-7)  · read from memory",
        "  step = 123  ×1  (rank 3)  · read from memory",
        "  the values differ: rank 3 holds 123",
        "  no frame of train_step: pid 10",
    ]
    assert crossrank.is_plain_name("step") and not crossrank.is_plain_name("self.step")
    assert not crossrank.is_plain_name("lambda")


def test_the_all_forms_of_print_are_pyall_and_printall():
    for text, want in (("pyprint --all step", "pyall step"), ("pyprint  t.shape --all ", "pyall t.shape"),
                       ("pyeval --all len(batch)", "pyall len(batch)"), ("print --all rank", "printall rank"),
                       ("p --all *ptr", "printall *ptr"), ("pyprint --all", "pyall")):
        assert crossrank.across_form(text) == want, text
    for text in ("pyprint step", "print --allx", "print x", "pyprint all_steps", "pyall step", "group 3"):
        assert crossrank.across_form(text) == text.strip(), text
    ext = crossrank.CrossRank(None)
    assert ext.claims_console("pyprint --all step") and ext.claims_console("print x --all")
    assert not ext.claims_console("pyprint step") and not ext.claims_console("print --allx")


def test_pyall_finds_the_frame_in_the_thread_where_the_process_is_first():
    st = job()
    inf = st.find("i5")
    lwp, f = crossrank.find_frame(inf, inf.python.stack, crossrank.Where("train_step", F))
    assert (lwp, f.line) == (103, 41)
    assert crossrank.find_frame(inf, inf.python.stack, crossrank.Where("barrier", F)) is None


def test_pybreak_qualifiers_are_parsed_in_one_place():
    assert split_qualifiers("train.py:12 rank 0,2-5") == ("train.py:12", {"rank": "0,2-5"})
    assert split_qualifiers("/my dir/train.py:12 pid 4101,4102 group") == (
        "/my dir/train.py:12", {"pid": "4101,4102", "group": ""})
    assert split_qualifiers("12") == ("12", {})
    for bad, why in (("a.py:1 rank", "needs a value"), ("a.py:1 rank 1 rank 2", "twice"),
                     ("a.py:1 rank 1 colour red", "is not")):
        with pytest.raises(EngineError, match=why):
            split_qualifiers(bad)


def test_a_limited_breakpoint_is_only_in_its_processes_tables():
    from tuidbg.engine.python.model import PyBreakpoint

    assert ranks.applies_to((), (), None) and ranks.applies_to((), (), 123)
    assert ranks.applies_to((), (123,), 123) and not ranks.applies_to((), (123,), 124)
    assert not ranks.applies_to((3,), (), None)
    bp = PyBreakpoint(id=1, file=F, line=40, ranks=(3,))
    assert "rank 3" in bp.describe()
