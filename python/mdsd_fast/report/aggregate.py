"""The gap report's records: per group, and pooled over domains, from the units' shards."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..trees.shapes import expected_tokens
from .config import ReportConfig, Unit
from .findings import findings, summarise
from .merge import Moments, Summary


def _moments(arrs: list[dict[str, NDArray[Any]]], key: str, rows: str | None = None) -> Moments:
    """Exact moments of ``key`` over the units ``arrs`` (``rows``: only where that key is finite)."""
    m = Moments()
    for a in arrs:
        m.add(a[key] if rows is None else a[key][np.isfinite(a[rows])])
    return m


def _records_for(base: dict[str, Any], arrs: list[dict[str, NDArray[Any]]], cfg: ReportConfig) -> list[dict[str, Any]]:
    """Records of one group of positions: one unit's arrays (as stored in its shard) or several units'
    pooled. Means, intervals and standard errors come from exact moments (``Moments.ci95``, the log
    report's formula too), so a pooled record does not depend on the order of its units."""
    records: list[dict[str, Any]] = []
    alpha_mean: dict[tuple[str, int], float] = {}
    for s, n in cfg.pairs():
        mom = _moments(arrs, f"alpha/{s}/{n}")
        m, lo, hi = mom.ci95()
        alpha_mean[(s, n)] = m
        records.append(
            dict(
                base,
                scheme=s,
                n=n,
                method="alpha*",
                kind="bound",
                exact=True,
                positions=mom.n,
                mean=m,
                ci_low=lo,
                ci_high=hi,
                sim_se=0.0,
                alpha_star=m,
                gap_abs=0.0,
                gap_rel=0.0,
                tokens_per_call=expected_tokens(m, cfg.gamma),
            )
        )
    for v, s, n in cfg.verifier_runs():
        key = f"verifier/{v}/{s}/{n}"
        exact = all(bool(np.all(a[f"{key}/exact"])) for a in arrs)
        mom = _moments(arrs, f"{key}/value")
        m, lo, hi = mom.ci95()
        # the standard error of the mean of independent estimates: sqrt(sum se^2) / count
        sim_se = math.sqrt(_moments(arrs, f"{key}/se", rows=f"{key}/value").sum_squares) / max(1, mom.n)
        for scheme in [s] if v != "sd" else list(cfg.schemes):
            a_s = alpha_mean.get((scheme, n), math.nan)
            records.append(
                dict(
                    base,
                    scheme=scheme,
                    n=n,
                    method=v,
                    kind="verifier",
                    exact=exact,
                    positions=mom.n,
                    mean=m,
                    ci_low=lo,
                    ci_high=hi,
                    sim_se=sim_se,
                    alpha_star=a_s,
                    gap_abs=a_s - m,
                    gap_rel=(a_s - m) / a_s if a_s > 0 else math.nan,
                    tokens_per_call=expected_tokens(m, cfg.gamma),
                )
            )
    return records


def _aggregate(
    units: list[Unit], cfg: ReportConfig, out_dir: str
) -> tuple[list[dict[str, Any]], dict[str, dict[str, NDArray[Any]]]]:
    """Per-unit records, then the same pooled over domains (domain = "all") per (temperature, draft),
    from the units' exact moments merged (never a concatenation, whose float sums follow its order)."""
    records: list[dict[str, Any]] = []
    positions: dict[str, dict[str, NDArray[Any]]] = {}
    pooled: dict[tuple[Any, str], list[dict[str, NDArray[Any]]]] = {}
    for u in units:
        with np.load(Path(out_dir) / "shards" / f"{u.shard_name}.npz") as z:
            arr = {k: z[k] for k in z.files if k != "__meta__"}
        positions[u.shard_name] = arr
        temp = None if math.isnan(u.temperature) else u.temperature
        records += _records_for(dict(domain=u.domain, temperature=temp, draft=u.draft), [arr], cfg)
        pooled.setdefault((temp, u.draft), []).append(arr)
    if len({u.domain for u in units}) > 1:
        for (temp, draft), arrs in pooled.items():
            records += _records_for(dict(domain="all", temperature=temp, draft=draft), arrs, cfg)
    return records, positions


def _findings(positions: dict[str, dict[str, NDArray[Any]]], cfg: ReportConfig) -> list[dict[str, Any]]:
    """The findings, from the units' summaries merged in unit order (never the concatenated positions)."""
    summary = Summary()
    for arr in positions.values():
        summary.merge(summarise(arr, cfg))
    return findings(summary, cfg)
