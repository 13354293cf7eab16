"""A pytest test whose torch.testing.assert_close fails (tests/engine/test_torch_steps.py, under
tuidbg run --break-on-failure -m pytest): the stop is at the test's frame, not assert_close's."""
import torch


def scaled(x):
    return x * 2


def test_scaled_matches():
    got = scaled(torch.ones(3))
    want = torch.full((3,), 3.0)
    torch.testing.assert_close(got, want)  # MARK:assert_close
