"""The gap report's per-verifier acceptance as profiles engines load (:mod:`mdsd_fast.trees.profile`).

A gap-report row is one verification step with n drafts at a single position: one draft position
(K = 1), accepted with the row's mean acceptance. Write the profiles with
:func:`mdsd_fast.trees.profile.write_profiles`.
"""

from __future__ import annotations

import math
from typing import Any

from ..trees.profile import AcceptanceProfile, profile_from_marginals

__all__ = ["gap_report_profiles"]


def gap_report_profiles(rep: Any) -> list[AcceptanceProfile]:
    """One single-position profile per verifier row of a :class:`~mdsd_fast.report.GapReport`.

    The rate is the row's mean acceptance over its positions, exact per position where the row is
    exact (``exact``) and simulated otherwise (then ``measurement_conditions`` gives the
    simulation's standard error); the 95 % interval over positions goes with it. Rows without a
    value (no positions) and the alpha* rows (a bound, not a verifier) are left out."""
    out = []
    for r in rep.records:
        if r["kind"] != "verifier" or not math.isfinite(r["mean"]):
            continue
        t = r["temperature"]
        temp = f"T{t:g}" if isinstance(t, (int, float)) else "T-"  # arrays of your own carry no temperature
        key = f"{r['domain']}/{temp}/{r['draft']}/{r['scheme']}/n{r['n']}/{r['method']}"
        ci = [[r["ci_low"], r["ci_high"]]] if math.isfinite(r["ci_low"]) and math.isfinite(r["ci_high"]) else None
        conditions = {
            "source": "mdsd_fast gap report", "domain": r["domain"], "temperature": r["temperature"],
            "draft": r["draft"], "scheme": r["scheme"], "n": r["n"], "verifier": r["method"],
            "positions": r["positions"], "alpha_star": r["alpha_star"],
            "exact": "each position's acceptance is exact; the rate is their mean over a sample of positions"
            if r["exact"] else f"simulated per position (standard error of the mean {r['sim_se']:.2g})",
            "interval": "normal, 95 %, over positions",
        }  # fmt: skip
        mean_ci = (1.0 + ci[0][0], 1.0 + ci[0][1]) if ci else None
        out.append(
            profile_from_marginals(
                [min(max(float(r["mean"]), 0.0), 1.0)],
                key=key,
                marginal_ci=ci,
                mean_ci=mean_ci,
                method="draft_model",
                conditions=conditions,
            )
        )
    return out
