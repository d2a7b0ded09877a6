"""The statistics of the served-log check: the randomised PIT, its mergeable tallies, the exact
Monte Carlo p-value and the stated power (docs/guide/served.md says why each is sound).

At each position the logged outcomes are ordered by probability, highest first (ties by token
key, never by which one was emitted), with the unlogged tail as one last outcome. With ``F`` the
mass before the emitted outcome, ``f`` its own mass and ``V`` a fresh uniform, ``U = F + V f`` is
exactly Uniform(0, 1) given everything before the position when the token was drawn from the
logged law, so the ``U`` of a whole log are i.i.d. uniform whatever the distributions and however
each depends on the tokens before it. Every statistic here is a function of the counts of ``U``
in BINS equal bins, whose null law is Multinomial(N, 1/BINS): the p-value is a Monte Carlo
p-value against that law, exact at any number of replicates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..audit._special import chi2_sf, norm_sf
from ..audit._stats import POWER, detectable_tv

#: Equal bins of U on [0, 1).
BINS = 20
#: Rank groups of the emitted token (1-based, inclusive upper ends); the tail is its own group.
RANK_EDGES = (1, 2, 3, 5, 10, 20)
RANK_LABELS = ("1", "2", "3", "4-5", "6-10", "11-20", ">20 logged", "tail")
#: Position-in-response groups (0-based starts).
POSITION_EDGES = (0, 1, 4, 16, 64, 256, 1024)
#: Distinct temperatures tallied one by one; more go to one group "other".
MAX_TEMPERATURES = 64
#: Monte Carlo replicates of the null tallies (the p-value's resolution is 1 / (REPLICATES + 1)).
REPLICATES = 9999


def _group_of(position: NDArray[np.int64]) -> NDArray[np.int64]:
    return np.searchsorted(np.asarray(POSITION_EDGES[1:]), position, side="right").astype(np.int64)


def position_labels() -> tuple[str, ...]:
    ends = [*POSITION_EDGES[1:], None]
    return tuple(
        f"{a}" if b == a + 1 else (f"{a}-{b - 1}" if b else f">={a}") for a, b in zip(POSITION_EDGES, ends, strict=True)
    )


@dataclass
class Tally:
    """Counts and sums that merge by addition: everything the verdict and the localisation need.

    ``u`` counts U per bin; per rank group ``observed`` (emitted tokens), ``expected`` (sum of the
    logged mass of the group) and ``variance`` (sum of m (1 - m)); per position group and per
    temperature a U histogram and the observed / expected count of rank-1 emissions."""

    u: NDArray[np.int64] = field(default_factory=lambda: np.zeros(BINS, np.int64))
    observed: NDArray[np.int64] = field(default_factory=lambda: np.zeros(len(RANK_LABELS), np.int64))
    expected: NDArray[np.float64] = field(default_factory=lambda: np.zeros(len(RANK_LABELS)))
    variance: NDArray[np.float64] = field(default_factory=lambda: np.zeros(len(RANK_LABELS)))
    by_position: NDArray[np.int64] = field(default_factory=lambda: np.zeros((len(POSITION_EDGES), BINS), np.int64))
    top_position: NDArray[np.float64] = field(default_factory=lambda: np.zeros((len(POSITION_EDGES), 3)))
    by_temperature: dict[float, NDArray[np.int64]] = field(default_factory=dict)
    top_temperature: dict[float, NDArray[np.float64]] = field(default_factory=dict)
    impossible: int = 0  #: emitted outside the logged tokens where the log leaves no tail
    inconsistent: int = 0  #: the token's own logprob disagrees with its top_logprobs entry

    @property
    def positions(self) -> int:
        return int(self.u.sum())

    def merge(self, other: Tally) -> Tally:
        self.u += other.u
        self.observed += other.observed
        self.expected += other.expected
        self.variance += other.variance
        self.by_position += other.by_position
        self.top_position += other.top_position
        for t, h in other.by_temperature.items():
            mine = self.by_temperature.setdefault(t, np.zeros(BINS, np.int64))
            mine += h
            top = self.top_temperature.setdefault(t, np.zeros(3))
            top += other.top_temperature[t]
        self.impossible += other.impossible
        self.inconsistent += other.inconsistent
        return self

    def add(
        self,
        u: NDArray[np.float64],
        rank: NDArray[np.int64],
        sorted_mass: NDArray[np.float64],
        tail: NDArray[np.float64],
        position: NDArray[np.int64],
        temperature: NDArray[np.float64],
    ) -> None:
        """Fold a block of positions in: ``u`` their PIT values, ``rank`` the emitted outcome's
        0-based rank (``sorted_mass.shape[1]`` or more: the tail), ``sorted_mass`` (n, k) the
        logged probabilities highest first (0-padded), ``tail`` the unlogged mass."""
        if u.size == 0:
            return
        b = np.minimum((u * BINS).astype(np.int64), BINS - 1)
        self.u += np.bincount(b, minlength=BINS)
        k = sorted_mass.shape[1]
        cum = np.concatenate([np.zeros((u.size, 1)), np.cumsum(sorted_mass, axis=1)], axis=1)
        edges = [0, *(min(e, k) for e in RANK_EDGES), k]
        group = np.where(rank >= k, len(RANK_LABELS) - 1, np.searchsorted(np.asarray(RANK_EDGES), rank + 1))
        self.observed += np.bincount(group, minlength=len(RANK_LABELS))
        for g in range(len(RANK_LABELS) - 1):
            m = cum[:, edges[g + 1]] - cum[:, edges[g]]
            self.expected[g] += m.sum()
            self.variance[g] += (m * (1 - m)).sum()
        self.expected[-1] += tail.sum()
        self.variance[-1] += (tail * (1 - tail)).sum()
        top1 = sorted_mass[:, 0] if k else np.zeros(u.size)
        hit = (rank == 0).astype(np.float64)
        pg = _group_of(position)
        np.add.at(self.by_position, (pg, b), 1)
        for j, v in enumerate((hit, top1, top1 * (1 - top1))):
            self.top_position[:, j] += np.bincount(pg, weights=v, minlength=len(POSITION_EDGES))
        temps, inv = np.unique(np.where(np.isnan(temperature), -1.0, temperature), return_inverse=True)
        for i, t in enumerate(temps.tolist()):
            key = float(t) if (t in self.by_temperature or len(self.by_temperature) < MAX_TEMPERATURES) else math.inf
            sel = inv == i
            h = self.by_temperature.setdefault(key, np.zeros(BINS, np.int64))
            h += np.bincount(b[sel], minlength=BINS)
            top = self.top_temperature.setdefault(key, np.zeros(3))
            top += (hit[sel].sum(), top1[sel].sum(), (top1[sel] * (1 - top1[sel])).sum())


def mean_z(counts: NDArray[np.int64]) -> NDArray[np.float64]:
    """z of the mean bin of U histograms (one per row): below 0 when U leans to 0, the top of the
    logged laws; above 0 when it leans to the tail."""
    c = np.atleast_2d(counts).astype(np.float64)
    centre = (np.arange(BINS) + 0.5) / BINS - 0.5
    sd = math.sqrt(float((centre**2).mean()))  # one position's binned U: mean 0, this sd under H0
    return np.asarray((c * centre).sum(axis=1) / (sd * np.sqrt(np.maximum(c.sum(axis=1), 1.0))), np.float64)


def chi2(counts: NDArray[np.int64]) -> NDArray[np.float64]:
    """Pearson's chi-square of U histograms against the uniform bins (one per row)."""
    c = np.atleast_2d(counts).astype(np.float64)
    e = c.sum(axis=1, keepdims=True) / BINS
    return np.asarray(((c - e) ** 2 / np.maximum(e, 1e-300)).sum(axis=1), np.float64)


def _statistics(counts: NDArray[np.int64]) -> NDArray[np.float64]:
    """(Pearson's chi-square, |z| of the mean bin) of U histograms, one row per histogram."""
    return np.stack([chi2(counts), np.abs(mean_z(counts))], axis=1)


def mc_pvalue(counts: NDArray[np.int64], rng: np.random.Generator, replicates: int = REPLICATES) -> float:
    """Exact Monte Carlo p-value of the U histogram against Multinomial(N, 1/BINS).

    The two statistics (chi-square: any shape; |z| of the mean: a shift towards the top or the
    tail of the logged laws) are combined by their smaller p-value, itself calibrated on the same
    replicates, so P(p <= a) <= a under the null for every a and any number of replicates."""
    n = int(counts.sum())
    if n == 0:
        return 1.0
    sims = rng.multinomial(n, np.full(BINS, 1.0 / BINS), size=replicates)
    stats = _statistics(np.vstack([counts[None, :], sims]))  # row 0: the observed histogram
    total = replicates + 1
    minp = np.ones(total)
    for j in range(stats.shape[1]):
        col = np.sort(stats[:, j])
        at_least = total - np.searchsorted(col, stats[:, j], side="left")  # rows with stat >= this row's
        minp = np.minimum(minp, at_least / total)
    return float((minp <= minp[0]).sum() / total)


def asymptotic_pvalue(counts: NDArray[np.int64]) -> float:
    """Chi-square p-value of a U histogram (for the localisation tables: descriptive, not the verdict)."""
    if counts.sum() < 5 * BINS:
        return math.nan
    return chi2_sf(float(chi2(counts)[0]), BINS - 1)


def tv_detectable(positions: int, alpha: float) -> float:
    """The smallest total variation between the emitted PIT law (over the BINS bins) and the
    uniform one that the check detects with probability POWER at ``positions`` positions: the
    chi-square alone at level alpha / 2 has this power whatever the shape, and the combined p-value
    is below alpha whenever the chi-square's own is below alpha / 2 (Bonferroni over the two
    statistics, up to the Monte Carlo error; bench/served/power.py checks the claim)."""
    if positions <= 0:
        return math.inf
    return min(1.0, detectable_tv(BINS - 1, positions, alpha / 2, POWER))


def rank_z(tally: Tally) -> NDArray[np.float64]:
    """(observed - expected) / sd per rank group (sd from the summed Bernoulli variances)."""
    sd = np.sqrt(np.maximum(tally.variance, 1e-300))
    return np.where(tally.variance > 0, (tally.observed - tally.expected) / sd, 0.0)


def two_sided(z: float) -> float:
    return min(1.0, 2.0 * norm_sf(abs(z)))
