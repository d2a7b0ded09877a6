"""Mergeable summaries of per-position values: what the report's findings need, in constant memory.

A report is computed unit by unit (a dataset group, or a log shard's group); its findings are folded
from per-unit summaries, never from the concatenated positions. Every summary here merges *exactly*:
counts and sums are integers, extremes are extremes, so a merged summary is the same whatever the
order of the units, the chunking of the positions or the number of workers, bit for bit.

* :class:`Stat`: count, exact sum, min and max of finite values. The sum is held as an integer
  multiple of 2^-SCALE (every float64 is one), so it has no rounding error; its mean is the exactly
  rounded mean (Python's int / int is correctly rounded).
* :class:`Sketch`: the median of values in [0, 1] from a histogram of 10^4 equal bins. It is within
  ``SKETCH_ERROR`` (half a bin, 5e-5) of numpy's median: the two middle values lie in the bins whose
  midpoints it averages.
* :class:`Moments`: count, exact sum and exact sum of squares of finite values: the records' mean,
  95% interval and standard errors (one formula, :meth:`Moments.ci95`, for the dense and the log
  report). The sample variance is (n S2 - S1^2) / (n (n - 1)) of exact integers, rounded once.
* :class:`Summary`: named Stats and Sketches plus "all exact" flags, merged key by key.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "SCALE",
    "SKETCH_BINS",
    "SKETCH_ERROR",
    "Z95",
    "Moments",
    "Sketch",
    "Stat",
    "Summary",
    "exact_sum",
    "exact_square_sum",
]

#: 2^-SCALE divides every float64 (the smallest subnormal is 2^-1074, frexp's mantissa has 53 bits).
SCALE = 1130
#: Bins of the median sketch on [0, 1]; the median is within SKETCH_ERROR of numpy's.
SKETCH_BINS = 10_000
SKETCH_ERROR = 0.5 / SKETCH_BINS
#: The normal quantile of the records' two-sided 95% intervals.
Z95 = 1.96


def exact_sum(x: NDArray[np.float64]) -> int:
    """The sum of finite float64 values, exactly, as an integer multiple of 2^-SCALE.

    Each x = M * 2^(e - 53) with an integer |M| < 2^53. Per exponent e, the 27-bit high and 26-bit
    low halves of the Ms are summed by ``bincount``: its float64 partial sums of integers stay below
    2^53 (at most 2^26 values per call), so they are exact. Then they are shifted into one int."""
    x = np.asarray(x, dtype=np.float64).ravel()
    total = 0
    for a in range(0, x.size, _EXACT_BLOCK):
        m, e = np.frexp(x[a : a + _EXACT_BLOCK])
        mant = (m * 2.0**53).astype(np.int64)
        base = int(e.min()) if e.size else 0
        shift = e - base  # bins from the smallest exponent: short bincount outputs
        hi = np.bincount(shift, weights=(mant >> 26).astype(np.float64))
        lo = np.bincount(shift, weights=(mant & ((1 << 26) - 1)).astype(np.float64))
        for sh in np.flatnonzero((hi != 0) | (lo != 0)).tolist():
            total += ((int(hi[sh]) << 26) + int(lo[sh])) << (sh + base - 53 + SCALE)
    return total


#: values per bincount: its partial sums (< 2^27 each) stay exact in float64 below 2^53
_EXACT_BLOCK = 1 << 26
#: |x| in [_SQ_LO, _SQ_HI): Dekker's product of x by itself is exact (no underflow: the halves'
#: products are multiples of 2^(2e - 106) >= 2^-1064; no overflow: x^2 < 2^1022)
_SQ_LO, _SQ_HI = 2.0**-480, 2.0**511


def exact_square_sum(x: NDArray[np.float64]) -> int:
    """The sum of the squares of finite float64 values, exactly, as an integer multiple of 2^-(2 SCALE).

    Each square is its rounding s = fl(x^2) plus the rounding error, which Dekker's product (x split
    into halves of 26 significant bits by Veltkamp's constant) gives exactly as a float64; both are
    added by :func:`exact_sum`. Values outside [2^-480, 2^511) (never a probability's scale, but
    allowed) are squared as Python ints."""
    x = np.abs(np.asarray(x, dtype=np.float64).ravel())
    mid = (x >= _SQ_LO) & (x < _SQ_HI)
    xm = x[mid]
    s = xm * xm
    c = xm * 134217729.0  # 2^27 + 1
    hi = c - (c - xm)
    lo = xm - hi
    err = ((hi * hi - s) + 2.0 * (hi * lo)) + lo * lo  # x^2 - s, exactly (no underflow or overflow here)
    total = (exact_sum(s) + exact_sum(err)) << SCALE
    for v in x[~mid & (x > 0)].tolist():
        m, e = math.frexp(v)
        mant = int(m * 2.0**53)
        total += (mant * mant) << (2 * (e - 53) + 2 * SCALE)  # the shift is >= 8 for every float64
    return total


def _values(x: NDArray[Any]) -> NDArray[Any]:
    """What a summary adds from ``x``, flattened: an indicator (booleans, whose sums are counts)
    as it is, anything else as its finite float64 values."""
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x.ravel()
    x = x.astype(np.float64, copy=False).ravel()
    return x[np.isfinite(x)]


class Stat:
    """Count, exact sum, min and max of the finite values added; merges exactly (see the module)."""

    __slots__ = ("n", "total", "lo", "hi")

    def __init__(self) -> None:
        self.n, self.total, self.lo, self.hi = 0, 0, math.inf, -math.inf

    def add(self, x: NDArray[Any]) -> Stat:
        """Add the finite values of ``x`` (booleans count as 0 / 1)."""
        x = _values(x)
        if not x.size:
            return self
        self.n += int(x.size)
        if x.dtype == np.bool_:
            c = int(np.count_nonzero(x))
            self.total += c << SCALE
            lo, hi = (0.0 if c < x.size else 1.0), (1.0 if c else 0.0)
        else:
            self.total += exact_sum(x)
            lo, hi = float(x.min()), float(x.max())
        self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)
        return self

    def merge(self, other: Stat) -> None:
        self.n += other.n
        self.total += other.total
        self.lo, self.hi = min(self.lo, other.lo), max(self.hi, other.hi)

    @property
    def sum(self) -> float:
        return self.total / (1 << SCALE)

    @property
    def mean(self) -> float:
        """The exactly rounded mean (NaN without values)."""
        return self.total / (self.n << SCALE) if self.n else math.nan

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stat) and (self.n, self.total, self.lo, self.hi) == (
            other.n,
            other.total,
            other.lo,
            other.hi,
        )

    def __repr__(self) -> str:
        return f"Stat(n={self.n}, mean={self.mean!r}, min={self.lo!r}, max={self.hi!r})"


class Moments:
    """Count, exact sum and exact sum of squares of the finite values added; merges exactly, so a
    record's mean, interval and standard error do not depend on how its positions were split or
    in which order the parts came (see the module)."""

    __slots__ = ("n", "total", "squares")

    def __init__(self) -> None:
        self.n, self.total, self.squares = 0, 0, 0

    def add(self, x: NDArray[Any]) -> Moments:
        """Add the finite values of ``x`` (booleans as 0 / 1)."""
        x = _values(x)
        if not x.size:
            return self
        self.n += int(x.size)
        if x.dtype == np.bool_:  # its sum and its sum of squares are one count
            c = int(np.count_nonzero(x))
            self.total += c << SCALE
            self.squares += c << (2 * SCALE)
        else:
            self.total += exact_sum(x)
            self.squares += exact_square_sum(x)
        return self

    def merge(self, other: Moments) -> Moments:
        self.n += other.n
        self.total += other.total
        self.squares += other.squares
        return self

    @property
    def mean(self) -> float:
        """The exactly rounded mean (NaN without values)."""
        return self.total / (self.n << SCALE) if self.n else math.nan

    @property
    def sum_squares(self) -> float:
        """The exactly rounded sum of squares."""
        return self.squares / (1 << (2 * SCALE))

    def ci95(self) -> tuple[float, float, float]:
        """(mean, low, high): the normal 95% interval mean -+ Z95 s / sqrt(n), s^2 the sample variance;
        the half-width is NaN for one value, everything NaN for none."""
        if self.n == 0:
            return math.nan, math.nan, math.nan
        m = self.mean
        if self.n == 1:
            return m, math.nan, math.nan
        # s^2 / n from exact integers, rounded once: (n S2 - S1^2) / (n^2 (n - 1))
        h = Z95 * math.sqrt((self.n * self.squares - self.total**2) / ((self.n * self.n * (self.n - 1)) << (2 * SCALE)))
        return m, m - h, m + h

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Moments) and (self.n, self.total, self.squares) == (
            other.n,
            other.total,
            other.squares,
        )

    def __repr__(self) -> str:
        return f"Moments(n={self.n}, mean={self.mean!r})"


class Sketch:
    """Histogram of values in [0, 1] (clipped) on SKETCH_BINS equal bins, for a mergeable median."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}

    def add(self, x: NDArray[Any]) -> Sketch:
        x = _values(x).astype(np.float64, copy=False)
        b = np.minimum((np.clip(x, 0.0, 1.0) * SKETCH_BINS).astype(np.int64), SKETCH_BINS - 1)
        ids, cnt = np.unique(b, return_counts=True)
        for i, c in zip(ids.tolist(), cnt.tolist(), strict=True):
            self.counts[i] = self.counts.get(i, 0) + c
        return self

    def merge(self, other: Sketch) -> None:
        for i, c in other.counts.items():
            self.counts[i] = self.counts.get(i, 0) + c

    def median(self) -> float:
        """The mean of the midpoints of the bins holding the two middle values (numpy's median is
        their mean): within SKETCH_ERROR of it. NaN without values."""
        n = sum(self.counts.values())
        if n == 0:
            return math.nan
        want = sorted({(n - 1) // 2, n // 2})  # 0-based ranks of the middle values
        mids, seen = [], 0
        for i in sorted(self.counts):
            seen += self.counts[i]
            while want and want[0] < seen:
                mids.append((i + 0.5) / SKETCH_BINS)
                want.pop(0)
        return sum(mids) / len(mids) if len(mids) == 1 else (mids[0] + mids[1]) / 2

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sketch) and self.counts == other.counts


class Summary:
    """Named :class:`Stat` and :class:`Sketch` accumulators and boolean "all" flags of one or more
    units. ``merge`` folds another summary in; the result does not depend on the merge order."""

    def __init__(self) -> None:
        self.stats: dict[str, Stat] = {}
        self.sketches: dict[str, Sketch] = {}
        self.flags: dict[str, bool] = {}

    def stat(self, key: str) -> Stat:
        return self.stats.setdefault(key, Stat())

    def sketch(self, key: str) -> Sketch:
        return self.sketches.setdefault(key, Sketch())

    def flag(self, key: str, value: bool) -> None:
        """AND ``value`` into flag ``key`` (a flag is True only if every unit set it True)."""
        self.flags[key] = self.flags.get(key, True) and bool(value)

    def get(self, key: str) -> Stat:
        """The Stat ``key``, empty if no unit added to it."""
        return self.stats.get(key, Stat())

    def merge(self, other: Summary) -> Summary:
        for k, s in other.stats.items():
            self.stat(k).merge(s)
        for k, h in other.sketches.items():
            self.sketch(k).merge(h)
        for k, f in other.flags.items():
            self.flag(k, f)
        return self

    def _state(self) -> tuple[Any, ...]:
        # an empty accumulator, a missing one and a True flag all mean "nothing seen against it"
        return (
            {k: s for k, s in self.stats.items() if s.n},
            {k: h for k, h in self.sketches.items() if h.counts},
            {k for k, f in self.flags.items() if not f},
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Summary) and self._state() == other._state()
