"""Running a call from a tiny hostile input with its allocations traced: the hostile suites of
tests/robustness use these to show that nothing large is allocated before a refusal."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

#: Most bytes any call from a tiny input may allocate: every such input is far below 1 MiB.
PEAK = 64 * 2**20
#: The largest vocabulary, declared by inputs of a few entries.
BIG_V = 2**31 - 1
U64_MAX = np.uint64(2**64 - 1)


def bounded(fn: Callable[[], Any]) -> Any:
    """fn() with its peak traced allocation (tracemalloc sees numpy's buffers) checked against
    PEAK; raised errors pass through."""
    tracemalloc.start()
    try:
        return fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < PEAK, f"peak allocation {peak:,} bytes from a tiny input"


def refused(fn: Callable[[], Any], exc: type[Exception] | tuple[type[Exception], ...], match: str) -> None:
    """fn() raises ``exc`` matching ``match``, having allocated less than PEAK."""
    with pytest.raises(exc, match=match):
        bounded(fn)
