"""Fixtures of the fault tests: the victim program (tests/programs/victim.c) they attach to or run."""

from __future__ import annotations

import pytest
from helpers import PROGRAMS, compile_c


@pytest.fixture(scope="module")
def victim_prog(build_dir):
    return compile_c(PROGRAMS / "victim.c", build_dir / "victim")
