"""The CUDA errors: one line for the user."""

from __future__ import annotations

from tuidbg.engine.errors import EngineError


class CudaError(EngineError):
    """A CUDA operation failed; the message is one line for the user."""


class CudaFilterError(CudaError, ValueError):
    """A filter or focus request string is not valid; says what is wrong and what is expected."""
