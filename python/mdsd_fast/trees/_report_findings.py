"""Findings of the tree report: traversal against per-node verification, where optimal transport
gains per depth, the chain formula's error, the bound. Each is computed from the report's records;
differences of two verifiers are paired over the same trees (t interval of the per-tree differences)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .._render import wrap

if TYPE_CHECKING:  # pragma: no cover
    from .report import TreeReport

#: (optimal-transport verifier, baseline) pairs per node scheme, first available wins
OT_PAIRS = {"iid": (("optimal", "rrs"), ("optimal", "kseq")), "wor": (("sweep", "rrs-wor"), ("optimal", "rrs-wor"))}


def _fin(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _paired(rep: TreeReport, shape: str, a: str, b: str) -> tuple[float, float, float]:
    return _ci(rep.per_tree[(shape, a)] - rep.per_tree[(shape, b)])


def _profile(rep: TreeReport, shape: str, name: str) -> list[float]:
    rows = sorted((r for r in rep.profiles if r["shape"] == shape and r["verifier"] == name), key=lambda r: r["depth"])
    return [float(r["p_accepted_ge"]) for r in rows]


def findings(rep: TreeReport) -> list[dict[str, Any]]:
    """One dict per finding: ``kind``, ``shape``, the numbers, and ``text`` (one markdown line)."""
    out: list[dict[str, Any]] = []
    shapes = list(dict.fromkeys(r["shape"] for r in rep.records))
    for shape in shapes:
        recs = {r["verifier"]: r for r in rep.records if r["shape"] == shape}
        node = {n: r for n, r in recs.items() if r["kind"] == "verifier" and _fin(r["tokens_per_call"])}
        if node and "traversal" in recs and (shape, "traversal") in rep.per_tree:
            best = max(node, key=lambda n: node[n]["tokens_per_call"])
            m, lo, hi = _paired(rep, shape, "traversal", best)
            verdict = "beats" if lo > 0 else ("loses to" if hi < 0 else "ties with")
            out.append(dict(kind="traversal_vs_per_node", shape=shape, best=best, diff=m, ci_low=lo, ci_high=hi,
                            text=f"{shape}: traversal {verdict} the best per-node verifier ({best}): "
                            f"{m:+.3f} tokens/call (95% CI {lo:+.3f} to {hi:+.3f}, paired over "
                            f"{recs['traversal']['trees']} trees)"))  # fmt: skip
        scheme = recs[next(iter(recs))]["scheme"]
        root_n = max(int(t.draw_ptr[1] - t.draw_ptr[0]) for t in rep.trees.get(shape, [])) if shape in rep.trees else 0
        for ot, base in OT_PAIRS.get(scheme, ()) if root_n > 1 else ():  # one draft: every verifier is sd
            if ot in node and base in node:
                gain = np.array(_profile(rep, shape, ot)) - np.array(_profile(rep, shape, base))
                m, lo, hi = _paired(rep, shape, ot, base)
                total = float(gain.sum())
                root = float(gain[0] / total) if total > 0 else math.nan
                per_depth = ", ".join(f"{g:+.3f}" for g in gain)
                # depth 1 exactly over the root's drafting: the root's alpha, not its drafted tuple
                r1, r1_lo, r1_hi = _paired(rep, shape, ot + ":root_alpha", base + ":root_alpha")
                out.append(dict(kind="ot_gain_by_depth", shape=shape, ot=ot, base=base, gain=gain.tolist(), diff=m,
                                ci_low=lo, ci_high=hi, root_share=root, root_alpha_gain=r1,
                                root_alpha_ci_low=r1_lo, root_alpha_ci_high=r1_hi,
                                text=f"{shape}: {ot} vs {base}: {m:+.3f} tokens/call (95% CI {lo:+.3f} to {hi:+.3f}); "
                                f"P(accepted >= d) gains on the drafted trees by depth d = 1..: {per_depth}; "
                                f"root acceptance exact over its drafting: {r1:+.4f} ({r1_lo:+.4f} to {r1_hi:+.4f})"))  # fmt: skip
                break
        errs = [(n, r) for n, r in node.items() if _fin(r["chain_error"])]
        if errs:
            worst = max(errs, key=lambda nr: abs(nr[1]["chain_error"]))
            n, r = worst
            out.append(dict(kind="chain_formula", shape=shape, verifier=n, error=r["chain_error"],
                            ci_low=r["chain_error_ci_low"], ci_high=r["chain_error_ci_high"],
                            text=f"{shape}: the chain formula at the root's alpha is off by up to "
                            f"{r['chain_error']:+.3f} tokens/call ({n}: formula {r['chain_formula']:.3f}, "
                            f"exact {r['tokens_per_call']:.3f})"))  # fmt: skip
        b = recs.get("bound")
        if b is not None and _fin(b["bound_low"]):
            top = max((r["tokens_per_call"] for r in node.values()), default=math.nan)
            kind = "exact" if _fin(b["tokens_per_call"]) else "interval"
            out.append(dict(kind="bound", shape=shape, low=b["bound_low"], high=b["bound_high"], best_per_node=top,
                            text=f"{shape}: tree bound {kind} {b['bound_low']:.3f}..{b['bound_high']:.3f} tokens/call "
                            f"(mean over trees); best per-node verifier {top:.3f}"))  # fmt: skip
    return out


def findings_markdown(found: list[dict[str, Any]]) -> str:
    """The findings as bullets wrapped at 100 columns."""
    return "\n".join(line for f in found for line in wrap(f"- {f['text']}", indent="  "))


# Two-sided 95 % Student-t quantiles t_{0.975, df}, df = 1..30 (tests check them against scipy).
_T975 = (12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281, 2.2010, 2.1788,
         2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639,
         2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423)  # fmt: skip


def t_quantile(df: int) -> float:
    """t_{0.975, df}: the half-width factor of a 95 % interval from ``df + 1`` independent values."""
    if df < 1:
        return math.nan
    if df <= len(_T975):
        return _T975[df - 1]
    # beyond the table: the quantile at the next tabulated df below (t decreases in df: conservative)
    return 2.0423 if df <= 40 else (2.0211 if df <= 60 else (2.0003 if df <= 120 else 1.9799))


def _ci(x: NDArray[np.float64]) -> tuple[float, float, float]:
    """(mean, low, high): the t interval over independent trees (nan ends for one tree)."""
    if x.size == 0:
        return math.nan, math.nan, math.nan
    m = float(x.mean())
    if x.size < 2:
        return m, math.nan, math.nan
    h = t_quantile(x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return m, m - h, m + h
