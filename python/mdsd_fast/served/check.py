"""``check_served``: do the tokens a server emitted follow the distributions it logged?"""

from __future__ import annotations

import math
import numbers
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .read import describe, jsonl_unit, log_unit, segments
from .stats import (
    RANK_LABELS,
    REPLICATES,
    Tally,
    asymptotic_pvalue,
    chi2,
    mc_pvalue,
    mean_z,
    position_labels,
    rank_z,
    tv_detectable,
)

__all__ = ["DEFAULT_ALPHA", "GroupRow", "RankRow", "ServedCheck", "check_served"]

#: The default false-alarm rate of the check.
DEFAULT_ALPHA = 0.01


@dataclass(frozen=True)
class RankRow:
    """Emitted tokens of one rank group against the logged mass of that group."""

    rank: str
    observed: int
    expected: float
    z: float  #: (observed - expected) / sd


@dataclass(frozen=True)
class GroupRow:
    """One position-in-response or temperature group: its positions, how often the top logged
    token was emitted against how often it should be, and the group's own PIT chi-square p-value
    (descriptive: for finding where a failure sits, not corrected for the number of groups)."""

    group: str
    positions: int
    top1_observed: int
    top1_expected: float
    z: float
    pvalue: float


@dataclass(frozen=True)
class ServedCheck:
    """The outcome of :func:`check_served`.

    ``lossless`` is False when the p-value is at most ``alpha`` or an emitted token had no logged
    mass at all (``impossible``). ``tv_detectable``: the smallest total variation, between the law
    of the emitted tokens' PIT values (over the check's 20 bins) and the uniform one, detected with
    probability 0.9 at this number of positions; a deviation of TV d in the same direction at
    every position (for example one that favours the top token) is one of TV d there."""

    lossless: bool
    pvalue: float
    positions: int
    tv_detectable: float
    alpha: float
    impossible: int
    inconsistent: int  #: positions whose token logprob disagrees with its top_logprobs (not tested)
    histogram: tuple[int, ...]  #: counts of the PIT values in 20 equal bins of [0, 1)
    chi2: float  #: Pearson's chi-square of the histogram (19 degrees of freedom)
    z: float  #: z of the mean bin: < 0, the top logged tokens are over-emitted; > 0, the tail
    by_rank: tuple[RankRow, ...]
    by_position: tuple[GroupRow, ...]
    by_temperature: tuple[GroupRow, ...]
    path: str
    seconds: float

    def __str__(self) -> str:
        verdict = "no evidence against losslessness" if self.lossless else "NOT LOSSLESS"
        lines = [
            f"{self.path}: {self.positions:,} positions, p-value {self.pvalue:.4g} at alpha {self.alpha:g}: {verdict}",
            f"detects with probability 0.9 a deviation of TV >= {self.tv_detectable:.4f} (PIT law, 20 bins)",
            f"PIT histogram: chi-square {self.chi2:.1f} (19 df), mean-bin z {self.z:+.2f} "
            "(< 0: the top logged tokens over-emitted, > 0: the tail)",
        ]
        if self.impossible:
            lines.append(f"{self.impossible} emitted token(s) had no logged mass at all (each one proves a bug)")
        if self.inconsistent:
            lines.append(f"{self.inconsistent} position(s) log a token logprob that contradicts top_logprobs")
        lines += ["", "| rank of the emitted token | observed | expected | z |", "|---|--:|--:|--:|"]
        lines += [f"| {r.rank} | {r.observed} | {r.expected:.1f} | {r.z:+.2f} |" for r in self.by_rank]
        for name, rows in (("position in response", self.by_position), ("temperature", self.by_temperature)):
            lines += ["", f"| {name} | positions | top-1 observed | top-1 expected | z | PIT p-value |"]
            lines.append("|---|--:|--:|--:|--:|--:|")
            lines += [
                f"| {g.group} | {g.positions} | {g.top1_observed} | {g.top1_expected:.1f} | {g.z:+.2f} | {g.pvalue:.3g} |"
                for g in rows
            ]
        return "\n".join(lines)


def _groups(labels: list[str], hists: list[Any], tops: list[Any]) -> tuple[GroupRow, ...]:
    out = []
    for label, h, t in zip(labels, hists, tops, strict=True):
        n = int(h.sum())
        if n == 0:
            continue
        z = (t[0] - t[1]) / math.sqrt(t[2]) if t[2] > 0 else 0.0
        out.append(GroupRow(label, n, int(round(t[0])), float(t[1]), float(z), asymptotic_pvalue(h)))
    return tuple(out)


def _check_args(alpha: Any, workers: Any, seed: Any, replicates: Any) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha: expected a number in (0, 1), got {alpha!r}")
    for name, v, lo in (("workers", workers, 1), ("seed", seed, 0), ("replicates", replicates, 19)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or int(v) < lo:
            raise ValueError(f"{name}: expected an integer >= {lo}, got {v!r}")
    if float(alpha) * (int(replicates) + 1) < 1.0:
        raise ValueError(f"replicates: {replicates} cannot give a p-value as small as alpha = {alpha}")


def check_served(
    path: str | os.PathLike[str],
    *,
    alpha: float = DEFAULT_ALPHA,
    workers: int = 1,
    seed: int = 0,
    replicates: int = REPLICATES,
) -> ServedCheck:
    """Test whether the tokens of a served log follow the distributions it logged.

    Parameters
    ----------
    path : an OpenAI-style JSONL file (one response per line, ``choices[].logprobs.content[]``
        with ``token``, ``logprob`` and ``top_logprobs``; an optional top-level ``temperature`` is
        used to localise a failure), or a log directory of served rows (:func:`to_log`).
    alpha : the false-alarm rate: a lossless server is flagged with probability at most alpha.
    workers : local worker processes (the result does not depend on it).
    seed : seeds the PIT's randomisation and the Monte Carlo null (the same seed, the same result).
    replicates : Monte Carlo replicates of the null (the p-value's resolution is 1 / (replicates + 1)).

    Returns
    -------
    ServedCheck, with ``lossless``, ``pvalue``, ``positions``, ``tv_detectable`` and the
    localisation by rank of the emitted token, by position in the response and by temperature.
    """
    _check_args(alpha, workers, seed, replicates)
    t0 = time.perf_counter()
    kind, p = describe(path)
    if kind == "jsonl":
        units: list[tuple[Any, ...]] = [
            (jsonl_unit, str(p), a, b, (int(seed), i)) for i, (a, b) in enumerate(segments(p))
        ]
    else:
        from ..logs import open_logs

        units = [(log_unit, str(p), i, (int(seed), i)) for i in range(len(open_logs(p).shards))]
    tally = Tally()
    if int(workers) == 1 or len(units) == 1:
        for fn, *args in units:
            tally.merge(fn(*args))
    else:
        from .._workers import pool

        with pool(min(int(workers), len(units))) as ex:
            for part in ex.map(_run, units):  # in unit order: the merge is the same whatever the workers
                tally.merge(part)
    n = tally.positions
    if n == 0 and tally.impossible == 0:
        raise ValueError(f"{p}: no logged positions")
    rng = np.random.default_rng(np.random.SeedSequence((int(seed), 1 << 31)))
    pvalue = 0.0 if tally.impossible else mc_pvalue(tally.u, rng, int(replicates))
    z = rank_z(tally)
    by_rank = tuple(
        RankRow(label, int(o), float(e), float(zz))
        for label, o, e, zz in zip(RANK_LABELS, tally.observed, tally.expected, z, strict=True)
        if e > 0 or o > 0
    )
    temps = sorted(tally.by_temperature)
    tlabels = ["unknown" if t == -1.0 else ("other" if math.isinf(t) else f"{t:g}") for t in temps]
    return ServedCheck(
        lossless=bool(tally.impossible == 0 and pvalue > alpha),
        pvalue=float(pvalue),
        positions=n,
        tv_detectable=tv_detectable(n, float(alpha)),
        alpha=float(alpha),
        impossible=tally.impossible,
        inconsistent=tally.inconsistent,
        histogram=tuple(int(c) for c in tally.u),
        chi2=float(chi2(tally.u)[0]),
        z=float(mean_z(tally.u)[0]),
        by_rank=by_rank,
        by_position=_groups(list(position_labels()), list(tally.by_position), list(tally.top_position)),
        by_temperature=_groups(
            tlabels, [tally.by_temperature[t] for t in temps], [tally.top_temperature[t] for t in temps]
        ),
        path=str(p),
        seconds=time.perf_counter() - t0,
    )


def _run(unit: tuple[Any, ...]) -> Tally:
    fn, *args = unit
    return fn(*args)  # type: ignore[no-any-return]
