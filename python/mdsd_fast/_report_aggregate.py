"""The gap report's records: per group, and pooled over domains, from the units' shards."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._findings import findings, summarise
from ._merge import Summary
from ._report_config import ReportConfig, Unit, expected_tokens


def _ci95(x: NDArray[np.float64]) -> tuple[float, float, float]:
    x = x[np.isfinite(x)]
    if x.size == 0:
        return math.nan, math.nan, math.nan
    m = float(x.mean())
    h = 1.96 * float(x.std(ddof=1)) / math.sqrt(x.size) if x.size > 1 else math.nan
    return m, m - h, m + h


def _records_for(base: dict[str, Any], arr: dict[str, NDArray[Any]], cfg: ReportConfig) -> list[dict[str, Any]]:
    """Records of one group of positions (per-position arrays as stored in a shard)."""
    records: list[dict[str, Any]] = []
    alpha_mean: dict[tuple[str, int], float] = {}
    for s, n in cfg.pairs():
        a = arr[f"alpha/{s}/{n}"]
        m, lo, hi = _ci95(a)
        alpha_mean[(s, n)] = m
        records.append(
            dict(
                base,
                scheme=s,
                n=n,
                method="alpha*",
                kind="bound",
                exact=True,
                positions=int(np.isfinite(a).sum()),
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
        val = arr[f"verifier/{v}/{s}/{n}/value"]
        se = arr[f"verifier/{v}/{s}/{n}/se"]
        exact = bool(np.all(arr[f"verifier/{v}/{s}/{n}/exact"]))
        m, lo, hi = _ci95(val)
        ok = np.isfinite(val)
        sim_se = float(math.sqrt(float(np.sum(se[ok] ** 2))) / max(1, int(ok.sum())))
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
                    positions=int(ok.sum()),
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
    """Per-unit records, then the same pooled over domains (domain = "all") per (temperature, draft)."""
    records: list[dict[str, Any]] = []
    positions: dict[str, dict[str, NDArray[Any]]] = {}
    pooled: dict[tuple[Any, str], list[dict[str, NDArray[Any]]]] = {}
    for u in units:
        with np.load(Path(out_dir) / "shards" / f"{u.shard_name}.npz") as z:
            arr = {k: z[k] for k in z.files if k != "__meta__"}
        positions[u.shard_name] = arr
        temp = None if math.isnan(u.temperature) else u.temperature
        records += _records_for(dict(domain=u.domain, temperature=temp, draft=u.draft), arr, cfg)
        pooled.setdefault((temp, u.draft), []).append(arr)
    if len({u.domain for u in units}) > 1:
        for (temp, draft), arrs in pooled.items():
            cat = {
                k: (np.concatenate([a[k] for a in arrs]) if arrs[0][k].ndim else np.array([a[k] for a in arrs]))
                for k in arrs[0]
            }
            records += _records_for(dict(domain="all", temperature=temp, draft=draft), cat, cfg)
    return records, positions


def _findings(positions: dict[str, dict[str, NDArray[Any]]], cfg: ReportConfig) -> list[dict[str, Any]]:
    """The findings, from the units' summaries merged in unit order (never the concatenated positions)."""
    summary = Summary()
    for arr in positions.values():
        summary.merge(summarise(arr, cfg))
    return findings(summary, cfg)
