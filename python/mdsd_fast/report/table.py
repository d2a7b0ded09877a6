"""The gap report's markdown tables, sized for a terminal.

One table per draft scheme, with only the verifiers that ran under it (a scheme's rows never have
another scheme's verifiers; sd, the one-draft verifier, only where it differs from α*), columns padded to a common width, α*'s 95% interval clipped to
[0, 1] (acceptance is a probability; the normal interval is not), and the expected tokens per
target call at α*. The records are the report's (``GapReport.records``), read, never changed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .._render import pipe_table

#: |α* − sd| at n = 1 below which the sd column is left out (one draft: sd is the optimal verifier
#: for every scheme that draws it from q, so the gap is rounding).
SD_TIE = 1e-12


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _alpha_cell(rec: dict[str, Any]) -> str:
    m, lo, hi = rec["mean"], rec["ci_low"], rec["ci_high"]
    if not _finite(m):
        return "n/a"
    if not (_finite(lo) and _finite(hi)):  # one position: no interval
        return f"{m:.4f}"
    return f"{m:.4f} ({max(lo, 0.0):.4f}–{min(hi, 1.0):.4f})"


def _verifier_cell(rec: dict[str, Any] | None) -> str:
    if rec is None or not _finite(rec["mean"]):
        return ""
    star = "" if rec["exact"] else "*"
    gap = round(-rec["gap_abs"], 4) + 0.0 if _finite(rec["gap_abs"]) else math.nan  # + 0.0: no "-0.0000"
    return f"{rec['mean']:.4f}{star}" + (f" ({gap:+.4f})" if _finite(gap) else "")


def _temperature(t: Any) -> str:
    return "" if t is None or (isinstance(t, float) and math.isnan(t)) else f"{t:g}"


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
    total = sum(sum(1 for g in groups.values() if "alpha*" in g) for groups in schemes.values())
    shown = 0
    out: list[str] = []
    for s, groups in schemes.items():
        if max_rows is not None and shown >= max_rows:
            break
        keys = sorted((k for k, g in groups.items() if "alpha*" in g), key=lambda k: tuple(str(x) for x in k))
        one_domain = len({k[0] for k in keys}) == 1
        names = methods.get(s, [])
        notes = []
        sd = [groups[k]["sd"] for k in keys if "sd" in groups[k]]
        if sd and all(r["exact"] and _finite(r["gap_abs"]) and abs(r["gap_abs"]) <= SD_TIE for r in sd):
            names = [m for m in names if m != "sd"]  # a column repeating α*: one line says so instead
            notes.append(f"sd (n = 1) equals α* on every row (within {SD_TIE:g}).")
        header = ([] if one_domain else ["domain"]) + ["T", "draft", "n", "pos", "α* (95% CI)", "tok/call"]
        right = {header.index(c) for c in ("n", "pos", "tok/call")}
        rows = []
        for k in keys:
            if max_rows is not None and shown >= max_rows:
                break
            g = groups[k]
            a = g["alpha*"]
            tpc = f"{a['tokens_per_call']:.2f}" if _finite(a["tokens_per_call"]) else "n/a"
            head = ([] if one_domain else [str(k[0])]) + [_temperature(k[1]), str(k[2]), str(k[3])]
            rows.append(head + [str(a["positions"]), _alpha_cell(a), tpc] + [_verifier_cell(g.get(m)) for m in names])
            shown += 1
        where = f", domain {keys[0][0]}" if one_domain and keys else ""
        out += [f"scheme {s}{where}:", "", *pipe_table(header + names, rows, right), *notes, ""]
    if max_rows is not None and shown < total:
        out.append(f"… {total - shown} more rows in the CSV/JSON")
    return "\n".join(out).rstrip("\n")
