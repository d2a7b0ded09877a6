"""The gap report's text, sized for a terminal of 100 columns: the legend, the tables, the findings.

One table per draft scheme, with only the verifiers that ran under it (a scheme's rows never have
another scheme's verifiers), columns padded to a common width, α* with the half-width of its 95%
interval, and the expected tokens per target call at α*. A verifier cell is its acceptance and, in
parentheses, its gap ``α* − acceptance`` (the CSV's ``gap_abs``: positive below the bound). A
verifier at α* on every row (|gap| ≤ :data:`TIE`: sd at n = 1, the attaining verifiers) gets a note
instead of a column; a table wider than 100 columns continues in a second one. The records and
findings are the report's (``GapReport.records`` / ``.findings``), read, never changed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .._render import pipe_table, split_table, wrap
from ..inputs.rules import scheme_family
from .config import _VERIFIER_SCHEMES
from .findings import INTERVAL_SETS

__all__ = ["GAP", "legend", "legend_entries", "markdown", "findings_text"]

#: |gap| below which a verifier counts as at α* on a row (the findings' tolerance: α* and exact
#: acceptances are accurate to ~1e-12).
TIE = 1e-9
TIE_TEXT = "1e-9"
#: The one definition of the gap, used by the legend, the plots and the docs.
GAP = "gap = α* − acceptance, as the CSV's gap_abs: > 0 below the bound"


def legend_entries(gamma: int, samples: int, pooled: bool = False) -> list[str]:
    """What the tables' columns mean, one entry per item (report.md lists them as bullets)."""
    text = [
        "α* = the highest acceptance a lossless verifier reaches with the scheme's drafts: its mean "
        "over positions ± the half-width of the 95% confidence interval (normal, over positions).",
        f"Verifier cells: mean acceptance (gap). {GAP}. * = simulated ({samples} steps per position), exact otherwise.",
        f"tok/call = expected tokens per target call at α*, drafting γ = {gamma} positions per call; "
        "pos = positions; T = temperature; n = drafts.",
    ]
    if pooled:
        text.append("Rows pool every domain (per-domain rows in report.md, report.csv and report.json).")
    return text


def legend(gamma: int, samples: int, pooled: bool = False) -> list[str]:
    """The legend's lines for a terminal: :func:`legend_entries` wrapped at 100 columns."""
    return [line for t in legend_entries(gamma, samples, pooled) for line in wrap(t)]


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _alpha_cell(rec: dict[str, Any]) -> str:
    m, lo, hi = rec["mean"], rec["ci_low"], rec["ci_high"]
    if not _finite(m):
        return "n/a"
    if not (_finite(lo) and _finite(hi)):  # one position: no interval
        return f"{m:.4f}"
    return f"{m:.4f} ±{(hi - lo) / 2:.4f}"  # the normal interval is symmetric: m ± h


def _gap(x: Any) -> str:
    return f"{round(x, 4) + 0.0:+.4f}" if _finite(x) else ""  # + 0.0: no "-0.0000"


def _verifier_cell(rec: dict[str, Any] | None) -> str:
    if rec is None or not _finite(rec["mean"]):
        return ""
    star = "" if rec["exact"] else "*"
    gap = _gap(rec["gap_abs"])
    return f"{rec['mean']:.4f}{star}" + (f" ({gap})" if gap else "")


def temperatures(values: Sequence[Any]) -> dict[Any, str]:
    """Each temperature printed with the same number of decimals (0.7 and 1.0, not 0.7 and 1)."""
    finite = [t for t in values if _finite(t)]
    digits = next((d for d in range(4) if all(abs(round(t, d) - t) < 1e-12 for t in finite)), 3)
    return {t: (f"{t:.{digits}f}" if _finite(t) else "") for t in values}


def _at_alpha(recs: list[dict[str, Any]]) -> bool:
    return bool(recs) and all(r["exact"] and _finite(r["gap_abs"]) and abs(r["gap_abs"]) <= TIE for r in recs)


def markdown(records: Sequence[dict[str, Any]], *, max_rows: int | None = None, domain: str | None = None) -> str:
    """Tables of ``records`` (see the module docstring); ``domain`` keeps only that domain ("all" =
    pooled over domains), ``max_rows`` caps the rows of all tables together."""
    schemes: dict[str, dict[tuple[Any, ...], dict[str, dict[str, Any]]]] = {}
    methods: dict[str, list[str]] = {}
    for r in records:
        if domain is not None and r["domain"] != domain:
            continue
        s = r["scheme"]
        schemes.setdefault(s, {}).setdefault((r["domain"], r["temperature"], r["draft"], r["n"]), {})[r["method"]] = r
        if r["kind"] == "verifier" and r["method"] not in methods.setdefault(s, []):
            methods[s].append(r["method"])
    temp = temperatures(sorted({k[1] for g in schemes.values() for k in g}, key=lambda t: (t is None, t or 0)))
    total = sum(sum(1 for g in groups.values() if "alpha*" in g) for groups in schemes.values())
    shown = 0
    out: list[str] = []
    for s, groups in schemes.items():
        if max_rows is not None and shown >= max_rows:
            break
        keys = sorted((k for k, g in groups.items() if "alpha*" in g), key=lambda k: tuple(str(x) for x in k))
        one_domain = len({k[0] for k in keys}) == 1
        names, notes = [], []
        at = [m for m in methods.get(s, []) if _at_alpha([groups[k][m] for k in keys if m in groups[k]])]
        names = [m for m in methods.get(s, []) if m not in at]
        if at:  # a column repeating α*: one line says so instead
            notes += wrap(f"At α*_{s} on every row (|gap| ≤ {TIE_TEXT}), so no column: {', '.join(at)}.")
        for m in [m for m in names if scheme_family(s) not in _VERIFIER_SCHEMES.get(m, (s,))]:
            notes += wrap(
                f"{m} is a reference here, not a {s} verifier: it drafts otherwise (sd: one draft sampled "
                f"from q), so its gap is negative where it beats α*_{s}."
            )
        header = ([] if one_domain else ["domain"]) + ["T", "draft", "n", "pos", "α* ± 95% CI", "tok/call"]
        right = {header.index(c) for c in ("n", "pos", "tok/call")}
        rows = []
        for k in keys:
            if max_rows is not None and shown >= max_rows:
                break
            g = groups[k]
            a = g["alpha*"]
            tpc = f"{a['tokens_per_call']:.2f}" if _finite(a["tokens_per_call"]) else "n/a"
            head = ([] if one_domain else [str(k[0])]) + [temp.get(k[1], ""), str(k[2]), str(k[3])]
            rows.append(head + [str(a["positions"]), _alpha_cell(a), tpc] + [_verifier_cell(g.get(m)) for m in names])
            shown += 1
        where = f", domain {keys[0][0]}" if one_domain and keys else ""
        tables = split_table(header + names, rows, right, keys=header.index("n") + 1)
        for i, t in enumerate(tables):
            out += [f"scheme {s}{where}{' (continued)' if i else ''}:", "", *t, ""]
        out += [*notes, ""] if notes else []  # after a blank line: markdown would read a row on
    if max_rows is not None and shown < total:
        out.append(f"… {total - shown} more rows in the CSV/JSON")
    return "\n".join(out).rstrip("\n")


# ------------------------------------------------------------------------------------------ findings


def _mark(f: dict[str, Any]) -> str:
    if f["holds"] is None:  # a check with truncated positions it cannot settle, or an observation
        return f"undecided at {f['undecided']} truncated pairs" if f.get("undecided") else "observed"
    return "holds" if f["holds"] else "DOES NOT HOLD"


def _cut(f: dict[str, Any]) -> str:
    c = f.get("truncated")
    if not c or not c.get("positions"):
        return ""
    return (
        f"; truncated (position, n) pairs: {c['hold']} of {c['positions']} hold over the whole interval, "
        f"{c['fail']} fail over it, {c['undecided']} undecided"
    )


def _ns(*maps: dict[str, Any]) -> list[str]:
    return sorted({n for m in maps for n in m}, key=int)


def _number(x: Any, fmt: str) -> str:
    return format(x, fmt) if _finite(x) else "n/a"


def findings_text(findings: Sequence[dict[str, Any]]) -> str:
    """The findings as short bullets wrapped at 100 columns, then their numbers in small tables: the
    mean gap per n of each check (and the share of positions at α* where it is not all), the
    interval ends of truncated rows, where deterministic drafts beat random ones."""
    bullets: list[str] = []
    gap_rows: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = []
    tables: list[str] = []
    for f in findings:
        v, claim = f.get("values") or {}, f["claim"]
        if "mean_gain" in v:  # α*_wor ≥ α*_iid
            short = f"min of α*_wor − α*_iid over {v['pairs']} (position, n) pairs = {_number(v['min'], '+.1e')}"
            gap_rows.append(("wor gain", "α*_wor − α*_iid", v["mean_gain"], {}))
        elif "mean_gap" in v:  # a verifier that stays below its bound
            bound = claim.rsplit(" ", 1)[-1]
            how = "exact" if v["exact"] else "simulated: beyond 4 standard errors"
            short = f"{v['above']} of {v['pairs']} (position, n) pairs above, {v['below']} strictly below ({how})"
            gap_rows.append((claim.split(" ", 1)[0], f"{bound} − acceptance", v["mean_gap"], v.get("at_bound") or {}))
        elif claim.startswith("where "):  # deterministic drafts against random ones
            short = "share of positions where its α* is higher, in the table below"
            tables += _wins_table(claim.split(" ")[1], v)
        elif claim in {c for _, c in INTERVAL_SETS}:  # the intervals of truncated rows
            short, extra = _intervals(v)
            tables += [*wrap(f"{claim}: mean interval ends per scheme and n"), "", *extra] if extra else []
        else:
            short = f["evidence"]
        if v.get("pairs") == 0 and f.get("truncated"):
            short = "no complete positions"
        bullets += wrap(f"- {claim}: **{_mark(f)}** — {short}{_cut(f)}", indent="  ")
    out = bullets
    if gap_rows:
        ns = _ns(*(r[2] for r in gap_rows), *(r[3] for r in gap_rows))
        rows = []
        for name, what, gaps, at in gap_rows:
            cells = [
                _number(gaps.get(n), "+.4f") + (f" ({at[n]:.0%} at)" if n in at and _finite(at[n]) else "") for n in ns
            ]
            rows.append([name, what, *cells])
        out += ["", 'Mean over positions of each check\'s gap ("at": the share of positions at α*):', ""]
        for t in split_table(["check", "mean of", *(f"n = {n}" for n in ns)], rows, set(range(2, 2 + len(ns))), 2):
            out += [*t, ""]
        out.pop()
    if tables:
        out += ["", *tables]
    return "\n".join(line.rstrip() for line in out).rstrip("\n")


def _wins_table(det: str, v: dict[str, Any]) -> list[str]:
    rows = [
        [det, key.split("/")[0], key.split("/")[1], f"{x['share']:.0%}", f"{x['mean']:.4f}", f"{x['mean_other']:.4f}"]
        for key, x in sorted(v.items(), key=lambda kv: (kv[0].split("/")[0], int(kv[0].split("/")[1])))
        if isinstance(x, dict) and _finite(x.get("share"))
    ]
    if not rows:
        return []
    head = f"Where {det} drafts beat iid / wor drafts (positions where α*_{det} is higher; mean α* of both):"
    table = pipe_table(["drafts", "vs", "n", "wins at", f"mean α*_{det}", "mean α* of vs"], rows, {2, 3, 4, 5})
    return [*wrap(head), "", *table, ""]


def _intervals(v: dict[str, Any]) -> tuple[str, list[str]]:
    """Truncated rows: the mean interval ends per (scheme, n), and where wor wins whatever the cut."""
    rows, wins = [], []
    for key, x in v.items():
        if key.startswith("wor>iid/"):
            wins.append(f"n = {key.split('/')[1]}: {x:.0%}")
        elif isinstance(x, dict):
            s, n = key.split("/")
            alpha = _number(x.get("mean_alpha"), ".4f")
            ends = f"[{_number(x['mean_low'], '.4f')}, {_number(x['mean_high'], '.4f')}]"
            rows.append(
                [s, n, str(x["positions"]), alpha, ends, _number(x["width_p50"], ".3f"), _number(x["width_max"], ".3f")]
            )
    short = "mean interval ends in a table below"
    if wins:
        short += "; α*_wor > α*_iid whatever the cut left out (wor low > iid high) at " + ", ".join(wins)
    header = ["scheme", "n", "pos", "mean α* (cut rows)", "mean interval", "width p50", "width max"]
    return short, [*pipe_table(header, rows, {1, 2, 3, 5, 6}), ""] if rows else []
