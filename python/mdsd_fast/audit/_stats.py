"""The audit's statistics: the binned goodness-of-fit test of the output law, its power, the TV
interval, the acceptance tests and Holm's correction (docs/guide/audit.md says why each is sound)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._special import binom_sf, chi2_isf, chi2_sf, ncx2_sf, norm_sf

#: No bin of the chi-square test expects fewer outputs than this (Pearson's rule of thumb).
MIN_EXPECTED = 5.0
#: Pooling thresholds (expected counts) ``choose_bins`` tries: tokens expected less often share a bin.
THRESHOLDS = (5.0, 10.0, 20.0, 50.0, 100.0, 250.0, 1000.0)
#: The power the detectable TV is stated at.
POWER = 0.9
#: Coverage of the TV interval.
TV_COVERAGE = 0.95


@dataclass(frozen=True)
class Bins:
    """Tokens grouped into the bins of the goodness-of-fit test."""

    index: NDArray[np.int64]  #: bin of each token; -1 for tokens with p = 0
    mass: NDArray[np.float64]  #: p of each bin
    pooled_mass: float  #: p of the bins holding more than one token


def make_bins(p: NDArray[np.float64], samples: int, threshold: float = MIN_EXPECTED) -> Bins:
    """A bin per token with expected count >= ``threshold``; the other tokens with p > 0 share one
    pooled bin, merged into the lightest single-token bin if short of MIN_EXPECTED itself."""
    index = np.full(p.size, -1, dtype=np.int64)
    big = np.flatnonzero(p * samples >= threshold)
    small = np.flatnonzero((p > 0) & (p * samples < threshold))
    index[big] = np.arange(big.size)
    nbins = big.size
    if small.size:
        if p[small].sum() * samples >= MIN_EXPECTED or big.size == 0:
            index[small] = nbins
            nbins += 1
        else:
            index[small] = index[big[np.argmin(p[big])]]
    mass = np.bincount(index[index >= 0], weights=p[index >= 0], minlength=nbins).astype(np.float64)
    sizes = np.bincount(index[index >= 0], minlength=nbins)
    return Bins(index, mass, float(mass[sizes > 1].sum()))


def choose_bins(p: NDArray[np.float64], samples: int, level: float) -> tuple[Bins, float]:
    """The binning, among pooling thresholds THRESHOLDS, with the smallest detectable TV, and that TV.

    It depends on p and the sample size only, never on the outputs, so the test stays valid.
    Coarser bins lower the degrees of freedom (more power per unit of chi-square divergence) but
    hide deviations inside pooled bins, which the stated TV adds back in full."""
    floor = math.log(1.0 / (1.0 - POWER)) / samples  # mass put on p = 0 tokens is seen at once
    best: tuple[Bins, float] | None = None
    for threshold in THRESHOLDS:
        bins = make_bins(p, samples, threshold)
        if best is not None and bins.pooled_mass >= best[1]:
            continue
        d = detectable_tv(bins.mass.size - 1, samples, level) + bins.pooled_mass + floor
        if best is None or d < best[1]:
            best = (bins, d)
    assert best is not None
    return best[0], min(1.0, best[1])


@dataclass(frozen=True)
class LawTest:
    """Goodness of fit of the output tokens against p."""

    statistic: float
    df: int
    pvalue: float
    impossible: int  #: outputs on tokens with p = 0 (each one proves a bug)
    tv: float  #: plug-in TV of the binned output law from binned p
    tv_ci: tuple[float, float]
    tv_detectable: float  #: smallest token-level TV detected with probability >= POWER
    pooled_mass: float  #: p of the pooled bins (the token-level TV exceeds the binned one by at most this)


def law_test(p: NDArray[np.float64], counts: NDArray[np.int64], level: float) -> LawTest:
    """Pearson's chi-square of the output counts against p over ``make_bins``'s bins; outputs on
    p = 0 tokens give p-value 0. ``level``: the per-test false-alarm rate the power is stated at."""
    samples = int(counts.sum())
    bins, detectable = choose_bins(p, samples, level)
    inside = bins.index >= 0
    observed = np.bincount(bins.index[inside], weights=counts[inside], minlength=bins.mass.size)
    impossible = int(counts[~inside].sum())
    expected = samples * bins.mass
    stat = float(((observed - expected) ** 2 / expected).sum())
    df = bins.mass.size - 1
    pvalue = 0.0 if impossible else (chi2_sf(stat, df) if df > 0 else 1.0)
    # Plug-in TV over the bins plus a p = 0 bin; interval: bias bound + McDiarmid (docs/guide/audit.md).
    freq = np.append(observed, impossible) / samples
    tv = 0.5 * float(np.abs(freq - np.append(bins.mass, 0.0)).sum())
    bias = 0.5 * float(np.sqrt(freq * (1.0 - freq) / samples).sum())
    spread = math.sqrt(math.log(1.0 / (1.0 - TV_COVERAGE)) / (2.0 * samples))
    ci = (max(0.0, tv - bias - spread), min(1.0, tv + bias + spread))
    return LawTest(stat, df, pvalue, impossible, tv, ci, detectable, bins.pooled_mass)


def detectable_tv(df: int, samples: int, level: float, power: float = POWER) -> float:
    """Smallest TV d between binned laws that the chi-square test at ``level`` detects with
    ``power``: any alternative at TV d has noncentrality >= 4 samples d^2 (chi-square
    divergence >= 4 TV^2, Cauchy-Schwarz), so d solves ncx2_sf(crit, df, 4 samples d^2) = power."""
    if df <= 0:
        return 0.0
    return math.sqrt(_noncentrality(df, level, power) / (4.0 * samples))


@functools.lru_cache(maxsize=4096)
def _noncentrality(df: int, level: float, power: float) -> float:
    """The noncentrality at which the level-``level`` chi-square test has ``power`` (to 1e-4)."""
    crit = chi2_isf(level, df)
    lo, hi = 0.0, max(1.0, crit - df)
    while ncx2_sf(crit, df, hi) < power:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-4 * hi:
        mid = 0.5 * (lo + hi)
        if ncx2_sf(crit, df, mid) < power:
            lo = mid
        else:
            hi = mid
    return hi


def acceptance_pvalue(accepted: int, samples: int, bound: float) -> float:
    """One-sided exact binomial p-value of 'acceptance <= bound' given ``accepted`` of ``samples``."""
    if bound >= 1.0:
        return 1.0
    return binom_sf(accepted, samples, max(bound, 0.0))


def mean_pvalue(values: NDArray[np.float64], bound: float) -> tuple[float, float, float]:
    """(mean, standard error, one-sided normal p-value of 'mean <= bound') of bounded samples."""
    m = float(values.mean())
    se = float(values.std(ddof=1) / math.sqrt(values.size)) if values.size > 1 else 0.0
    if se == 0.0:
        return m, se, 0.0 if m > bound + 1e-12 else 1.0
    return m, se, norm_sf((m - bound) / se)


def holm(pvalues: NDArray[np.float64]) -> NDArray[np.float64]:
    """Holm's step-down adjusted p-values: reject where adjusted <= the family-wise rate."""
    m = pvalues.size
    order = np.argsort(pvalues, kind="stable")
    steps = np.maximum.accumulate((m - np.arange(m)) * pvalues[order])
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(steps, 1.0)
    return adjusted
