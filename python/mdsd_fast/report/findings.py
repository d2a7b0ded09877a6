"""The seed paper's findings, checked position by position, from mergeable per-unit summaries.

``summarise(arrays, cfg)`` folds one unit's per-position values (a dense shard, or a log shard with
its ``complete`` column and ``interval/...`` ends) into a :class:`~mdsd_fast.report.merge.Summary`;
``findings(summary, cfg)`` states the findings from the merged summaries. Both the dense report and
the streaming log report use this module, so they state the same findings from the same numbers,
and memory does not grow with the number of positions.

On a truncated position only an interval is known for alpha* and for a verifier's acceptance. A
finding holds there only if it holds over the whole interval (for every pair of values in the two
intervals), fails there only if it fails over the whole interval, and is *undecided* otherwise (or
where a row has no interval). A finding holds if it holds at every position; it is undecided if it
fails nowhere but some positions are undecided; the evidence says how many.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..inputs.rules import mixed_parts, scheme_family
from .config import _VERIFIER_SCHEMES, ReportConfig
from .merge import SKETCH_ERROR, Summary

__all__ = ["findings", "summarise", "SKETCH_ERROR"]

TOL = 1e-9  #: the comparisons' tolerance (alpha* and exact acceptances are accurate to ~1e-12)
#: verifiers that reach the bound of their scheme ("attains"); the others "stay below" it
ATTAINING = ("greedy", "spechub", "optimal", "topk")
#: the two sets of interval columns a truncation finding describes: the cut sample's bounds (the
#: dense report's ``bounds``, Gemma) and a log's truncated rows
INTERVAL_SETS = (
    ("bounds", "α* of the uncut rows (the sample is cut to its top tokens)"),
    ("interval/alpha", "α* of the truncated positions (top-k logs)"),
)


def _checks(cfg: ReportConfig) -> list[tuple[str, str]]:
    """(verifier, scheme) pairs whose relation to alpha* of the scheme is checked."""
    checks = [("rrs", "iid"), ("kseq", "iid"), ("rrs-wor", "wor"), ("greedy", "greedy"), ("spechub", "greedy")]
    checks += [("topk", "topk"), ("optimal", "iid"), ("sweep", "wor")]
    for s in cfg.schemes:  # mixed schemes: every verifier the report ran under them
        if mixed_parts(s) is not None:
            checks += [(v, s) for v in cfg.verifiers if scheme_family(s) in _VERIFIER_SCHEMES.get(v, ())]
    return [(v, s) for v, s in checks if v in cfg.verifiers and s in cfg.schemes]


def _deterministic(cfg: ReportConfig) -> list[str]:
    return [s for s in cfg.schemes if s in ("greedy", "topk") or mixed_parts(s) is not None]


def summarise(arr: Mapping[str, NDArray[Any]], cfg: ReportConfig) -> Summary:
    """One unit's per-position values folded into what :func:`findings` needs."""
    out = Summary()
    size = len(arr["rows"])
    cut = ~arr["complete"].astype(bool) if "complete" in arr else np.zeros(size, dtype=bool)

    def col(key: str) -> NDArray[np.float64]:
        return arr[key].astype(np.float64) if key in arr else np.full(size, np.nan)

    def ends(key: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        return col(f"interval/{key}/low"), col(f"interval/{key}/high")

    def decide(key: str, holds: NDArray[np.bool_], fails: NDArray[np.bool_]) -> None:
        # over the truncated rows: held over the whole interval / failed over it (the rest: undecided)
        out.stat(f"{key}/cut/hold").add(holds[cut])
        out.stat(f"{key}/cut/fail").add(fails[cut])

    truncated = bool(cut.any())  # a unit without truncated rows skips the interval rules

    if "iid" in cfg.schemes and "wor" in cfg.schemes:
        for n in [n for n in cfg.ns if n >= 2]:
            out.stat(f"wor-iid/{n}").add(col(f"alpha/wor/{n}") - col(f"alpha/iid/{n}"))
            if truncated:
                (wl, wh), (il, ih) = ends(f"alpha/wor/{n}"), ends(f"alpha/iid/{n}")
                decide(f"wor-iid/{n}", wl - ih >= -TOL, wh - il < -TOL)
    runs = set(cfg.verifier_runs())
    for v, s in _checks(cfg):
        for n in [n for n in cfg.ns if (v, s, n) in runs]:
            key, k = f"verifier/{v}/{s}/{n}", f"check/{v}/{s}/{n}"
            val, a, se = col(f"{key}/value"), col(f"alpha/{s}/{n}"), col(f"{key}/se")
            ok = np.isfinite(val) & np.isfinite(a)
            ex = np.asarray(arr[f"{key}/exact"]) if f"{key}/exact" in arr else np.ones(size, dtype=bool)
            out.flag(f"{k}/exact", bool(np.all(ex if ex.ndim == 0 else ex[np.isfinite(val)])))
            gap = a[ok] - val[ok]
            out.stat(f"{k}/gap").add(gap)
            out.stat(f"{k}/at").add(np.abs(gap) <= 1e-9)
            # a simulated estimate of exactly 0 or 1 reports se = 0: floor it by the binomial SE at alpha*
            floor = np.sqrt(np.clip(a[ok] * (1 - a[ok]), 0, None) / cfg.samples) + 1 / cfg.samples
            for tag, se_eff in (("raw", se[ok]), ("floor", np.maximum(se[ok], floor))):
                out.stat(f"{k}/below/{tag}").add(gap > 4 * se_eff + 1e-9)
                out.stat(f"{k}/above/{tag}").add(-gap > 4 * se_eff + 1e-9)
            if not truncated:
                continue
            (vl, vh), (al, ah) = ends(key), ends(f"alpha/{s}/{n}")
            if v in ATTAINING:  # |alpha* - value| < 1e-9 for every pair of values of the two intervals
                decide(k, np.maximum(ah - vl, vh - al) < 1e-9, (vl - ah >= 1e-9) | (al - vh >= 1e-9))
            else:
                decide(k, vh - al <= 1e-9, vl - ah > 1e-9)
    for prefix, _ in INTERVAL_SETS:
        for n in cfg.ns:
            for s in ("iid", "wor"):
                if f"{prefix}/{s}/{n}/low" in arr:
                    lo, hi = col(f"{prefix}/{s}/{n}/low"), col(f"{prefix}/{s}/{n}/high")
                    ok = np.isfinite(lo) & np.isfinite(hi)
                    k = f"ends/{prefix}/{s}/{n}"
                    out.stat(f"{k}/low").add(lo[ok])
                    out.stat(f"{k}/high").add(hi[ok])
                    out.stat(f"{k}/alpha").add(col(f"alpha/{s}/{n}")[ok])
                    out.stat(f"{k}/width").add(hi[ok] - lo[ok])
                    out.sketch(f"{k}/width").add(hi[ok] - lo[ok])
            if f"{prefix}/wor/{n}/low" in arr and f"{prefix}/iid/{n}/high" in arr:
                lw, hi_i = col(f"{prefix}/wor/{n}/low"), col(f"{prefix}/iid/{n}/high")
                ok = np.isfinite(lw) & np.isfinite(hi_i)
                out.stat(f"ends/{prefix}/wor>iid/{n}").add(lw[ok] > hi_i[ok])
    for det in _deterministic(cfg):
        for other in [o for o in ("iid", "wor") if o in cfg.schemes]:
            for n in [n for n in cfg.ns if n >= 2]:
                g, o = col(f"alpha/{det}/{n}"), col(f"alpha/{other}/{n}")
                ok = np.isfinite(g) & np.isfinite(o)
                k = f"wins/{det}/{other}/{n}"
                out.stat(f"{k}/win").add(g[ok] > o[ok] + TOL)
                out.stat(f"{k}/det").add(g[ok])
                out.stat(f"{k}/other").add(o[ok])
                if truncated:  # "holds": a win whatever the completion, "fails": a loss
                    (gl, gh), (ol, oh) = ends(f"alpha/{det}/{n}"), ends(f"alpha/{other}/{n}")
                    decide(k, gl - oh > TOL, gh - ol <= TOL)
    return out


def _cut(summary: Summary, keys: list[str]) -> dict[str, int]:
    """Truncated (position, n) pairs of the given checks: held, failed, undecided."""
    total = sum(summary.get(f"{k}/cut/hold").n for k in keys)
    hold = sum(round(summary.get(f"{k}/cut/hold").sum) for k in keys)
    fail = sum(round(summary.get(f"{k}/cut/fail").sum) for k in keys)
    return dict(positions=total, hold=hold, fail=fail, undecided=total - hold - fail)


def _cut_text(c: dict[str, int]) -> str:
    if not c["positions"]:
        return ""
    return (
        f"; truncated positions: {c['hold']} of {c['positions']} (position, n) pairs hold over the whole "
        f"interval, {c['fail']} fail over it, {c['undecided']} undecided"
    )


def _verdict(holds: bool, c: dict[str, int]) -> bool | None:
    """False if it fails anywhere, True if it holds everywhere, None (undecided) otherwise."""
    if not holds or c["fail"]:
        return False
    return None if c["undecided"] else True


def _clean(x: Any) -> Any:
    """Numbers for JSON: NaN (no positions) becomes None, so a finding round-trips equal."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, float) and x != x:
        return None
    return x


def _finding(
    claim: str, holds: bool | None, evidence: str, values: dict[str, Any], c: dict[str, int]
) -> dict[str, Any]:
    if values["pairs"] == 0 and c["positions"]:  # a log of truncated rows only
        evidence = "no complete positions"
    out = dict(claim=claim, holds=holds, evidence=evidence + _cut_text(c), values=_clean(values))
    if c["positions"]:
        out["truncated"] = c
        out["undecided"] = c["undecided"]
    return out


def findings(summary: Summary, cfg: ReportConfig) -> list[dict[str, Any]]:
    """The findings, with their numbers (``values``) and, on truncated positions, how many were
    decided (``truncated``, ``undecided``)."""
    out: list[dict[str, Any]] = []
    get = summary.get
    if "iid" in cfg.schemes and "wor" in cfg.schemes:
        ns = [n for n in cfg.ns if n >= 2]
        worst = min((get(f"wor-iid/{n}").lo for n in ns), default=np.inf)
        total = sum(get(f"wor-iid/{n}").n for n in ns)
        gains = {str(n): get(f"wor-iid/{n}").mean for n in ns}
        c = _cut(summary, [f"wor-iid/{n}" for n in ns])
        out.append(
            _finding(
                "α*_wor ≥ α*_iid at every n ≥ 2",
                _verdict(worst >= -TOL, c),
                f"min over {total} (position, n) pairs of α*_wor − α*_iid = {worst:+.2e}; mean gain "
                + ", ".join(f"n={n}: {g:+.4f}" for n, g in gains.items()),
                dict(pairs=total, min=float(worst), mean_gain=gains),
                c,
            )
        )
    runs = set(cfg.verifier_runs())
    for v, s in _checks(cfg):
        ns = [n for n in cfg.ns if (v, s, n) in runs]
        if not ns:
            continue
        diffs, below, above, count, exact_all = [], 0, 0, 0, True
        gaps, at = {}, {}
        for n in ns:
            k = f"check/{v}/{s}/{n}"
            exact_all &= summary.flags.get(f"{k}/exact", True)
            gap = gaps[str(n)] = get(f"{k}/gap").mean
            # 4 decimals, or 2 significant digits once the gap is below them
            diffs.append(f"n={n}: mean gap {gap:.4f}" if abs(gap) >= 5e-4 else f"n={n}: mean gap {gap:.2g}")
            if v == "sweep":  # where it is certified it is "optimal": count the positions at the bound
                at[str(n)] = get(f"{k}/at").mean
                diffs[-1] += f" (at α*_{s} within 1e-9: {at[str(n)]:.0%})"
            tag = "raw" if exact_all else "floor"  # simulated so far: floored standard errors
            below += round(get(f"{k}/below/{tag}").sum)
            above += round(get(f"{k}/above/{tag}").sum)
            count += get(f"{k}/gap").n
        c = _cut(summary, [f"check/{v}/{s}/{n}" for n in ns])
        if v in ATTAINING:
            gap_stats = [get(f"check/{v}/{s}/{n}/gap") for n in ns]
            worst = max((max(g.hi, -g.lo, 0.0) for g in gap_stats), default=0.0)  # max |alpha* - value|
            out.append(
                _finding(
                    f"{v} attains α*_{s}",
                    _verdict(worst < 1e-9, c),
                    f"max |α*_{s} − {v}| over {count} (position, n) pairs = {worst:.1e}",
                    dict(pairs=count, max_gap=worst),
                    c,
                )
            )
        else:
            out.append(
                _finding(
                    f"{v} stays below α*_{s}",
                    _verdict((count > 0 or c["positions"] > 0) and above == 0, c),
                    f"{above} of {count} (position, n) pairs above the bound, {below} strictly below "
                    f"({'exact' if exact_all else 'simulated: beyond 4 standard errors'}); " + "; ".join(diffs),
                    dict(pairs=count, above=above, below=below, exact=exact_all, mean_gap=gaps, at_bound=at),
                    c,
                )
            )
    out += _truncation(summary, cfg)
    for det in _deterministic(cfg):
        parts, values, keys = [], {}, []
        for other in [o for o in ("iid", "wor") if o in cfg.schemes]:
            for n in [n for n in cfg.ns if n >= 2]:
                k = f"wins/{det}/{other}/{n}"
                w, g, o = get(f"{k}/win"), get(f"{k}/det"), get(f"{k}/other")
                if w.n or get(f"{k}/cut/hold").n:
                    keys.append(k)
                if w.n:
                    parts.append(
                        f"vs {other} n={n}: {det} wins at {w.mean:.0%} of positions "
                        f"(mean α* {g.mean:.4f} vs {o.mean:.4f})"
                    )
                    values[f"{other}/{n}"] = dict(share=w.mean, mean=g.mean, mean_other=o.mean, positions=w.n)
        c = _cut(summary, keys)
        if parts or c["positions"]:
            if c["positions"]:  # for this finding "hold" is a win and "fail" a loss whatever the completion
                parts.append(
                    f"truncated positions: {det} wins at {c['hold']} and loses at {c['fail']} of "
                    f"{c['positions']} (position, n) pairs whatever the completion, {c['undecided']} undecided"
                )
            text = "; ".join(parts)
            out.append(
                dict(
                    claim=f"where {det} drafts beat or lose to iid / wor drafts",
                    holds=None,
                    evidence=text,
                    values=_clean(values),
                    **({"truncated": c} if c["positions"] else {}),
                )
            )
    return out


def _truncation(summary: Summary, cfg: ReportConfig) -> list[dict[str, Any]]:
    """How wide the intervals are (the cut sample's bounds, a log's truncated rows), and whether the
    wor-over-iid gain survives the cut (wor's low end above iid's high end). The median width is a
    sketch's, within SKETCH_ERROR of the exact median."""
    out = []
    get = summary.get
    for prefix, claim in INTERVAL_SETS:
        parts, wins, values = [], [], dict[str, Any]()
        for n in cfg.ns:
            for s in ("iid", "wor"):
                k = f"ends/{prefix}/{s}/{n}"
                if get(f"{k}/low").n:
                    lo, hi, w = get(f"{k}/low").mean, get(f"{k}/high").mean, get(f"{k}/width")
                    p50 = summary.sketches[f"{k}/width"].median()
                    head = f"{s} n={n}: "
                    if get(f"{k}/alpha").n:
                        head += f"mean α* {get(f'{k}/alpha').mean:.4f} of the cut rows, full rows in "
                    else:
                        head += "mean ends "
                    parts.append(f"{head}[{lo:.4f}, {hi:.4f}] (width p50 {p50:.3f}, max {w.hi:.3f})")
                    a = get(f"{k}/alpha")
                    values[f"{s}/{n}"] = dict(
                        positions=w.n,
                        mean_low=lo,
                        mean_high=hi,
                        width_p50=p50,
                        width_max=w.hi,
                        mean_alpha=a.mean if a.n else float("nan"),
                    )
            win = get(f"ends/{prefix}/wor>iid/{n}")
            if win.n:
                wins.append(f"n={n}: {win.mean:.0%}")
                values[f"wor>iid/{n}"] = win.mean
        if parts:
            evidence = "; ".join(parts)
            if wins:
                evidence += "; α*_wor > α*_iid whatever the cut left out (wor low > iid high) at "
                evidence += ", ".join(wins) + " of positions"
            out.append(dict(claim=claim, holds=None, evidence=evidence, values=_clean(values)))
    return out
