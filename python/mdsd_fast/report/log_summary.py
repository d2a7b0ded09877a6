"""The streaming report's summary: per-unit exact moments merged, records, findings and the
interval table.

Memory does not grow with the number of positions: each unit's per-position file is read once and
folded into exact moments (count, sum and sum of squares as integers, ``report.merge.Moments``: the dense
report's records use the same, with the same interval formula) per group and key, and into the
findings' mergeable summary (mdsd_fast.report.findings, the dense report's own). Every record is the same
whatever the order of the units, the chunking of their rows or the number of workers, bit for bit.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..trees.shapes import expected_tokens
from .config import ReportConfig
from .findings import findings, summarise
from .merge import Moments, Summary

__all__ = ["interval_markdown"]


def _summarise(units: list[Any], cfg: ReportConfig, out: str) -> tuple[list[Any], list[Any], dict[str, int]]:
    """Records per group and pooled over domains, from per-unit exact moments."""
    stats: dict[tuple[Any, ...], dict[str, Moments]] = {}
    counts = dict(complete=0, truncated=0)
    summary = Summary()  # the findings' numbers, merged unit by unit
    for u in units:
        with np.load(Path(out) / "shards" / f"{u.shard_name}.npz") as z:
            arr = {k: z[k] for k in z.files if k != "__meta__"}
        comp = arr["complete"].astype(bool)
        counts["complete"] += int(comp.sum())
        counts["truncated"] += int((~comp).sum())
        unit: dict[str, Moments] = {}
        for k, a in arr.items():
            if k.endswith(("/se", "/exact")) or k in ("rows", "complete"):
                continue
            unit[k] = Moments().add(a)
            if k.startswith("verifier/"):  # how many of its values were simulated
                unit[k + "#sim"] = Moments().add(np.isfinite(a) & ~arr[k.replace("/value", "/exact")].astype(bool))
        for dom in (u.domain, "all"):  # each unit's moments computed once, merged into both groups
            g = stats.setdefault((dom, u.temperature, u.draft), {})
            for k, m in unit.items():
                g.setdefault(k, Moments()).merge(m)
        summary.merge(summarise(arr, cfg))
    if len({u.domain for u in units}) == 1:
        stats = {k: v for k, v in stats.items() if k[0] != "all"}
    records = [r for (d, t, dr), g in stats.items() for r in _records(dict(domain=d, temperature=t, draft=dr), g, cfg)]
    return records, findings(summary, cfg), counts


def _records(base: dict[str, Any], g: dict[str, Moments], cfg: ReportConfig) -> list[dict[str, Any]]:
    out = []
    for s, n in cfg.pairs():
        m = g.get(f"alpha/{s}/{n}", Moments())
        mean, lo, hi = m.ci95()
        rec = dict(base, scheme=s, n=n, method="alpha*", kind="bound", exact=True, positions=m.n, mean=mean)
        out.append(dict(rec, ci_low=lo, ci_high=hi, sim_se=0.0, alpha_star=mean, gap_abs=0.0, gap_rel=0.0))
        out[-1]["tokens_per_call"] = expected_tokens(mean, cfg.gamma)
    alpha = {(r["scheme"], r["n"]): r["mean"] for r in out}
    for v, s, n in cfg.verifier_runs():
        m = g.get(f"verifier/{v}/{s}/{n}/value", Moments())
        mean, lo, hi = m.ci95()
        sim = g.get(f"verifier/{v}/{s}/{n}/value#sim", Moments())
        for scheme in [s] if v != "sd" else list(cfg.schemes):
            a = alpha.get((scheme, n), math.nan)
            simulated = sim.total > 0  # a sum of 0/1 indicators
            rec = dict(base, scheme=scheme, n=n, method=v, kind="verifier", exact=not simulated, positions=m.n)
            rec.update(mean=mean, ci_low=lo, ci_high=hi, sim_se=math.nan if simulated else 0.0, alpha_star=a)
            rec.update(gap_abs=a - mean, gap_rel=(a - mean) / a if a > 0 else math.nan)
            out.append(dict(rec, tokens_per_call=expected_tokens(mean, cfg.gamma)))
    for key in sorted(
        k[len("interval/") : -len("/low")] for k in g if k.startswith("interval/") and k.endswith("/low")
    ):
        lo_m, hi_m = g[f"interval/{key}/low"], g[f"interval/{key}/high"]
        parts = key.split("/")
        method = ("alpha*" if parts[0] == "alpha" else parts[1]) + " interval"  # not the table's "alpha*"
        rec = dict(base, scheme=parts[-2], n=int(parts[-1]), method=method, kind="interval", exact=True)
        out.append(
            dict(
                rec,
                positions=lo_m.n,
                mean_low=lo_m.mean if lo_m.n else math.nan,
                mean_high=hi_m.mean if hi_m.n else math.nan,
            )
        )
    return out


def interval_markdown(records: list[dict[str, Any]], *, domain: str | None = None) -> str:
    """The truncated positions' table: per (domain, T, draft, scheme, n, method) the mean low and high
    ends (the mean over those positions of alpha* or the acceptance lies between them)."""
    rows = [
        r for r in records if r["kind"] == "interval" and r["positions"] and (domain is None or r["domain"] == domain)
    ]
    if not rows:
        return ""
    lines = [
        "| domain | T | draft | scheme | n | method | pos | mean low | mean high |",
        "|---|---|---|---|--:|---|--:|--:|--:|",
    ]
    for r in rows:
        t = "" if r["temperature"] is None else f"{r['temperature']:g}"
        lines.append(
            f"| {r['domain']} | {t} | {r['draft']} | {r['scheme']} | {r['n']} | {r['method']} | {r['positions']} "
            f"| {r['mean_low']:.4f} | {r['mean_high']:.4f} |"
        )
    return "\n".join(lines)
