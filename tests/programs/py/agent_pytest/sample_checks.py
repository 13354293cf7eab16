"""Tests (named so the project suite does not collect them) run under `tuidbg run -m pytest` by tests/agent/test_agent.py (not collected by the project's suite)."""


def helper(x):
    return x + 1


def test_passes():
    value = helper(41)  # MARK:test_passes_body
    assert value == 42


def test_fails():
    got = helper(1)
    assert got == 3, "helper(1) should be 3"  # MARK:failing_assert
