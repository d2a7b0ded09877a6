"""Checks of the arguments every surface shares, each naming the argument it refuses: integers and
integer arrays of any dtype (unsigned included, range-checked before any cast), the bytes an
allocation that grows with an argument would take (refused above ``limits.MAX_ALLOC_BYTES``), and
the verifier routes' seeds, threads, samples, stream keys, work budget and draft tuples."""

from __future__ import annotations

import numbers
import operator
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _core, limits
from .rules import as_array, check_threads

#: The int64 range: what every integer array becomes, checked before the cast.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

TooLargeError = _core.bound.TooLargeError
TooLargeError.__doc__ = "The enumeration would exceed max_sets (a ValueError). The message gives the size needed."


def integer(name: str, value: Any, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` as a Python int: a Python or NumPy integer of any dtype (unsigned included; bool and
    anything else refused with a TypeError), in ``[lo, hi]`` (None: unbounded) or a ValueError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {type(value).__name__}")
    v = operator.index(value)  # exact for every dtype: no wrap-around
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ValueError(f"{name}: expected an integer {_range(lo, hi)}, got {v}")
    return v


def _range(lo: int | None, hi: int | None) -> str:
    lo = None if lo is None or lo <= INT64_MIN else lo
    hi = None if hi is None or hi >= INT64_MAX else hi
    if lo is not None and hi is not None:
        return f"in [{lo}, {hi}]"
    if lo is not None:
        return f">= {lo}"
    return f"<= {hi}" if hi is not None else "within int64"


def int_array(name: str, x: Any, lo: int = INT64_MIN, hi: int = INT64_MAX) -> NDArray[np.int64]:
    """A C-contiguous int64 COPY of the integer array ``x`` (never the caller's buffer), every entry
    in ``[lo, hi]``, checked in ``x``'s own dtype before the cast (a uint64 2**64 - 1 is refused, not
    read as -1). Bool and non-integer dtypes raise a TypeError; an empty list is an empty array."""
    arr = as_array(name, x)
    if arr.size == 0 and not isinstance(x, np.ndarray) and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)  # np.asarray([]) is float64
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected integers, got dtype {arr.dtype}")
    if arr.size:
        lo, hi = max(lo, INT64_MIN), min(hi, INT64_MAX)
        bad = (arr < lo) | (arr > hi)  # exact for every integer dtype against Python ints
        if bad.any():
            at = np.unravel_index(int(np.argmax(bad)), arr.shape)
            where = f"entry {at[0]}" if arr.ndim == 1 else f"entry {tuple(int(i) for i in at)}"
            v = int(arr[at])
            named = (v < lo and lo > INT64_MIN) or (v > hi and hi < INT64_MAX)  # a bound the caller set
            raise ValueError(
                f"{name}: {where} is {v}; expected {_range(lo, hi) if named else f'in [{lo}, {hi}] (int64)'}"
            )
    return np.array(arr, dtype=np.int64, order="C", copy=True)


def nbytes(*shape: int, itemsize: int = 8, copies: int = 1) -> int:
    """Bytes of ``copies`` arrays of ``shape`` (Python ints: no overflow however large)."""
    total = itemsize * copies
    for s in shape:
        total *= int(s)
    return total


def check_alloc(name: str, size: int, what: str) -> None:
    """Refuse, before it happens, an allocation of ``size`` bytes that grows with argument ``name``
    when it exceeds ``limits.MAX_ALLOC_BYTES`` (``mdsd_fast.TooLargeError``, a ValueError stating
    the size it would need). The limit is read at call time, so a caller may raise it."""
    limit = int(limits.MAX_ALLOC_BYTES)
    if size > limit:
        raise TooLargeError(
            f"{name}: {what} would need {_size(size)}, above the limit of {_size(limit)} "
            "(mdsd_fast.limits.MAX_ALLOC_BYTES)"
        )


def _size(b: int) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= scale:
            return f"{b / scale:,.1f} {unit} ({b:,} bytes)"
    return f"{b:,} bytes"


#: Most samples per row that ``simulate`` and ``acceptance(exact=False)`` accept (the C++ core's
#: limit: block keys of 32 bits times 4,096-sample blocks).
MAX_SAMPLES = 2**44 - 1


def _generator(rng: Any) -> np.random.Generator:
    """numpy.random.default_rng(rng), its error naming ``rng``."""
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"rng: expected anything numpy.random.default_rng accepts, got {rng!r} ({exc})") from None


def _seed(rng: Any) -> int:
    """One 64-bit seed from anything numpy.random.default_rng accepts (SPEC 7)."""
    return int(_generator(rng).integers(0, 2**64, dtype=np.uint64))


def _threads(threads: Any) -> int:
    return check_threads(threads)


def _samples(samples: Any, *, minimum: int) -> int:
    count = integer("samples", samples)
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
    return int_array("row_ids", ids)


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
