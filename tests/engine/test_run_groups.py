"""Run groups on real processes (Debian's python3.11 under tuidbg run --children): a group of the parent
alone continues while its helper process stays stopped, and a child the parent forks meanwhile joins the
group and runs (gdb keeps a new child stopped while it resumes only the group's processes) to its
breakpoint (issue 33, item 3)."""

from __future__ import annotations

import pytest
from conftest import requires_gdb
from helpers import DEBIAN_PY311, PROGRAMS, line_of

from tuidbg.engine import crossrank, pyagent
from tuidbg.engine.state import ProcessState

pytestmark = [requires_gdb, pytest.mark.slow,
              pytest.mark.skipif(not DEBIAN_PY311.exists(), reason="this machine has no /usr/bin/python3.11")]

PROG = PROGRAMS / "py" / "group_fork.py"


async def test_a_group_of_the_parent_runs_its_new_child_and_leaves_the_helper_stopped(make_session, tmp_path):
    s = await make_session(mode="run", program=str(DEBIAN_PY311), args=[str(PROG), str(tmp_path)], agent=True,
                           python_target=True, children="python")
    ag = pyagent.controller(s)
    await ag.add_breakpoint(str(PROG), line_of(PROG, "ready_to_fork"))
    await ag.add_breakpoint(str(PROG), line_of(PROG, "child_work"))
    await s.launch()
    st = await ag.wait_stop(120)
    parent = st.inferiors[0]
    assert st.selected_inferior == parent.id and st.python.stop.line == line_of(PROG, "ready_to_fork")
    helper = next(inf for inf in st.inferiors if inf.id != parent.id and inf.pid)
    assert helper.process is ProcessState.STOPPED
    said = await crossrank.controller(s).handle_console(f"group pid {parent.pid}")
    assert said.startswith(f"run group: pid {parent.pid} (1 process)"), said
    helper_gen = helper.generation
    await ag.resume()
    st = await ag.wait_stop(120)
    child = st.inferior
    assert child.id not in (parent.id, helper.id) and st.python.stop.line == line_of(PROG, "child_work"), st.python.stop
    assert child.id in st.run_group and child.ppid == parent.pid
    h = st.find(helper.id)
    assert h.process is ProcessState.STOPPED and h.generation == helper_gen  # (it never ran)
    assert (await crossrank.controller(s).handle_console("group all")).startswith("every process")
    await ag.resume()
    await s.close()
