"""Checks of the arguments every verifier route shares (seeds, threads, samples, stream keys, the
work budget, draft tuples), each naming the argument it refuses."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .rules import as_array, check_threads

#: Most samples per row that ``simulate`` and ``acceptance(exact=False)`` accept (the C++ core's
#: limit: block keys of 32 bits times 4,096-sample blocks).
MAX_SAMPLES = 2**44 - 1


def _seed(rng: Any) -> int:
    """One 64-bit seed from anything numpy.random.default_rng accepts (SPEC 7)."""
    try:
        gen = np.random.default_rng(rng)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"rng: expected anything numpy.random.default_rng accepts, got {rng!r} ({exc})") from None
    return int(gen.integers(0, 2**64, dtype=np.uint64))


def _threads(threads: Any) -> int:
    return check_threads(threads)


def _samples(samples: Any, *, minimum: int) -> int:
    if isinstance(samples, (bool, np.bool_)) or not isinstance(samples, numbers.Integral):
        raise TypeError(f"samples: expected an integer, got {type(samples).__name__}")
    count = int(samples)
    if count < minimum:
        raise ValueError(f"samples: expected an integer >= {minimum}, got {samples}")
    if count > MAX_SAMPLES:
        raise ValueError(f"samples: {samples} samples per row is more than the supported {MAX_SAMPLES}")
    return count


def _row_ids(row_ids: Any, count: int) -> NDArray[np.int64] | None:
    """Stable per-row stream keys: ``count`` distinct-or-not integers in [0, 2^31), or None."""
    if row_ids is None:
        return None
    ids = as_array("row_ids", row_ids)
    if ids.dtype == np.bool_ or ids.dtype.kind not in "iu":
        raise TypeError(f"row_ids: expected integer ids, got dtype {ids.dtype}")
    if ids.shape != (count,):
        raise ValueError(f"row_ids: expected shape ({count},) (one id per row), got {ids.shape}")
    if count and (ids.min() < 0 or ids.max() >= 2**31):
        raise ValueError("row_ids: ids must be in [0, 2^31)")
    return np.ascontiguousarray(ids, dtype=np.int64)


def _work_budget(work_budget: Any) -> float:
    """The work budget for the C++ route; None -> 0.0, the verifier's own default ("sweep":
    WOR_WORK_BUDGET, "optimal": WOR_OPTIMAL_WORK_BUDGET)."""
    if work_budget is None:
        return 0.0
    if isinstance(work_budget, (bool, np.bool_)) or not isinstance(work_budget, numbers.Real):
        raise TypeError(f"work_budget: expected a positive number of grid operations, got {type(work_budget).__name__}")
    b = float(work_budget)
    if not (b > 0.0 and np.isfinite(b)):
        raise ValueError(f"work_budget: expected a positive finite number of grid operations, got {work_budget!r}")
    return b


def _drafts(drafts: ArrayLike) -> NDArray[Any]:
    """Type and shape of the draft tuples (no copy: their range is checked before conversion)."""
    d = as_array("drafts", drafts)
    if d.dtype == np.bool_ or d.dtype.kind not in "iu":
        raise TypeError(f"drafts: expected integer token ids, got dtype {d.dtype}")
    if d.ndim not in (1, 2) or d.shape[-1] == 0:
        raise ValueError(f"drafts: expected shape (n,) or (B, n) with n >= 1, got {d.shape}")
    return d
